//! [`Store::commit`](crate::Store::commit) on SQLite: a batch made ready to move to the
//! connection's thread, then run there as one immediate transaction, each operation with the
//! connection's cached statements (the shapes a run writes, `[Write, Intend]`,
//! `[Settle, Write]`, `[Intend]`, `[Settle]`, are these same statements in one transaction).

use rusqlite::{Connection, OptionalExtension, params};
use toolsmith_core::Message;

use super::{backend, journal, service, to_json};
use crate::store::now_millis;
use crate::{
    Batch, Committed, EffectStatus, EventEnd, Holder, JournalEntry, NewThread, Op, StoreError,
    ThreadStatus, ThreadWrite,
};

/// An operation of a batch, owned: JSON already made, ready to move to the connection.
pub(super) enum Owned {
    Settle {
        entry: JournalEntry,
        status: EffectStatus,
        output: String,
    },
    Write(Tail),
    Intend {
        entry: JournalEntry,
        input: String,
        output: Option<String>,
    },
    ClaimKey {
        key: String,
        thread: String,
    },
    Release(String),
    SettleEvent {
        end: EventEnd,
        detail: String,
    },
}

/// `batch`'s operations, owned.
pub(super) fn prepare(batch: &Batch<'_>) -> Result<Vec<Owned>, StoreError> {
    batch
        .ops()
        .iter()
        .map(|op| {
            Ok(match *op {
                Op::Settle(s) => Owned::Settle {
                    entry: s.entry.clone(),
                    status: s.status,
                    output: to_json(s.output)?,
                },
                Op::Write(write) => Owned::Write(Tail::of(write)?),
                Op::Intend(entry) => Owned::Intend {
                    entry: entry.clone(),
                    input: to_json(&entry.input)?,
                    output: entry.output.as_ref().map(to_json).transpose()?,
                },
                Op::ClaimKey { key, thread } => Owned::ClaimKey {
                    key: key.to_string(),
                    thread: thread.to_string(),
                },
                Op::Release(thread) => Owned::Release(thread.to_string()),
                Op::SettleEvent(end) => Owned::SettleEvent {
                    end: end.clone(),
                    detail: to_json(&end.detail)?,
                },
            })
        })
        .collect()
}

/// Runs `ops`, in the caller's transaction ([`SqliteStore::write`](super::SqliteStore)'s): the
/// first that fails ends the run, and the caller undoes what the others wrote.
pub(super) fn apply(tx: &Connection, ops: &[Owned]) -> Result<Committed, StoreError> {
    let mut committed = Committed::default();
    for op in ops {
        match op {
            Owned::Settle {
                entry,
                status,
                output,
            } => journal::settle_call(tx, entry, *status, output)?,
            Owned::Write(tail) => committed.version = Some(tail.write(tx)?),
            Owned::Intend {
                entry,
                input,
                output,
            } => {
                let output = output.as_deref();
                committed
                    .claims
                    .push(journal::intend_call(tx, entry, input, output)?);
            }
            Owned::ClaimKey { key, thread } => {
                committed.claims.push(journal::claim(tx, key, thread)?);
            }
            Owned::Release(thread) => release(tx, thread)?,
            Owned::SettleEvent { end, detail } => {
                let event = [&*end.account, &*end.agent_id, &*end.event_id];
                service::settle_event(tx, event, end.status, detail)?;
            }
        }
    }
    Ok(committed)
}

/// Inserts `bodies` as the messages of the thread numbered `seq` from index `first` on.
pub(super) fn insert_messages(
    tx: &Connection,
    seq: i64,
    first: u64,
    bodies: &[String],
) -> Result<(), StoreError> {
    let mut insert = tx
        .prepare_cached("INSERT INTO messages (thread_seq, idx, body) VALUES (?1, ?2, ?3)")
        .map_err(backend)?;
    for (i, body) in bodies.iter().enumerate() {
        insert
            .execute(params![seq, first as i64 + i as i64, body])
            .map_err(backend)?;
    }
    Ok(())
}

/// [`Store::start_thread`](crate::Store::start_thread) made ready to move to the connection's
/// thread: the tags and messages as JSON.
pub(super) struct Start {
    thread: NewThread,
    tags: String,
    bodies: Vec<String>,
    run_id: String,
    holder: Holder,
}

impl Start {
    pub(super) fn of(
        thread: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<Start, StoreError> {
        Ok(Start {
            tags: to_json(&thread.tags)?,
            bodies: prompt.iter().map(to_json).collect::<Result<_, _>>()?,
            thread,
            run_id: run_id.to_string(),
            holder: holder.clone(),
        })
    }

    /// Creates the thread holding the prompt, claimed (version 2), inside `tx`;
    /// [`StoreError::Exists`] when the id is taken.
    pub(super) fn write(&self, tx: &Connection) -> Result<(), StoreError> {
        let (thread, holder) = (&self.thread, &self.holder);
        let seq: Option<i64> = tx
            .prepare_cached(
                "INSERT INTO threads (id, parent_id, tags, version, message_count, status, \
                 pending, created_at, updated_at, run_id, holder_host, holder_pid, \
                 holder_started, seq) \
                 VALUES (?1, ?2, ?3, 2, ?4, 'running', '[]', ?5, ?5, ?6, ?7, ?8, ?9, \
                 (SELECT COALESCE(MAX(seq), 0) + 1 FROM threads)) \
                 ON CONFLICT(id) DO NOTHING RETURNING seq",
            )
            .and_then(|mut insert| {
                insert
                    .query_row(
                        params![
                            thread.id,
                            thread.parent_id,
                            self.tags,
                            self.bodies.len() as i64,
                            now_millis() as i64,
                            self.run_id,
                            holder.host,
                            i64::from(holder.pid),
                            holder.started as i64
                        ],
                        |r| r.get(0),
                    )
                    .optional()
            })
            .map_err(backend)?;
        let Some(seq) = seq else {
            return Err(StoreError::Exists(thread.id.clone()));
        };
        insert_messages(tx, seq, 0, &self.bodies)
    }
}

/// [`Op::Release`]: the thread's holder cleared.
fn release(tx: &Connection, thread: &str) -> Result<(), StoreError> {
    let changed = tx
        .prepare_cached(
            "UPDATE threads SET holder_host = NULL, holder_pid = NULL, holder_started = NULL \
             WHERE id = ?1",
        )
        .and_then(|mut update| update.execute([thread]))
        .map_err(backend)?;
    match changed {
        0 => Err(StoreError::NotFound(thread.to_string())),
        _ => Ok(()),
    }
}

/// Begins a transaction that takes the write lock at once, so that two processes cannot both
/// read a version and then write.
pub(super) fn immediate(conn: &mut Connection) -> Result<Immediate<'_>, StoreError> {
    conn.prepare_cached("BEGIN IMMEDIATE")
        .and_then(|mut begin| begin.execute([]))
        .map_err(backend)?;
    Ok(Immediate { conn, open: true })
}

/// An immediate transaction: rolled back when dropped uncommitted. Unlike rusqlite's
/// `Transaction`, its `BEGIN`, `COMMIT` and `ROLLBACK` are prepared once per connection
/// (measured: parsing them at every transaction was 1.3 % of a service run's instructions).
pub(super) struct Immediate<'c> {
    conn: &'c Connection,
    open: bool,
}

impl Immediate<'_> {
    /// Commits the transaction; if that fails, it is rolled back.
    pub(super) fn commit(mut self) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("COMMIT")
            .and_then(|mut commit| commit.execute([]))
            .map_err(backend)?;
        self.open = false;
        Ok(())
    }
}

impl std::ops::Deref for Immediate<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Immediate<'_> {
    fn drop(&mut self) {
        // A failed COMMIT may have ended the transaction already (SQLite rolls back on some
        // errors): only an open one is rolled back. Its error, if any, has no one to go to;
        // the next BEGIN reports a connection still in a transaction.
        if self.open && !self.conn.is_autocommit() {
            let _ = self
                .conn
                .prepare_cached("ROLLBACK")
                .and_then(|mut rollback| rollback.execute([]));
        }
    }
}

/// A [`ThreadWrite`] made ready to move to the connection's thread: messages as JSON.
pub(super) struct Tail {
    thread: String,
    expected: u64,
    keep: u64,
    bodies: Vec<String>,
    status: ThreadStatus,
    pending: String,
}

impl Tail {
    fn of(write: ThreadWrite<'_>) -> Result<Tail, StoreError> {
        Ok(Tail {
            thread: write.thread.to_string(),
            expected: write.expected,
            keep: write.keep,
            bodies: write
                .messages
                .iter()
                .map(to_json)
                .collect::<Result<_, _>>()?,
            status: write.status,
            pending: to_json(&write.pending)?,
        })
    }

    /// Writes it inside `tx`, if the thread is at the expected version. The new version.
    fn write(&self, tx: &Connection) -> Result<u64, StoreError> {
        let Tail {
            thread,
            expected,
            keep,
            bodies,
            status,
            pending,
        } = self;
        let (expected, keep) = (*expected, *keep);
        // Every statement here is prepared once per connection: parsing them anew cost
        // more than running them.
        let (version, count, seq): (i64, i64, i64) = tx
            .prepare_cached("SELECT version, message_count, seq FROM threads WHERE id = ?1")
            .and_then(|mut select| {
                select
                    .query_row([thread], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .optional()
            })
            .map_err(backend)?
            .ok_or_else(|| StoreError::NotFound(thread.clone()))?;
        if version as u64 != expected {
            return Err(StoreError::Conflict {
                thread: thread.clone(),
                expected,
                found: version as u64,
            });
        }
        if keep > count as u64 {
            return Err(StoreError::Corrupt(format!(
                "cannot keep {keep} of the {count} messages of thread {thread}"
            )));
        }
        // Only when there is something to delete: SQLite runs this statement through a
        // temporary table, opened and zeroed even when no row matches (measured: some 25 k
        // instructions, 3 % of a service run, for the usual save that keeps every message).
        if keep < count as u64 {
            tx.prepare_cached("DELETE FROM messages WHERE thread_seq = ?1 AND idx >= ?2")
                .and_then(|mut delete| delete.execute(params![seq, keep as i64]))
                .map_err(backend)?;
        }
        insert_messages(tx, seq, keep, bodies)?;
        let next = version + 1;
        // A thread that stops running is held by no process.
        tx.prepare_cached(
            "UPDATE threads SET version = ?2, message_count = ?3, status = ?4, pending = ?5, \
             updated_at = ?6, \
             holder_host = CASE WHEN ?4 = 'running' THEN holder_host END, \
             holder_pid = CASE WHEN ?4 = 'running' THEN holder_pid END, \
             holder_started = CASE WHEN ?4 = 'running' THEN holder_started END \
             WHERE id = ?1",
        )
        .and_then(|mut update| {
            update.execute(params![
                thread,
                next,
                keep as i64 + bodies.len() as i64,
                status.as_str(),
                pending,
                now_millis() as i64
            ])
        })
        .map_err(backend)?;
        Ok(next as u64)
    }
}
