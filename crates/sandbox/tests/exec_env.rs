//! The runtime's environment does not reach sandboxed commands (one test: this process sets a
//! variable, so nothing else may run concurrently in it).

mod common;

use std::time::Duration;

use toolsmith_sandbox::exec::{ExecRequest, Launcher};
use toolsmith_sandbox::{Capabilities, SandboxPolicy};

#[allow(unsafe_code)]
#[tokio::test]
async fn the_runtimes_environment_is_not_visible() {
    // SAFETY: the only test in this binary, and it sets the variable before any other thread of
    // ours reads the environment.
    unsafe { std::env::set_var("TOOLSMITH_TEST_SECRET", "hunter2") };
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
