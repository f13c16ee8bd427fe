//! The journal's and the ledger's statements, on a connection or inside a transaction.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::{backend, from_json, status as status_of, to_json};
use crate::store::now_millis;
use crate::{Claim, EffectStatus, JournalEntry, StoreError};

/// Runs `sql` as a statement prepared once per connection (one round trip, not two).
pub(super) async fn execute(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, StoreError> {
    let statement = client.prepare_cached(sql).await.map_err(backend)?;
    client.execute(&statement, params).await.map_err(backend)
}

/// A journal entry's key as the statements bind it: `thread_id`, `run_id`, `tool_call_id`,
/// `attempt`.
pub(super) struct EntryKey<'a> {
    entry: &'a JournalEntry,
    attempt: i32,
}

impl<'a> EntryKey<'a> {
    pub(super) fn of(entry: &'a JournalEntry) -> Self {
        EntryKey {
            entry,
            attempt: entry.attempt as i32,
        }
    }

    /// The four values, in the key's order.
    pub(super) fn values(&self) -> [&(dyn ToSql + Sync); 4] {
        let e = self.entry;
        [&e.thread_id, &e.run_id, &e.tool_call_id, &self.attempt]
    }
}

/// A journal entry's values as [`INSERT_ENTRY`] binds them (`run_id` … `has_revert`, then
/// `output`), its input and output as JSON.
pub(super) struct NewEntry<'a> {
    entry: &'a JournalEntry,
    attempt: i32,
    seq: i64,
    input: String,
    status: &'static str,
    output: Option<String>,
}

impl<'a> NewEntry<'a> {
    pub(super) fn of(entry: &'a JournalEntry) -> Result<Self, StoreError> {
        Ok(NewEntry {
            entry,
            attempt: entry.attempt as i32,
            seq: entry.seq as i64,
            input: to_json(&entry.input)?,
            status: entry.status.as_str(),
            output: entry.output.as_ref().map(to_json).transpose()?,
        })
    }

    /// The fourteen values, in the INSERT's column order but `output`, last.
    pub(super) fn values(&self) -> [&(dyn ToSql + Sync); 14] {
        let e = self.entry;
        #[rustfmt::skip]
        let values: [&(dyn ToSql + Sync); 14] = [
            &e.run_id, &e.tool_call_id, &self.attempt, &e.thread_id, &e.tool_name, &self.seq,
            &self.input, &e.side_effect, &e.idempotent, &e.idempotency_key, &self.status,
            &e.accepts_idempotency_key, &e.has_revert, &self.output,
        ];
        values
    }
}

/// The INSERT that records a journal entry as it stands (`$1`…`$14`, [`NewEntry::values`]);
/// a second record of one attempt keeps the first.
const INSERT_ENTRY: &str = "INSERT INTO journal (run_id, tool_call_id, attempt, thread_id, \
     tool_name, seq, input, side_effect, idempotent, idempotency_key, status, output, \
     accepts_idempotency_key, has_revert) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $14, $12, $13) \
     ON CONFLICT (thread_id, run_id, tool_call_id, attempt) DO NOTHING";

/// Records `entry`; a second record of one attempt keeps the first.
pub(super) async fn intend(
    client: &impl GenericClient,
    entry: &JournalEntry,
) -> Result<(), StoreError> {
    execute(client, INSERT_ENTRY, &NewEntry::of(entry)?.values()).await?;
    Ok(())
}

/// Records `entry` and claims its idempotency key `key`, in one statement (one round trip and
/// one transaction): both rows are written, or neither.
pub(super) async fn intend_and_claim(
    client: &impl GenericClient,
    entry: &JournalEntry,
    key: &str,
) -> Result<Claim, StoreError> {
    let new = NewEntry::of(entry)?;
    let now = now_millis() as i64;
    let mut params = new.values().to_vec();
    params.extend::<[&(dyn ToSql + Sync); 2]>([&key, &now]);
    // The final SELECT reads the statement's snapshot: an earlier claim's row, or none when
    // this statement made the claim.
    let sql = format!(
        "WITH entry AS ({INSERT_ENTRY}), \
         claimed AS (INSERT INTO ledger (key, thread_id, status, output, created_at) \
             VALUES ($15, $4, 'intended', NULL, $16) ON CONFLICT (key) DO NOTHING RETURNING 1) \
         SELECT EXISTS (SELECT 1 FROM claimed), l.status, l.output \
         FROM (SELECT 1) AS one LEFT JOIN ledger AS l ON l.key = $15"
    );
    let statement = client.prepare_cached(&sql).await.map_err(backend)?;
    let row = client
        .query_one(&statement, &params)
        .await
        .map_err(backend)?;
    if row.get::<_, bool>(0) {
        return Ok(Claim::New);
    }
    match row.get::<_, Option<&str>>(1) {
        Some(found) => {
            let output: Option<String> = row.get(2);
            Ok(Claim::Existing {
                status: status_of(found)?,
                output: output.map(|o| from_json(&o)).transpose()?,
            })
        }
        // Claimed by a transaction that committed after this statement's snapshot was taken.
        None => claim(client, key, &entry.thread_id).await,
    }
}

/// Settles `entry`'s attempt with its outcome (JSON).
pub(super) async fn settle(
    client: &impl GenericClient,
    entry: &JournalEntry,
    status: EffectStatus,
    output: &str,
) -> Result<(), StoreError> {
    let key = EntryKey::of(entry);
    let [thread, run, call, attempt] = key.values();
    let changed = execute(
        client,
        "UPDATE journal SET status = $5, output = $6 \
             WHERE thread_id = $1 AND run_id = $2 AND tool_call_id = $3 AND attempt = $4",
        &[thread, run, call, attempt, &status.as_str(), &output],
    )
    .await?;
    if changed == 0 {
        return Err(StoreError::NotFound(entry.record_name()));
    }
    Ok(())
}

/// Whether `entry`'s attempt is recorded.
pub(super) async fn recorded(
    client: &impl GenericClient,
    entry: &JournalEntry,
) -> Result<bool, StoreError> {
    let found = client
        .query_opt(
            "SELECT 1 FROM journal \
             WHERE thread_id = $1 AND run_id = $2 AND tool_call_id = $3 AND attempt = $4",
            &EntryKey::of(entry).values(),
        )
        .await
        .map_err(backend)?;
    Ok(found.is_some())
}

/// Claims an idempotency key: new, or what an earlier claim came to.
pub(super) async fn claim(
    client: &impl GenericClient,
    key: &str,
    thread: &str,
) -> Result<Claim, StoreError> {
    let inserted = execute(
        client,
        "INSERT INTO ledger (key, thread_id, status, output, created_at) \
             VALUES ($1, $2, 'intended', NULL, $3) ON CONFLICT (key) DO NOTHING",
        &[&key, &thread, &(now_millis() as i64)],
    )
    .await?;
    if inserted == 1 {
        return Ok(Claim::New);
    }
    let row = client
        .query_one(
            &client
                .prepare_cached("SELECT status, output FROM ledger WHERE key = $1")
                .await
                .map_err(backend)?,
            &[&key],
        )
        .await
        .map_err(backend)?;
    let output: Option<String> = row.get(1);
    Ok(Claim::Existing {
        status: status_of(row.get::<_, &str>(0))?,
        output: output.map(|o| from_json(&o)).transpose()?,
    })
}

/// Settles an attempt and its claimed key `key` with one outcome (JSON), in one statement:
/// each row changes only if the other exists, so both change or neither.
pub(super) async fn settle_with_key(
    client: &impl GenericClient,
    entry: &JournalEntry,
    key: &str,
    status: EffectStatus,
    output: &str,
) -> Result<(), StoreError> {
    let sql = "WITH entry AS (UPDATE journal SET status = $5, output = $6 \
             WHERE thread_id = $1 AND run_id = $2 AND tool_call_id = $3 AND attempt = $4 \
             AND EXISTS (SELECT 1 FROM ledger WHERE key = $7) RETURNING 1), \
         settled AS (UPDATE ledger SET status = $5, output = $6 \
             WHERE key = $7 AND EXISTS (SELECT 1 FROM entry) RETURNING 1) \
         SELECT (SELECT count(*) FROM entry), (SELECT count(*) FROM settled)";
    let statement = client.prepare_cached(sql).await.map_err(backend)?;
    let entry_key = EntryKey::of(entry);
    let [thread, run, call, attempt] = entry_key.values();
    let params: [&(dyn ToSql + Sync); 7] =
        [thread, run, call, attempt, &status.as_str(), &output, &key];
    let row = client
        .query_one(&statement, &params)
        .await
        .map_err(backend)?;
    if row.get::<_, i64>(1) == 1 {
        return Ok(());
    }
    // Nothing changed: name what is missing.
    Err(StoreError::NotFound(if recorded(client, entry).await? {
        format!("idempotency key {key}")
    } else {
        entry.record_name()
    }))
}
