//! Spawn overhead of the sandbox: `true` through the launcher vs a plain spawn (interleaved,
//! median of 200). Ignored by default; run with
//! `cargo test --release -p toolsmith-sandbox --test it -- exec_overhead:: --ignored --nocapture`.

use std::time::{Duration, Instant};

use toolsmith_sandbox::exec::{ExecRequest, HelperCommand, Launcher};
use toolsmith_sandbox::{Capabilities, SandboxPolicy};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::test]
#[ignore = "a measurement, not a check"]
async fn spawn_overhead() {
    let helper = HelperCommand::new(env!("CARGO_BIN_EXE_toolsmith-sandbox-exec"));
    let caps = Capabilities::detect_with(Some(&helper));
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let launcher = Launcher::with_capabilities(helper, SandboxPolicy::new(&root), caps.clone());
    let mut no_pidns = caps;
    no_pidns.pid_namespaces = false;
    let launcher_no_pidns = Launcher::with_capabilities(
        HelperCommand::new(env!("CARGO_BIN_EXE_toolsmith-sandbox-exec")),
        SandboxPolicy::new(&root),
        no_pidns,
    );
    let request = ExecRequest::new("true", vec![], &root);
    let (mut plain, mut sandboxed, mut sandboxed_no_pidns) = (vec![], vec![], vec![]);
    for _ in 0..200 {
        let start = Instant::now();
        let status = tokio::process::Command::new("true")
            .current_dir(&root)
            .output()
            .await
            .unwrap();
        assert!(status.status.success());
        plain.push(start.elapsed());

        let start = Instant::now();
        assert_eq!(launcher.run(&request).await.unwrap().exit_code, 0);
        sandboxed.push(start.elapsed());

        let start = Instant::now();
        assert_eq!(launcher_no_pidns.run(&request).await.unwrap().exit_code, 0);
        sandboxed_no_pidns.push(start.elapsed());
    }
    let (p, s, n) = (median(plain), median(sandboxed), median(sandboxed_no_pidns));
    eprintln!("plain spawn of `true`:             median {p:?}");
    eprintln!(
        "sandboxed (all layers + pidns):    median {s:?} (+{:?})",
        s.saturating_sub(p)
    );
    eprintln!(
        "sandboxed (all layers, no pidns):  median {n:?} (+{:?})",
        n.saturating_sub(p)
    );
}
