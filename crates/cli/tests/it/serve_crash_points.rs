//! Every write point of the service, killed: `toolsmith serve` (the test build, with crash
//! points: `toolsmith_store::crash_points`) is killed with SIGKILL at each store write boundary
//! it reaches — starting up, recording a run's event, claiming its thread, each step of the
//! journal protocol, the event's end — while it runs a background run that reads, makes a
//! counting side effect (`bash`, not idempotent) and writes a file. Another `toolsmith serve` is
//! then started on the same database: it takes the interrupted run over (or the request is sent
//! again, as a client whose request failed would), and the run completes with one result per
//! call, no side effect twice and no non-idempotent call attempted twice. On SQLite and on a
//! real PostgreSQL server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolsmith::store::{Store, ThreadQuery};

use crate::cli_crash::{check_thread, model, pg_server};
use crate::cli_serve::{spawn_serve, toolsmith};
use crate::common::serve_with;

/// `toolsmith serve` on `db`, with `env` set: the process and its URL (an error when it died
/// before it listened).
fn serve(dir: &Path, db: &str, env: &[(&str, String)]) -> (Child, Result<String, String>) {
    let mut command = toolsmith(dir);
    command.args(["serve", "--listen", "127.0.0.1:0", "--db", db]);
    for (name, value) in env {
        command.env(name, value);
    }
    spawn_serve(command)
}

/// Runs a `toolsmith` command line to success: its standard output.
fn cli(dir: &Path, args: &[&str]) -> String {
    let out = toolsmith(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Agent `agent` of account `acme` on the model at `base`, with its workspace ready: the
/// workspace.
fn agent(dir: &Path, db: &str, base: &str, agent: &str) -> PathBuf {
    let config = dir.join(format!("{agent}.json"));
    let tools = json!({
        "read": {"enabled": true},
        "bash": {"enabled": true, "needsApproval": false},
        "write": {"needsApproval": false},
    });
    let body = json!({"model": {"provider": "openai-compatible", "name": "m", "baseUrl": base},
                      "tools": tools});
    std::fs::write(&config, body.to_string()).unwrap();
    let config = config.display().to_string();
    cli(
        dir,
        &[
            "agents",
            "put",
            agent,
            "--account",
            "acme",
            "--db",
            db,
            "--config",
            &config,
        ],
    );
    let root = dir.join("toolsmith/workspaces/acme").join(agent);
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("README.md"), "# A workspace\n").unwrap();
    root
}

/// Asks for run `event` of `agent` in the background: whether the service answered 202.
async fn start(client: &reqwest::Client, url: &str, secret: &str, agent: &str) -> bool {
    let body = json!({"agentId": agent, "eventId": "e1", "conversationKey": "c1",
                      "events": [{"role": "user", "content": "Read the README, count, then write notes."}]});
    let sent = client
        .post(format!("{url}/async"))
        .bearer_auth(secret)
        .json(&body)
        .send()
        .await;
    sent.is_ok_and(|r| r.status() == 202)
}

/// The run's status once it is no longer `processing` (at most 30 s).
async fn settled(client: &reqwest::Client, url: &str, secret: &str, agent: &str) -> Value {
    for _ in 0..300 {
        let response = client
            .get(format!("{url}/status/e1?agentId={agent}"))
            .bearer_auth(secret)
            .send()
            .await
            .unwrap();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if body["status"] != "processing" && !body.is_null() {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{agent}'s run still processing after 30 s");
}

/// Whether `child` dies (of SIGKILL) within `within`; killed otherwise.
fn died(child: &mut Child, within: Duration) -> bool {
    use std::os::unix::process::ExitStatusExt;
    let start = Instant::now();
    while start.elapsed() < within {
        if let Some(status) = child.try_wait().unwrap() {
            return status.signal() == Some(9);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

/// The thread of `agent`'s conversation.
async fn thread_of(store: &dyn Store, agent: &str) -> String {
    let query = ThreadQuery {
        tag: Some(format!("agent:{agent}")),
        ..ThreadQuery::default()
    };
    store.threads(&query).await.unwrap()[0].id.clone()
}

async fn walk(db: &str) {
    let base = serve_with(model);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let store = toolsmith::store::open(db).await.unwrap();
    let client = reqwest::Client::new();
    let secret = cli(dir, &["accounts", "create", "acme", "--db", db])
        .trim()
        .to_string();

    // The points of a service that starts, runs one run to its end and is stopped.
    let log = dir.join("points");
    let root = agent(dir, db, &base, "count");
    let (mut replica, url) = serve(
        dir,
        db,
        &[("TOOLSMITH_CRASH_POINTS_LOG", log.display().to_string())],
    );
    let url = url.unwrap();
    assert!(start(&client, &url, &secret, "count").await);
    let done = settled(&client, &url, &secret, "count").await;
    assert_eq!(done["status"], "completed", "{done}");
    replica.kill().unwrap();
    replica.wait().unwrap();
    check_thread(&*store, &thread_of(&*store, "count").await, &root).await;
    let points: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.split_once(' ').unwrap().1.to_string())
        .collect();
    assert!(points.len() >= 8, "{points:?}");

    let mut killed = 0;
    let mut journal: BTreeMap<String, u32> = BTreeMap::new();
    for (index, name) in points.iter().enumerate() {
        let n = index + 1;
        let agent_id = format!("a{n}");
        let root = agent(dir, db, &base, &agent_id);
        let (mut replica, url) = serve(dir, db, &[("TOOLSMITH_CRASH_POINT", n.to_string())]);
        if let Ok(url) = &url {
            start(&client, url, &secret, &agent_id).await;
        }
        if died(&mut replica, Duration::from_secs(10)) {
            killed += 1;
        } else {
            eprintln!("{db}: point {n} ({name}) was not reached this time");
        }
        // Another replica on the database: it takes the run over, or (the request having
        // failed before the event was stored) the client asks again.
        let (mut replica, url) = serve(dir, db, &[]);
        let url = url.unwrap();
        let answered = start(&client, &url, &secret, &agent_id).await;
        assert!(
            answered,
            "point {n} ({name}): the request sent again is accepted"
        );
        let done = settled(&client, &url, &secret, &agent_id).await;
        replica.kill().unwrap();
        replica.wait().unwrap();
        assert_eq!(done["status"], "completed", "point {n} ({name}): {done}");
        let thread = thread_of(&*store, &agent_id).await;
        check_thread(&*store, &thread, &root).await;
        for entry in store.journal(&thread).await.unwrap() {
            *journal
                .entry(format!("{} {}", entry.tool_name, entry.status.as_str()))
                .or_default() += 1;
        }
    }
    eprintln!(
        "{db}: the service killed at {killed} of {} points; journal after taking over: {journal:?}",
        points.len()
    );
    assert!(
        killed * 10 >= points.len() * 9,
        "{killed} of {}",
        points.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_survives_sigkill_at_every_write_point_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    walk(&format!(
        "sqlite:{}",
        dir.path().join("service.db").display()
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_survives_sigkill_at_every_write_point_on_postgres() {
    let Some(server) = pg_server::PgServer::start() else {
        return;
    };
    walk(&server.database().await).await;
}
