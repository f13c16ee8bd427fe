//! The journal's and the ledger's statements, on a connection or inside a transaction.

use tokio_postgres::GenericClient;

use super::{backend, from_json, status, to_json};
use crate::store::now_millis;
use crate::{Claim, EffectStatus, JournalEntry, StoreError};

/// Records `entry`; a second record of one attempt keeps the first.
pub(super) async fn intend(
    client: &impl GenericClient,
    entry: &JournalEntry,
) -> Result<(), StoreError> {
    let input = to_json(&entry.input)?;
    client
        .execute(
            "INSERT INTO journal (run_id, tool_call_id, attempt, thread_id, tool_name, seq, \
             input, side_effect, idempotent, idempotency_key, status, output) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, NULL) \
             ON CONFLICT (run_id, tool_call_id, attempt) DO NOTHING",
            &[
                &entry.run_id,
                &entry.tool_call_id,
                &(entry.attempt as i32),
                &entry.thread_id,
                &entry.tool_name,
                &(entry.seq as i64),
                &input,
                &entry.side_effect,
                &entry.idempotent,
                &entry.idempotency_key,
                &entry.status.as_str(),
            ],
        )
        .await
        .map_err(backend)?;
    Ok(())
}

/// Settles an attempt with its outcome (JSON).
pub(super) async fn settle(
    client: &impl GenericClient,
    run: &str,
    call: &str,
    attempt: u32,
    status: EffectStatus,
    output: &str,
) -> Result<(), StoreError> {
    let changed = client
        .execute(
            "UPDATE journal SET status = $4, output = $5 \
             WHERE run_id = $1 AND tool_call_id = $2 AND attempt = $3",
            &[&run, &call, &(attempt as i32), &status.as_str(), &output],
        )
        .await
        .map_err(backend)?;
    if changed == 0 {
        return Err(StoreError::NotFound(format!(
            "journal entry {run}/{call}/{attempt}"
        )));
    }
    Ok(())
}

/// Claims an idempotency key: new, or what an earlier claim came to.
pub(super) async fn claim(
    client: &impl GenericClient,
    key: &str,
    thread: &str,
) -> Result<Claim, StoreError> {
    let inserted = client
        .execute(
            "INSERT INTO ledger (key, thread_id, status, output, created_at) \
             VALUES ($1, $2, 'intended', NULL, $3) ON CONFLICT (key) DO NOTHING",
            &[&key, &thread, &(now_millis() as i64)],
        )
        .await
        .map_err(backend)?;
    if inserted == 1 {
        return Ok(Claim::New);
    }
    let row = client
        .query_one("SELECT status, output FROM ledger WHERE key = $1", &[&key])
        .await
        .map_err(backend)?;
    let output: Option<String> = row.get(1);
    Ok(Claim::Existing {
        status: status(row.get::<_, &str>(0))?,
        output: output.map(|o| from_json(&o)).transpose()?,
    })
}

/// Settles a claimed key with its outcome (JSON).
pub(super) async fn settle_key(
    client: &impl GenericClient,
    key: &str,
    status: EffectStatus,
    output: &str,
) -> Result<(), StoreError> {
    let changed = client
        .execute(
            "UPDATE ledger SET status = $2, output = $3 WHERE key = $1",
            &[&key, &status.as_str(), &output],
        )
        .await
        .map_err(backend)?;
    if changed == 0 {
        return Err(StoreError::NotFound(format!("idempotency key {key}")));
    }
    Ok(())
}
