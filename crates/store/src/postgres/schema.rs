//! The PostgreSQL schema, as versioned migrations applied on open.

use deadpool_postgres::Client;

use crate::StoreError;
use crate::postgres::backend;

/// Each migration once, in order. Never edit one that has shipped: add the next.
const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        "CREATE TABLE threads (
        id TEXT PRIMARY KEY,
        parent_id TEXT,
        tags TEXT[] NOT NULL DEFAULT '{}',
        version BIGINT NOT NULL,
        message_count BIGINT NOT NULL,
        status TEXT NOT NULL,
        pending TEXT NOT NULL DEFAULT '[]',
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    );
    CREATE INDEX threads_parent ON threads(parent_id);
    CREATE INDEX threads_updated ON threads(updated_at);
    CREATE TABLE messages (
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        idx BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (thread_id, idx)
    );
    CREATE TABLE journal (
        run_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        thread_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        seq BIGINT NOT NULL,
        input TEXT NOT NULL,
        side_effect BOOLEAN NOT NULL,
        idempotent BOOLEAN NOT NULL,
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
        created_at BIGINT NOT NULL
    );",
    ),
    (
        2,
        "CREATE TABLE variables (
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        secret BOOLEAN NOT NULL,
        value BYTEA NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (thread_id, name)
    );",
    ),
    (3, "ALTER TABLE threads ADD COLUMN run_id TEXT;"),
    // Fewer indexes written at every tool call, as SQLite's version 5: the journal keyed on
    // its thread first (listing a thread's journal needs no index of its own), and no index
    // on `updated_at`, which every save changes (without it a save of a thread's row can be a
    // HOT update, which writes no index). Listing threads by recency sorts instead. The
    // journal also gains Smithers' `acceptsIdempotencyKey` and `hasRevert`.
    (
        4,
        "ALTER TABLE journal DROP CONSTRAINT journal_pkey;
    ALTER TABLE journal ADD PRIMARY KEY (thread_id, run_id, tool_call_id, attempt);
    DROP INDEX IF EXISTS journal_thread;
    DROP INDEX IF EXISTS threads_updated;
    ALTER TABLE journal ADD COLUMN accepts_idempotency_key BOOLEAN NOT NULL DEFAULT FALSE,
        ADD COLUMN has_revert BOOLEAN NOT NULL DEFAULT FALSE;",
    ),
    // Accounts' credentials (as in the agent harness: an account's own API keys, sealed like secret
    // variables), apart from any thread.
    (
        5,
        "CREATE TABLE IF NOT EXISTS credentials (
        account_id TEXT NOT NULL,
        name TEXT NOT NULL,
        value BYTEA NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (account_id, name)
    );",
    ),
    // The process holding a running thread (`Holder`), as SQLite's version 7.
    (
        6,
        "ALTER TABLE threads ADD COLUMN holder_host TEXT, ADD COLUMN holder_pid BIGINT,
        ADD COLUMN holder_started BIGINT;",
    ),
    // The harness service's tables (`ServiceStore`), as SQLite's version 8. The names and
    // ids that lists are ordered by are of the "C" collation: byte order, as SQLite's, whatever
    // the database's locale.
    (
        7,
        "CREATE TABLE accounts (
        name TEXT COLLATE \"C\" PRIMARY KEY,
        secret_hash BYTEA NOT NULL CHECK (octet_length(secret_hash) = 32),
        created_at BIGINT NOT NULL
    );
    CREATE TABLE agents (
        account TEXT COLLATE \"C\" NOT NULL REFERENCES accounts(name),
        id TEXT COLLATE \"C\" NOT NULL,
        config BYTEA NOT NULL,
        active BOOLEAN NOT NULL,
        updated_at BIGINT NOT NULL,
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
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (account, agent_id, event_id)
    );
    CREATE INDEX events_expires ON events(expires_at);
    CREATE TABLE async_results (
        result_id TEXT COLLATE \"C\" PRIMARY KEY,
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
        external BOOLEAN NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
    );
    CREATE INDEX async_results_parent ON async_results(parent_event_id, created_at);
    CREATE INDEX async_results_expires ON async_results(expires_at);
    CREATE TABLE dispatch_groups (
        parent_event_id TEXT PRIMARY KEY,
        sealed BOOLEAN NOT NULL,
        expires_at BIGINT NOT NULL
    );
    CREATE INDEX dispatch_groups_expires ON dispatch_groups(expires_at);
    CREATE TABLE dispatch_group_members (
        parent_event_id TEXT NOT NULL
            REFERENCES dispatch_groups(parent_event_id) ON DELETE CASCADE,
        result_id TEXT NOT NULL,
        position BIGINT NOT NULL,
        PRIMARY KEY (parent_event_id, result_id)
    );",
    ),
    // A thread's events still `processing`, as SQLite's version 9: a partial index of those
    // events only, in the order they are listed in (the event id in byte order, as the
    // listing sorts it). The planner uses it for a query that names the status as a literal,
    // as that listing does.
    (
        8,
        "CREATE INDEX events_processing
        ON events (thread_id, created_at, event_id COLLATE \"C\")
        WHERE status = 'processing';",
    ),
    // Tools' cached results (`CacheStore`), as SQLite's version 11.
    (
        9,
        "CREATE TABLE result_cache (
        key BYTEA PRIMARY KEY,
        value BYTEA NOT NULL,
        expires_at BIGINT NOT NULL
    );
    CREATE INDEX result_cache_expires ON result_cache(expires_at);",
    ),
];

/// The newest schema version this build knows.
pub(crate) const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// A fixed key for the advisory lock that serialises migrators (several processes opening one
/// database at once).
const MIGRATION_LOCK: i64 = 0x746f_6f6c_736d_6974; // "toolsmit"

/// Applies the migrations the database lacks, in one transaction under an advisory lock.
///
/// # Errors
///
/// [`StoreError::Corrupt`] for a database written by a newer toolsmith; a backend error.
pub(crate) async fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(backend)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(backend)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            applied_at BIGINT NOT NULL
        )",
    )
    .await
    .map_err(backend)?;
    let applied: i32 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            &[],
        )
        .await
        .map_err(backend)?
        .get(0);
    if applied > SCHEMA_VERSION {
        return Err(StoreError::Corrupt(format!(
            "the database's schema is version {applied}, newer than this toolsmith's \
             ({SCHEMA_VERSION}); upgrade toolsmith"
        )));
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > applied) {
        tx.batch_execute(sql).await.map_err(backend)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
            &[version, &(crate::store::now_millis() as i64)],
        )
        .await
        .map_err(backend)?;
    }
    tx.commit().await.map_err(backend)
}
