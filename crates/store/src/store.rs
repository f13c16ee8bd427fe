//! The [`Store`] trait: what every backend provides.

use async_trait::async_trait;
use serde_json::Value;
use toolsmith_core::{Message, Pause};

use crate::{
    Claim, EffectStatus, JournalEntry, NewThread, Settlement, StoreError, Thread, ThreadQuery,
    ThreadStatus, ThreadWrite,
};

/// Durable storage for runs: threads (with tags and parent links), their messages, where their
/// runs stand, the tool-call journal and the idempotency ledger.
///
/// Every write to a thread names the version it expects and fails with
/// [`StoreError::Conflict`] when another writer got there first, so of two processes
/// continuing one thread exactly one proceeds. Backends pass the same conformance suite
/// ([`conformance`](crate::conformance)).
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Creates a thread at version 0, idle, with no messages.
    ///
    /// # Errors
    ///
    /// [`StoreError::Exists`] when the id is taken.
    async fn create_thread(&self, thread: NewThread) -> Result<Thread, StoreError>;

    /// A thread, if it exists.
    async fn thread(&self, id: &str) -> Result<Option<Thread>, StoreError>;

    /// The threads `query` selects, the most recently written first.
    async fn threads(&self, query: &ThreadQuery) -> Result<Vec<Thread>, StoreError>;

    /// The thread's messages, in order.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`].
    async fn messages(&self, thread: &str) -> Result<Vec<Message>, StoreError>;

    /// Writes the thread's tail: keeps its first `keep` messages, drops the rest, appends
    /// `messages` (`keep` = the count appends; one less rewrites the last message), and sets
    /// its status and pending items, in one transaction. The new version.
    ///
    /// # Errors
    ///
    /// [`StoreError::Conflict`] when the thread's version is not `expected`;
    /// [`StoreError::NotFound`]; [`StoreError::Corrupt`] when `keep` is past the end.
    async fn write(
        &self,
        thread: &str,
        expected: u64,
        keep: u64,
        messages: &[Message],
        status: ThreadStatus,
        pending: &[Pause],
    ) -> Result<u64, StoreError>;

    /// Claims the thread for run `run_id`: records the run, sets the status to running and bumps
    /// the version, if the version is still `expected`. The new version. This is the write
    /// that starts or resumes a run: of two processes that read one version, one claims the
    /// thread and the other gets [`StoreError::Conflict`], and a process whose thread was
    /// claimed away fails at its next write.
    ///
    /// # Errors
    ///
    /// [`StoreError::Conflict`]; [`StoreError::NotFound`].
    async fn claim(&self, thread: &str, expected: u64, run_id: &str) -> Result<u64, StoreError>;

    /// A sign of life from the run that holds the thread: sets its `updated_at` to now, if its
    /// version is still `expected` (the version is not bumped). A running thread whose
    /// `updated_at` is recent is taken to be held by a live process.
    ///
    /// # Errors
    ///
    /// [`StoreError::Conflict`]; [`StoreError::NotFound`].
    async fn touch(&self, thread: &str, expected: u64) -> Result<(), StoreError>;

    /// Records a call as `intended` before it executes. A record is one attempt of one call,
    /// named by its thread, run, tool call id and attempt; recording the same attempt twice
    /// keeps the first record.
    async fn journal_intend(&self, entry: &JournalEntry) -> Result<(), StoreError>;

    /// Settles the record of `entry`'s attempt (found by its thread, run, tool call id and
    /// attempt; its other fields are not read) with its outcome.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] when no such record was intended.
    async fn journal_settle(
        &self,
        entry: &JournalEntry,
        status: EffectStatus,
        output: &Value,
    ) -> Result<(), StoreError>;

    /// Records a call `intended` and, when it is unsafe to repeat
    /// ([`JournalEntry::key_to_claim`]), claims its idempotency key, as one transaction where
    /// the backend has them. The claim ([`Claim::New`] for a call with no key to claim).
    async fn intend_call(&self, entry: &JournalEntry) -> Result<Claim, StoreError> {
        self.journal_intend(entry).await?;
        match entry.key_to_claim() {
            Some(key) => self.ledger_claim(key, &entry.thread_id).await,
            None => Ok(Claim::New),
        }
    }

    /// Settles a call's journal entry and, when it is unsafe to repeat, its key, as one
    /// transaction where the backend has them.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] when the entry (or the key) was not recorded.
    async fn settle_call(
        &self,
        entry: &JournalEntry,
        status: EffectStatus,
        output: &Value,
    ) -> Result<(), StoreError> {
        self.journal_settle(entry, status, output).await?;
        match entry.key_to_claim() {
            Some(key) => self.ledger_settle(key, status, output).await,
            None => Ok(()),
        }
    }

    /// Writes the thread (as [`write`](Self::write) does) and then records a call's intent (as
    /// [`intend_call`](Self::intend_call) does), as one transaction where the backend has
    /// them: a run saving a step's assistant message right before its first call records both
    /// with one commit. The new version and the claim.
    ///
    /// # Errors
    ///
    /// Those of `write` and `intend_call`; where the backend has transactions, nothing is
    /// written when any part fails.
    async fn write_and_intend(
        &self,
        write: ThreadWrite<'_>,
        entry: &JournalEntry,
    ) -> Result<(u64, Claim), StoreError> {
        let w = write;
        let version = self
            .write(
                w.thread, w.expected, w.keep, w.messages, w.status, w.pending,
            )
            .await?;
        Ok((version, self.intend_call(entry).await?))
    }

    /// Settles calls (each as [`settle_call`](Self::settle_call) does) and then writes the
    /// thread (as [`write`](Self::write) does), as one transaction where the backend has them:
    /// a run saving a call's result right after the call ends records the outcome and the
    /// result message with one commit. The new version.
    ///
    /// # Errors
    ///
    /// Those of `settle_call` and `write`; where the backend has transactions, nothing is
    /// written when any part fails.
    async fn settle_and_write(
        &self,
        settled: &[Settlement<'_>],
        write: ThreadWrite<'_>,
    ) -> Result<u64, StoreError> {
        for s in settled {
            self.settle_call(s.entry, s.status, s.output).await?;
        }
        let w = write;
        self.write(
            w.thread, w.expected, w.keep, w.messages, w.status, w.pending,
        )
        .await
    }

    /// The thread's journal, in call order.
    async fn journal(&self, thread: &str) -> Result<Vec<JournalEntry>, StoreError>;

    /// Claims an idempotency key before a side-effecting, non-idempotent call executes:
    /// [`Claim::New`] records it `intended`; [`Claim::Existing`] tells what an earlier claim
    /// came to. Two concurrent claims of one key: exactly one gets `New`.
    async fn ledger_claim(&self, key: &str, thread: &str) -> Result<Claim, StoreError>;

    /// Sets a variable of the thread (a value set by `setEnv`, an operator's answer).
    /// Backends store the bytes as given: [`Vault`](crate::Vault) seals secrets before they
    /// get here.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] when the thread does not exist.
    async fn put_variable(
        &self,
        thread: &str,
        name: &str,
        value: &StoredValue,
    ) -> Result<(), StoreError>;

    /// The thread's variables, by name.
    async fn variables(&self, thread: &str) -> Result<Vec<(String, StoredValue)>, StoreError>;

    /// Stores `account`'s credential `name` as `sealed`, replacing an earlier one. Credentials
    /// belong to an account, not to a thread: the API keys a hosted agent's tools use on the
    /// account's behalf (seed 000). The bytes are ciphertext: [`Vault::put_credential`]
    /// seals them before they reach the store.
    ///
    /// [`Vault::put_credential`]: crate::Vault::put_credential
    async fn put_credential(
        &self,
        account: &str,
        name: &str,
        sealed: &[u8],
    ) -> Result<(), StoreError>;

    /// The account's credentials, `(name, sealed)`, by name.
    async fn credentials(&self, account: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError>;

    /// Removes the account's credential `name`: whether there was one.
    async fn delete_credential(&self, account: &str, name: &str) -> Result<bool, StoreError>;

    /// Settles a claimed key.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] when the key was not claimed.
    async fn ledger_settle(
        &self,
        key: &str,
        status: EffectStatus,
        output: &Value,
    ) -> Result<(), StoreError>;
}

/// A variable as a backend stores it: ciphertext for a secret (sealed by
/// [`Vault`](crate::Vault)), UTF-8 text otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredValue {
    /// Whether `bytes` is a sealed secret.
    pub secret: bool,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
