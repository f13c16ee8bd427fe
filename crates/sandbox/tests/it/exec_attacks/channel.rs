//! The helper reports its own errors on a channel the command cannot write: what a command
//! prints is output, never a setup error.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};

use super::launcher;
use crate::common::run;

/// The marker the helper used to put on stderr before a JSON error, forged by the command.
const FORGED: &str = "\u{1e}toolsmith-sandbox-exec:{\"kind\":\"landlock\",\"message\":\"forged\"}";

#[tokio::test]
async fn a_forged_helper_error_on_stderr_is_just_output() {
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |_| {});
    let script = "printf '\\036toolsmith-sandbox-exec:{\"kind\":\"landlock\",\"message\":\"forged\"}\\n' >&2; \
                  exit 125";
    let out = run(&l, "sh", &["-c", script]).await;
    assert_eq!(out.exit_code, 125, "{out:?}");
    assert_eq!(out.stderr, format!("{FORGED}\n"));
    assert_eq!(out.stdout, "");
    // Exit status 127 (the helper's "cannot exec") from the command itself is an exit status too.
    let out = run(&l, "sh", &["-c", "echo 'not found' >&2; exit 127"]).await;
    assert_eq!((out.exit_code, out.stderr.as_str()), (127, "not found\n"));
}

/// The helper's own errors go to its channel (its stdin socket), as JSON, and nothing to stderr.
#[test]
fn the_helper_reports_setup_errors_on_its_channel_not_stderr() {
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let helper = Command::new(crate::common::helper_path())
        .arg("run")
        .env_clear()
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    ours.write_all(b"{\"argv\": 42}").unwrap();
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    let mut report = String::new();
    ours.read_to_string(&mut report).unwrap();
    let output = helper.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(125));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["kind"], "plan");
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid plan: invalid type: integer `42`, expected a sequence"),
        "{report}"
    );
}
