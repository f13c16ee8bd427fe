//! What loopback-only mediation costs a sandboxed command's `connect()` to a server on the
//! host's loopback: the supervisor copies the address out, checks it, connects a socket of its
//! own and swaps it in. Beside it, the same connects under `network: full` (the kernel's own
//! connect, no supervisor) in the same run.
//!
//! Each sample is one sandboxed `python3` doing as many connects as criterion asks for and
//! reporting the time spent in `connect()` alone (`iter_custom`), so the process's spawn is not
//! in the figure. Skipped, with a message, without `python3` or without the kernel support
//! (seccomp user notification, Linux 5.9).
//!
//! Run: `cargo bench -p toolsmith-sandbox --bench loopback_connect`.

use std::net::TcpListener;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use toolsmith_sandbox::exec::{ExecRequest, HelperCommand, Launcher};
use toolsmith_sandbox::{Capabilities, NetworkPolicy, SandboxPolicy};

/// Connects `n` times to `port` and prints the nanoseconds spent inside `connect()`.
const SCRIPT: &str = "import socket, sys, time\n\
                      n, port, total = int(sys.argv[1]), int(sys.argv[2]), 0\n\
                      for _ in range(n):\n\
                      \x20s = socket.socket(); t = time.perf_counter_ns()\n\
                      \x20s.connect(('127.0.0.1', port)); total += time.perf_counter_ns() - t\n\
                      \x20s.close()\n\
                      print(total)\n";

fn bench(c: &mut Criterion) {
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !python {
        eprintln!("python3 is not installed: skipping the loopback connect benchmark");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let helper = HelperCommand::new(env!("CARGO_BIN_EXE_toolsmith-sandbox-exec"));
    let caps = Capabilities::detect_with(Some(&helper));
    if !(caps.net_namespaces && caps.seccomp && caps.seccomp_listener) {
        eprintln!("no seccomp user notification here: skipping the loopback connect benchmark");
        return;
    }
    // A server that accepts and drops: the handshake is the kernel's, the test is the connect.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    std::thread::spawn(move || for _ in listener.incoming() {});
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let launcher = |network| {
        let mut policy = SandboxPolicy::new(&root);
        policy.network = network;
        policy.limits.timeout = Duration::from_secs(120);
        Launcher::with_capabilities(helper.clone(), policy, caps.clone())
    };

    let mut group = c.benchmark_group("loopback_connect");
    for (name, launcher) in [
        (
            "mediated (loopback-only)",
            launcher(NetworkPolicy::LoopbackOnly),
        ),
        ("direct (full)", launcher(NetworkPolicy::Full)),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let args = vec!["-c".into(), SCRIPT.into(), iters.to_string(), port.clone()];
                let request = ExecRequest::new("python3", args, &root);
                let out = runtime.block_on(launcher.run(&request)).unwrap();
                assert_eq!(out.exit_code, 0, "{out:?}");
                Duration::from_nanos(out.stdout.trim().parse().unwrap())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
