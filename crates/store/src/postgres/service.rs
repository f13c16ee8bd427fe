//! [`ServiceStore`] for [`PostgresStore`]: accounts, agents, events, async results and dispatch
//! groups (schema versions 7 and 8).
//!
//! Every write is one statement or one transaction, and the conditional ones are decided by
//! the database: an event or an async result is inserted with `ON CONFLICT DO NOTHING` (a
//! concurrent insert of the same key waits for the first to commit, then does nothing) and the
//! rows it changed tell whether it was new; a settlement is an `UPDATE … WHERE status =
//! 'processing'` (a concurrent one waits for the first's row lock, then finds the row settled).
//! So of several processes sharing the database, exactly one inserts an event id or settles a
//! call.
//!
//! JSON (an event's detail, a call's input and response) is stored as text, as the journal's:
//! a response of `None` is SQL `NULL`, one of `Some(Value::Null)` the text `null`, and each
//! reads back as it was written. Times are `BIGINT`: a time past `i64::MAX` milliseconds is
//! kept as `i64::MAX` (so a row that never expires is never purged). The names and ids that
//! lists are ordered by are of the `"C"` collation, or sorted with it (an event's id): in byte
//! order, whatever the database's locale.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use serde_json::Value;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use toolsmith_core::Message;

use super::journal::execute;
use super::{PostgresStore, backend, from_json, to_json};
use crate::service::{millis, time};
use crate::store::now_millis;
use crate::{
    Account, AgentRecord, AsyncResult, AsyncSettlement, AsyncStatus, DispatchGroup, EventRecord,
    EventStatus, Holder, NewThread, ServiceStore, StoreError,
};

/// The rows of `sql`, a statement prepared once per connection.
async fn query(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, StoreError> {
    let statement = client.prepare_cached(sql).await.map_err(backend)?;
    client.query(&statement, params).await.map_err(backend)
}

/// The one row of `sql`, if there is one, a statement prepared once per connection.
async fn query_opt(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<Row>, StoreError> {
    let statement = client.prepare_cached(sql).await.map_err(backend)?;
    client.query_opt(&statement, params).await.map_err(backend)
}

const ACCOUNT_COLUMNS: &str = "name, secret_hash, created_at";

fn account_of(row: &Row) -> Result<Account, StoreError> {
    let name: String = row.get(0);
    let hash: Vec<u8> = row.get(1);
    let secret_hash = <[u8; 32]>::try_from(hash.as_slice()).map_err(|_| {
        StoreError::Corrupt(format!(
            "account {name}'s secret hash is {} bytes, not 32",
            hash.len()
        ))
    })?;
    Ok(Account {
        name,
        secret_hash,
        created_at: time(row.get(2))?,
    })
}

const AGENT_COLUMNS: &str = "account, id, config, active, updated_at";

fn agent_of(row: &Row) -> Result<AgentRecord, StoreError> {
    Ok(AgentRecord {
        account: row.get(0),
        id: row.get(1),
        config: row.get(2),
        active: row.get(3),
        updated_at: time(row.get(4))?,
    })
}

const EVENT_COLUMNS: &str = "account, agent_id, event_id, conversation_key, thread_id, status, \
     detail, created_at, updated_at, expires_at";

fn event_of(row: &Row) -> Result<EventRecord, StoreError> {
    let status: &str = row.get(5);
    Ok(EventRecord {
        account: row.get(0),
        agent_id: row.get(1),
        event_id: row.get(2),
        conversation_key: row.get(3),
        thread_id: row.get(4),
        status: EventStatus::parse(status)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown event status \"{status}\"")))?,
        detail: from_json(row.get::<_, &str>(6))?,
        created_at: time(row.get(7))?,
        updated_at: time(row.get(8))?,
        expires_at: time(row.get(9))?,
    })
}

const ASYNC_COLUMNS: &str = "result_id, account, agent_id, parent_event_id, conversation_key, \
     tool_name, tool_call_id, input, status, response, error, external, created_at, \
     updated_at, expires_at";

fn async_result_of(row: &Row) -> Result<AsyncResult, StoreError> {
    let status: &str = row.get(8);
    let response: Option<&str> = row.get(9);
    Ok(AsyncResult {
        result_id: row.get(0),
        account: row.get(1),
        agent_id: row.get(2),
        parent_event_id: row.get(3),
        conversation_key: row.get(4),
        tool_name: row.get(5),
        tool_call_id: row.get(6),
        input: from_json(row.get::<_, &str>(7))?,
        status: AsyncStatus::parse(status).ok_or_else(|| {
            StoreError::Corrupt(format!("unknown async result status \"{status}\""))
        })?,
        response: response.map(from_json).transpose()?,
        error: row.get(10),
        external: row.get(11),
        created_at: time(row.get(12))?,
        updated_at: time(row.get(13))?,
        expires_at: time(row.get(14))?,
    })
}

/// Records `row`, and with `group` adds it to its parent event's dispatch group, on `client`
/// (a transaction). [`StoreError::Exists`] when the id is taken.
async fn insert_async(
    client: &impl GenericClient,
    row: &AsyncResult,
    group: bool,
) -> Result<(), StoreError> {
    let (input, status) = (to_json(&row.input)?, row.status.as_str());
    let response = row.response.as_ref().map(to_json).transpose()?;
    let times = [row.created_at, row.updated_at, row.expires_at].map(millis);
    let sql = format!(
        "INSERT INTO async_results ({ASYNC_COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) \
         ON CONFLICT (result_id) DO NOTHING"
    );
    #[rustfmt::skip]
    let values: [&(dyn ToSql + Sync); 15] = [
        &row.result_id, &row.account, &row.agent_id, &row.parent_event_id,
        &row.conversation_key, &row.tool_name, &row.tool_call_id, &input, &status, &response,
        &row.error, &row.external, &times[0], &times[1], &times[2],
    ];
    if execute(client, &sql, &values).await? == 0 {
        return Err(StoreError::Exists(row.result_id.clone()));
    }
    if !group {
        return Ok(());
    }
    // The group's row first: its lock makes a concurrent insert into the group wait until this
    // transaction ends, and then see this member when it counts positions.
    execute(
        client,
        "INSERT INTO dispatch_groups (parent_event_id, sealed, expires_at) \
         VALUES ($1, FALSE, $2) \
         ON CONFLICT (parent_event_id) DO UPDATE SET expires_at = EXCLUDED.expires_at",
        &[&row.parent_event_id, &times[2]],
    )
    .await?;
    // At the end of the group's ids. An id there already (left by a purged call of the same
    // id) keeps its place.
    execute(
        client,
        "INSERT INTO dispatch_group_members (parent_event_id, result_id, position) \
         SELECT $1::TEXT, $2::TEXT, COALESCE(MAX(position), 0) + 1 FROM dispatch_group_members \
         WHERE parent_event_id = $1 ON CONFLICT (parent_event_id, result_id) DO NOTHING",
        &[&row.parent_event_id, &row.result_id],
    )
    .await?;
    Ok(())
}

/// Records `event` on `client` unless its id is taken: whether it did.
async fn insert_event(
    client: &impl GenericClient,
    event: &EventRecord,
) -> Result<bool, StoreError> {
    let (status, detail) = (event.status.as_str(), to_json(&event.detail)?);
    let times = [event.created_at, event.updated_at, event.expires_at].map(millis);
    let sql = format!(
        "INSERT INTO events ({EVENT_COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT (account, agent_id, event_id) DO NOTHING"
    );
    #[rustfmt::skip]
    let values: [&(dyn ToSql + Sync); 10] = [
        &event.account, &event.agent_id, &event.event_id, &event.conversation_key,
        &event.thread_id, &status, &detail, &times[0], &times[1], &times[2],
    ];
    Ok(execute(client, &sql, &values).await? == 1)
}

#[async_trait]
impl ServiceStore for PostgresStore {
    async fn create_account(&self, account: &Account) -> Result<(), StoreError> {
        let client = self.client().await?;
        let (hash, created_at) = (&account.secret_hash[..], millis(account.created_at));
        let inserted = execute(
            &client,
            "INSERT INTO accounts (name, secret_hash, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO NOTHING",
            &[&account.name, &hash, &created_at],
        )
        .await?;
        if inserted == 0 {
            return Err(StoreError::Exists(account.name.clone()));
        }
        Ok(())
    }

    async fn account(&self, name: &str) -> Result<Option<Account>, StoreError> {
        let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE name = $1");
        query_opt(&self.client().await?, &sql, &[&name])
            .await?
            .map(|row| account_of(&row))
            .transpose()
    }

    async fn accounts(&self) -> Result<Vec<Account>, StoreError> {
        let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM accounts ORDER BY name");
        let rows = query(&self.client().await?, &sql, &[]).await?;
        rows.iter().map(account_of).collect()
    }

    async fn put_agent(&self, agent: &AgentRecord) -> Result<(), StoreError> {
        let client = self.client().await?;
        let updated_at = millis(agent.updated_at);
        // One statement: the account's row is checked by it.
        let written = execute(
            &client,
            "INSERT INTO agents (account, id, config, active, updated_at) \
             SELECT $1::TEXT, $2::TEXT, $3::BYTEA, $4::BOOLEAN, $5::BIGINT \
             WHERE EXISTS (SELECT 1 FROM accounts WHERE name = $1) \
             ON CONFLICT (account, id) DO UPDATE SET config = EXCLUDED.config, \
             active = EXCLUDED.active, updated_at = EXCLUDED.updated_at",
            &[
                &agent.account,
                &agent.id,
                &agent.config,
                &agent.active,
                &updated_at,
            ],
        )
        .await?;
        if written == 0 {
            return Err(StoreError::NotFound(agent.account.clone()));
        }
        Ok(())
    }

    async fn agent(&self, account: &str, id: &str) -> Result<Option<AgentRecord>, StoreError> {
        let sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE account = $1 AND id = $2");
        query_opt(&self.client().await?, &sql, &[&account, &id])
            .await?
            .map(|row| agent_of(&row))
            .transpose()
    }

    async fn agents(&self, account: &str) -> Result<Vec<AgentRecord>, StoreError> {
        let sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE account = $1 ORDER BY id");
        let rows = query(&self.client().await?, &sql, &[&account]).await?;
        rows.iter().map(agent_of).collect()
    }

    async fn delete_agent(&self, account: &str, id: &str) -> Result<bool, StoreError> {
        let removed = execute(
            &self.client().await?,
            "DELETE FROM agents WHERE account = $1 AND id = $2",
            &[&account, &id],
        )
        .await?;
        Ok(removed == 1)
    }

    async fn insert_event(&self, event: &EventRecord) -> Result<bool, StoreError> {
        insert_event(&self.client().await?, event).await
    }

    async fn start_event(
        &self,
        event: &EventRecord,
        thread: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<Option<u64>, StoreError> {
        let mut client = self.client().await?;
        // A transaction of two statements: the event is written only with its thread. (Dropped
        // without a commit, it rolls back.)
        let tx = client.transaction().await.map_err(backend)?;
        if !insert_event(&tx, event).await? {
            return Ok(None);
        }
        if !super::start_thread(&tx, &thread, prompt, run_id, holder).await? {
            return Err(StoreError::Exists(thread.id));
        }
        tx.commit().await.map_err(backend)?;
        Ok(Some(2))
    }

    async fn event(
        &self,
        account: &str,
        agent_id: &str,
        event_id: &str,
    ) -> Result<Option<EventRecord>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM events \
             WHERE account = $1 AND agent_id = $2 AND event_id = $3"
        );
        query_opt(
            &self.client().await?,
            &sql,
            &[&account, &agent_id, &event_id],
        )
        .await?
        .map(|row| event_of(&row))
        .transpose()
    }

    async fn processing_events(&self, thread_id: &str) -> Result<Vec<EventRecord>, StoreError> {
        // The status as a literal, not a parameter, so that the partial index
        // `events_processing` serves the query (in its order: the event id in byte order).
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM events \
             WHERE thread_id = $1 AND status = 'processing' \
             ORDER BY created_at, event_id COLLATE \"C\""
        );
        let rows = query(&self.client().await?, &sql, &[&thread_id]).await?;
        rows.iter().map(event_of).collect()
    }

    async fn update_event(
        &self,
        account: &str,
        agent_id: &str,
        event_id: &str,
        status: EventStatus,
        detail: &Value,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        settle_event(&client, [account, agent_id, event_id], status, detail).await
    }

    async fn insert_async_result(&self, row: &AsyncResult, group: bool) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        if let Err(e) = insert_async(&tx, row, group).await {
            // Nothing of it stays. A rollback that fails leaves the transaction to the
            // server, which drops it with the connection.
            let _ = tx.rollback().await;
            return Err(e);
        }
        tx.commit().await.map_err(backend)
    }

    async fn async_result(&self, result_id: &str) -> Result<Option<AsyncResult>, StoreError> {
        let sql = format!("SELECT {ASYNC_COLUMNS} FROM async_results WHERE result_id = $1");
        query_opt(&self.client().await?, &sql, &[&result_id])
            .await?
            .map(|row| async_result_of(&row))
            .transpose()
    }

    async fn settle_async_result(
        &self,
        result_id: &str,
        settlement: &AsyncSettlement,
    ) -> Result<bool, StoreError> {
        let (status, response, error) = settlement.columns()?;
        let (status, now) = (status.as_str(), millis(now_millis()));
        // One conditional UPDATE: a concurrent one waits for this row's lock, then re-checks
        // the status and changes nothing.
        let settled = execute(
            &self.client().await?,
            "UPDATE async_results SET status = $2, response = $3, error = $4, updated_at = $5 \
             WHERE result_id = $1 AND status = 'processing'",
            &[&result_id, &status, &response, &error, &now],
        )
        .await?;
        Ok(settled == 1)
    }

    async fn async_results_of(
        &self,
        parent_event_id: &str,
    ) -> Result<Vec<AsyncResult>, StoreError> {
        let sql = format!(
            "SELECT {ASYNC_COLUMNS} FROM async_results WHERE parent_event_id = $1 \
             ORDER BY created_at, result_id"
        );
        let rows = query(&self.client().await?, &sql, &[&parent_event_id]).await?;
        rows.iter().map(async_result_of).collect()
    }

    async fn seal_group(&self, parent_event_id: &str, expires_at: u64) -> Result<(), StoreError> {
        execute(
            &self.client().await?,
            "INSERT INTO dispatch_groups (parent_event_id, sealed, expires_at) \
             VALUES ($1, TRUE, $2) ON CONFLICT (parent_event_id) DO UPDATE SET sealed = TRUE, \
             expires_at = EXCLUDED.expires_at",
            &[&parent_event_id, &millis(expires_at)],
        )
        .await?;
        Ok(())
    }

    async fn group(&self, parent_event_id: &str) -> Result<Option<DispatchGroup>, StoreError> {
        // One statement, so the flag and the ids are read at one moment.
        let rows = query(
            &self.client().await?,
            "SELECT g.sealed, m.result_id FROM dispatch_groups g \
             LEFT JOIN dispatch_group_members m ON m.parent_event_id = g.parent_event_id \
             WHERE g.parent_event_id = $1 ORDER BY m.position",
            &[&parent_event_id],
        )
        .await?;
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        Ok(Some(DispatchGroup {
            sealed: first.get(0),
            result_ids: rows.iter().filter_map(|row| row.get(1)).collect(),
        }))
    }

    async fn purge_expired(&self, now: u64) -> Result<u64, StoreError> {
        // One statement, so one snapshot and one commit. A group's members go with it (ON
        // DELETE CASCADE), uncounted.
        let row = query_opt(
            &self.client().await?,
            "WITH e AS (DELETE FROM events WHERE expires_at < $1 RETURNING 1), \
             a AS (DELETE FROM async_results WHERE expires_at < $1 RETURNING 1), \
             g AS (DELETE FROM dispatch_groups WHERE expires_at < $1 RETURNING 1) \
             SELECT (SELECT count(*) FROM e) + (SELECT count(*) FROM a) \
             + (SELECT count(*) FROM g)",
            &[&millis(now)],
        )
        .await?;
        let purged: i64 = row.map_or(0, |row| row.get(0));
        u64::try_from(purged).map_err(|_| StoreError::Corrupt(format!("a purge of {purged} rows")))
    }

    async fn wake_replicas(&self) -> Result<(), StoreError> {
        let client = self.client().await?;
        execute(
            &client,
            "SELECT pg_notify($1, '')",
            &[&super::listen::CHANNEL],
        )
        .await?;
        Ok(())
    }

    fn wakes(&self) -> tokio::sync::broadcast::Receiver<()> {
        self.listen()
    }
}

/// Sets the event's status and detail and `updated_at`: `update_event`, and
/// [`Op::SettleEvent`](crate::Op::SettleEvent) in a batch.
pub(super) async fn settle_event(
    client: &impl GenericClient,
    [account, agent_id, event_id]: [&str; 3],
    status: EventStatus,
    detail: &Value,
) -> Result<(), StoreError> {
    let (status, detail, now) = (status.as_str(), to_json(detail)?, millis(now_millis()));
    let updated = execute(
        client,
        "UPDATE events SET status = $4, detail = $5, updated_at = $6 \
         WHERE account = $1 AND agent_id = $2 AND event_id = $3",
        &[&account, &agent_id, &event_id, &status, &detail, &now],
    )
    .await?;
    match updated {
        0 => Err(StoreError::NotFound(event_id.to_string())),
        _ => Ok(()),
    }
}
