//! [`ServiceStore`] for [`SqliteStore`]: accounts, agents, events, async results and dispatch
//! groups (schema versions 8 and 9).
//!
//! Every write is one statement or one immediate transaction (which takes the file's write
//! lock at once), and the conditional ones are decided by the database: an event or an async
//! result is inserted with `ON CONFLICT DO NOTHING` and the rows it changed tell whether it
//! was new; a settlement is an `UPDATE … WHERE status = 'processing'`. So of two processes
//! sharing the file, exactly one inserts an event id or settles a call.
//!
//! JSON (an event's detail, a call's input and response) is stored as text: a response of
//! `None` is SQL `NULL`, one of `Some(Value::Null)` the text `null`, and each reads back as it
//! was written. Times are stored as signed 64-bit integers: a time past `i64::MAX`
//! milliseconds is kept as `i64::MAX` (so a row that never expires is never purged).

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;

use toolsmith_core::Message;

use super::commit::{Start, immediate};
use super::{SqliteStore, backend, from_json, to_json};
use crate::service::{millis, time};
use crate::store::now_millis;
use crate::{
    Account, AgentRecord, AsyncResult, AsyncSettlement, AsyncStatus, DispatchGroup, EventRecord,
    EventStatus, Holder, NewThread, ServiceStore, StoreError,
};

fn event_status(name: &str) -> Result<EventStatus, StoreError> {
    EventStatus::parse(name)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown event status \"{name}\"")))
}

fn async_status(name: &str) -> Result<AsyncStatus, StoreError> {
    AsyncStatus::parse(name)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown async result status \"{name}\"")))
}

fn account_of(r: &Row<'_>) -> rusqlite::Result<Result<Account, StoreError>> {
    let name: String = r.get(0)?;
    let hash: Vec<u8> = r.get(1)?;
    let created_at: i64 = r.get(2)?;
    Ok(match <[u8; 32]>::try_from(hash.as_slice()) {
        Ok(secret_hash) => time(created_at).map(|created_at| Account {
            name,
            secret_hash,
            created_at,
        }),
        Err(_) => Err(StoreError::Corrupt(format!(
            "account {name}'s secret hash is {} bytes, not 32",
            hash.len()
        ))),
    })
}

const AGENT_COLUMNS: &str = "account, id, config, active, updated_at";

fn agent_of(r: &Row<'_>) -> rusqlite::Result<Result<AgentRecord, StoreError>> {
    let (account, id, config, active) = (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
    let updated_at: i64 = r.get(4)?;
    Ok(time(updated_at).map(|updated_at| AgentRecord {
        account,
        id,
        config,
        active,
        updated_at,
    }))
}

/// Sets the event's status and detail (JSON) and `updated_at`: `update_event`, and
/// [`Op::SettleEvent`](crate::Op::SettleEvent) in a batch.
pub(super) fn settle_event(
    conn: &Connection,
    [account, agent_id, event_id]: [&str; 3],
    status: EventStatus,
    detail: &str,
) -> Result<(), StoreError> {
    let updated = conn
        .prepare_cached(
            "UPDATE events SET status = ?4, detail = ?5, updated_at = ?6 \
             WHERE account = ?1 AND agent_id = ?2 AND event_id = ?3",
        )
        .and_then(|mut update| {
            update.execute(params![
                account,
                agent_id,
                event_id,
                status.as_str(),
                detail,
                millis(now_millis())
            ])
        })
        .map_err(backend)?;
    match updated {
        0 => Err(StoreError::NotFound(event_id.to_string())),
        _ => Ok(()),
    }
}

/// Records `event` (its detail already JSON) unless its id is taken: whether it did.
fn insert_event(conn: &Connection, event: &EventRecord, detail: &str) -> Result<bool, StoreError> {
    let inserted = conn
        .prepare_cached(INSERT_EVENT)
        .and_then(|mut insert| {
            insert.execute(params![
                event.account,
                event.agent_id,
                event.event_id,
                event.conversation_key,
                event.thread_id,
                event.status.as_str(),
                detail,
                millis(event.created_at),
                millis(event.updated_at),
                millis(event.expires_at),
            ])
        })
        .map_err(backend)?;
    Ok(inserted == 1)
}

/// An event's columns, in the order `event_of` reads them.
macro_rules! event_columns {
    () => {
        "account, agent_id, event_id, conversation_key, thread_id, status, detail, created_at, \
         updated_at, expires_at"
    };
}

const EVENT_COLUMNS: &str = event_columns!();

/// The INSERT of an event that keeps the first of two with one id (a constant: the statement
/// cache finds it without a `format!` per event).
const INSERT_EVENT: &str = concat!(
    "INSERT INTO events (",
    event_columns!(),
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
     ON CONFLICT (account, agent_id, event_id) DO NOTHING"
);

fn event_of(r: &Row<'_>) -> rusqlite::Result<Result<EventRecord, StoreError>> {
    let (account, agent_id, event_id) = (r.get(0)?, r.get(1)?, r.get(2)?);
    let (conversation_key, thread_id) = (r.get(3)?, r.get(4)?);
    let (status, detail): (String, String) = (r.get(5)?, r.get(6)?);
    let times: (i64, i64, i64) = (r.get(7)?, r.get(8)?, r.get(9)?);
    Ok(event_status(&status).and_then(|status| {
        Ok(EventRecord {
            account,
            agent_id,
            event_id,
            conversation_key,
            thread_id,
            status,
            detail: from_json(&detail)?,
            created_at: time(times.0)?,
            updated_at: time(times.1)?,
            expires_at: time(times.2)?,
        })
    }))
}

const ASYNC_COLUMNS: &str = "result_id, account, agent_id, parent_event_id, conversation_key, \
     tool_name, tool_call_id, input, status, response, error, external, created_at, \
     updated_at, expires_at";

fn async_result_of(r: &Row<'_>) -> rusqlite::Result<Result<AsyncResult, StoreError>> {
    let (result_id, account, agent_id) = (r.get(0)?, r.get(1)?, r.get(2)?);
    let (parent_event_id, conversation_key) = (r.get(3)?, r.get(4)?);
    let (tool_name, tool_call_id) = (r.get(5)?, r.get(6)?);
    let (input, status): (String, String) = (r.get(7)?, r.get(8)?);
    let (response, error): (Option<String>, Option<String>) = (r.get(9)?, r.get(10)?);
    let external = r.get(11)?;
    let times: (i64, i64, i64) = (r.get(12)?, r.get(13)?, r.get(14)?);
    Ok(async_status(&status).and_then(|status| {
        Ok(AsyncResult {
            result_id,
            account,
            agent_id,
            parent_event_id,
            conversation_key,
            tool_name,
            tool_call_id,
            input: from_json(&input)?,
            status,
            response: response.map(|r| from_json(&r)).transpose()?,
            error,
            external,
            created_at: time(times.0)?,
            updated_at: time(times.1)?,
            expires_at: time(times.2)?,
        })
    }))
}

/// Rows of `sql` with `params`, each made by `of`.
fn select<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    of: fn(&Row<'_>) -> rusqlite::Result<Result<T, StoreError>>,
) -> Result<Vec<T>, StoreError> {
    let mut select = conn.prepare_cached(sql).map_err(backend)?;
    let rows = select.query_map(params, of).map_err(backend)?;
    rows.map(|r| r.map_err(backend).and_then(|row| row))
        .collect()
}

/// The one row of `sql` with `params`, if there is one, made by `of`.
fn select_one<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    of: fn(&Row<'_>) -> rusqlite::Result<Result<T, StoreError>>,
) -> Result<Option<T>, StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut select| select.query_row(params, of).optional())
        .map_err(backend)?
        .transpose()
}

/// Records `row` (its input and response already JSON), and with `group` adds it to its parent
/// event's dispatch group, inside `tx`. [`StoreError::Exists`] when the id is taken.
fn insert_async(
    tx: &Connection,
    row: &AsyncResult,
    json: &(String, Option<String>),
    group: bool,
) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO async_results ({ASYNC_COLUMNS}) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) \
         ON CONFLICT (result_id) DO NOTHING"
    );
    let inserted = tx
        .prepare_cached(&sql)
        .and_then(|mut insert| {
            insert.execute(params![
                row.result_id,
                row.account,
                row.agent_id,
                row.parent_event_id,
                row.conversation_key,
                row.tool_name,
                row.tool_call_id,
                json.0,
                row.status.as_str(),
                json.1,
                row.error,
                row.external,
                millis(row.created_at),
                millis(row.updated_at),
                millis(row.expires_at),
            ])
        })
        .map_err(backend)?;
    if inserted == 0 {
        return Err(StoreError::Exists(row.result_id.clone()));
    }
    if !group {
        return Ok(());
    }
    tx.prepare_cached(
        "INSERT INTO dispatch_groups (parent_event_id, sealed, expires_at) VALUES (?1, 0, ?2) \
         ON CONFLICT (parent_event_id) DO UPDATE SET expires_at = excluded.expires_at",
    )
    .and_then(|mut upsert| upsert.execute(params![row.parent_event_id, millis(row.expires_at)]))
    .map_err(backend)?;
    // At the end of the group's ids. An id there already (left by a purged call of the same
    // id) keeps its place.
    tx.prepare_cached(
        "INSERT INTO dispatch_group_members (parent_event_id, result_id, position) \
         SELECT ?1, ?2, COALESCE(MAX(position), 0) + 1 FROM dispatch_group_members \
         WHERE parent_event_id = ?1 ON CONFLICT (parent_event_id, result_id) DO NOTHING",
    )
    .and_then(|mut insert| insert.execute(params![row.parent_event_id, row.result_id]))
    .map_err(backend)?;
    Ok(())
}

#[async_trait]
impl ServiceStore for SqliteStore {
    async fn create_account(&self, account: &Account) -> Result<(), StoreError> {
        let account = account.clone();
        self.with(move |conn| {
            let inserted = conn
                .prepare_cached(
                    "INSERT INTO accounts (name, secret_hash, created_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (name) DO NOTHING",
                )
                .and_then(|mut insert| {
                    insert.execute(params![
                        account.name,
                        &account.secret_hash[..],
                        millis(account.created_at)
                    ])
                })
                .map_err(backend)?;
            if inserted == 0 {
                return Err(StoreError::Exists(account.name));
            }
            Ok(())
        })
        .await
    }

    async fn account(&self, name: &str) -> Result<Option<Account>, StoreError> {
        let name = name.to_string();
        self.with(move |conn| {
            let sql = "SELECT name, secret_hash, created_at FROM accounts WHERE name = ?1";
            select_one(conn, sql, [name], account_of)
        })
        .await
    }

    async fn accounts(&self) -> Result<Vec<Account>, StoreError> {
        self.with_long(|conn| {
            let sql = "SELECT name, secret_hash, created_at FROM accounts ORDER BY name";
            select(conn, sql, [], account_of)
        })
        .await
    }

    async fn put_agent(&self, agent: &AgentRecord) -> Result<(), StoreError> {
        let agent = agent.clone();
        self.with(move |conn| {
            // One statement: the account's row is checked under the same write lock.
            let written = conn
                .prepare_cached(
                    "INSERT INTO agents (account, id, config, active, updated_at) \
                     SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS \
                     (SELECT 1 FROM accounts WHERE name = ?1) \
                     ON CONFLICT (account, id) DO UPDATE SET config = excluded.config, \
                     active = excluded.active, updated_at = excluded.updated_at",
                )
                .and_then(|mut upsert| {
                    upsert.execute(params![
                        agent.account,
                        agent.id,
                        agent.config,
                        agent.active,
                        millis(agent.updated_at)
                    ])
                })
                .map_err(backend)?;
            if written == 0 {
                return Err(StoreError::NotFound(agent.account));
            }
            Ok(())
        })
        .await
    }

    async fn agent(&self, account: &str, id: &str) -> Result<Option<AgentRecord>, StoreError> {
        let (account, id) = (account.to_string(), id.to_string());
        self.with(move |conn| {
            let sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE account = ?1 AND id = ?2");
            select_one(conn, &sql, [account, id], agent_of)
        })
        .await
    }

    async fn agents(&self, account: &str) -> Result<Vec<AgentRecord>, StoreError> {
        let account = account.to_string();
        self.with_long(move |conn| {
            let sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE account = ?1 ORDER BY id");
            select(conn, &sql, [account], agent_of)
        })
        .await
    }

    async fn delete_agent(&self, account: &str, id: &str) -> Result<bool, StoreError> {
        let (account, id) = (account.to_string(), id.to_string());
        self.with(move |conn| {
            let removed = conn
                .prepare_cached("DELETE FROM agents WHERE account = ?1 AND id = ?2")
                .and_then(|mut delete| delete.execute([account, id]))
                .map_err(backend)?;
            Ok(removed == 1)
        })
        .await
    }

    async fn insert_event(&self, event: &EventRecord) -> Result<bool, StoreError> {
        let (event, detail) = (event.clone(), to_json(&event.detail)?);
        self.with(move |conn| insert_event(conn, &event, &detail))
            .await
    }

    async fn start_event(
        &self,
        event: &EventRecord,
        thread: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<Option<u64>, StoreError> {
        let (event, detail) = (event.clone(), to_json(&event.detail)?);
        let start = Start::of(thread, prompt, run_id, holder)?;
        self.write(move |conn| {
            if !insert_event(conn, &event, &detail)? {
                return Ok(None);
            }
            // An error undoes the write: the event is not kept either.
            start.write(conn)?;
            Ok(Some(2))
        })
        .await
    }

    async fn event(
        &self,
        account: &str,
        agent_id: &str,
        event_id: &str,
    ) -> Result<Option<EventRecord>, StoreError> {
        let key = [account, agent_id, event_id].map(str::to_string);
        self.with(move |conn| {
            let sql = format!(
                "SELECT {EVENT_COLUMNS} FROM events \
                 WHERE account = ?1 AND agent_id = ?2 AND event_id = ?3"
            );
            select_one(conn, &sql, key, event_of)
        })
        .await
    }

    async fn processing_events(&self, thread_id: &str) -> Result<Vec<EventRecord>, StoreError> {
        let thread_id = thread_id.to_string();
        self.with(move |conn| {
            // The status as a literal, not a parameter: SQLite uses the partial index
            // `events_processing` only for a query whose WHERE implies the index's.
            let sql = format!(
                "SELECT {EVENT_COLUMNS} FROM events \
                 WHERE thread_id = ?1 AND status = 'processing' ORDER BY created_at, event_id"
            );
            select(conn, &sql, [thread_id], event_of)
        })
        .await
    }

    async fn update_event(
        &self,
        account: &str,
        agent_id: &str,
        event_id: &str,
        status: EventStatus,
        detail: &Value,
    ) -> Result<(), StoreError> {
        let [account, agent_id, event_id] = [account, agent_id, event_id].map(str::to_string);
        let detail = to_json(detail)?;
        self.with(move |conn| settle_event(conn, [&account, &agent_id, &event_id], status, &detail))
            .await
    }

    async fn insert_async_result(&self, row: &AsyncResult, group: bool) -> Result<(), StoreError> {
        let response = row.response.as_ref().map(to_json).transpose()?;
        let (row, json) = (row.clone(), (to_json(&row.input)?, response));
        self.with(move |conn| {
            let tx = immediate(conn)?;
            // A failure drops the transaction: nothing of it stays.
            insert_async(&tx, &row, &json, group)?;
            tx.commit()
        })
        .await
    }

    async fn async_result(&self, result_id: &str) -> Result<Option<AsyncResult>, StoreError> {
        let result_id = result_id.to_string();
        self.with(move |conn| {
            let sql = format!("SELECT {ASYNC_COLUMNS} FROM async_results WHERE result_id = ?1");
            select_one(conn, &sql, [result_id], async_result_of)
        })
        .await
    }

    async fn settle_async_result(
        &self,
        result_id: &str,
        settlement: &AsyncSettlement,
    ) -> Result<bool, StoreError> {
        let (status, response, error) = settlement.columns()?;
        let error = error.map(str::to_string);
        let result_id = result_id.to_string();
        self.with(move |conn| {
            // One conditional UPDATE: SQLite's write lock makes it atomic.
            let settled = conn
                .prepare_cached(
                    "UPDATE async_results SET status = ?2, response = ?3, error = ?4, \
                     updated_at = ?5 WHERE result_id = ?1 AND status = 'processing'",
                )
                .and_then(|mut update| {
                    update.execute(params![
                        result_id,
                        status.as_str(),
                        response,
                        error,
                        millis(now_millis())
                    ])
                })
                .map_err(backend)?;
            Ok(settled == 1)
        })
        .await
    }

    async fn async_results_of(
        &self,
        parent_event_id: &str,
    ) -> Result<Vec<AsyncResult>, StoreError> {
        let parent = parent_event_id.to_string();
        self.with(move |conn| {
            let sql = format!(
                "SELECT {ASYNC_COLUMNS} FROM async_results WHERE parent_event_id = ?1 \
                 ORDER BY created_at, result_id"
            );
            select(conn, &sql, [parent], async_result_of)
        })
        .await
    }

    async fn seal_group(&self, parent_event_id: &str, expires_at: u64) -> Result<(), StoreError> {
        let parent = parent_event_id.to_string();
        self.with(move |conn| {
            conn.prepare_cached(
                "INSERT INTO dispatch_groups (parent_event_id, sealed, expires_at) \
                 VALUES (?1, 1, ?2) ON CONFLICT (parent_event_id) DO UPDATE SET sealed = 1, \
                 expires_at = excluded.expires_at",
            )
            .and_then(|mut upsert| upsert.execute(params![parent, millis(expires_at)]))
            .map_err(backend)?;
            Ok(())
        })
        .await
    }

    async fn group(&self, parent_event_id: &str) -> Result<Option<DispatchGroup>, StoreError> {
        let parent = parent_event_id.to_string();
        self.with(move |conn| {
            // One statement, so the flag and the ids are read at one moment.
            let mut select = conn
                .prepare_cached(
                    "SELECT g.sealed, m.result_id FROM dispatch_groups g \
                     LEFT JOIN dispatch_group_members m ON m.parent_event_id = g.parent_event_id \
                     WHERE g.parent_event_id = ?1 ORDER BY m.position",
                )
                .map_err(backend)?;
            let rows = select
                .query_map([parent], |r| {
                    Ok((r.get::<_, bool>(0)?, r.get::<_, Option<String>>(1)?))
                })
                .map_err(backend)?;
            let mut group: Option<DispatchGroup> = None;
            for row in rows {
                let (sealed, member) = row.map_err(backend)?;
                let group = group.get_or_insert_with(|| DispatchGroup {
                    result_ids: Vec::new(),
                    sealed,
                });
                group.result_ids.extend(member);
            }
            Ok(group)
        })
        .await
    }

    async fn purge_expired(&self, now: u64) -> Result<u64, StoreError> {
        self.with_long(move |conn| {
            let tx = immediate(conn)?;
            let mut purged = 0;
            // A group's members go with it (ON DELETE CASCADE), uncounted.
            for table in ["events", "async_results", "dispatch_groups"] {
                let sql = format!("DELETE FROM {table} WHERE expires_at < ?1");
                purged += tx
                    .prepare_cached(&sql)
                    .and_then(|mut delete| delete.execute([millis(now)]))
                    .map_err(backend)? as u64;
            }
            tx.commit()?;
            Ok(purged)
        })
        .await
    }

    async fn wake_replicas(&self) -> Result<(), StoreError> {
        self.wakes.send();
        Ok(())
    }

    fn wakes(&self) -> tokio::sync::broadcast::Receiver<()> {
        self.wakes.subscribe()
    }
}
