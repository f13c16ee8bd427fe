//! Every write point, killed: the binary the tests run has crash points
//! (`TOOLSMITH_CRASH_POINT=N` kills it with SIGKILL at its `N`th store write boundary, just
//! before or just after the write; `toolsmith_store::crash_points`). A run that reads, makes
//! a counting side effect (`bash`, not idempotent) and pauses for an approval, then its
//! resumption, are each killed at every point they reach, one point per thread; every thread is
//! then resumed to its end and checked: every call has exactly one result, the run finished,
//! no side effect happened twice and no non-idempotent call was attempted twice. On SQLite and
//! on a real PostgreSQL server.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use toolsmith::store::{Store, ThreadStatus};

use crate::cli_crash::{
    check_thread, model, pg_server, run_killed, sqlite_in, toolsmith_leased, workspace,
};
use crate::common::serve_with;

/// A lease long enough that no heartbeat write falls inside a run (the points stay the same
/// from one run to the next); a killed holder is known to be gone, so nothing waits for it.
const LEASE_SECS: f64 = 5.0;

/// A first run (`resume == false`, left paused on the approval) or a resumption of `thread`,
/// killed at `point` if given, its points listed in `log` if given.
fn command(
    base: &str,
    db: &str,
    root: &Path,
    thread: &str,
    resume: bool,
    point: Option<u64>,
    log: Option<&Path>,
) -> Command {
    let mut command = toolsmith_leased(base, db, root, thread, resume, LEASE_SECS);
    if let Some(point) = point {
        command.env("TOOLSMITH_CRASH_POINT", point.to_string());
    }
    if let Some(log) = log {
        command.env("TOOLSMITH_CRASH_POINTS_LOG", log);
    }
    command
}

/// The points a log lists, in order.
fn points(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|line| line.split_once(' ').unwrap().1.to_string())
        .collect()
}

/// Resumes `thread` until it is finished (starting it again when the kill came before its
/// prompt was stored).
async fn finish(store: &dyn Store, base: &str, db: &str, root: &Path, thread: &str) {
    for attempt in 0..10 {
        let found = store.thread(thread).await.unwrap();
        let resume = match &found {
            None => false,
            Some(t) if t.message_count == 0 => false,
            Some(t) if t.status == ThreadStatus::Idle => return,
            Some(_) => true,
        };
        let out = run_killed(command(base, db, root, thread, resume, None, None), None).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            // Only a run that crashed between its prompt's save and its claim is held by
            // nobody known to be gone: its lease must pass.
            assert!(
                stderr.contains("another process"),
                "thread {thread}, attempt {attempt}: {stderr}"
            );
            std::thread::sleep(Duration::from_secs_f64(LEASE_SECS + 0.1));
        }
    }
    panic!("thread {thread} never finished");
}

/// Walks every point of a first run and of a resumption on `db`.
async fn walk(db: &str) {
    let base = serve_with(model);
    let store = toolsmith::store::open(db).await.unwrap();
    let dir = tempfile::tempdir().unwrap();

    // The points, from a run and a resumption that are not killed.
    let root = workspace(dir.path(), "ws-count");
    let (first_log, resume_log) = (dir.path().join("first"), dir.path().join("resume"));
    for (resume, log) in [(false, &first_log), (true, &resume_log)] {
        let run = command(&base, db, &root, "count", resume, None, Some(log));
        let out = run_killed(run, None).unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    check_thread(&*store, "count", &root).await;
    let phases = [
        ("first", points(&first_log)),
        ("resume", points(&resume_log)),
    ];
    for (phase, points) in &phases {
        assert!(
            points.iter().any(|p| p == "after commit") && points.len() >= 6,
            "{phase}: {points:?}"
        );
    }

    let mut killed = 0;
    let mut total = 0;
    let mut journal: BTreeMap<String, u32> = BTreeMap::new();
    for (phase, points) in &phases {
        for (index, name) in points.iter().enumerate() {
            let n = index as u64 + 1;
            total += 1;
            let thread = format!("{phase}-{n}");
            let root = workspace(dir.path(), &format!("ws-{thread}"));
            let resume = *phase == "resume";
            if resume {
                let paused = command(&base, db, &root, &thread, false, None, None);
                assert!(run_killed(paused, None).unwrap().status.success());
            }
            let run = command(&base, db, &root, &thread, resume, Some(n), None);
            let out = run_killed(run, None).unwrap();
            if out.status.signal() == Some(9) {
                killed += 1;
            } else {
                eprintln!("{db}: {phase} point {n} ({name}) was not reached this time");
            }
            finish(&*store, &base, db, &root, &thread).await;
            check_thread(&*store, &thread, &root).await;
            for entry in store.journal(&thread).await.unwrap() {
                *journal
                    .entry(format!("{} {}", entry.tool_name, entry.status.as_str()))
                    .or_default() += 1;
            }
        }
    }
    eprintln!(
        "{db}: {killed} of {total} points killed ({} in a first run, {} in a resumption); \
         journal after resuming: {journal:?}",
        phases[0].1.len(),
        phases[1].1.len()
    );
    // The points of a run are the same from one run to the next (no heartbeat, no timer
    // writes): nearly every one is reached when asked for.
    assert!(killed * 10 >= total * 9, "{killed} of {total}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_runs_survive_sigkill_at_every_write_point() {
    let dir = tempfile::tempdir().unwrap();
    walk(&sqlite_in(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_runs_survive_sigkill_at_every_write_point() {
    let Some(server) = pg_server::PgServer::start() else {
        return;
    };
    walk(&server.database().await).await;
}
