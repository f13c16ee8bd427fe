//! [`Store::commit`](crate::Store::commit) on PostgreSQL. The shapes a run writes are single
//! statements (one round trip and, outside a transaction, one commit each): a write alone
//! (`[Write]`), a step's save with its first call's intent (`[Write, Intend]`), a call's
//! outcome with the save of its result (`[Settle, Write]`), an intent, a settlement or a key's
//! claim alone. Any other batch runs those statements one after the other in a transaction.

use deadpool_postgres::GenericClient;

use super::{backend, journal, read_thread, service, to_json, write};
use crate::{Claim, Committed, JournalEntry, Op, Settlement, StoreError, ThreadWrite};

/// Commits `ops` (not empty) on `client`.
pub(super) async fn commit(
    client: &mut deadpool_postgres::Object,
    ops: &[Op<'_>],
) -> Result<Committed, StoreError> {
    let mut committed = Committed::default();
    match ops {
        // One operation is one statement: atomic on its own.
        [op] => apply(&*client, op, &mut committed).await?,
        [Op::Write(write), Op::Intend(entry)] => {
            match write::write_and_intend(&*client, write, entry).await? {
                Some((version, claim)) => {
                    committed.version = Some(version);
                    committed.claims.push(claim);
                }
                None => return Err(write_failed(&*client, write).await),
            }
        }
        [Op::Settle(settled), Op::Write(write)] => {
            match write::settle_and_write(&*client, settled, write).await? {
                Some(version) => committed.version = Some(version),
                None => return Err(settle_and_write_failed(&*client, settled, write).await),
            }
        }
        _ => {
            let tx = client.transaction().await.map_err(backend)?;
            for op in ops {
                if let Err(e) = apply(&tx, op, &mut committed).await {
                    // Nothing of the batch stays. A rollback that fails leaves the
                    // transaction to the server, which drops it with the connection.
                    let _ = tx.rollback().await;
                    return Err(e);
                }
            }
            tx.commit().await.map_err(backend)?;
        }
    }
    Ok(committed)
}

/// Runs one operation on `client`, adding what it came to to `committed`.
async fn apply(
    client: &impl GenericClient,
    op: &Op<'_>,
    committed: &mut Committed,
) -> Result<(), StoreError> {
    match *op {
        Op::Settle(settled) => settle(client, &settled).await,
        Op::Write(write) => match write::write(client, &write).await? {
            Some(version) => {
                committed.version = Some(version);
                Ok(())
            }
            None => Err(write_failed(client, &write).await),
        },
        Op::Intend(entry) => {
            committed.claims.push(intend_call(client, entry).await?);
            Ok(())
        }
        Op::ClaimKey { key, thread } => {
            committed
                .claims
                .push(journal::claim(client, key, thread).await?);
            Ok(())
        }
        Op::Release(thread) => write::release(client, thread).await,
        Op::SettleEvent(end) => {
            let event = [&*end.account, &*end.agent_id, &*end.event_id];
            service::settle_event(client, event, end.status, &end.detail).await
        }
    }
}

/// Records a call and, when it is unsafe to repeat, claims its key.
async fn intend_call(
    client: &impl GenericClient,
    entry: &JournalEntry,
) -> Result<Claim, StoreError> {
    match entry.key_to_claim() {
        Some(key) => journal::intend_and_claim(client, entry, &key).await,
        None => journal::intend(client, entry).await.map(|()| Claim::New),
    }
}

/// Settles a call's attempt and, when it is unsafe to repeat, its key.
async fn settle(client: &impl GenericClient, settled: &Settlement<'_>) -> Result<(), StoreError> {
    let (entry, status) = (settled.entry, settled.status);
    let output = to_json(settled.output)?;
    match entry.key_to_claim() {
        Some(key) => journal::settle_with_key(client, entry, &key, status, &output).await,
        None => journal::settle(client, entry, status, &output).await,
    }
}

/// Why a thread write changed nothing: the thread is missing, at another version, or shorter
/// than the messages it was to keep. `None` when it is none of these (what the write was
/// conditional on besides the thread, then). Read on `client`, so inside a transaction it sees
/// the transaction's own writes.
async fn unwritten(client: &impl GenericClient, write: &ThreadWrite<'_>) -> Option<StoreError> {
    let (thread, expected, keep) = (write.thread, write.expected, write.keep);
    match read_thread(client, thread).await {
        Err(e) => Some(e),
        Ok(None) => Some(StoreError::NotFound(thread.to_string())),
        Ok(Some(found)) if found.version != expected => Some(StoreError::Conflict {
            thread: thread.to_string(),
            expected,
            found: found.version,
        }),
        Ok(Some(found)) if keep > found.message_count => Some(StoreError::Corrupt(format!(
            "cannot keep {keep} of the {} messages of thread {thread}",
            found.message_count
        ))),
        Ok(Some(_)) => None,
    }
}

/// [`unwritten`], for a write conditional on the thread alone: a thread that changed back in
/// between is reported as a conflict.
async fn write_failed(client: &impl GenericClient, write: &ThreadWrite<'_>) -> StoreError {
    unwritten(client, write)
        .await
        .unwrap_or_else(|| StoreError::Conflict {
            thread: write.thread.to_string(),
            expected: write.expected,
            found: write.expected,
        })
}

/// Why a settlement written with the thread changed nothing: the thread, or else the entry or
/// key it settles.
async fn settle_and_write_failed(
    client: &impl GenericClient,
    settled: &Settlement<'_>,
    write: &ThreadWrite<'_>,
) -> StoreError {
    if let Some(e) = unwritten(client, write).await {
        return e;
    }
    match write::settled_exists(client, settled).await {
        Err(e) => e,
        Ok(()) => write_failed(client, write).await,
    }
}
