//! The conformance suite on a real PostgreSQL server (started by the test), and what is
//! particular to it: two stores (as two processes) racing on one thread and on the service's
//! events, async results and groups, and migrations run by several at once.

use std::sync::Arc;

use serde_json::json;
use tokio_postgres::{NoTls, SimpleQueryMessage};
use toolsmith_core::Message;
use toolsmith_store::{
    Batch, CacheStore, EffectStatus, EventRecord, EventStatus, Holder, NewThread, PostgresStore,
    ServiceStore, Settlement, Store, StoreError, ThreadStatus, ThreadWrite, conformance,
};

use crate::common::pg_server::PgServer;
use crate::common::{payment, service};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_passes_the_conformance_suite_and_two_stores_race_fairly() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let url = server.database().await;
    let store = Arc::new(PostgresStore::connect(&url).await.unwrap());
    conformance::check(store.clone()).await;
    conformance::check_service(store).await;

    // Two stores opened at once (as two processes) migrate one database once.
    let url = server.database().await;
    let (first, second) = tokio::join!(PostgresStore::connect(&url), PostgresStore::connect(&url));
    let (first, second) = (first.unwrap(), second.unwrap());
    first.create_thread(NewThread::new("t1")).await.unwrap();
    let (ma, mb) = ([Message::user("a")], [Message::user("b")]);
    let write = |m| Batch::new().write(ThreadWrite::new("t1", 0, 0, m, ThreadStatus::Running));
    let (a, b) = tokio::join!(first.commit(write(&ma)), second.commit(write(&mb)));
    assert_eq!(
        [&a, &b].iter().filter(|r| r.is_ok()).count(),
        1,
        "{a:?} {b:?}"
    );
    assert!(matches!(
        a.err().or(b.err()),
        Some(StoreError::Conflict { .. })
    ));
    assert_eq!(second.messages("t1").await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_race_on_events_async_results_and_groups_fairly() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let url = server.database().await;
    let (first, second) = tokio::join!(PostgresStore::connect(&url), PostgresStore::connect(&url));
    service::two_stores_race(Arc::new(first.unwrap()), Arc::new(second.unwrap())).await;
    // Each member has a position of its own: an insert into a group waits for the group's row
    // lock, then counts the members committed before it.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT COUNT(DISTINCT position), COUNT(*) FROM dispatch_group_members \
             WHERE parent_event_id = 'parent-race'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (16, 16));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_up_reaches_the_other_stores_on_the_database() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let url = server.database().await;
    let (first, second) = tokio::join!(PostgresStore::connect(&url), PostgresStore::connect(&url));
    let (first, second) = (first.unwrap(), second.unwrap());
    let within = std::time::Duration::from_secs(10);
    let mut heard = second.wakes();
    // The first wake-up says the listening connection is up.
    tokio::time::timeout(within, heard.recv())
        .await
        .unwrap()
        .unwrap();
    first.wake_replicas().await.unwrap();
    tokio::time::timeout(within, heard.recv())
        .await
        .expect("another store's wake-up is heard")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_are_in_byte_order_in_a_database_of_another_collation() {
    let Some(server) = PgServer::start() else {
        return;
    };
    // A database whose default collation is ICU's root order (in which "ev-a" < "ev-B"): the
    // service's lists keep to byte order all the same.
    let url = server.database().await;
    let (base, _) = url.rsplit_once('/').unwrap();
    let (admin, connection) = tokio_postgres::connect(&format!("{base}/postgres"), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(
            "CREATE DATABASE icu_root TEMPLATE template0 ENCODING 'UTF8' \
             LOCALE_PROVIDER icu ICU_LOCALE 'und' LOCALE 'C'",
        )
        .await
        .unwrap();
    let store = PostgresStore::connect(&format!("{base}/icu_root"))
        .await
        .unwrap();
    conformance::check_service(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_7_database_gains_the_index_of_processing_events_and_keeps_its_events() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let url = server.database().await;
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
        let store = PostgresStore::connect(&url).await.unwrap();
        for made in [&late, &early, &done] {
            assert!(store.insert_event(made).await.unwrap());
        }
    }
    let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(
            "DROP INDEX events_processing; DROP TABLE result_cache;
             DELETE FROM schema_migrations WHERE version > 7;",
        )
        .await
        .unwrap();

    let store = PostgresStore::connect(&url).await.unwrap();
    let index: String = client
        .query_one(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'events_processing'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        index.contains("COLLATE \"C\"") && index.contains("WHERE (status = 'processing'"),
        "{index}"
    );
    assert_eq!(
        store.processing_events("t").await.unwrap(),
        [early, late],
        "the events from before the migration are listed"
    );
    // The listing's query, its status a literal: the partial index can serve it, in its order
    // (the table is too small for the planner to choose it unless told).
    let plan: Vec<String> = client
        .simple_query(
            "SET enable_seqscan = off; SET enable_bitmapscan = off; \
             EXPLAIN SELECT * FROM events WHERE thread_id = 't' AND status = 'processing' \
             ORDER BY created_at, event_id COLLATE \"C\"",
        )
        .await
        .unwrap()
        .into_iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
        .collect();
    assert!(
        plan.iter()
            .any(|step| step.contains("using events_processing")),
        "{plan:?}"
    );
    assert!(!plan.iter().any(|step| step.contains("Sort")), "{plan:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_in_the_url_are_kept_with_the_stores_own() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let url = server.database().await;
    // The store starts its sessions with an option of its own (generic plans); a URL's
    // options are passed on with it, not replaced.
    let store =
        PostgresStore::connect(&format!("{url}?options=-c%20application_name%3Dts-options"))
            .await
            .unwrap();
    store.create_thread(NewThread::new("t")).await.unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let named: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ts-options'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(named >= 1, "the URL's application_name is the session's");
}

#[tokio::test]
async fn a_bad_url_is_an_error_that_does_not_repeat_it() {
    let error = PostgresStore::connect("postgres://user:hunter2@[bad")
        .await
        .unwrap_err();
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_3_database_is_migrated_with_its_journal_and_a_newer_one_is_refused() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let url = server.database().await;
    let entry = payment::intended_payment();
    {
        let store = PostgresStore::connect(&url).await.unwrap();
        store.create_thread(NewThread::new("t")).await.unwrap();
        store.commit(Batch::new().intend(&entry)).await.unwrap();
    }
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // Version 3's layout: the journal keyed on run, call and attempt with an index on its
    // thread and without the two tool metadata columns, the threads' `updated_at` index, and
    // neither the holder of a running thread (version 6), the service's tables (version 7) nor
    // the result cache (version 9).
    client
        .batch_execute(
            "ALTER TABLE journal DROP COLUMN accepts_idempotency_key, DROP COLUMN has_revert;
             ALTER TABLE journal DROP CONSTRAINT journal_pkey;
             ALTER TABLE journal ADD PRIMARY KEY (run_id, tool_call_id, attempt);
             CREATE INDEX journal_thread ON journal(thread_id, seq, attempt);
             CREATE INDEX threads_updated ON threads(updated_at);
             ALTER TABLE threads DROP COLUMN holder_host, DROP COLUMN holder_pid,
                 DROP COLUMN holder_started;
             DROP TABLE dispatch_group_members, dispatch_groups, async_results, events, agents,
                 accounts, result_cache;
             DELETE FROM schema_migrations WHERE version > 3;",
        )
        .await
        .unwrap();

    let store = PostgresStore::connect(&url).await.unwrap();
    assert_eq!(
        store.journal("t").await.unwrap(),
        std::slice::from_ref(&entry)
    );
    let paid = json!({"paid": 5});
    let settled = Settlement {
        entry: &entry,
        status: EffectStatus::Succeeded,
        output: &paid,
    };
    store.commit(Batch::new().settle(settled)).await.unwrap();
    assert_eq!(
        store.journal("t").await.unwrap()[0].status,
        EffectStatus::Succeeded
    );
    // Version 6: the holder of a running thread.
    let holder = Holder::current();
    store.claim("t", 0, "r", &holder).await.unwrap();
    assert_eq!(
        store.thread("t").await.unwrap().unwrap().holder,
        Some(holder)
    );
    // Version 7: the service's tables.
    service::tables_work(&store).await;
    // Version 9: the result cache.
    store.cache_put(b"k", b"cached", u64::MAX).await.unwrap();
    assert_eq!(
        store.cache_get(b"k", 0).await.unwrap().as_deref(),
        Some(&b"cached"[..])
    );
    let key: String = client
        .query_one(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'journal_pkey'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        key,
        "PRIMARY KEY (thread_id, run_id, tool_call_id, attempt)"
    );
    let indexes: Vec<String> = client
        .query(
            "SELECT indexname::TEXT FROM pg_indexes \
             WHERE tablename IN ('journal', 'threads') ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(indexes, ["journal_pkey", "threads_parent", "threads_pkey"]);

    // A schema newer than this build's is refused, not written to.
    client
        .execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (99, 0)",
            &[],
        )
        .await
        .unwrap();
    let error = PostgresStore::connect(&url).await.unwrap_err();
    assert!(
        matches!(&error, StoreError::Corrupt(m) if m.contains("version 99")),
        "{error}"
    );
}
