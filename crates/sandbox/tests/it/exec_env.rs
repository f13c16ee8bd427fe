//! The runtime's environment does not reach sandboxed commands. The variable that must not get
//! through is in the environment of a process the test starts, this binary running only this
//! test: set in this process, it would race the other tests' threads reading the environment.

use std::process::Command;
use std::time::Duration;

use toolsmith_sandbox::exec::{ExecRequest, Launcher};
use toolsmith_sandbox::{Capabilities, SandboxPolicy};

use crate::common;

/// The runtime's variable, set only in the process that runs the test's body.
const SECRET_ENV: &str = "TOOLSMITH_TEST_SECRET";

#[tokio::test]
async fn the_runtimes_environment_is_not_visible() {
    if std::env::var_os(SECRET_ENV).is_none() {
        let name = common::test_name(module_path!(), "the_runtimes_environment_is_not_visible");
        let out = Command::new(std::env::current_exe().unwrap())
            .args([name.as_str(), "--exact", "--nocapture"])
            .env(SECRET_ENV, "hunter2")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}\n{stdout}{stderr}", out.status);
        assert_eq!(common::libtest_summary(&stdout), Some((1, 0)), "{stdout}");
        return;
    }
    let helper = common::helper();
    let caps = Capabilities::detect_with(Some(&helper));
    let root = tempfile::tempdir().unwrap();
    let mut policy = SandboxPolicy::new(root.path().canonicalize().unwrap());
    policy.limits.timeout = Duration::from_secs(10);
    policy.env.set.push(("EXPLICIT".into(), "yes".into()));
    let launcher = Launcher::with_capabilities(helper, policy, caps);
    let request = ExecRequest::new(
        "sh",
        vec![
            "-c".into(),
            "env; cat /proc/$PPID/environ 2>/dev/null".into(),
        ],
        root.path().canonicalize().unwrap(),
    );
    let out = launcher.run(&request).await.unwrap();
    assert!(!out.stdout.contains("hunter2"), "{out:?}");
    assert!(out.stdout.contains("EXPLICIT=yes"), "{out:?}");
    assert!(out.stdout.contains(&format!(
        "HOME={}",
        root.path().canonicalize().unwrap().display()
    )));
}
