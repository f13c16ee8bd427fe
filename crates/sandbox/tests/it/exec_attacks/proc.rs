//! `/proc` shows the sandbox only its own processes: a marker process the test starts, whose
//! command line carries a secret, is invisible (private `/proc`) or unreadable (the Landlock
//! fallback).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use toolsmith_sandbox::exec::Launcher;
use toolsmith_sandbox::{Capabilities, SandboxPolicy};

use crate::common::{caps, helper, landlock, require, run};

/// A `sleep 30` whose `argv[0]` is a secret only this test knows, killed on drop.
struct Marker {
    child: Child,
    secret: String,
}

impl Marker {
    fn start(tag: &str) -> Marker {
        let secret = format!("toolsmith-secret-{tag}-{}", std::process::id());
        let child = Command::new("sleep")
            .arg0(&secret)
            .arg("30")
            .spawn()
            .unwrap();
        let marker = Marker { child, secret };
        // The test could fail: the host's /proc shows the secret (once the child has exec'd).
        let path = format!("/proc/{}/cmdline", marker.pid());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            let cmdline = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            if cmdline.contains(&marker.secret) {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{cmdline:?}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        marker
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn with_caps(root: &std::path::Path, caps: Capabilities) -> Launcher {
    let mut policy = SandboxPolicy::new(root.canonicalize().unwrap());
    policy.limits.timeout = std::time::Duration::from_secs(10);
    Launcher::with_capabilities(helper(), policy, caps)
}

#[tokio::test]
async fn a_private_proc_shows_only_the_sandboxs_processes() {
    let private = caps().private_proc
        && caps().pid_namespaces
        && (caps().user_namespaces || caps().running_as_root);
    if !require(
        "private /proc (pid + mount namespace, procfs mount)",
        private,
    ) {
        return;
    }
    let marker = Marker::start("private");
    let root = tempfile::tempdir().unwrap();
    let l = with_caps(root.path(), caps().clone());
    let script = format!(
        "ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '; echo; \
         cat /proc/*/cmdline | tr '\\0' ' '; echo; \
         cat /proc/{}/cmdline; echo rc=$?",
        marker.pid()
    );
    let out = run(&l, "sh", &["-c", &script]).await;
    assert!(!out.stdout.contains(&marker.secret), "{out:?}");
    let mut lines = out.stdout.lines();
    // PID 1 is the shell; the others are its pipeline: nothing from the host.
    let pids: Vec<u32> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.first(), Some(&1), "{out:?}");
    assert!(pids.iter().all(|p| *p < 16), "{pids:?}");
    assert!(
        lines.next().unwrap().starts_with("sh -c ls /proc"),
        "{out:?}"
    );
    assert_eq!(lines.next(), Some("rc=1"), "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "/proc/{}/cmdline: No such file or directory",
            marker.pid()
        )),
        "{out:?}"
    );
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

/// Without a private `/proc` (no pid namespace, or the procfs mount refused), Landlock limits
/// `/proc` to the command's own entry and the system files: the marker's command line is
/// unreadable, the command's own `/proc/self` and `/proc/cpuinfo` are not.
#[tokio::test]
async fn without_a_private_proc_landlock_limits_proc_to_the_command() {
    if !require("landlock /proc narrowing", landlock()) {
        return;
    }
    let marker = Marker::start("fallback");
    let root = tempfile::tempdir().unwrap();
    let refused = Capabilities {
        private_proc: false,
        ..caps().clone()
    };
    let no_pidns = Capabilities {
        pid_namespaces: false,
        private_proc: false,
        ..caps().clone()
    };
    for (what, caps) in [
        ("procfs mount refused", refused),
        ("no pid namespace", no_pidns),
    ] {
        let l = with_caps(root.path(), caps);
        let cmdline = format!("/proc/{}/cmdline", marker.pid());
        let environ = format!("/proc/{}/environ", marker.pid());
        let out = run(
            &l,
            "cat",
            &["/proc/self/status", &cmdline, &environ, "/proc/cpuinfo"],
        )
        .await;
        assert!(!out.stdout.contains(&marker.secret), "{what}: {out:?}");
        assert_eq!(out.exit_code, 1, "{what}: {out:?}");
        assert!(out.stdout.starts_with("Name:\tcat\n"), "{what}: {out:?}");
        assert!(out.stdout.contains("processor"), "{what}: {out:?}");
        assert_eq!(
            out.stderr,
            format!("cat: {cmdline}: Permission denied\ncat: {environ}: Permission denied\n"),
            "{what}"
        );
        assert!(
            out.warnings
                .iter()
                .any(|w| w.starts_with("no private /proc (") && w.contains("own entry")),
            "{what}: {:?}",
            out.warnings
        );
    }
}
