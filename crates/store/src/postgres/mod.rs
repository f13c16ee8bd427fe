//! [`PostgresStore`]: the scale-out backend, several processes sharing one database.

mod cache;
mod commit;
mod credentials;
mod journal;
mod listen;
mod schema;
mod service;
mod write;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row};
use toolsmith_core::Message;

use crate::store::now_millis;
use crate::wake::Wakes;
use crate::{
    Batch, Committed, EffectStatus, Holder, JournalEntry, NewThread, Store, StoreError,
    StoredValue, Thread, ThreadQuery, ThreadStatus,
};

/// The most connections one store opens.
const POOL_SIZE: usize = 8;

/// The settings every connection of a store starts with.
///
/// Generic plans: each prepared statement planned once per connection, not at every
/// execution. Left to itself the server kept planning the writes' CTEs anew (measured: 0.3 ms
/// of planning in a tool call's 1.5 ms), finding the generic plan's estimate dearer.
///
/// No sequential scans where an index serves: a generic plan made while a table is new and
/// empty scanned it whole (measured: 3.9 ms a call as a fresh database's messages grew, until
/// the server's next ANALYZE). Every statement a run makes looks rows up by key, so the index
/// plan is the right one whatever the statistics say; a query with no index to use (listing
/// every thread) still scans.
const SESSION_OPTIONS: &str = "-c plan_cache_mode=force_generic_plan -c enable_seqscan=off";

/// A store in a PostgreSQL database (tokio-postgres behind a deadpool pool): versioned
/// migrations applied on open under an advisory lock, thread writes conditional on the
/// thread's version (one statement each, which waits for a concurrent writer's row lock and
/// then re-checks), so of several processes continuing one thread exactly one proceeds.
///
/// The URL is a libpq connection string or URL: `postgres://user@127.0.0.1:5432/toolsmith`.
/// Connections are plain TCP or Unix sockets (no TLS): run it next to its database.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// The connection settings, for the listening connection.
    config: tokio_postgres::Config,
    /// The wake-ups heard on the listening connection, once started.
    listener: Arc<std::sync::OnceLock<Wakes>>,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may carry a password: not printed.
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

pub(crate) fn backend(e: tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => StoreError::Backend(format!("{} ({})", db.message(), db.code().code())),
        None => StoreError::Backend(e.to_string()),
    }
}

fn pool_error(e: deadpool_postgres::PoolError) -> StoreError {
    StoreError::Backend(format!("no database connection: {e}"))
}

fn corrupt(e: serde_json::Error) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

fn to_json<T: Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(corrupt)
}

fn from_json<T: DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(corrupt)
}

impl PostgresStore {
    /// Connects to the database at `url` and applies the migrations it lacks.
    ///
    /// # Errors
    ///
    /// A URL that does not parse (the message never repeats it: it may hold a password), a
    /// database that cannot be reached, or a schema newer than this build's.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|_| StoreError::Backend("the PostgreSQL URL does not parse".to_string()))?;
        // The URL's own options come after the store's, so that they win.
        let options = match config.get_options() {
            Some(theirs) => format!("{SESSION_OPTIONS} {theirs}"),
            None => SESSION_OPTIONS.to_string(),
        };
        config.options(&options);
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .build()
            .map_err(|e| StoreError::Backend(format!("the connection pool: {e}")))?;
        let mut client = pool.get().await.map_err(pool_error)?;
        schema::migrate(&mut client).await?;
        Ok(PostgresStore {
            pool,
            config,
            listener: Arc::default(),
        })
    }

    /// The schema version this build writes.
    pub fn schema_version() -> u32 {
        schema::SCHEMA_VERSION as u32
    }

    /// Runs `sql`, an UPDATE of thread `$1` conditional on its version `$2` (with the time
    /// `$3` and `extra` from `$4` on): a Conflict or NotFound when no row changed.
    async fn conditional(
        &self,
        thread: &str,
        expected: u64,
        sql: &str,
        extra: &[&(dyn ToSql + Sync)],
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let (expected_version, now) = (expected as i64, now_millis() as i64);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&thread, &expected_version, &now];
        params.extend_from_slice(extra);
        let changed = journal::execute(&client, sql, &params).await?;
        if changed == 1 {
            return Ok(());
        }
        match self.thread(thread).await? {
            None => Err(StoreError::NotFound(thread.to_string())),
            Some(found) => Err(StoreError::Conflict {
                thread: thread.to_string(),
                expected,
                found: found.version,
            }),
        }
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }
}

const THREAD_COLUMNS: &str = "id, parent_id, tags, version, message_count, status, pending, \
     created_at, updated_at, run_id, holder_host, holder_pid, holder_started";

fn thread_of(row: &Row) -> Result<Thread, StoreError> {
    let status: String = row.get(5);
    let pending: String = row.get(6);
    Ok(Thread {
        id: row.get(0),
        parent_id: row.get(1),
        tags: row.get(2),
        version: row.get::<_, i64>(3) as u64,
        message_count: row.get::<_, i64>(4) as u64,
        status: ThreadStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown thread status \"{status}\"")))?,
        run_id: row.get(9),
        holder: row.get::<_, Option<String>>(10).map(|host| Holder {
            host,
            pid: row.get::<_, i64>(11) as u32,
            started: row.get::<_, i64>(12) as u64,
        }),
        pending: from_json(&pending)?,
        created_at: row.get::<_, i64>(7) as u64,
        updated_at: row.get::<_, i64>(8) as u64,
    })
}

/// The thread `id`, read on `client` (inside its transaction, if it is in one).
async fn read_thread(client: &impl GenericClient, id: &str) -> Result<Option<Thread>, StoreError> {
    let sql = format!("SELECT {THREAD_COLUMNS} FROM threads WHERE id = $1");
    client
        .query_opt(&sql, &[&id])
        .await
        .map_err(backend)?
        .map(|row| thread_of(&row))
        .transpose()
}

fn status(name: &str) -> Result<EffectStatus, StoreError> {
    EffectStatus::parse(name)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown effect status \"{name}\"")))
}

/// [`Store::start_thread`] on `client`: whether the thread was created (not when its id is
/// taken). One statement (one round trip, one commit outside a transaction) where create, write
/// and claim would be three: the messages are inserted only when the thread's row was.
pub(super) async fn start_thread(
    client: &impl GenericClient,
    thread: &NewThread,
    prompt: &[Message],
    run_id: &str,
    holder: &Holder,
) -> Result<bool, StoreError> {
    let bodies: Vec<String> = prompt.iter().map(to_json).collect::<Result<_, _>>()?;
    let now = now_millis() as i64;
    let (pid, started) = (i64::from(holder.pid), holder.started as i64);
    let statement = client
        .prepare_cached(
            "WITH t AS (INSERT INTO threads (id, parent_id, tags, version, message_count, \
                 status, pending, created_at, updated_at, run_id, holder_host, holder_pid, \
                 holder_started) \
                 VALUES ($1, $2, $3, 2, cardinality($4::TEXT[]), 'running', '[]', $5, $5, \
                 $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING RETURNING id), \
             put AS (INSERT INTO messages (thread_id, idx, body) \
                 SELECT $1, m.n - 1, m.body \
                 FROM UNNEST($4::TEXT[]) WITH ORDINALITY AS m(body, n) \
                 WHERE EXISTS (SELECT 1 FROM t)) \
             SELECT EXISTS (SELECT 1 FROM t)",
        )
        .await
        .map_err(backend)?;
    let row = client
        .query_one(
            &statement,
            &[
                &thread.id,
                &thread.parent_id,
                &thread.tags,
                &bodies,
                &now,
                &run_id,
                &holder.host,
                &pid,
                &started,
            ],
        )
        .await
        .map_err(backend)?;
    Ok(row.get::<_, bool>(0))
}

#[async_trait]
impl Store for PostgresStore {
    async fn create_thread(&self, new: NewThread) -> Result<Thread, StoreError> {
        let client = self.client().await?;
        let now = now_millis() as i64;
        let sql = format!(
            "INSERT INTO threads (id, parent_id, tags, version, message_count, status, pending, \
             created_at, updated_at) VALUES ($1, $2, $3, 0, 0, 'idle', '[]', $4, $4) \
             ON CONFLICT (id) DO NOTHING RETURNING {THREAD_COLUMNS}"
        );
        let row = client
            .query_opt(&sql, &[&new.id, &new.parent_id, &new.tags, &now])
            .await
            .map_err(backend)?;
        match row {
            Some(row) => thread_of(&row),
            None => Err(StoreError::Exists(new.id)),
        }
    }

    async fn start_thread(
        &self,
        thread: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<u64, StoreError> {
        match start_thread(&self.client().await?, &thread, prompt, run_id, holder).await? {
            true => Ok(2),
            false => Err(StoreError::Exists(thread.id)),
        }
    }

    async fn thread(&self, id: &str) -> Result<Option<Thread>, StoreError> {
        read_thread(&self.client().await?, id).await
    }

    async fn threads(&self, query: &ThreadQuery) -> Result<Vec<Thread>, StoreError> {
        let client = self.client().await?;
        // Only the filters given: a generic plan (see `SESSION_OPTIONS`) of `$1 IS NULL OR
        // parent_id = $1` could not use the parent's index.
        let limit = query.limit.map_or(i64::MAX, |l| l as i64);
        let status = query.status.map(ThreadStatus::as_str);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&limit];
        let mut sql = format!("SELECT {THREAD_COLUMNS} FROM threads WHERE TRUE");
        if let Some(parent) = &query.parent_id {
            params.push(parent);
            sql += &format!(" AND parent_id = ${}", params.len());
        }
        if let Some(tag) = &query.tag {
            params.push(tag);
            sql += &format!(" AND ${} = ANY(tags)", params.len());
        }
        if let Some(status) = &status {
            params.push(status);
            sql += &format!(" AND status = ${}", params.len());
        }
        sql += " ORDER BY updated_at DESC, id DESC LIMIT $1";
        let rows = client.query(&sql, &params).await.map_err(backend)?;
        rows.iter().map(thread_of).collect()
    }

    async fn messages(&self, thread: &str) -> Result<Vec<Message>, StoreError> {
        let client = self.client().await?;
        let exists = client
            .query_opt("SELECT 1 FROM threads WHERE id = $1", &[&thread])
            .await
            .map_err(backend)?;
        if exists.is_none() {
            return Err(StoreError::NotFound(thread.to_string()));
        }
        let rows = client
            .query(
                "SELECT body FROM messages WHERE thread_id = $1 ORDER BY idx",
                &[&thread],
            )
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|row| from_json(row.get::<_, &str>(0)))
            .collect()
    }

    async fn commit(&self, batch: Batch<'_>) -> Result<Committed, StoreError> {
        if batch.is_empty() {
            return Ok(Committed::default());
        }
        commit::commit(&mut self.client().await?, batch.ops()).await
    }

    async fn claim(
        &self,
        thread: &str,
        expected: u64,
        run_id: &str,
        holder: &Holder,
    ) -> Result<u64, StoreError> {
        let sql = "UPDATE threads SET version = version + 1, status = 'running', run_id = $4, \
                   holder_host = $5, holder_pid = $6, holder_started = $7, updated_at = $3 \
                   WHERE id = $1 AND version = $2";
        let (pid, started) = (i64::from(holder.pid), holder.started as i64);
        let extra: [&(dyn ToSql + Sync); 4] = [&run_id, &holder.host, &pid, &started];
        self.conditional(thread, expected, sql, &extra).await?;
        Ok(expected + 1)
    }

    async fn touch(&self, thread: &str, expected: u64) -> Result<(), StoreError> {
        let sql = "UPDATE threads SET updated_at = $3 WHERE id = $1 AND version = $2";
        self.conditional(thread, expected, sql, &[]).await
    }

    async fn journal(&self, thread: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT run_id, tool_call_id, attempt, thread_id, tool_name, seq, input, \
                 side_effect, idempotent, idempotency_key, status, output, \
                 accepts_idempotency_key, has_revert FROM journal \
                 WHERE thread_id = $1 ORDER BY seq, attempt",
                &[&thread],
            )
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|row| {
                let output: Option<String> = row.get(11);
                Ok(JournalEntry {
                    run_id: row.get(0),
                    tool_call_id: row.get(1),
                    attempt: row.get::<_, i32>(2) as u32,
                    thread_id: row.get(3),
                    tool_name: row.get(4),
                    seq: row.get::<_, i64>(5) as u64,
                    input: from_json(row.get::<_, &str>(6))?,
                    side_effect: row.get(7),
                    idempotent: row.get(8),
                    idempotency_key: row.get(9),
                    accepts_idempotency_key: row.get(12),
                    has_revert: row.get(13),
                    status: status(row.get::<_, &str>(10))?,
                    output: output.map(|o| from_json(&o)).transpose()?,
                })
            })
            .collect()
    }

    async fn put_variable(
        &self,
        thread: &str,
        name: &str,
        value: &StoredValue,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let exists = client
            .query_opt("SELECT 1 FROM threads WHERE id = $1", &[&thread])
            .await
            .map_err(backend)?;
        if exists.is_none() {
            return Err(StoreError::NotFound(thread.to_string()));
        }
        client
            .execute(
                "INSERT INTO variables (thread_id, name, secret, value, updated_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (thread_id, name) DO UPDATE SET \
                 secret = EXCLUDED.secret, value = EXCLUDED.value, updated_at = EXCLUDED.updated_at",
                &[
                    &thread,
                    &name,
                    &value.secret,
                    &value.bytes,
                    &(now_millis() as i64),
                ],
            )
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn variables(&self, thread: &str) -> Result<Vec<(String, StoredValue)>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT name, secret, value FROM variables WHERE thread_id = $1 ORDER BY name",
                &[&thread],
            )
            .await
            .map_err(backend)?;
        Ok(rows
            .iter()
            .map(|row| {
                (
                    row.get(0),
                    StoredValue {
                        secret: row.get(1),
                        bytes: row.get(2),
                    },
                )
            })
            .collect())
    }

    async fn put_credential(
        &self,
        account: &str,
        name: &str,
        sealed: &[u8],
    ) -> Result<(), StoreError> {
        credentials::put(&self.client().await?, account, name, sealed).await
    }

    async fn credentials(&self, account: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        credentials::list(&self.client().await?, account).await
    }

    async fn delete_credential(&self, account: &str, name: &str) -> Result<bool, StoreError> {
        credentials::delete(&self.client().await?, account, name).await
    }
}
