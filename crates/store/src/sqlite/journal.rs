//! The journal's and the ledger's statements, on a connection or inside a transaction.

use rusqlite::{Connection, params};

use super::{backend, from_json, status};
use crate::store::now_millis;
use crate::{Claim, EffectStatus, JournalEntry, StoreError};

/// Records `entry` as it stands (its input and output already JSON); a second record of one
/// attempt keeps the first.
fn intend(
    conn: &Connection,
    entry: &JournalEntry,
    input: &str,
    output: Option<&str>,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO journal (run_id, tool_call_id, attempt, thread_id, tool_name, seq, \
         input, side_effect, idempotent, idempotency_key, status, output, \
         accepts_idempotency_key, has_revert) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?14, ?12, ?13) \
         ON CONFLICT(thread_id, run_id, tool_call_id, attempt) DO NOTHING",
    )
    .and_then(|mut insert| {
        insert.execute(params![
            entry.run_id,
            entry.tool_call_id,
            entry.attempt,
            entry.thread_id,
            entry.tool_name,
            entry.seq as i64,
            input,
            entry.side_effect,
            entry.idempotent,
            entry.idempotency_key,
            entry.status.as_str(),
            entry.accepts_idempotency_key,
            entry.has_revert,
            output,
        ])
    })
    .map_err(backend)?;
    Ok(())
}

/// Settles `entry`'s attempt with its outcome (JSON).
fn settle(
    conn: &Connection,
    entry: &JournalEntry,
    status: EffectStatus,
    output: &str,
) -> Result<(), StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE journal SET status = ?5, output = ?6 \
             WHERE thread_id = ?1 AND run_id = ?2 AND tool_call_id = ?3 AND attempt = ?4",
        )
        .and_then(|mut update| {
            update.execute(params![
                entry.thread_id,
                entry.run_id,
                entry.tool_call_id,
                entry.attempt,
                status.as_str(),
                output
            ])
        })
        .map_err(backend)?;
    if changed == 0 {
        return Err(StoreError::NotFound(entry.record_name()));
    }
    Ok(())
}

/// Claims an idempotency key: new, or what an earlier claim came to.
pub(super) fn claim(conn: &Connection, key: &str, thread: &str) -> Result<Claim, StoreError> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO ledger (key, thread_id, status, output, created_at) \
             VALUES (?1, ?2, 'intended', NULL, ?3) ON CONFLICT(key) DO NOTHING",
        )
        .and_then(|mut insert| insert.execute(params![key, thread, now_millis() as i64]))
        .map_err(backend)?;
    if inserted == 1 {
        return Ok(Claim::New);
    }
    let (st, out): (String, Option<String>) = conn
        .prepare_cached("SELECT status, output FROM ledger WHERE key = ?1")
        .and_then(|mut select| select.query_row([key], |r| Ok((r.get(0)?, r.get(1)?))))
        .map_err(backend)?;
    Ok(Claim::Existing {
        status: status(&st)?,
        output: out.map(|o| from_json(&o)).transpose()?,
    })
}

/// Settles a claimed key with its outcome (JSON).
fn settle_key(
    conn: &Connection,
    key: &str,
    status: EffectStatus,
    output: &str,
) -> Result<(), StoreError> {
    let changed = conn
        .prepare_cached("UPDATE ledger SET status = ?2, output = ?3 WHERE key = ?1")
        .and_then(|mut update| update.execute(params![key, status.as_str(), output]))
        .map_err(backend)?;
    if changed == 0 {
        return Err(StoreError::NotFound(format!("idempotency key {key}")));
    }
    Ok(())
}

/// Settles a call's attempt and, when it is unsafe to repeat, its key, with one outcome (JSON).
pub(super) fn settle_call(
    conn: &Connection,
    entry: &JournalEntry,
    status: EffectStatus,
    output: &str,
) -> Result<(), StoreError> {
    settle(conn, entry, status, output)?;
    match entry.key_to_claim() {
        Some(key) => settle_key(conn, &key, status, output),
        None => Ok(()),
    }
}

/// Records a call as it stands (its input and output already JSON) and, when it is unsafe to
/// repeat, claims its key.
pub(super) fn intend_call(
    conn: &Connection,
    entry: &JournalEntry,
    input: &str,
    output: Option<&str>,
) -> Result<Claim, StoreError> {
    intend(conn, entry, input, output)?;
    match entry.key_to_claim() {
        Some(key) => claim(conn, &key, &entry.thread_id),
        None => Ok(Claim::New),
    }
}
