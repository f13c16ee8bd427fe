//! [`SqliteStore`]: the embedded backend, one SQLite file in WAL mode.

mod cache;
mod checkpoint;
mod commit;
mod credentials;
mod file_mode;
mod group;
mod journal;
mod schema;
mod service;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use toolsmith_core::Message;

use crate::store::now_millis;
use crate::{
    Batch, Committed, EffectStatus, Holder, JournalEntry, NewThread, Store, StoreError,
    StoredValue, Thread, ThreadQuery, ThreadStatus,
};

/// How long a write waits for another process's lock on the file before it fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How many prepared statements a connection keeps.
const STATEMENT_CACHE: usize = 64;

/// The page size of a new database, in bytes (SQLite's default is 4 096). A commit writes
/// each page it changed to the WAL whole, and a tool call's commits change a page or so in
/// each of four tables: half-size pages halve those bytes (measured: a call in a step of its
/// own 81–96 → 68–76 µs; a call returning 8 KiB, which spills into overflow pages either way,
/// unchanged at about 205 µs). A database keeps the page size it was created with.
const PAGE_SIZE: u32 = 2048;

/// A store in one SQLite file (rusqlite with the bundled library): WAL journaling, versioned
/// migrations applied on open, short statements run in place on a multi-threaded runtime's
/// worker and longer reads off the async executor (`block_in_place`; the blocking pool on
/// other runtimes), WAL checkpoints
/// on a thread of the store's own rather than in the writers' commits. Several processes may
/// share the file; conditional writes make every continuation of a thread happen once.
///
/// ```
/// use toolsmith_store::{NewThread, SqliteStore, Store};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
/// store.create_thread(NewThread::new("t1").with_tag("demo")).await.unwrap();
/// assert_eq!(store.thread("t1").await.unwrap().unwrap().tags, ["demo"]);
/// # });
/// ```
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
    /// Its subscribers' wake-ups (shared by its clones).
    wakes: crate::wake::Wakes,
    /// The writes waiting to be committed together (`group.rs`; shared by its clones).
    queue: Arc<Mutex<group::Queue>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

pub(crate) fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(e.to_string())
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

impl SqliteStore {
    /// Opens (creating it if needed) the database at `path` and applies the migrations it
    /// lacks. A new database file is created with mode 0600 whatever the umask, and so are its
    /// `-wal` and `-shm` files; an existing one keeps its mode, with a warning (a `tracing`
    /// event) when others than its owner can read it.
    ///
    /// # Errors
    ///
    /// The file cannot be opened, or its schema is newer than this build's.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let at = path.clone();
        let conn = tokio::task::spawn_blocking(move || -> Result<Connection, StoreError> {
            file_mode::create_private(&at);
            let mut conn = Connection::open(&at).map_err(backend)?;
            conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
            // Room for every statement the store prepares (rusqlite keeps 16 by default).
            conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
            // Set before anything is written; a database that exists keeps its own.
            conn.pragma_update(None, "page_size", PAGE_SIZE)
                .map_err(backend)?;
            let mode: String = conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
                .map_err(backend)?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(StoreError::Backend(format!(
                    "{} could not be put in WAL mode (it is in {mode} mode)",
                    at.display()
                )));
            }
            // NORMAL in WAL mode: a committed transaction survives a process crash; only a
            // power loss may take the last ones back.
            conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
                .map_err(backend)?;
            conn.pragma_update(None, "wal_autocheckpoint", checkpoint::BACKSTOP_PAGES)
                .map_err(backend)?;
            schema::migrate(&mut conn)?;
            Ok(conn)
        })
        .await
        .map_err(|e| StoreError::Backend(format!("the open task failed: {e}")))??;
        let conn = Arc::new(Mutex::new(conn));
        checkpoint::spawn(path.clone(), Arc::downgrade(&conn));
        Ok(SqliteStore {
            conn,
            path,
            wakes: Default::default(),
            queue: Default::default(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version this build writes.
    pub fn schema_version() -> u32 {
        schema::SCHEMA_VERSION
    }

    /// Runs `f`, a short statement or transaction on a few rows (a run's writes, reads by
    /// key), on the connection: on a multi-threaded runtime in place, on the calling worker —
    /// it takes microseconds, less than handing the worker's other tasks to another thread
    /// (`block_in_place`; measured on the service: 1.12 → 0.90 ms of CPU a run, the handoffs'
    /// thread wake-ups gone); else on the blocking pool. (Waiting for another process's write
    /// lock blocks the worker too: a file shared by busy processes is the PostgreSQL case.)
    async fn with<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.run(f, false).await
    }

    /// Runs `f`, which may read many rows (listings, a thread's messages or journal, purges),
    /// on the connection, off the async executor: on a multi-threaded runtime in place after
    /// handing the worker's other tasks to another thread (`block_in_place`), else on the
    /// blocking pool. In place saves the hop to a pool thread, which costs more than the
    /// statement itself (measured: about 22 µs a hop against 8 µs a small transaction).
    async fn with_long<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.run(f, true).await
    }

    async fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
        long: bool,
    ) -> Result<R, StoreError> {
        let conn = self.conn.clone();
        let run = move || {
            let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut conn)
        };
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        match (multi_thread, long) {
            (true, false) => run(),
            (true, true) => tokio::task::block_in_place(run),
            (false, _) => tokio::task::spawn_blocking(run)
                .await
                .map_err(|e| StoreError::Backend(format!("the store task failed: {e}")))?,
        }
    }
}

impl SqliteStore {
    /// Runs `sql`, an UPDATE of thread `?1` conditional on its version `?2` (with the time
    /// `?3` and `extra` from `?4` on): a Conflict or NotFound when no row changed.
    async fn conditional(
        &self,
        thread: &str,
        expected: u64,
        sql: &'static str,
        extra: Vec<SqlValue>,
    ) -> Result<(), StoreError> {
        let thread = thread.to_string();
        self.with(move |conn| {
            let mut values = vec![
                SqlValue::Text(thread.clone()),
                SqlValue::Integer(expected as i64),
                SqlValue::Integer(now_millis() as i64),
            ];
            values.extend(extra);
            // One conditional UPDATE: SQLite's write lock makes it atomic.
            let changed = conn
                .prepare_cached(sql)
                .and_then(|mut update| update.execute(params_from_iter(values)))
                .map_err(backend)?;
            if changed == 1 {
                return Ok(());
            }
            match read_thread(conn, &thread)? {
                None => Err(StoreError::NotFound(thread)),
                Some(found) => Err(StoreError::Conflict {
                    thread,
                    expected,
                    found: found.version,
                }),
            }
        })
        .await
    }
}

const THREAD_COLUMNS: &str = "id, parent_id, tags, version, message_count, status, pending, \
     created_at, updated_at, run_id, holder_host, holder_pid, holder_started";

fn thread_row(row: &Row<'_>) -> rusqlite::Result<(Thread, String, String, String)> {
    Ok((
        Thread {
            id: row.get(0)?,
            parent_id: row.get(1)?,
            tags: Vec::new(),
            version: row.get::<_, i64>(3)? as u64,
            message_count: row.get::<_, i64>(4)? as u64,
            status: ThreadStatus::Idle,
            run_id: row.get(9)?,
            holder: match row.get::<_, Option<String>>(10)? {
                Some(host) => Some(Holder {
                    host,
                    pid: row.get(11)?,
                    started: row.get::<_, i64>(12)? as u64,
                }),
                None => None,
            },
            pending: Vec::new(),
            created_at: row.get::<_, i64>(7)? as u64,
            updated_at: row.get::<_, i64>(8)? as u64,
        },
        row.get(2)?,
        row.get(5)?,
        row.get(6)?,
    ))
}

fn finish_thread(
    (mut thread, tags, status, pending): (Thread, String, String, String),
) -> Result<Thread, StoreError> {
    thread.tags = from_json(&tags)?;
    thread.status = ThreadStatus::parse(&status)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown thread status \"{status}\"")))?;
    thread.pending = from_json(&pending)?;
    Ok(thread)
}

fn read_thread(conn: &Connection, id: &str) -> Result<Option<Thread>, StoreError> {
    let sql = format!("SELECT {THREAD_COLUMNS} FROM threads WHERE id = ?1");
    conn.prepare_cached(&sql)
        .and_then(|mut select| select.query_row([id], thread_row))
        .optional()
        .map_err(backend)?
        .map(finish_thread)
        .transpose()
}

fn status(name: &str) -> Result<EffectStatus, StoreError> {
    EffectStatus::parse(name)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown effect status \"{name}\"")))
}

#[async_trait]
impl Store for SqliteStore {
    async fn create_thread(&self, new: NewThread) -> Result<Thread, StoreError> {
        self.with(move |conn| {
            let now = now_millis() as i64;
            let tags = to_json(&new.tags)?;
            let inserted = conn
                .prepare_cached(
                    "INSERT INTO threads (id, parent_id, tags, version, message_count, status, \
                     pending, created_at, updated_at, seq) \
                     VALUES (?1, ?2, ?3, 0, 0, 'idle', '[]', ?4, ?4, \
                     (SELECT COALESCE(MAX(seq), 0) + 1 FROM threads)) \
                     ON CONFLICT(id) DO NOTHING",
                )
                .and_then(|mut insert| insert.execute(params![new.id, new.parent_id, tags, now]))
                .map_err(backend)?;
            if inserted == 0 {
                return Err(StoreError::Exists(new.id));
            }
            read_thread(conn, &new.id)?.ok_or_else(|| StoreError::NotFound(new.id.clone()))
        })
        .await
    }

    async fn start_thread(
        &self,
        thread: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<u64, StoreError> {
        // One transaction where create, write and claim would be three (two commits less for
        // every new conversation of the service).
        let start = commit::Start::of(thread, prompt, run_id, holder)?;
        self.write(move |conn| {
            start.write(conn)?;
            Ok(2)
        })
        .await
    }

    async fn thread(&self, id: &str) -> Result<Option<Thread>, StoreError> {
        let id = id.to_string();
        self.with(move |conn| read_thread(conn, &id)).await
    }

    async fn threads(&self, query: &ThreadQuery) -> Result<Vec<Thread>, StoreError> {
        let query = query.clone();
        self.with_long(move |conn| {
            let sql = format!(
                "SELECT {THREAD_COLUMNS} FROM threads \
                 WHERE (?1 IS NULL OR parent_id = ?1) \
                 AND (?2 IS NULL OR EXISTS (SELECT 1 FROM json_each(threads.tags) WHERE value = ?2)) \
                 AND (?3 IS NULL OR status = ?3) \
                 ORDER BY updated_at DESC, id DESC LIMIT ?4"
            );
            let limit = query.limit.map_or(-1, |l| l as i64);
            let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
            let rows = stmt
                .query_map(
                    params![
                        query.parent_id,
                        query.tag,
                        query.status.map(ThreadStatus::as_str),
                        limit
                    ],
                    thread_row,
                )
                .map_err(backend)?;
            rows.map(|r| r.map_err(backend).and_then(finish_thread))
                .collect()
        })
        .await
    }

    async fn messages(&self, thread: &str) -> Result<Vec<Message>, StoreError> {
        let thread = thread.to_string();
        self.with_long(move |conn| {
            if read_thread(conn, &thread)?.is_none() {
                return Err(StoreError::NotFound(thread));
            }
            let mut stmt = conn
                .prepare_cached(
                    "SELECT body FROM messages \
                     WHERE thread_seq = (SELECT seq FROM threads WHERE id = ?1) ORDER BY idx",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map([&thread], |r| r.get::<_, String>(0))
                .map_err(backend)?;
            rows.map(|r| r.map_err(backend).and_then(|body| from_json(&body)))
                .collect()
        })
        .await
    }

    async fn commit(&self, batch: Batch<'_>) -> Result<Committed, StoreError> {
        if batch.is_empty() {
            return Ok(Committed::default());
        }
        let ops = commit::prepare(&batch)?;
        self.write(move |conn| commit::apply(conn, &ops)).await
    }

    async fn claim(
        &self,
        thread: &str,
        expected: u64,
        run_id: &str,
        holder: &Holder,
    ) -> Result<u64, StoreError> {
        let sql = "UPDATE threads SET version = version + 1, status = 'running', run_id = ?4, \
                   holder_host = ?5, holder_pid = ?6, holder_started = ?7, updated_at = ?3 \
                   WHERE id = ?1 AND version = ?2";
        let extra = vec![
            SqlValue::Text(run_id.to_string()),
            SqlValue::Text(holder.host.clone()),
            SqlValue::Integer(holder.pid.into()),
            SqlValue::Integer(holder.started as i64),
        ];
        self.conditional(thread, expected, sql, extra).await?;
        Ok(expected + 1)
    }

    async fn touch(&self, thread: &str, expected: u64) -> Result<(), StoreError> {
        let sql = "UPDATE threads SET updated_at = ?3 WHERE id = ?1 AND version = ?2";
        self.conditional(thread, expected, sql, Vec::new()).await
    }

    async fn journal(&self, thread: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let thread = thread.to_string();
        self.with_long(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT run_id, tool_call_id, attempt, thread_id, tool_name, seq, input, \
                     side_effect, idempotent, idempotency_key, status, output, \
                     accepts_idempotency_key, has_revert FROM journal \
                     WHERE thread_id = ?1 ORDER BY seq, attempt",
                )
                .map_err(backend)?;
            // The row's columns, its JSON and status still as text.
            let rows = stmt
                .query_map([&thread], |r| {
                    let entry = JournalEntry {
                        run_id: r.get(0)?,
                        tool_call_id: r.get(1)?,
                        attempt: r.get(2)?,
                        thread_id: r.get(3)?,
                        tool_name: r.get(4)?,
                        seq: r.get::<_, i64>(5)? as u64,
                        input: Value::Null,
                        side_effect: r.get(7)?,
                        idempotent: r.get(8)?,
                        idempotency_key: r.get(9)?,
                        accepts_idempotency_key: r.get(12)?,
                        has_revert: r.get(13)?,
                        status: EffectStatus::Intended,
                        output: None,
                    };
                    let text: (String, String, Option<String>) =
                        (r.get(6)?, r.get(10)?, r.get(11)?);
                    Ok((entry, text))
                })
                .map_err(backend)?;
            rows.map(|row| {
                let (mut entry, (input, st, out)) = row.map_err(backend)?;
                entry.input = from_json(&input)?;
                entry.status = status(&st)?;
                entry.output = out.map(|o| from_json(&o)).transpose()?;
                Ok(entry)
            })
            .collect()
        })
        .await
    }

    async fn put_variable(
        &self,
        thread: &str,
        name: &str,
        value: &StoredValue,
    ) -> Result<(), StoreError> {
        let (thread, name, value) = (thread.to_string(), name.to_string(), value.clone());
        self.with(move |conn| {
            if read_thread(conn, &thread)?.is_none() {
                return Err(StoreError::NotFound(thread));
            }
            conn.prepare_cached(
                "INSERT INTO variables (thread_id, name, secret, value, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(thread_id, name) DO UPDATE SET \
                 secret = excluded.secret, value = excluded.value, updated_at = excluded.updated_at",
            )
            .and_then(|mut upsert| {
                upsert.execute(params![thread, name, value.secret, value.bytes, now_millis() as i64])
            })
            .map_err(backend)?;
            Ok(())
        })
        .await
    }

    async fn variables(&self, thread: &str) -> Result<Vec<(String, StoredValue)>, StoreError> {
        let thread = thread.to_string();
        self.with(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT name, secret, value FROM variables WHERE thread_id = ?1 ORDER BY name",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map([&thread], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        StoredValue {
                            secret: r.get(1)?,
                            bytes: r.get(2)?,
                        },
                    ))
                })
                .map_err(backend)?;
            rows.map(|r| r.map_err(backend)).collect()
        })
        .await
    }

    async fn put_credential(
        &self,
        account: &str,
        name: &str,
        sealed: &[u8],
    ) -> Result<(), StoreError> {
        let (account, name, sealed) = (account.to_string(), name.to_string(), sealed.to_vec());
        self.with(move |conn| credentials::put(conn, &account, &name, &sealed))
            .await
    }

    async fn credentials(&self, account: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let account = account.to_string();
        self.with(move |conn| credentials::list(conn, &account))
            .await
    }

    async fn delete_credential(&self, account: &str, name: &str) -> Result<bool, StoreError> {
        let (account, name) = (account.to_string(), name.to_string());
        self.with(move |conn| credentials::delete(conn, &account, &name))
            .await
    }
}
