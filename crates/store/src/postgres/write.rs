//! Thread writes as single statements: the write alone, the write with a call's intent, and a
//! call's settlement with the write. One statement is one round trip and, outside a
//! transaction, one commit: a tool call under sequential execution costs two of each.
//!
//! Every statement starts from the same conditional UPDATE of the thread's row (`t`): it
//! changes the row only at the expected version (a concurrent writer holding the row makes it
//! wait, then re-check the new version and change nothing), and every other part of the
//! statement runs only when it did, so the statement writes all or nothing. A statement that
//! returns no row changed nothing; the caller finds out why.

use std::sync::LazyLock;

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::journal::{self, EntryKey, NewEntry};
use super::{backend, from_json, status, to_json};
use crate::store::now_millis;
use crate::{Claim, JournalEntry, Settlement, StoreError, ThreadWrite};

/// The thread's write as CTEs over `$1`…`$7` (thread, expected version, keep, message bodies,
/// status, pending, time), with `condition` added to the row's WHERE. A thread that stops
/// running is held by no process (its holder is cleared). The messages past `keep`
/// are upserted (a message saved again unchanged, as a step's assistant message is with its
/// results, is not rewritten) and those past the new end deleted (disjoint rows).
fn write_ctes(condition: &str) -> String {
    format!(
        "t AS (UPDATE threads SET version = version + 1, \
             message_count = $3 + cardinality($4::TEXT[]), status = $5, pending = $6, \
             updated_at = $7, \
             holder_host = CASE WHEN $5 = 'running' THEN holder_host END, \
             holder_pid = CASE WHEN $5 = 'running' THEN holder_pid END, \
             holder_started = CASE WHEN $5 = 'running' THEN holder_started END \
             WHERE id = $1 AND version = $2 AND message_count >= $3{condition} \
             RETURNING version), \
         gone AS (DELETE FROM messages WHERE thread_id = $1 \
             AND idx >= $3 + cardinality($4::TEXT[]) AND EXISTS (SELECT 1 FROM t)), \
         put AS (INSERT INTO messages (thread_id, idx, body) \
             SELECT $1, $3 + m.n - 1, m.body \
             FROM UNNEST($4::TEXT[]) WITH ORDINALITY AS m(body, n) \
             WHERE EXISTS (SELECT 1 FROM t) \
             ON CONFLICT (thread_id, idx) DO UPDATE SET body = EXCLUDED.body \
             WHERE messages.body IS DISTINCT FROM EXCLUDED.body)"
    )
}

static WRITE: LazyLock<String> =
    LazyLock::new(|| format!("WITH {} SELECT version FROM t", write_ctes("")));

/// The journal entry's INSERT over `$8`…`$21`, when the thread's row changed.
const INTEND: &str = "entry AS (INSERT INTO journal (run_id, tool_call_id, attempt, thread_id, \
     tool_name, seq, input, side_effect, idempotent, idempotency_key, status, output, \
     accepts_idempotency_key, has_revert) \
     SELECT $8::TEXT, $9::TEXT, $10::INTEGER, $11::TEXT, $12::TEXT, $13::BIGINT, $14::TEXT, \
         $15::BOOLEAN, $16::BOOLEAN, $17::TEXT, $18::TEXT, $21::TEXT, $19::BOOLEAN, $20::BOOLEAN \
     WHERE EXISTS (SELECT 1 FROM t) \
     ON CONFLICT (thread_id, run_id, tool_call_id, attempt) DO NOTHING)";

static WRITE_AND_INTEND: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH {}, {INTEND} SELECT version, TRUE, NULL::TEXT, NULL::TEXT FROM t",
        write_ctes("")
    )
});

/// With the claim of key `$22`. The final SELECT reads the statement's snapshot: an earlier
/// claim's row, or none when this statement made the claim.
static WRITE_AND_INTEND_CLAIM: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH {}, {INTEND}, \
         claimed AS (INSERT INTO ledger (key, thread_id, status, output, created_at) \
             SELECT $22::TEXT, $11::TEXT, 'intended', NULL, $7 WHERE EXISTS (SELECT 1 FROM t) \
             ON CONFLICT (key) DO NOTHING RETURNING 1) \
         SELECT t.version, EXISTS (SELECT 1 FROM claimed), l.status, l.output \
         FROM t LEFT JOIN ledger AS l ON l.key = $22",
        write_ctes("")
    )
});

/// The thread's row changes only if the journal entry (its key at `$10`…`$13`,
/// [`EntryKey::values`]) exists.
const ENTRY_EXISTS: &str = " AND EXISTS (SELECT 1 FROM journal \
     WHERE thread_id = $10 AND run_id = $11 AND tool_call_id = $12 AND attempt = $13)";

/// The entry's settlement with status `$8` and output `$9`, when the thread's row changed.
const SETTLE: &str = "entry AS (UPDATE journal SET status = $8, output = $9 \
     WHERE thread_id = $10 AND run_id = $11 AND tool_call_id = $12 AND attempt = $13 \
     AND EXISTS (SELECT 1 FROM t))";

static SETTLE_AND_WRITE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH {}, {SETTLE} SELECT version FROM t",
        write_ctes(ENTRY_EXISTS)
    )
});

/// With the settlement of key `$14`, which must exist too.
static SETTLE_KEY_AND_WRITE: LazyLock<String> = LazyLock::new(|| {
    let condition = format!("{ENTRY_EXISTS} AND EXISTS (SELECT 1 FROM ledger WHERE key = $14)");
    format!(
        "WITH {}, {SETTLE}, \
         settled AS (UPDATE ledger SET status = $8, output = $9 \
             WHERE key = $14 AND EXISTS (SELECT 1 FROM t)) \
         SELECT version FROM t",
        write_ctes(&condition)
    )
});

/// A write's parameters `$1`…`$7`, owned.
struct WriteParams {
    thread: String,
    expected: i64,
    keep: i64,
    bodies: Vec<String>,
    status: &'static str,
    pending: String,
    now: i64,
}

impl WriteParams {
    fn of(write: &ThreadWrite<'_>) -> Result<WriteParams, StoreError> {
        Ok(WriteParams {
            thread: write.thread.to_string(),
            expected: write.expected as i64,
            keep: write.keep as i64,
            bodies: write
                .messages
                .iter()
                .map(to_json)
                .collect::<Result<_, _>>()?,
            status: write.status.as_str(),
            pending: to_json(&write.pending)?,
            now: now_millis() as i64,
        })
    }

    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        vec![
            &self.thread,
            &self.expected,
            &self.keep,
            &self.bodies,
            &self.status,
            &self.pending,
            &self.now,
        ]
    }
}

/// Writes a thread's tail: the new version, or `None` when nothing changed.
pub(super) async fn write(
    client: &impl GenericClient,
    write: &ThreadWrite<'_>,
) -> Result<Option<u64>, StoreError> {
    let owned = WriteParams::of(write)?;
    let row = query(client, &WRITE, &owned.params()).await?;
    Ok(row.map(|row| row.get::<_, i64>(0) as u64))
}

/// Writes a thread's tail and records `entry` (with its key's claim when it is unsafe to
/// repeat): the new version and the claim, or `None` when nothing changed.
pub(super) async fn write_and_intend(
    client: &impl GenericClient,
    write: &ThreadWrite<'_>,
    entry: &JournalEntry,
) -> Result<Option<(u64, Claim)>, StoreError> {
    let owned = WriteParams::of(write)?;
    let new = NewEntry::of(entry)?;
    let key = entry.key_to_claim();
    let mut params = owned.params();
    params.extend(new.values());
    let sql: &str = match &key {
        Some(key) => {
            params.push(key);
            &WRITE_AND_INTEND_CLAIM
        }
        None => &WRITE_AND_INTEND,
    };
    let Some(row) = query(client, sql, &params).await? else {
        return Ok(None);
    };
    let version = row.get::<_, i64>(0) as u64;
    let claim = match (key, row.get::<_, bool>(1), row.get::<_, Option<&str>>(2)) {
        (None, ..) | (Some(_), true, _) => Claim::New,
        (Some(_), false, Some(found)) => {
            let output: Option<String> = row.get(3);
            Claim::Existing {
                status: status(found)?,
                output: output.map(|o| from_json(&o)).transpose()?,
            }
        }
        // Claimed by a transaction that committed after this statement's snapshot was taken.
        (Some(key), false, None) => journal::claim(client, &key, &entry.thread_id).await?,
    };
    Ok(Some((version, claim)))
}

/// Settles a call (and its key, when it is unsafe to repeat) and writes a thread's tail: the
/// new version, or `None` when nothing changed (the thread, or the entry or key to settle, is
/// not as expected).
pub(super) async fn settle_and_write(
    client: &impl GenericClient,
    settled: &Settlement<'_>,
    write: &ThreadWrite<'_>,
) -> Result<Option<u64>, StoreError> {
    let owned = WriteParams::of(write)?;
    let output = to_json(settled.output)?;
    let entry = settled.entry;
    let state = settled.status.as_str();
    let entry_key = EntryKey::of(entry);
    let key = entry.key_to_claim();
    let mut params = owned.params();
    params.extend::<[&(dyn ToSql + Sync); 2]>([&state, &output]);
    params.extend(entry_key.values());
    let sql: &str = match &key {
        Some(key) => {
            params.push(key);
            &SETTLE_KEY_AND_WRITE
        }
        None => &SETTLE_AND_WRITE,
    };
    let row = query(client, sql, &params).await?;
    Ok(row.map(|row| row.get::<_, i64>(0) as u64))
}

/// Whether what `settled` settles is recorded: `Err(NotFound)` naming what is missing.
pub(super) async fn settled_exists(
    client: &impl GenericClient,
    settled: &Settlement<'_>,
) -> Result<(), StoreError> {
    let entry = settled.entry;
    if !journal::recorded(client, entry).await? {
        return Err(StoreError::NotFound(entry.record_name()));
    }
    if let Some(key) = entry.key_to_claim() {
        let found = client
            .query_opt("SELECT 1 FROM ledger WHERE key = $1", &[&key])
            .await
            .map_err(backend)?;
        if found.is_none() {
            return Err(StoreError::NotFound(format!("idempotency key {key}")));
        }
    }
    Ok(())
}

async fn query(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<tokio_postgres::Row>, StoreError> {
    let statement = client.prepare_cached(sql).await.map_err(backend)?;
    client.query_opt(&statement, params).await.map_err(backend)
}

/// [`Op::Release`](crate::Op::Release): the thread's holder cleared.
pub(super) async fn release(client: &impl GenericClient, thread: &str) -> Result<(), StoreError> {
    let changed = journal::execute(
        client,
        "UPDATE threads SET holder_host = NULL, holder_pid = NULL, holder_started = NULL \
         WHERE id = $1",
        &[&thread],
    )
    .await?;
    match changed {
        0 => Err(StoreError::NotFound(thread.to_string())),
        _ => Ok(()),
    }
}
