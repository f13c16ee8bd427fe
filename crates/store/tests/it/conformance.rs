//! The conformance suite on every backend, and what is particular to SQLite: a real file,
//! reopened, shared by two handles as two processes would. (PostgreSQL's are in
//! `postgres.rs`.)

use std::sync::Arc;

#[cfg(feature = "sqlite")]
use toolsmith_core::Message;
#[cfg(feature = "sqlite")]
use toolsmith_store::{
    Batch, NewThread, SqliteStore, Store, StoreError, ThreadStatus, ThreadWrite,
};
use toolsmith_store::{MemoryStore, conformance};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_passes_the_conformance_suite() {
    let store = Arc::new(MemoryStore::new());
    conformance::check(store.clone()).await;
    conformance::check_service(store).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("s.db")).await.unwrap());
    conformance::check(store.clone()).await;
    conformance::check_service(store).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_keeps_its_data_across_opens_and_two_handles_race_fairly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    {
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_thread(NewThread::new("t1")).await.unwrap();
        let kept = [Message::user("kept")];
        let write = ThreadWrite::new("t1", 0, 0, &kept, ThreadStatus::Idle);
        store.commit(Batch::new().write(write)).await.unwrap();
    }
    // Reopened: the data is there and the migrations are not applied again.
    let first = SqliteStore::open(&path).await.unwrap();
    let second = SqliteStore::open(&path).await.unwrap();
    assert_eq!(first.messages("t1").await.unwrap(), [Message::user("kept")]);
    // Two connections (as two processes) continue the thread from version 1: one wins.
    let (ma, mb) = ([Message::user("a")], [Message::user("b")]);
    let write = |m| Batch::new().write(ThreadWrite::new("t1", 1, 1, m, ThreadStatus::Idle));
    let (a, b) = tokio::join!(first.commit(write(&ma)), second.commit(write(&mb)));
    let wins = [&a, &b].iter().filter(|r| r.is_ok()).count();
    assert_eq!(wins, 1, "{a:?} {b:?}");
    assert!(matches!(
        a.err().or(b.err()),
        Some(StoreError::Conflict { .. })
    ));
    assert_eq!(second.messages("t1").await.unwrap().len(), 2);
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sqlite_handles_race_on_events_async_results_and_groups_fairly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("service.db");
    let first = Arc::new(SqliteStore::open(&path).await.unwrap());
    let second = Arc::new(SqliteStore::open(&path).await.unwrap());
    crate::common::service::two_stores_race(first, second).await;
    // Each member has a position of its own: the group's order is the order of the inserts.
    let positions: (i64, i64) = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT COUNT(DISTINCT position), COUNT(*) FROM dispatch_group_members \
             WHERE parent_event_id = 'parent-race'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(positions, (16, 16));
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_database_from_a_newer_toolsmith_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.db");
    drop(SqliteStore::open(&path).await.unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)",
        [],
    )
    .unwrap();
    drop(conn);
    let error = SqliteStore::open(&path).await.unwrap_err();
    assert!(
        matches!(&error, StoreError::Corrupt(m) if m.contains("version 999")),
        "{error}"
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_is_checkpointed_in_the_background_not_by_the_writers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let size = || std::fs::metadata(&path).unwrap().len();
    let before = size();
    store.create_thread(NewThread::new("t")).await.unwrap();
    // Far fewer pages than the writers' own automatic checkpoint waits for.
    let body = "x".repeat(3000);
    for i in 0..50 {
        let message = [Message::user(body.clone())];
        let write = ThreadWrite::new("t", i, i, &message, ThreadStatus::Running);
        store.commit(Batch::new().write(write)).await.unwrap();
    }
    // The writers' automatic checkpoint would wait for 20 000 pages: only the store's own
    // thread copies these few into the database file. It may have copied part of them while
    // the writes went on, so wait for all of them, not for the first.
    let copied = || size() > before + 50 * 3000;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !copied() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        copied(),
        "the background checkpoint copied the pages into the database file"
    );
    assert_eq!(store.messages("t").await.unwrap().len(), 50);
}

/// Concurrent writes are committed together (one transaction, each write in a savepoint): each
/// gets its own answer, a write that fails part-way leaves nothing of itself, and the others
/// are in the file, as a new handle reads it.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_share_commits_and_fail_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = Arc::new(SqliteStore::open(&path).await.unwrap());
    const WRITERS: usize = 48;
    for i in 0..WRITERS {
        store
            .create_thread(NewThread::new(format!("t{i}")))
            .await
            .unwrap();
    }
    // Every third write fails after its first operation succeeded: its second writes a thread
    // that does not exist. Every other third expects a version the thread is not at.
    let barrier = Arc::new(tokio::sync::Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|i| {
            let (store, barrier) = (store.clone(), barrier.clone());
            tokio::spawn(async move {
                let id = format!("t{i}");
                let said = [Message::user(format!("message {i}"))];
                let expected = if i % 3 == 1 { 7 } else { 0 };
                let write = ThreadWrite::new(&id, expected, 0, &said, ThreadStatus::Idle);
                let mut batch = Batch::new().write(write);
                let missing = ThreadWrite::new("missing", 0, 0, &said, ThreadStatus::Idle);
                if i % 3 == 2 {
                    batch = batch.write(missing);
                }
                barrier.wait().await;
                store.commit(batch).await.map(|c| c.version)
            })
        })
        .collect();
    for (i, writer) in writers.into_iter().enumerate() {
        let answer = writer.await.unwrap();
        match i % 3 {
            0 => assert_eq!(answer, Ok(Some(1)), "write {i}"),
            1 => assert!(
                matches!(&answer, Err(StoreError::Conflict { found: 0, .. })),
                "write {i}: {answer:?}"
            ),
            _ => assert!(
                matches!(&answer, Err(StoreError::NotFound(id)) if id == "missing"),
                "write {i}: {answer:?}"
            ),
        }
    }
    drop(store);
    let reopened = SqliteStore::open(&path).await.unwrap();
    for i in 0..WRITERS {
        let id = format!("t{i}");
        let thread = reopened.thread(&id).await.unwrap().unwrap();
        let messages = reopened.messages(&id).await.unwrap();
        if i % 3 == 0 {
            assert_eq!((thread.version, messages.len()), (1, 1), "thread {i}");
            assert_eq!(messages[0].text(), format!("message {i}"));
        } else {
            assert_eq!(
                (thread.version, messages.len()),
                (0, 0),
                "thread {i}: nothing kept"
            );
        }
    }
}

/// On a current-thread runtime a group runs on the blocking pool, and the caller leading it
/// may be dropped while it waits (a request cancelled): the lead is handed on, and the writes
/// queued behind it are committed all the same.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "current_thread")]
async fn a_leader_dropped_while_it_waits_hands_the_lead_on() {
    use std::future::Future;
    use std::task::Poll;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = Arc::new(SqliteStore::open(&path).await.unwrap());
    for id in ["t1", "t2"] {
        store.create_thread(NewThread::new(id)).await.unwrap();
    }
    // Another connection holds the write lock, so the first group waits on the blocking pool
    // (for the lock) rather than finishing before its leader is polled again.
    let blocker = rusqlite::Connection::open(&path).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let said = [Message::user("Hi")];
    let write = ThreadWrite::new("t1", 0, 0, &said, ThreadStatus::Idle);
    let mut first = Box::pin(store.commit(Batch::new().write(write)));
    // Polled once: it leads, its group handed to the blocking pool.
    let polled = std::future::poll_fn(|cx| Poll::Ready(first.as_mut().poll(cx))).await;
    assert!(polled.is_pending());
    let second = tokio::spawn({
        let store = store.clone();
        async move {
            let said = [Message::user("Hello")];
            let write = ThreadWrite::new("t2", 0, 0, &said, ThreadStatus::Idle);
            store.commit(Batch::new().write(write)).await
        }
    });
    // The second write queues behind the first.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    drop(first);
    blocker.execute_batch("COMMIT").unwrap();
    let committed = tokio::time::timeout(std::time::Duration::from_secs(10), second)
        .await
        .expect("the queued write was committed, not left waiting")
        .unwrap()
        .unwrap();
    assert_eq!(committed.version, Some(1));
    assert_eq!(store.messages("t2").await.unwrap().len(), 1);
}
