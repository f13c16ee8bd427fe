//! Spawn overhead of `bash`'s sandbox: `true` run plainly, through the sandbox launcher (all
//! layers: the helper (a spare forked by the resident helper, or spawned), setsid, rlimits,
//! user+net+pid+mount namespaces, Landlock, seccomp, cleared environment, the tree's control
//! group) back to back (each launch waits for the spare the one before started, if it is not
//! ready yet), the same with its spare ready (the wait for it untimed; and in a git repository's
//! workspace), without the control group, and through bubblewrap with a comparable set of
//! namespaces, in the same run. bubblewrap is skipped, with a message, when `bwrap` is not
//! installed (`apt-get install bubblewrap`).
//!
//! Run: `cargo bench -p toolsmith-sandbox --bench spawn`. `TOOLSMITH_SANDBOX_HELPER` names another
//! helper binary (to compare builds: copy a bench binary and its helper aside, run both).

use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use toolsmith_sandbox::exec::{ExecRequest, HelperCommand, Launcher};
use toolsmith_sandbox::{Capabilities, SandboxPolicy};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let helper = HelperCommand::new(
        std::env::var_os("TOOLSMITH_SANDBOX_HELPER")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_toolsmith-sandbox-exec").into()),
    );
    let caps = Capabilities::detect_with(Some(&helper));
    let launcher =
        Launcher::with_capabilities(helper.clone(), SandboxPolicy::new(&root), caps.clone());
    // The same without the whole tree's control group (what it costs, where one can be made).
    let mut policy = SandboxPolicy::new(&root);
    policy.limits.tree_memory_bytes = None;
    policy.limits.tree_processes = None;
    let untreed = Launcher::with_capabilities(helper.clone(), policy, caps.clone());
    // A workspace that is a git repository (what `git init` makes that protection looks at).
    let repository = tempfile::tempdir().unwrap();
    let repository_root = repository.path().canonicalize().unwrap();
    std::fs::create_dir_all(repository_root.join(".git/hooks")).unwrap();
    std::fs::write(repository_root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        repository_root.join(".git/config"),
        "[core]\n\tbare = false\n",
    )
    .unwrap();
    let in_repository =
        Launcher::with_capabilities(helper, SandboxPolicy::new(&repository_root), caps);
    let repository_request = ExecRequest::new("true", vec![], &repository_root);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let request = ExecRequest::new("true", vec![], &root);

    let mut group = c.benchmark_group("spawn_true");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("plain", |b| {
        b.iter(|| {
            let status = Command::new("true").current_dir(&root).status().unwrap();
            assert!(status.success());
        })
    });
    // A plain spawn that does what a launch does besides sandboxing: its output captured
    // through pipes, waited for from the same runtime (tokio's `Command::output`).
    group.bench_function("plain, output captured", |b| {
        b.iter(|| {
            let out = runtime
                .block_on(async {
                    tokio::process::Command::new("true")
                        .current_dir(&root)
                        .output()
                        .await
                })
                .unwrap();
            assert!(out.status.success());
        })
    });
    group.bench_function("sandboxed", |b| {
        b.iter(|| {
            let out = runtime.block_on(launcher.run(&request)).unwrap();
            assert_eq!(out.exit_code, 0);
        })
    });
    // Each launch after a pause of 50 ms, finding its spare ready, as when launches are not
    // back to back (a model turn between two commands): neither is timed.
    let ready = |launcher: &Launcher, request: &ExecRequest, iters: u64| {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            // A pause, as between two tool calls; then the spare is certainly ready.
            std::thread::sleep(Duration::from_millis(50));
            assert!(launcher.warm_up());
            let start = Instant::now();
            let out = runtime.block_on(launcher.run(request)).unwrap();
            total += start.elapsed();
            assert_eq!(out.exit_code, 0);
        }
        total
    };
    group.bench_function("sandboxed, spare ready", |b| {
        b.iter_custom(|iters| ready(&launcher, &request, iters))
    });
    // The same in a git repository's workspace: git protection's snapshot, its bind mounts
    // (made by the spare ahead) and the check that they still hold.
    group.bench_function("sandboxed, spare ready, git workspace", |b| {
        b.iter_custom(|iters| ready(&in_repository, &repository_request, iters))
    });
    group.bench_function("sandboxed, no tree limits", |b| {
        b.iter(|| {
            let out = runtime.block_on(untreed.run(&request)).unwrap();
            assert_eq!(out.exit_code, 0);
        })
    });
    let bwrap = Command::new("bwrap")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if bwrap {
        let root_str = root.to_str().unwrap().to_string();
        group.bench_function("bwrap", |b| {
            b.iter(|| {
                let status = Command::new("bwrap")
                    .args(["--ro-bind", "/", "/", "--bind", &root_str, &root_str])
                    .args(["--dev", "/dev", "--proc", "/proc"])
                    .args(["--unshare-user", "--unshare-net", "--unshare-pid"])
                    .args([
                        "--new-session",
                        "--die-with-parent",
                        "--chdir",
                        &root_str,
                        "true",
                    ])
                    .status()
                    .unwrap();
                assert!(status.success());
            })
        });
    } else {
        eprintln!("bwrap is not installed: skipping the comparison (apt-get install bubblewrap)");
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
