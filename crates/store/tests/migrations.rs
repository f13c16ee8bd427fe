//! SQLite schema migrations: an older database opened by this build is brought to the current
//! schema with its data.

mod payment;

use toolsmith_core::Message;
use toolsmith_store::{
    Batch, Claim, EffectStatus, NewThread, SecretKey, SqliteStore, Store, ThreadStatus,
    ThreadWrite, Vault,
};

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
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE variables; ALTER TABLE threads DROP COLUMN run_id; \
         DELETE FROM schema_migrations WHERE version > 1;",
    )
    .unwrap();
    drop(conn);
    let store = SqliteStore::open(&path).await.unwrap();
    assert!(store.thread("kept").await.unwrap().is_some());
    let vault = Vault::new(&store, SecretKey::generate());
    vault.put("kept", "A", "b", false).await.unwrap();
    store.claim("kept", 0, "run-1").await.unwrap();
    let thread = store.thread("kept").await.unwrap().unwrap();
    assert_eq!(thread.run_id.as_deref(), Some("run-1"));
    assert_eq!(SqliteStore::schema_version(), 6);
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
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
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
         ALTER TABLE l3 RENAME TO ledger;
         DELETE FROM schema_migrations WHERE version > 3;",
    )
    .unwrap();
    drop(conn);

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
    // beyond the tables' own keys.
    let indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(indexes, ["threads_parent"]);
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
