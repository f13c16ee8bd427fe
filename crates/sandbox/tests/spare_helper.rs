//! The helper a launcher starts ahead of its next launch (the *spare*): it serves that launch,
//! waits in a session of its own, is replaced when it died, and dies with its launcher.
//!
//! The tests look at this process' children in `/proc`, so they take turns. Alone in its
//! binary, not a module of `tests/it`: every launcher keeps a spare helper, and these tests
//! take every helper child of the process for theirs (they count them, and kill them), so the
//! other sandbox tests' launchers in the same process would break them and be broken. It shares
//! `tests/it/common` with them.

#[path = "it/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use toolsmith_sandbox::SandboxPolicy;
use toolsmith_sandbox::exec::{ExecRequest, Launcher};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn launcher(root: &std::path::Path) -> Launcher {
    Launcher::new(common::helper(), SandboxPolicy::new(root))
}

fn echo(root: &std::path::Path, text: &str) -> ExecRequest {
    ExecRequest::new("echo", vec![text.into()], root)
}

/// This process' children that are sandbox helpers (`comm` is cut to 15 bytes), with their
/// `/proc/<pid>/stat` fields after the command name: state, ppid, pgrp, session, ….
fn helpers() -> Vec<(u32, Vec<String>)> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let fields: Vec<String> = stat[close + 1..]
            .split_whitespace()
            .map(String::from)
            .collect();
        if comm.starts_with("toolsmith-sandb") && fields.get(1) == Some(&me) {
            found.push((pid, fields));
        }
    }
    found
}

/// The helpers waiting (sleeping, not yet in a pid namespace of their own) once one exists.
fn wait_for_spares() -> BTreeSet<u32> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let spares: BTreeSet<u32> = helpers()
            .into_iter()
            .filter(|(_, fields)| fields[0] == "S")
            .map(|(pid, _)| pid)
            .collect();
        if !spares.is_empty() || Instant::now() > until {
            return spares;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether `pid` has exited and waits to be reaped.
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rfind(')')
                .map(|i| stat[i + 1..].trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

#[tokio::test]
async fn a_spare_waits_in_its_own_session_and_serves_the_next_launch() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let launcher = launcher(&root);
    assert_eq!(
        launcher.run(&echo(&root, "one")).await.unwrap().stdout,
        "one\n"
    );
    let spares = wait_for_spares();
    assert_eq!(spares.len(), 1, "one spare after a launch: {:?}", helpers());
    let spare = *spares.first().unwrap();
    let fields = helpers().into_iter().find(|(p, _)| *p == spare).unwrap().1;
    // A session (and process group) of its own: a Ctrl-C on the terminal does not reach it.
    assert_eq!(fields[2], spare.to_string(), "process group");
    assert_eq!(fields[3], spare.to_string(), "session");

    let out = launcher.run(&echo(&root, "two")).await.unwrap();
    assert_eq!((out.exit_code, out.stdout.as_str()), (0, "two\n"));
    let until = Instant::now() + Duration::from_secs(5);
    while alive(spare) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!alive(spare), "the spare ran the second launch and exited");
}

#[tokio::test]
async fn a_spare_that_died_is_replaced_by_a_fresh_helper() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let launcher = launcher(&root);
    launcher.run(&echo(&root, "one")).await.unwrap();
    let spares = wait_for_spares();
    assert!(!spares.is_empty());
    for pid in &spares {
        let pid = rustix::process::Pid::from_raw(*pid as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    }
    // Dead: its files closed, so the plan cannot be sent to it. (A spare killed while its plan
    // is on the way dies as a command killed by SIGKILL would, and is reported so.)
    let until = Instant::now() + Duration::from_secs(5);
    while spares.iter().any(|p| alive(*p) && !zombie(*p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    let out = launcher.run(&echo(&root, "after")).await.unwrap();
    assert_eq!((out.exit_code, out.stdout.as_str()), (0, "after\n"));
}

#[tokio::test]
async fn dropping_the_launcher_kills_and_reaps_its_spare() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let launcher = launcher(&root);
    launcher.run(&echo(&root, "one")).await.unwrap();
    let spares = wait_for_spares();
    assert!(!spares.is_empty());
    drop(launcher);
    let until = Instant::now() + Duration::from_secs(5);
    while spares.iter().any(|p| alive(*p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Gone from /proc: killed and reaped (a zombie would still be listed).
    assert!(!spares.iter().any(|p| alive(*p)), "{:?}", helpers());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_launches_each_get_a_helper() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let launcher = std::sync::Arc::new(launcher(&root));
    for round in 0..3 {
        let runs: Vec<_> = (0..6)
            .map(|i| {
                let (launcher, root) = (launcher.clone(), root.clone());
                tokio::spawn(async move {
                    let text = format!("{round}-{i}");
                    let out = launcher.run(&echo(&root, &text)).await.unwrap();
                    assert_eq!(out.stdout, format!("{text}\n"));
                })
            })
            .collect();
        for run in runs {
            run.await.unwrap();
        }
    }
}
