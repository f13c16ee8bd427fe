//! Attacks against the real sandbox: real processes, the real helper, loopback listeners this
//! test starts itself. Everything is bounded in time; what the machine cannot enforce is skipped
//! with a printed reason.
//!
//! The hardening's attacks live in `exec_attacks/`: privileges planted for later and the kernel
//! keyring (`privileges.rs`), `/proc` (`proc.rs`), git protection (`git.rs`), the helper's
//! error channel (`channel.rs`), the network namespace's configuration (`network.rs`).

mod channel;
mod git;
mod network;
mod privileges;
mod proc;
mod tree;

use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use toolsmith_sandbox::SandboxPolicy;
use toolsmith_sandbox::exec::{ExecRequest, Launcher};

use crate::common::{PYTHON, caps, helper, landlock, python, require, run, survivors};

fn launcher(root: &Path, edit: impl FnOnce(&mut SandboxPolicy)) -> Launcher {
    let mut policy = SandboxPolicy::new(root.canonicalize().unwrap());
    policy.limits.timeout = Duration::from_secs(10);
    edit(&mut policy);
    Launcher::with_capabilities(helper(), policy, caps().clone())
}

#[tokio::test]
async fn writes_inside_the_root_work_and_outside_are_blocked() {
    if !require("landlock write confinement", landlock()) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |_| {});
    let target = outside.path().join("pwned");
    let script = format!(
        "echo inside > inside.txt && cat inside.txt; echo x > {}",
        target.display()
    );
    let out = run(&l, "sh", &["-c", &script]).await;
    assert_eq!(out.stdout, "inside\n", "{out:?}");
    assert_ne!(out.exit_code, 0, "{out:?}");
    assert!(!target.exists());
    assert!(root.path().join("inside.txt").exists());
}

#[tokio::test]
async fn reads_outside_the_allowlist_are_blocked() {
    if !require("landlock read allowlist", landlock()) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "hunter2").unwrap();
    let l = launcher(root.path(), |_| {});
    let out = run(&l, "cat", &[secret.to_str().unwrap()]).await;
    assert_ne!(out.exit_code, 0, "{out:?}");
    assert!(!out.stdout.contains("hunter2"));
    assert!(out.stderr.contains("Permission denied"), "{out:?}");
}

#[tokio::test]
async fn tcp_and_udp_to_loopback_are_blocked() {
    if !require("network isolation", caps().seccomp || caps().net_namespaces) || !python() {
        return;
    }
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |_| {});
    let script = format!(
        "import socket\n\
         try:\n s=socket.create_connection(('127.0.0.1',{}),timeout=3); print('TCP-CONNECTED')\n\
         except Exception as e: print('tcp', e)\n\
         try:\n u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); u.sendto(b'leak',('127.0.0.1',{})); print('UDP-SENT')\n\
         except Exception as e: print('udp', e)\n\
         import urllib.request\n\
         try:\n urllib.request.urlopen('http://127.0.0.1:{}/', timeout=3); print('HTTP-OK')\n\
         except Exception as e: print('http', e)\n",
        tcp.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
        tcp.local_addr().unwrap().port(),
    );
    let out = run(&l, PYTHON, &["-c", &script]).await;
    assert!(!out.stdout.contains("TCP-CONNECTED"), "{out:?}");
    assert!(!out.stdout.contains("UDP-SENT"), "{out:?}");
    assert!(!out.stdout.contains("HTTP-OK"), "{out:?}");
    assert!(tcp.accept().is_err(), "the listener saw a connection");
    let mut buf = [0u8; 16];
    assert!(
        udp.recv(&mut buf).is_err(),
        "the UDP listener got a datagram"
    );
}

#[tokio::test]
async fn env_curl_is_blocked() {
    if !require("network isolation", caps().seccomp || caps().net_namespaces) {
        return;
    }
    if !Path::new("/usr/bin/curl").exists() {
        eprintln!("SKIPPED env curl: /usr/bin/curl is not installed");
        return;
    }
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |_| {});
    let url = format!("127.0.0.1:{}/", tcp.local_addr().unwrap().port());
    let out = run(&l, "/usr/bin/env", &["curl", "-sS", "-m", "3", &url]).await;
    assert_ne!(out.exit_code, 0, "{out:?}");
    assert!(tcp.accept().is_err(), "the listener saw a connection");
}

#[tokio::test]
async fn pathname_unix_sockets_are_blocked_but_socketpair_works() {
    if !require("seccomp unix socket filter", caps().seccomp) || !python() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("agent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let l = launcher(root.path(), |_| {});
    let script = format!(
        "import socket\n\
         a,b=socket.socketpair(); a.send(b'ok'); print('PAIR', b.recv(2))\n\
         try:\n s=socket.socket(socket.AF_UNIX); s.connect({:?}); print('UNIX-CONNECTED')\n\
         except Exception as e: print('unix', e)\n",
        path.to_str().unwrap()
    );
    let out = run(&l, PYTHON, &["-c", &script]).await;
    assert!(out.stdout.contains("PAIR b'ok'"), "{out:?}");
    assert!(!out.stdout.contains("UNIX-CONNECTED"), "{out:?}");
}

#[tokio::test]
async fn io_uring_and_x32_syscalls_are_denied() {
    if !require("seccomp", caps().seccomp) || !python() || !cfg!(target_arch = "x86_64") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |_| {});
    let script = "import ctypes\n\
        libc=ctypes.CDLL(None, use_errno=True)\n\
        params=ctypes.create_string_buffer(120)\n\
        r=libc.syscall(425, 1, params)\n\
        print(r, ctypes.get_errno())\n\
        r=libc.syscall(0x40000000 | 39)\n\
        print(r, ctypes.get_errno())\n";
    let out = run(&l, PYTHON, &["-c", script]).await;
    // io_uring_setup, then x32 getpid: both EPERM (x32 is ENOSYS without the guard).
    assert_eq!(out.stdout.trim(), "-1 1\n-1 1", "{out:?}");
}

#[tokio::test]
async fn memory_bombs_hit_the_data_limit() {
    if !python() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |p| p.limits.data_bytes = Some(256 << 20));
    let out = run(
        &l,
        PYTHON,
        &["-c", "x = bytearray(1 << 30); print('ALLOCATED')"],
    )
    .await;
    assert!(!out.stdout.contains("ALLOCATED"), "{out:?}");
    assert!(out.stderr.contains("MemoryError"), "{out:?}");
}

#[tokio::test]
async fn fork_bombs_are_contained() {
    if !python() {
        return;
    }
    if caps().running_as_root
        && !require(
            "pid namespace (NPROC is not enforced for root)",
            caps().pid_namespaces,
        )
    {
        return;
    }
    let token = "forkbomb-7c1d9e";
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |p| {
        p.limits.processes = Some(64);
        p.limits.timeout = Duration::from_secs(3);
    });
    // Bounded: at most 300 children, each sleeping.
    let script = format!(
        "import os, time\n\
         n=0\n\
         for i in range(300):\n\
         \x20try:\n\
         \x20 if os.fork()==0:\n\
         \x20  time.sleep(60); os._exit(0)\n\
         \x20 n+=1\n\
         \x20except OSError as e:\n\
         \x20 print('fork failed after', n, e); break\n\
         print('forked', n, flush=True)\n\
         time.sleep(60)  # {token}\n"
    );
    let out = run(&l, PYTHON, &["-c", &script]).await;
    assert!(out.timed_out, "{out:?}");
    if !caps().running_as_root {
        assert!(out.stdout.contains("fork failed"), "{out:?}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(survivors(token), 0, "processes survived the kill");
}

#[tokio::test]
async fn a_gibibyte_of_output_is_drained_and_truncated() {
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |p| p.limits.timeout = Duration::from_secs(60));
    let start = Instant::now();
    let out = run(&l, "head", &["-c", "1073741824", "/dev/zero"]).await;
    let elapsed = start.elapsed();
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
    assert!(out.truncated);
    assert_eq!(out.total_bytes, 1 << 30);
    assert_eq!(out.stdout.len(), 200_000);
    assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");
    eprintln!("1 GiB drained in {elapsed:?}");
}

#[tokio::test]
async fn grandchildren_and_setsid_escapees_die_at_the_timeout() {
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |p| p.limits.timeout = Duration::from_secs(1));
    let start = Instant::now();
    let out = run(&l, "sh", &["-c", "sleep 313.7 & sleep 300"]).await;
    assert!(out.timed_out, "{out:?}");
    assert!(start.elapsed() < Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(survivors("313.7"), 0, "a background grandchild survived");

    if !require("pid namespace (setsid escapees)", caps().pid_namespaces) {
        return;
    }
    let out = run(&l, "sh", &["-c", "setsid sleep 317.3 & sleep 300"]).await;
    assert!(out.timed_out, "{out:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(survivors("317.3"), 0, "a setsid escapee survived");
}

#[tokio::test]
async fn a_grandchild_holding_the_pipe_does_not_hang_the_capture() {
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |_| {});
    let start = Instant::now();
    let out = run(&l, "sh", &["-c", "sleep 311.9 & echo started"]).await;
    assert_eq!(out.stdout, "started\n");
    assert_eq!(out.exit_code, 0);
    assert!(!out.timed_out);
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(survivors("311.9"), 0);
}

#[tokio::test]
async fn exit_codes_signals_and_missing_programs() {
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |_| {});
    let out = run(&l, "sh", &["-c", "echo out; echo err >&2; exit 3"]).await;
    assert_eq!(
        (out.exit_code, out.stdout.as_str(), out.stderr.as_str()),
        (3, "out\n", "err\n")
    );
    if python() {
        // A real fault (a self-sent signal is ignored by PID 1 of a pid namespace).
        let out = run(&l, PYTHON, &["-c", "import ctypes; ctypes.string_at(0)"]).await;
        assert_eq!(
            (out.exit_code, out.signal.as_deref()),
            (1, Some("SIGSEGV")),
            "{out:?}"
        );
    }
    // stdin is empty, and only 0, 1, 2 (and ls's own directory fd) are open.
    let out = run(&l, "sh", &["-c", "cat; ls /proc/self/fd"]).await;
    assert_eq!(out.stdout, "0\n1\n2\n3\n", "{out:?}");
    let request = ExecRequest::new(
        "no-such-program-xyz",
        vec![],
        root.path().canonicalize().unwrap(),
    );
    let err = l.run(&request).await.unwrap_err();
    assert_eq!(err.code(), "PROCESS_FAILED", "{err}");
}

#[tokio::test]
async fn controls_full_network_connects_and_loopback_only_keeps_its_own_lo() {
    if !python() {
        return;
    }
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let root = tempfile::tempdir().unwrap();
    let connect = format!(
        "import socket\n\
         try:\n s=socket.create_connection(('127.0.0.1',{port}),timeout=3); print('HOST-CONNECTED')\n\
         except Exception as e: print('host', e)\n\
         try:\n\
         \x20srv=socket.socket(); srv.bind(('127.0.0.1',0)); srv.listen(1)\n\
         \x20c=socket.create_connection(srv.getsockname(),timeout=3); print('LOCAL-CONNECTED')\n\
         except Exception as e: print('local', e)\n"
    );
    // Positive control: with the network allowed the same probe reaches the host listener.
    let full = launcher(root.path(), |p| {
        p.network = toolsmith_sandbox::NetworkPolicy::Full
    });
    let out = run(&full, PYTHON, &["-c", &connect]).await;
    assert!(out.stdout.contains("HOST-CONNECTED"), "{out:?}");

    if !require("loopback-only network namespace", caps().net_namespaces) {
        return;
    }
    let lo = launcher(root.path(), |p| {
        p.network = toolsmith_sandbox::NetworkPolicy::LoopbackOnly
    });
    let out = run(&lo, PYTHON, &["-c", &connect]).await;
    // The host's loopback through the launcher's supervisor when the kernel has seccomp user
    // notification (see `loopback_attacks`), else the namespace's own `lo` only.
    assert_eq!(
        out.stdout.contains("HOST-CONNECTED"),
        caps().seccomp && caps().seccomp_listener,
        "{out:?}"
    );
    assert!(out.stdout.contains("LOCAL-CONNECTED"), "{out:?}");
}

#[test]
fn the_probe_reports_every_layer() {
    let report = caps().report(&SandboxPolicy::new("/w"));
    let names: Vec<&str> = report.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "filesystem writes",
            "read allowlist",
            "network",
            "unix sockets",
            "process tree kill",
            "private /proc",
            "git protection",
            "privilege filter",
            "kernel keyring",
            "rlimits",
            "env"
        ]
    );
    eprintln!("{}", serde_json::to_string_pretty(caps()).unwrap());
    for layer in &report {
        eprintln!("{:<18} {:<5} {}", layer.name, layer.enforced, layer.detail);
    }
    let enforced = |name: &str| report.iter().find(|l| l.name == name).unwrap().enforced;
    assert_eq!(enforced("privilege filter"), caps().seccomp);
    assert_eq!(enforced("kernel keyring"), caps().seccomp);
    let can_ns = caps().user_namespaces || caps().running_as_root;
    assert_eq!(
        enforced("git protection"),
        can_ns && caps().mount_namespaces
    );
}

#[tokio::test]
async fn dropping_the_run_future_kills_the_command() {
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |_| {});
    let request = ExecRequest::new(
        "sh",
        vec!["-c".into(), "sleep 319.1 & sleep 319.2".into()],
        root.path().canonicalize().unwrap(),
    );
    let cancelled = tokio::time::timeout(Duration::from_millis(300), l.run(&request)).await;
    assert!(cancelled.is_err());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(survivors("319."), 0, "the cancelled command survived");
}

#[tokio::test]
async fn best_effort_runs_without_a_missing_layer_and_warns() {
    let root = tempfile::tempdir().unwrap();
    let mut degraded = caps().clone();
    degraded.landlock_abi = None;
    let mut policy = SandboxPolicy::new(root.path().canonicalize().unwrap());
    policy.strictness = toolsmith_sandbox::Strictness::BestEffort;
    let l = Launcher::with_capabilities(helper(), policy.clone(), degraded.clone());
    let out = run(&l, "true", &[]).await;
    assert_eq!(out.exit_code, 0);
    assert!(
        out.warnings[0].contains("filesystem (Landlock)"),
        "{:?}",
        out.warnings
    );
    policy.strictness = toolsmith_sandbox::Strictness::FailClosed;
    let l = Launcher::with_capabilities(helper(), policy, degraded);
    let request = ExecRequest::new("true", vec![], root.path().canonicalize().unwrap());
    let err = l.run(&request).await.unwrap_err();
    assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
    assert!(err.to_string().contains("filesystem (Landlock)"), "{err}");
}
