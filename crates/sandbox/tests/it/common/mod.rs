//! Shared by the sandbox's integration tests: where the helper is, what this machine's sandbox
//! can enforce (and the skip lines when it cannot), launching a command and counting what it
//! left running, how to run a test binary under the helper's `degrade` mode, and what a test is
//! called in it. The `spare_helper` test binary includes this module too and uses only the
//! helper, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use toolsmith_sandbox::Capabilities;
use toolsmith_sandbox::exec::{ExecOutput, ExecRequest, HelperCommand, Launcher};

/// The Python the attacks' scripts run with.
pub const PYTHON: &str = "/usr/bin/python3";

/// Names the helper explicitly (`scripts/attack-suite.sh` points it at a copy another user can
/// run); the launcher's own [`HelperCommand::locate`] honours it too.
pub const HELPER_ENV: &str = "TOOLSMITH_SANDBOX_HELPER";

/// Set to `1` in processes started under `degrade` by [`run_degraded`].
pub const DEGRADED_ENV: &str = "TOOLSMITH_TEST_DEGRADED";

/// The helper built with these tests, or `$TOOLSMITH_SANDBOX_HELPER`.
pub fn helper_path() -> PathBuf {
    match std::env::var_os(HELPER_ENV) {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_BIN_EXE_toolsmith-sandbox-exec")),
    }
}

/// [`helper_path`] as a [`HelperCommand`].
pub fn helper() -> HelperCommand {
    HelperCommand::new(helper_path())
}

/// What this machine's sandbox can enforce, probed once with [`helper`].
pub fn caps() -> &'static Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(|| Capabilities::detect_with(Some(&helper())))
}

/// Whether the machine has what `what` needs; prints the skip reason otherwise.
pub fn require(what: &str, ok: bool) -> bool {
    if !ok {
        eprintln!(
            "SKIPPED {what}: not available on this machine ({:?})",
            caps()
        );
    }
    ok
}

/// Whether Landlock is here.
pub fn landlock() -> bool {
    caps().landlock_abi.is_some()
}

/// Whether [`PYTHON`] is installed.
pub fn python() -> bool {
    Path::new(PYTHON).exists()
}

/// Runs `program args` in the launcher's root; the launch must succeed.
pub async fn run(launcher: &Launcher, program: &str, args: &[&str]) -> ExecOutput {
    let root = launcher.policy().root.clone();
    let request = ExecRequest::new(program, args.iter().map(|s| s.to_string()).collect(), root);
    launcher.run(&request).await.expect("the launch succeeds")
}

/// Runs `sh -c script` in the launcher's root; the launch must succeed.
pub async fn sh(launcher: &Launcher, script: &str) -> ExecOutput {
    run(launcher, "sh", &["-c", script]).await
}

/// Processes whose command line contains `token`, anywhere on the machine.
pub fn survivors(token: &str) -> usize {
    let mut count = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let mut cmdline = Vec::new();
        if let Ok(mut f) = std::fs::File::open(entry.path().join("cmdline")) {
            let _ = f.read_to_end(&mut cmdline);
        }
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(token) {
            count += 1;
        }
    }
    count
}

/// Whether this process was started under `degrade` by [`run_degraded`].
pub fn degraded() -> bool {
    std::env::var_os(DEGRADED_ENV).is_some_and(|v| v == "1")
}

/// Runs `program args` as `helper degrade -- program args`, with [`DEGRADED_ENV`]` = 1` and
/// [`HELPER_ENV`] set (the rest of the environment is inherited). Killed after `limit`.
pub fn run_degraded(program: &Path, args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(helper_path())
        .arg("degrade")
        .arg("--")
        .arg(program)
        .args(args)
        .env(DEGRADED_ENV, "1")
        .env(HELPER_ENV, helper_path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", helper_path().display()));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{} did not finish within {limit:?}", program.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// `(passed, failed)` from libtest's `test result: ok. 3 passed; 0 failed; …` line.
pub fn libtest_summary(stdout: &str) -> Option<(u32, u32)> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("test result:"))?;
    let count = |word: &str| {
        line.split(';')
            .find_map(|part| part.trim().strip_suffix(word))
            .and_then(|n| n.trim().rsplit(' ').next()?.parse().ok())
    };
    Some((count(" passed")?, count(" failed")?))
}

/// The name libtest gives the test function `name` of the module whose [`module_path!`] is
/// `module`: the path without the crate's own name (`it::degraded` gives `degraded::name`), for
/// running that one test again with `--exact`.
pub fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}
