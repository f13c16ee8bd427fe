//! The files `toolsmith run` leaves on the host: a new SQLite store is private (0600) under the
//! usual umask 022, an existing readable one is reported, and the private temporary directory
//! of a run killed with SIGKILL is removed by the next run.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::serve_with;
use serde_json::json;

/// A scripted model that answers at once.
fn script(dir: &Path) -> String {
    let path = dir.join("script.json");
    std::fs::write(&path, json!([{"text": "Hello."}]).to_string()).unwrap();
    format!("scripted:{}", path.display())
}

/// `toolsmith run` under `sh -c 'umask 022; exec …'`, with `args`.
fn run_umask_022(args: &[&str]) -> Output {
    Command::new("sh")
        .args(["-c", "umask 022 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_toolsmith"))
        .arg("run")
        .args(args)
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        .env("TOOLSMITH_SECRET_KEY", "5a".repeat(32))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_new_sqlite_store_is_0600_under_umask_022() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let out = run_umask_022(&[
        "--model",
        &script(dir.path()),
        "--db",
        &format!("sqlite:{}", db.display()),
        "hi",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mode(&db), 0o600);
    // The WAL and shared-memory files, if SQLite left them, have the database's mode.
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("runs.db") {
            assert_eq!(mode(&entry.path()), 0o600, "{name}");
        }
    }
    // A file made under the same umask is 0644: the test means something.
    let made = Command::new("sh")
        .args(["-c", "umask 022 && : > \"$0\""])
        .arg(dir.path().join("probe"))
        .status()
        .unwrap();
    assert!(made.success());
    assert_eq!(mode(&dir.path().join("probe")), 0o644);
}

#[test]
fn an_existing_store_keeps_its_mode_and_a_readable_one_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    std::fs::write(&db, b"").unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = run_umask_022(&[
        "--model",
        &script(dir.path()),
        "--db",
        &format!("sqlite:{}", db.display()),
        "hi",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(mode(&db), 0o644);
    assert!(
        stderr.contains(&format!(
            "the database {} can be read by other users (mode 0644): it holds every stored \
             thread; `chmod 600` it unless that is meant",
            db.display()
        )),
        "{stderr}"
    );
}

/// The entries of `tmp` named for process `pid`.
fn dirs_of(tmp: &Path, pid: u32) -> Vec<PathBuf> {
    let prefix = format!("toolsmith-{pid}-");
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

#[test]
fn the_temp_dir_of_a_killed_run_is_removed_by_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // A model that never answers: the first run waits until it is killed.
    let base = serve_with(|_| {
        std::thread::sleep(Duration::from_secs(60));
        String::new()
    });
    let mut first = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args([
            "run",
            "--model",
            "openai:gpt-x",
            "--base-url",
            &base,
            "--json",
        ])
        .arg("--root")
        .arg(work.path())
        .arg("hi")
        .env("TMPDIR", tmp.path())
        .env("OPENAI_API_KEY", "sk-test-key")
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = first.id();
    let started = Instant::now();
    while dirs_of(tmp.path(), pid).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the run made no temp dir"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    first.kill().unwrap(); // SIGKILL: nothing is cleaned up
    first.wait().unwrap();
    let left = dirs_of(tmp.path(), pid);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(mode(&left[0]), 0o700);

    let second = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["run", "--model", &script(work.path()), "hi"])
        .arg("--root")
        .arg(work.path())
        .env("TMPDIR", tmp.path())
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert_eq!(dirs_of(tmp.path(), pid), Vec::<PathBuf>::new());
    assert!(!left[0].exists());
}
