//! SQLite schema migrations: an older database opened by this build is brought to the current
//! schema with its data.

use std::path::Path;

use rusqlite::OptionalExtension;
use serde_json::json;
use toolsmith_core::Message;
use toolsmith_store::{
    Batch, CacheStore, Claim, EffectStatus, EventRecord, EventStatus, Holder, NewThread, SecretKey,
    ServiceStore, SqliteStore, Store, ThreadStatus, ThreadWrite, Vault,
};

use crate::common::{payment, service};

/// What the versions from 7 on added, undone: the holder of a running thread (7), the
/// harness service's tables (8), the index of a thread's processing events (9), the
/// messages clustered on their thread's number (10) and the result cache (11).
const UNDO: &[(u32, &str)] = &[
    (11, "DROP TABLE result_cache;"),
    (
        10,
        "CREATE TABLE messages_v9 (
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (thread_id, idx)
         ) WITHOUT ROWID;
         INSERT INTO messages_v9 (thread_id, idx, body)
             SELECT t.id, m.idx, m.body FROM messages m JOIN threads t ON t.seq = m.thread_seq;
         DROP TABLE messages;
         ALTER TABLE messages_v9 RENAME TO messages;
         DROP INDEX threads_seq;
         ALTER TABLE threads DROP COLUMN seq;",
    ),
    (9, "DROP INDEX events_processing;"),
    (
        8,
        "DROP TABLE dispatch_group_members; DROP TABLE dispatch_groups; \
         DROP TABLE async_results; DROP TABLE events; DROP TABLE agents; DROP TABLE accounts;",
    ),
    (
        7,
        "ALTER TABLE threads DROP COLUMN holder_host; \
         ALTER TABLE threads DROP COLUMN holder_pid; \
         ALTER TABLE threads DROP COLUMN holder_started;",
    ),
];

/// Takes the database at `path` back to schema `version` (at least 3): undoes what the
/// versions after it added (those from 7 on, [`UNDO`]), runs `sql`, and forgets them.
fn take_back(path: &Path, sql: &str, version: u32) {
    let undo: Vec<&str> = UNDO
        .iter()
        .filter(|(added, _)| *added > version)
        .map(|(_, undo)| *undo)
        .collect();
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(&format!(
            "{} {sql} DELETE FROM schema_migrations WHERE version > {version};",
            undo.join(" ")
        ))
        .unwrap();
}

#[tokio::test]
async fn a_version_1_database_is_migrated_to_the_current_schema_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        // What version 1 left: its tables and its migration row, no variables table, no run
        // column.
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_thread(NewThread::new("kept")).await.unwrap();
    }
    take_back(
        &path,
        "DROP TABLE variables; ALTER TABLE threads DROP COLUMN run_id;",
        1,
    );
    let store = SqliteStore::open(&path).await.unwrap();
    assert!(store.thread("kept").await.unwrap().is_some());
    let vault = Vault::new(&store, SecretKey::generate());
    vault.put("kept", "A", "b", false).await.unwrap();
    store
        .claim("kept", 0, "run-1", &Holder::current())
        .await
        .unwrap();
    let thread = store.thread("kept").await.unwrap().unwrap();
    assert_eq!(thread.run_id.as_deref(), Some("run-1"));
    assert_eq!(thread.holder, Some(Holder::current()));
    assert_eq!(SqliteStore::schema_version(), 11);
}

#[tokio::test]
async fn a_version_3_database_keeps_its_messages_journal_and_ledger_when_clustered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    let entry = payment::intended_payment();
    {
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_thread(NewThread::new("t")).await.unwrap();
        let messages = [Message::user("Pay."), Message::assistant("Paying.")];
        let write = ThreadWrite::new("t", 0, 0, &messages, ThreadStatus::Running);
        let batch = Batch::new().write(write).intend(&entry);
        store.commit(batch).await.unwrap();
    }
    // Version 3's layout: the same tables with rowids and their keys' indexes.
    take_back(
        &path,
        "PRAGMA foreign_keys = OFF;
         CREATE TABLE m3 (thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
             idx INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (thread_id, idx));
         INSERT INTO m3 SELECT * FROM messages; DROP TABLE messages;
         ALTER TABLE m3 RENAME TO messages;
         CREATE TABLE j3 AS SELECT * FROM journal; DROP TABLE journal;
         ALTER TABLE j3 RENAME TO journal;
         CREATE TABLE l3 (key TEXT PRIMARY KEY, thread_id TEXT NOT NULL, status TEXT NOT NULL,
             output TEXT, created_at INTEGER NOT NULL);
         INSERT INTO l3 SELECT * FROM ledger; DROP TABLE ledger;
         ALTER TABLE l3 RENAME TO ledger;",
        3,
    );

    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(store.messages("t").await.unwrap().len(), 2);
    assert_eq!(store.journal("t").await.unwrap(), [entry]);
    assert_eq!(
        store
            .commit(Batch::new().claim_key("r:c1", "t"))
            .await
            .unwrap()
            .claims,
        [Claim::Existing {
            status: EffectStatus::Intended,
            output: None
        }]
    );
    let conn = rusqlite::Connection::open(&path).unwrap();
    for table in ["messages", "journal", "ledger"] {
        let sql: String = conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap();
        assert!(sql.ends_with("WITHOUT ROWID"), "{table}: {sql}");
    }
    // Version 5: the journal clustered on its thread, and no index rewritten at every save
    // beyond the tables' own keys (version 10's index of the threads' numbers is written when
    // a thread is made, never by a save).
    let indexes: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL \
             AND tbl_name IN ('threads', 'messages', 'journal', 'ledger')",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(indexes, ["threads_parent", "threads_seq"]);
}

#[tokio::test]
async fn a_version_6_database_gains_the_holder_of_its_running_threads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v6.db");
    {
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_thread(NewThread::new("t")).await.unwrap();
        let prompt = [Message::user("Pay.")];
        let write = ThreadWrite::new("t", 0, 0, &prompt, ThreadStatus::Running);
        store.commit(Batch::new().write(write)).await.unwrap();
    }
    take_back(&path, "", 6);

    let store = SqliteStore::open(&path).await.unwrap();
    let thread = store.thread("t").await.unwrap().unwrap();
    assert_eq!(
        (thread.status, thread.holder.clone()),
        (ThreadStatus::Running, None),
        "a thread running before the migration has no holder: the lease rule applies to it"
    );
    let holder = Holder {
        host: "h/boot/pid:[1]".into(),
        pid: 99,
        started: 12345,
    };
    store.claim("t", 1, "run-1", &holder).await.unwrap();
    let thread = store.thread("t").await.unwrap().unwrap();
    assert_eq!(thread.holder, Some(holder));
    assert_eq!(store.messages("t").await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_version_7_database_gains_the_service_tables_and_keeps_its_threads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v7.db");
    let entry = payment::intended_payment();
    {
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_thread(NewThread::new("t")).await.unwrap();
        let prompt = [Message::user("Pay.")];
        let write = ThreadWrite::new("t", 0, 0, &prompt, ThreadStatus::Running);
        store
            .commit(Batch::new().write(write).intend(&entry))
            .await
            .unwrap();
    }
    take_back(&path, "", 7);
    let tables = |path: &Path| -> Vec<String> {
        rusqlite::Connection::open(path)
            .unwrap()
            .prepare(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'index') \
                 AND sql IS NOT NULL AND name NOT IN \
                 ('threads', 'threads_parent', 'threads_seq', 'messages', 'journal', 'ledger', \
                 'variables', 'credentials', 'schema_migrations') ORDER BY name",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(
        tables(&path),
        Vec::<String>::new(),
        "version 7 has no service tables"
    );

    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(
        tables(&path),
        [
            "accounts",
            "agents",
            "async_results",
            "async_results_expires",
            "async_results_parent",
            "dispatch_group_members",
            "dispatch_groups",
            "dispatch_groups_expires",
            "events",
            "events_expires",
            "events_processing",
            "result_cache",
            "result_cache_expires",
        ]
    );
    assert_eq!(store.messages("t").await.unwrap().len(), 1);
    assert_eq!(store.journal("t").await.unwrap(), [entry]);
    service::tables_work(&store).await;
}

#[tokio::test]
async fn a_version_8_database_gains_the_index_of_processing_events_and_keeps_its_events() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v8.db");
    let event = |id: &str, status, created_at| EventRecord {
        account: "acct".into(),
        agent_id: "agent".into(),
        event_id: id.into(),
        conversation_key: "conv".into(),
        thread_id: "t".into(),
        status,
        detail: json!({"id": id}),
        created_at,
        updated_at: created_at,
        expires_at: 4_000_000_000_000,
    };
    let (late, early, done) = (
        event("ev-late", EventStatus::Processing, 2),
        event("ev-early", EventStatus::Processing, 1),
        event("ev-done", EventStatus::Completed, 0),
    );
    {
        let store = SqliteStore::open(&path).await.unwrap();
        for made in [&late, &early, &done] {
            assert!(store.insert_event(made).await.unwrap());
        }
    }
    take_back(&path, "", 8);
    let index = |path: &Path| -> Option<String> {
        rusqlite::Connection::open(path)
            .unwrap()
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'index' \
                 AND name = 'events_processing'",
                [],
                |r| r.get(0),
            )
            .optional()
            .unwrap()
    };
    assert_eq!(index(&path), None, "version 8 has no such index");

    let store = SqliteStore::open(&path).await.unwrap();
    let sql = index(&path).expect("the index, once migrated");
    assert!(sql.contains("WHERE status = 'processing'"), "{sql}");
    assert_eq!(
        store.processing_events("t").await.unwrap(),
        [early, late],
        "the events from before the migration are listed"
    );
    // The listing's query, its status a literal: served by the partial index, in its order.
    let plan: Vec<String> = rusqlite::Connection::open(&path)
        .unwrap()
        .prepare(
            "EXPLAIN QUERY PLAN SELECT * FROM events \
             WHERE thread_id = ?1 AND status = 'processing' ORDER BY created_at, event_id",
        )
        .unwrap()
        .query_map(["t"], |r| r.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        plan.iter()
            .any(|step| step.contains("INDEX events_processing")),
        "{plan:?}"
    );
    assert!(
        !plan.iter().any(|step| step.contains("TEMP B-TREE")),
        "{plan:?}"
    );
}

#[tokio::test]
async fn a_new_database_has_small_pages_and_an_old_one_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let page_size = |path: &std::path::Path| -> u32 {
        rusqlite::Connection::open(path)
            .unwrap()
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap()
    };
    let new = dir.path().join("new.db");
    SqliteStore::open(&new).await.unwrap();
    assert_eq!(page_size(&new), 2048);

    // A database made with SQLite's default pages (as toolsmith made them before) is used as
    // it is.
    let old = dir.path().join("old.db");
    rusqlite::Connection::open(&old)
        .unwrap()
        .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE other (x INTEGER);")
        .unwrap();
    assert_eq!(page_size(&old), 4096);
    let store = SqliteStore::open(&old).await.unwrap();
    store.create_thread(NewThread::new("t")).await.unwrap();
    let hi = [Message::user("Hi.")];
    let write = ThreadWrite::new("t", 0, 0, &hi, ThreadStatus::Running);
    store.commit(Batch::new().write(write)).await.unwrap();
    assert_eq!(store.messages("t").await.unwrap().len(), 1);
    drop(store);
    assert_eq!(page_size(&old), 4096);
}

/// Version 9 kept messages by thread id; version 10 by the thread's number, given to the
/// threads there are in their order: every thread keeps its messages, and a thread made after
/// the migration is numbered after them.
#[tokio::test]
async fn a_version_9_database_keeps_its_messages_numbered_by_thread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let store = SqliteStore::open(&path).await.unwrap();
        for (id, text) in [("b-second", "two"), ("a-first", "one")] {
            store.create_thread(NewThread::new(id)).await.unwrap();
            let said = [Message::user(text), Message::assistant(format!("{text}!"))];
            let write = ThreadWrite::new(id, 0, 0, &said, ThreadStatus::Idle);
            store.commit(Batch::new().write(write)).await.unwrap();
        }
    }
    take_back(&path, "", 9);
    let columns: Vec<String> = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mut info = conn.prepare("PRAGMA table_info(messages)").unwrap();
        info.query_map([], |r| r.get(1))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(
        columns,
        ["thread_id", "idx", "body"],
        "taken back to version 9"
    );
    let store = SqliteStore::open(&path).await.unwrap();
    for (id, text) in [("b-second", "two"), ("a-first", "one")] {
        let messages = store.messages(id).await.unwrap();
        let texts: Vec<String> = messages.iter().map(Message::text).collect();
        assert_eq!(texts, [text.to_string(), format!("{text}!")], "{id}");
    }
    // A thread made now, and written again: its own messages only.
    store
        .create_thread(NewThread::new("c-third"))
        .await
        .unwrap();
    let said = [Message::user("three")];
    let write = ThreadWrite::new("c-third", 0, 0, &said, ThreadStatus::Idle);
    store.commit(Batch::new().write(write)).await.unwrap();
    assert_eq!(store.messages("c-third").await.unwrap(), said);
    assert_eq!(store.messages("a-first").await.unwrap().len(), 2);
    let numbers: Vec<i64> = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mut select = conn
            .prepare("SELECT seq FROM threads ORDER BY seq")
            .unwrap();
        select
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(numbers, [1, 2, 3]);
}

/// Version 11 added the result cache: a version 10 database gains it and keeps its threads.
#[tokio::test]
async fn a_version_10_database_gains_the_result_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v10.db");
    {
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_thread(NewThread::new("kept")).await.unwrap();
    }
    take_back(&path, "", 10);
    let table = |path: &Path| -> Option<String> {
        rusqlite::Connection::open(path)
            .unwrap()
            .query_row(
                "SELECT name FROM sqlite_master WHERE name = 'result_cache'",
                [],
                |r| r.get(0),
            )
            .optional()
            .unwrap()
    };
    assert_eq!(table(&path), None, "version 10 has no result cache");

    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(table(&path).as_deref(), Some("result_cache"));
    assert!(store.thread("kept").await.unwrap().is_some());
    store.cache_put(b"k", b"cached", u64::MAX).await.unwrap();
    assert_eq!(
        store.cache_get(b"k", 0).await.unwrap().as_deref(),
        Some(&b"cached"[..])
    );
}
