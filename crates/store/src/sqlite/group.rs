//! Group commit: the write transactions of concurrent callers made as one SQLite transaction.
//!
//! SQLite takes one writer at a time, so concurrent writes queue anyway; what each of them pays
//! alone is the transaction around it — its locks (six `fcntl`s), the WAL frames of pages the
//! others write too (a table's last leaf, an index's), the commit's bookkeeping. A write
//! ([`SqliteStore::write`]) joins a queue; the first caller to find no one writing leads: it
//! takes every queued write, runs them in one immediate transaction, each in a savepoint of its
//! own so that one that fails is undone alone, commits, and hands each its result — then goes
//! on with what queued meanwhile, until the queue is empty. A write alone is its own
//! transaction, as before; under load, writes share commits.
//!
//! Each caller gets its result only once the group's commit succeeded: a write is as durable
//! as if it had been committed alone. If the commit fails, or an error ends the transaction
//! itself (SQLite rolls back on a full disk or an I/O error), every write of the group gets
//! the error.

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::commit::immediate;
use super::{SqliteStore, backend};
use crate::StoreError;
use crate::durable::lock;

/// The writes waiting for a commit, and whether a caller is leading.
#[derive(Default)]
pub(super) struct Queue {
    jobs: Vec<Box<dyn Job>>,
    leading: bool,
}

/// A write as the group runs it: first made (in its savepoint), then told whether the group
/// committed.
trait Job: Send {
    /// Makes the write; an error is the write's own (its savepoint is rolled back).
    fn run(&mut self, conn: &Connection) -> Result<(), StoreError>;
    /// The group's outcome: the write's result goes to its caller.
    fn finish(self: Box<Self>, committed: Result<(), StoreError>);
}

/// A [`Job`] returning `R` to its caller.
struct Typed<R, F> {
    write: Option<F>,
    result: Option<Result<R, StoreError>>,
    reply: oneshot::Sender<Result<R, StoreError>>,
}

impl<R, F> Job for Typed<R, F>
where
    R: Send,
    F: FnOnce(&Connection) -> Result<R, StoreError> + Send,
{
    fn run(&mut self, conn: &Connection) -> Result<(), StoreError> {
        let Some(write) = self.write.take() else {
            return Ok(());
        };
        let result = write(conn);
        let outcome = result.as_ref().map(|_| ()).map_err(Clone::clone);
        self.result = Some(result);
        outcome
    }

    fn finish(self: Box<Self>, committed: Result<(), StoreError>) {
        let result = match (self.result, committed) {
            // The write's own error stands, whatever became of the group.
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (Some(Ok(_)), Err(e)) | (None, Err(e)) => Err(e),
            (None, Ok(())) => Err(StoreError::Backend("the write was not made".into())),
        };
        // A caller that went away does not need its result.
        let _ = self.reply.send(result);
    }
}

impl SqliteStore {
    /// Runs `write` in an immediate transaction, shared with the writes of other callers made
    /// at the same time (see the [module docs](self)): its result once the transaction
    /// committed, or its own error (nothing of it written).
    pub(super) async fn write<R: Send + 'static>(
        &self,
        write: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        let (reply, result) = oneshot::channel();
        let job = Box::new(Typed {
            write: Some(write),
            result: None,
            reply,
        });
        let lead = {
            let mut queue = lock(&self.queue);
            queue.jobs.push(job);
            !std::mem::replace(&mut queue.leading, true)
        };
        if lead {
            self.lead().await;
        }
        result
            .await
            .unwrap_or_else(|_| Err(StoreError::Backend("the write was dropped".into())))
    }

    /// Commits what the queue holds, group after group, until it is empty.
    async fn lead(&self) {
        let mut guard = Leading {
            store: self.clone(),
            done: false,
        };
        loop {
            let jobs = {
                let mut queue = lock(&self.queue);
                if queue.jobs.is_empty() {
                    queue.leading = false;
                    guard.done = true;
                    return;
                }
                std::mem::take(&mut queue.jobs)
            };
            // A failure to run at all (the blocking pool's task failed) drops the jobs: their
            // callers get an error.
            let _ = self
                .run(
                    move |conn| {
                        commit_group(conn, jobs);
                        Ok(())
                    },
                    false,
                )
                .await;
        }
    }
}

/// The lead, handed on if its leader stops before the queue is empty: its future dropped
/// while it waited for the blocking pool (a current-thread runtime; on a multi-threaded one
/// a group runs in place, with nothing to wait for), or a panic.
struct Leading {
    store: SqliteStore,
    done: bool,
}

impl Drop for Leading {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let store = self.store.clone();
        match tokio::runtime::Handle::try_current() {
            // A task of its own leads what is queued.
            Ok(runtime) => {
                runtime.spawn(async move { store.lead().await });
            }
            // No runtime to lead on: the writes queued are dropped (their callers get an
            // error) rather than left waiting.
            Err(_) => {
                let mut queue = lock(&store.queue);
                queue.leading = false;
                queue.jobs.clear();
            }
        }
    }
}

/// Runs `jobs` in one transaction and tells each how it went.
fn commit_group(conn: &mut Connection, mut jobs: Vec<Box<dyn Job>>) {
    let tx = match immediate(conn) {
        Ok(tx) => tx,
        Err(e) => return finish_all(jobs, Err(e)),
    };
    // Alone, a write needs no savepoint: its error rolls the transaction back.
    if let [job] = jobs.as_mut_slice() {
        if job.run(&tx).is_ok() {
            let committed = tx.commit();
            return finish_all(jobs, committed);
        }
        drop(tx);
        return finish_all(jobs, Ok(()));
    }
    for job in &mut jobs {
        if let Err(e) = in_savepoint(&tx, job.as_mut()) {
            drop(tx);
            return finish_all(jobs, Err(e));
        }
    }
    let committed = tx.commit();
    finish_all(jobs, committed);
}

/// Runs `job` in a savepoint of `tx`, undone alone if it fails: an error only when the
/// transaction itself cannot go on.
fn in_savepoint(tx: &Connection, job: &mut dyn Job) -> Result<(), StoreError> {
    savepoint(tx, "SAVEPOINT w")?;
    if job.run(tx).is_err() {
        savepoint(tx, "ROLLBACK TO w")?;
    }
    savepoint(tx, "RELEASE w")?;
    // An error that ended the transaction itself (a full disk, an I/O error) took the writes
    // before this one with it.
    match tx.is_autocommit() {
        true => Err(StoreError::Backend(
            "the transaction was rolled back by an error".into(),
        )),
        false => Ok(()),
    }
}

fn finish_all(jobs: Vec<Box<dyn Job>>, committed: Result<(), StoreError>) {
    for job in jobs {
        job.finish(committed.clone());
    }
}

/// Runs a savepoint statement (prepared once per connection).
fn savepoint(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut statement| statement.execute([]))
        .map(|_| ())
        .map_err(backend)
}
