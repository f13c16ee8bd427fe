//! The fallback paths, run for real: each test re-runs itself (or the `fs_attacks` module's
//! tests), from this test binary, under the helper's `degrade` mode, which makes Landlock and
//! openat2 unavailable (`ENOSYS`) and namespaces forbidden (`EPERM`) for the process and
//! everything it starts. Seccomp still works there.
//!
//! A test body runs only in the degraded child (`TOOLSMITH_TEST_DEGRADED=1`); in the normal run
//! the test starts that child (`--exact`, bounded to 60 s) and asserts that it passed.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolsmith_builtins::Workspace;
use toolsmith_core::{Tool, ToolContext};
use toolsmith_sandbox::exec::{ExecRequest, Launcher};
use toolsmith_sandbox::{Capabilities, NetworkPolicy, SandboxPolicy, Strictness};

use crate::common::{self, PYTHON, python, require, run, survivors};

/// In the degraded child: `true` (run the body). Otherwise: runs the test `name` of this module
/// under `degrade`, asserts it passed, and returns `false`.
fn degraded_child(name: &str) -> bool {
    if common::degraded() {
        return true;
    }
    if !Capabilities::detect_with(None).seccomp {
        eprintln!("SKIPPED {name} under degrade: seccomp is not available on this machine");
        return false;
    }
    let exe = std::env::current_exe().unwrap();
    let test = common::test_name(module_path!(), name);
    let out = common::run_degraded(
        &exe,
        &[&test, "--exact", "--nocapture", "--test-threads=1"],
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("--- degraded run of {name}:\n{stdout}{stderr}---");
    assert!(
        out.status.success(),
        "the degraded run failed: {}",
        out.status
    );
    assert_eq!(
        common::libtest_summary(&stdout),
        Some((1, 0)),
        "the degraded run did not run exactly {name}"
    );
    false
}

fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

fn policy(root: &Path, edit: impl FnOnce(&mut SandboxPolicy)) -> SandboxPolicy {
    let mut policy = SandboxPolicy::new(root);
    policy.limits.timeout = Duration::from_secs(10);
    edit(&mut policy);
    policy
}

/// A launcher that probes the (degraded) machine itself, as the runtime does.
fn launcher(policy: SandboxPolicy) -> Launcher {
    Launcher::new(common::helper(), policy)
}

async fn call_bash(ws: &Arc<Workspace>, input: serde_json::Value) -> serde_json::Value {
    let tool = toolsmith_builtins::bash(ws);
    match tool.call(input, &ToolContext::for_test("bash")).await {
        Ok(out) => json!({"ok": out.value}),
        Err(e) => json!({"code": e.code(), "message": e.message()}),
    }
}

#[test]
fn the_probe_sees_no_landlock_openat2_or_namespaces() {
    if !degraded_child("the_probe_sees_no_landlock_openat2_or_namespaces") {
        return;
    }
    let caps = Capabilities::detect_with(Some(&common::helper()));
    eprintln!("{}", serde_json::to_string(&caps).unwrap());
    assert_eq!(caps.landlock_abi, None, "{caps:?}");
    assert!(!caps.openat2, "{caps:?}");
    assert!(
        !caps.user_namespaces && !caps.net_namespaces && !caps.pid_namespaces,
        "{caps:?}"
    );
    assert!(caps.seccomp, "seccomp itself stays available: {caps:?}");
    let report = caps.report(&SandboxPolicy::new("/w"));
    let enforced = |name: &str| report.iter().find(|l| l.name == name).unwrap().enforced;
    assert!(!enforced("filesystem writes"));
    assert!(!enforced("process tree kill"));
    assert!(enforced("network"), "seccomp still turns the network off");
}

/// Every fs attack still fails without openat2 (cap-std walks the path itself) and without
/// Landlock: every test of the `fs_attacks` module, including the symlink-swap races, run by
/// this binary under `degrade`. Its `openat2_is_gone_under_degrade` test checks that the
/// fallback really was in use.
#[test]
fn the_fs_attack_suite_passes_under_degrade() {
    if common::degraded() {
        return;
    }
    if !Capabilities::detect_with(None).seccomp {
        eprintln!("SKIPPED fs attacks under degrade: seccomp is not available on this machine");
        return;
    }
    let binary = std::env::current_exe().unwrap();
    let start = Instant::now();
    // The tests whose path starts with the module's name (`mod fs_attacks` in main.rs).
    let out = common::run_degraded(
        &binary,
        &["fs_attacks::", "--nocapture"],
        Duration::from_secs(90),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "--- {} under degrade ({:?}):\n{stdout}{stderr}---",
        binary.display(),
        start.elapsed()
    );
    assert!(
        out.status.success(),
        "fs attacks under degrade: {}",
        out.status
    );
    let (passed, failed) = common::libtest_summary(&stdout).expect("a libtest summary");
    assert_eq!(failed, 0);
    assert!(passed >= 12, "only {passed} fs attack tests ran");
    assert!(
        stdout.contains("openat2_is_gone_under_degrade ... ok"),
        "the resolver check did not run"
    );
}

/// Fail-closed (the default) refuses to launch, naming the missing layer, through the launcher
/// and through the `bash` tool.
#[tokio::test]
async fn fail_closed_refuses_with_sandbox_unavailable() {
    if !degraded_child("fail_closed_refuses_with_sandbox_unavailable") {
        return;
    }
    let (_dir, root) = root();
    let l = launcher(policy(&root, |_| {}));
    let request = ExecRequest::new("true", vec![], &root);
    let err = l.run(&request).await.unwrap_err();
    eprintln!("launcher: {err}");
    assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
    assert!(err.to_string().contains("filesystem (Landlock)"), "{err}");

    // Loopback-only needs a network namespace; that is the first layer missing.
    let l = launcher(policy(&root, |p| p.network = NetworkPolicy::LoopbackOnly));
    let err = l.run(&request).await.unwrap_err();
    eprintln!("launcher (loopback-only): {err}");
    assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
    assert!(err.to_string().contains("network namespace"), "{err}");

    // The bash tool finds the helper and probes the machine on its own.
    let ws = Workspace::new(policy(&root, |_| {})).unwrap();
    let out = call_bash(&ws, json!({"cmd": "touch", "args": ["made"]})).await;
    eprintln!("bash: {out}");
    assert_eq!(out["code"], "SANDBOX_UNAVAILABLE", "{out}");
    let message = out["message"].as_str().unwrap();
    assert!(message.contains("Landlock"), "{out}");
    assert!(!root.join("made").exists(), "the command ran");
}

/// Best-effort runs without the missing layers and says so; network-off still blocks TCP to a
/// listener on 127.0.0.1 (seccomp's socket-family filter is the only layer left), and the
/// missing Landlock is real (a write outside the root lands).
#[tokio::test]
async fn best_effort_runs_with_warnings_and_the_network_stays_off() {
    if !degraded_child("best_effort_runs_with_warnings_and_the_network_stays_off")
        || !require("python3", python())
    {
        return;
    }
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let port = tcp.local_addr().unwrap().port();
    let (_dir, root) = root();
    let (_outside_dir, outside) = self::root();
    let connect = format!(
        "import socket\n\
         try:\n s=socket.create_connection(('127.0.0.1',{port}),timeout=3); print('TCP-CONNECTED')\n\
         except Exception as e: print('tcp', e)\n"
    );

    let best_effort = |p: &mut SandboxPolicy| p.strictness = Strictness::BestEffort;
    let l = launcher(policy(&root, best_effort));
    let out = run(&l, PYTHON, &["-c", &connect]).await;
    eprintln!("network off: {out:?}");
    assert!(!out.stdout.contains("TCP-CONNECTED"), "{out:?}");
    assert!(out.stdout.contains("tcp "), "{out:?}");
    assert!(tcp.accept().is_err(), "the listener saw a connection");
    let warnings = out.warnings.join("\n");
    assert!(warnings.contains("filesystem (Landlock)"), "{warnings}");
    assert!(warnings.contains("no pid namespace"), "{warnings}");

    let target = outside.join("written");
    let out = run(&l, "touch", &[target.to_str().unwrap()]).await;
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert!(target.exists(), "Landlock was enforced after all");

    // Positive control: the same probe connects when the policy allows the network.
    let l = launcher(policy(&root, |p| {
        best_effort(p);
        p.network = NetworkPolicy::Full;
    }));
    let out = run(&l, PYTHON, &["-c", &connect]).await;
    assert!(out.stdout.contains("TCP-CONNECTED"), "{out:?}");

    // Through the bash tool: the app value carries the warnings.
    let ws = Workspace::new(policy(&root, best_effort)).unwrap();
    let out = call_bash(&ws, json!({"cmd": "echo", "args": ["hi"]})).await;
    eprintln!("bash: {out}");
    assert_eq!(out["ok"]["stdout"], "hi\n", "{out}");
    let warnings = out["ok"]["warnings"].to_string();
    assert!(warnings.contains("filesystem (Landlock)"), "{out}");
}

/// Without Landlock and namespaces (best effort), seccomp still refuses set-ID bits, the git
/// snapshot still undoes a planted `.git`, and the warnings name what is missing.
#[tokio::test]
async fn privileges_and_git_undo_hold_without_namespaces() {
    if !degraded_child("privileges_and_git_undo_hold_without_namespaces") {
        return;
    }
    let (_dir, root) = root();
    let l = launcher(policy(&root, |p| p.strictness = Strictness::BestEffort));
    let out = run(
        &l,
        "sh",
        &["-c", "cp /bin/sh x; chmod 4755 x; echo chmod=$?"],
    )
    .await;
    assert_eq!(out.stdout, "chmod=1\n", "{out:?}");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(root.join("x")).unwrap().mode() & 0o6000,
        0
    );
    let warnings = out.warnings.join("\n");
    assert!(
        warnings.contains(
            "sandbox layer not enforced: git protection (mount namespace): no mount namespace"
        ),
        "{warnings}"
    );
    assert!(
        warnings.contains(
            "no private /proc (no pid namespace): other processes' command lines are readable"
        ),
        "{warnings}"
    );
    assert!(!warnings.contains("privilege filter"), "{warnings}");

    let out = run(
        &l,
        "sh",
        &[
            "-c",
            "mkdir .git && printf '[core]\\n\\tfsmonitor = x\\n' > .git/config",
        ],
    )
    .await;
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert_eq!(
        out.undone,
        [
            "commands cannot change what git runs for you (git protection); the change to .git \
          was undone"
        ]
    );
    assert!(!root.join(".git").exists());
}

/// Without a pid namespace the timeout still kills background grandchildren (process-group
/// kill).
#[tokio::test]
async fn without_a_pid_namespace_the_process_group_still_dies() {
    if !degraded_child("without_a_pid_namespace_the_process_group_still_dies") {
        return;
    }
    let (_dir, root) = root();
    let l = launcher(policy(&root, |p| {
        p.strictness = Strictness::BestEffort;
        p.limits.timeout = Duration::from_secs(1);
    }));
    let start = Instant::now();
    let out = run(&l, "sh", &["-c", "sleep 323.9 & sleep 300"]).await;
    assert!(out.timed_out, "{out:?}");
    assert!(start.elapsed() < Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(survivors("323.9"), 0, "a background grandchild survived");
}

/// Without a pid namespace a background grandchild can outlive the command and hold its output
/// pipes: the launch still ends a grace period after the command, with the command's output and
/// exit code, not as a timeout, and the grandchild dies with the process group.
#[tokio::test]
async fn a_grandchild_holding_the_pipes_is_cut_off_after_the_grace_period() {
    if !degraded_child("a_grandchild_holding_the_pipes_is_cut_off_after_the_grace_period") {
        return;
    }
    let (_dir, root) = root();
    let l = launcher(policy(&root, |p| {
        p.strictness = Strictness::BestEffort;
        p.limits.timeout = Duration::from_secs(30);
    }));
    let start = Instant::now();
    let out = run(
        &l,
        "sh",
        &["-c", "echo before; sleep 321.7 & echo after; exit 4"],
    )
    .await;
    assert!(!out.timed_out, "{out:?}");
    assert_eq!(out.exit_code, 4, "{out:?}");
    assert_eq!(out.stdout, "before\nafter\n", "{out:?}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(survivors("321.7"), 0, "a background grandchild survived");
}
