//! The SQLite schema, as versioned migrations applied on open.

use rusqlite::{Connection, OptionalExtension};

use crate::StoreError;
use crate::sqlite::backend;

/// Each migration once, in order. Never edit one that has shipped: add the next.
const MIGRATIONS: &[(u32, &str)] = &[
    (
        1,
        "CREATE TABLE threads (
        id TEXT PRIMARY KEY,
        parent_id TEXT,
        tags TEXT NOT NULL DEFAULT '[]',
        version INTEGER NOT NULL,
        message_count INTEGER NOT NULL,
        status TEXT NOT NULL,
        pending TEXT NOT NULL DEFAULT '[]',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE INDEX threads_parent ON threads(parent_id);
    CREATE INDEX threads_updated ON threads(updated_at);
    CREATE TABLE messages (
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (thread_id, idx)
    );
    CREATE TABLE journal (
        run_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        thread_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        seq INTEGER NOT NULL,
        input TEXT NOT NULL,
        side_effect INTEGER NOT NULL,
        idempotent INTEGER NOT NULL,
        idempotency_key TEXT,
        status TEXT NOT NULL,
        output TEXT,
        PRIMARY KEY (run_id, tool_call_id, attempt)
    );
    CREATE INDEX journal_thread ON journal(thread_id, seq, attempt);
    CREATE TABLE ledger (
        key TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        status TEXT NOT NULL,
        output TEXT,
        created_at INTEGER NOT NULL
    );",
    ),
    (
        2,
        "CREATE TABLE variables (
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        secret INTEGER NOT NULL,
        value BLOB NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (thread_id, name)
    );",
    ),
    (3, "ALTER TABLE threads ADD COLUMN run_id TEXT;"),
    // The tables written at every tool call, clustered on their keys (WITHOUT ROWID): one
    // b-tree each instead of a table and its key's index, so a commit writes fewer pages to
    // the WAL (measured: the page writes are most of a commit's cost).
    (
        4,
        "CREATE TABLE messages_v4 (
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (thread_id, idx)
    ) WITHOUT ROWID;
    INSERT INTO messages_v4 (thread_id, idx, body) SELECT thread_id, idx, body FROM messages;
    DROP TABLE messages;
    ALTER TABLE messages_v4 RENAME TO messages;
    CREATE TABLE journal_v4 (
        run_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        thread_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        seq INTEGER NOT NULL,
        input TEXT NOT NULL,
        side_effect INTEGER NOT NULL,
        idempotent INTEGER NOT NULL,
        idempotency_key TEXT,
        status TEXT NOT NULL,
        output TEXT,
        PRIMARY KEY (run_id, tool_call_id, attempt)
    ) WITHOUT ROWID;
    INSERT INTO journal_v4 SELECT run_id, tool_call_id, attempt, thread_id, tool_name, seq,
        input, side_effect, idempotent, idempotency_key, status, output FROM journal;
    DROP TABLE journal;
    ALTER TABLE journal_v4 RENAME TO journal;
    CREATE INDEX journal_thread ON journal(thread_id, seq, attempt);
    CREATE TABLE ledger_v4 (
        key TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        status TEXT NOT NULL,
        output TEXT,
        created_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO ledger_v4 SELECT key, thread_id, status, output, created_at FROM ledger;
    DROP TABLE ledger;
    ALTER TABLE ledger_v4 RENAME TO ledger;",
    ),
    // Fewer b-trees written at every tool call (measured: a call in a step of its own 98 ->
    // 78 µs). The journal is clustered on its thread first, so listing a thread's journal
    // needs no index of its own; the threads' `updated_at` index, rewritten at every save,
    // goes: listing threads by recency scans and sorts instead, an operator's query. The
    // journal also gains Smithers' `acceptsIdempotencyKey` and `hasRevert`.
    (
        5,
        "CREATE TABLE journal_v5 (
        thread_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        tool_name TEXT NOT NULL,
        seq INTEGER NOT NULL,
        input TEXT NOT NULL,
        side_effect INTEGER NOT NULL,
        idempotent INTEGER NOT NULL,
        idempotency_key TEXT,
        status TEXT NOT NULL,
        output TEXT,
        accepts_idempotency_key INTEGER NOT NULL DEFAULT 0,
        has_revert INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (thread_id, run_id, tool_call_id, attempt)
    ) WITHOUT ROWID;
    INSERT OR IGNORE INTO journal_v5 (thread_id, run_id, tool_call_id, attempt, tool_name,
        seq, input, side_effect, idempotent, idempotency_key, status, output)
        SELECT thread_id, run_id, tool_call_id, attempt, tool_name, seq, input, side_effect,
        idempotent, idempotency_key, status, output FROM journal;
    DROP TABLE journal;
    ALTER TABLE journal_v5 RENAME TO journal;
    DROP INDEX IF EXISTS threads_updated;",
    ),
    // Accounts' credentials (as in the agent harness: an account's own API keys, sealed like secret
    // variables), apart from any thread.
    (
        6,
        "CREATE TABLE IF NOT EXISTS credentials (
        account_id TEXT NOT NULL,
        name TEXT NOT NULL,
        value BLOB NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (account_id, name)
    ) WITHOUT ROWID;",
    ),
    // The process holding a running thread (`Holder`): its host, pid and start time, so that
    // a run whose process is gone can be taken over at once.
    (
        7,
        "ALTER TABLE threads ADD COLUMN holder_host TEXT;
    ALTER TABLE threads ADD COLUMN holder_pid INTEGER;
    ALTER TABLE threads ADD COLUMN holder_started INTEGER;",
    ),
    // The harness service's tables (`ServiceStore`): accounts and their agents, the runs
    // started over HTTP (events), async tool results and the dispatch groups of their parent
    // events. The rows that carry JSON or configs are large, so they keep their rowids;
    // accounts and group rows are small, clustered on their keys. A group's members keep the
    // order they were added in (`position`) and go with their group.
    (
        8,
        "CREATE TABLE accounts (
        name TEXT PRIMARY KEY,
        secret_hash BLOB NOT NULL CHECK (length(secret_hash) = 32),
        created_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE agents (
        account TEXT NOT NULL REFERENCES accounts(name),
        id TEXT NOT NULL,
        config BLOB NOT NULL,
        active INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (account, id)
    );
    CREATE TABLE events (
        account TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        event_id TEXT NOT NULL,
        conversation_key TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        status TEXT NOT NULL,
        detail TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (account, agent_id, event_id)
    );
    CREATE INDEX events_expires ON events(expires_at);
    CREATE TABLE async_results (
        result_id TEXT PRIMARY KEY,
        account TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        parent_event_id TEXT NOT NULL,
        conversation_key TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        input TEXT NOT NULL,
        status TEXT NOT NULL,
        response TEXT,
        error TEXT,
        external INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
    );
    CREATE INDEX async_results_parent ON async_results(parent_event_id, created_at);
    CREATE INDEX async_results_expires ON async_results(expires_at);
    CREATE TABLE dispatch_groups (
        parent_event_id TEXT PRIMARY KEY,
        sealed INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX dispatch_groups_expires ON dispatch_groups(expires_at);
    CREATE TABLE dispatch_group_members (
        parent_event_id TEXT NOT NULL
            REFERENCES dispatch_groups(parent_event_id) ON DELETE CASCADE,
        result_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (parent_event_id, result_id)
    ) WITHOUT ROWID;",
    ),
    // A thread's events still `processing` (`ServiceStore::processing_events`), listed when a
    // replica takes over an interrupted run: a partial index of those events only (an event
    // leaves it when it settles, so it stays small), in the order they are listed in. SQLite
    // uses it for a query that names the status as a literal, as that listing does.
    (
        9,
        "CREATE INDEX events_processing ON events(thread_id, created_at, event_id)
        WHERE status = 'processing';",
    ),
    // Messages clustered on their thread's number (`seq`, given in creation order) rather than
    // its id: a new thread's messages go at the end of the table, next to the last thread's,
    // instead of a random page of it (ids are hashes, chat ids, UUIDs). A service's runs write
    // the few last pages, which stay cached and, under group commit, are written once for
    // several runs; with random ids each run split and wrote pages of its own, read from disk
    // once the table outgrew the cache.
    (
        10,
        "ALTER TABLE threads ADD COLUMN seq INTEGER;
    UPDATE threads SET seq = rowid;
    CREATE UNIQUE INDEX threads_seq ON threads(seq);
    CREATE TABLE messages_v10 (
        thread_seq INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (thread_seq, idx)
    ) WITHOUT ROWID;
    INSERT INTO messages_v10 (thread_seq, idx, body)
        SELECT t.seq, m.idx, m.body FROM messages m JOIN threads t ON t.id = m.thread_id;
    DROP TABLE messages;
    ALTER TABLE messages_v10 RENAME TO messages;",
    ),
    // Tools' cached results (`CacheStore`), shared by every process on the file: a keyed
    // digest of the call, its sealed output and when it expires. Values may be large, so the
    // table keeps its rowids; the index of expiry moments serves the bounded sweep.
    (
        11,
        "CREATE TABLE result_cache (
        key BLOB PRIMARY KEY,
        value BLOB NOT NULL,
        expires_at INTEGER NOT NULL
    );
    CREATE INDEX result_cache_expires ON result_cache(expires_at);",
    ),
];

/// The newest schema version this build knows.
pub(crate) const SCHEMA_VERSION: u32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Applies the migrations the database lacks, each in its own transaction.
///
/// # Errors
///
/// [`StoreError::Corrupt`] for a database written by a newer toolsmith; a backend error.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            applied_at INTEGER NOT NULL
        )",
    )
    .map_err(backend)?;
    let applied: u32 = conn
        .query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
            r.get::<_, Option<u32>>(0)
        })
        .optional()
        .map_err(backend)?
        .flatten()
        .unwrap_or(0);
    if applied > SCHEMA_VERSION {
        return Err(StoreError::Corrupt(format!(
            "the database's schema is version {applied}, newer than this toolsmith's \
             ({SCHEMA_VERSION}); upgrade toolsmith"
        )));
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > applied) {
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(backend)?;
        // Another process may have applied it while this one waited for the lock.
        let done: bool = tx
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM schema_migrations WHERE version = ?1)",
                [version],
                |r| r.get(0),
            )
            .map_err(backend)?;
        if !done {
            tx.execute_batch(sql).map_err(backend)?;
            tx.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
                rusqlite::params![version, crate::store::now_millis() as i64],
            )
            .map_err(backend)?;
        }
        tx.commit().map_err(backend)?;
    }
    Ok(())
}
