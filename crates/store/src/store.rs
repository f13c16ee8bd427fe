//! The [`Store`] trait: what every backend provides.

use async_trait::async_trait;
use toolsmith_core::Message;

use crate::{Batch, Committed, Holder, JournalEntry, NewThread, StoreError, Thread, ThreadQuery};

/// Durable storage for runs: threads (with tags and parent links), their messages, where their
/// runs stand, the tool-call journal and the idempotency ledger; and, as a [`CacheStore`],
/// tools' cached results.
///
/// Every write to a thread names the version it expects and fails with
/// [`StoreError::Conflict`] when another writer got there first, so of two processes
/// continuing one thread exactly one proceeds. Backends pass the same conformance suite
/// ([`conformance`](crate::conformance)).
#[async_trait]
pub trait Store: CacheStore + Send + Sync + 'static {
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

    /// Writes `batch`, its operations in order, as one transaction: all or nothing. What
    /// each operation writes and how it fails is [`Op`](crate::Op)'s to say; when one fails,
    /// the commit fails with its error and nothing of the batch is written. An empty batch
    /// writes nothing.
    ///
    /// # Errors
    ///
    /// The first failing operation's: [`StoreError::Conflict`] when a written thread is not at
    /// the version the write expects; [`StoreError::NotFound`] for a missing thread, or a
    /// journal entry or key to settle that was not recorded; [`StoreError::Corrupt`] for a
    /// write keeping more messages than the thread has.
    async fn commit(&self, batch: Batch<'_>) -> Result<Committed, StoreError>;

    /// Claims the thread for run `run_id` in the process `holder` (usually
    /// [`Holder::current`]): records the run and its holder, sets the status to running and
    /// bumps the version, if the version is still `expected`. The new version. This is the
    /// write that starts or resumes a run: of two processes that read one version, one claims
    /// the thread and the other gets [`StoreError::Conflict`], and a process whose thread was
    /// claimed away fails at its next write. The holder stays recorded while the thread is
    /// running: a write that sets another status clears it.
    ///
    /// # Errors
    ///
    /// [`StoreError::Conflict`]; [`StoreError::NotFound`].
    async fn claim(
        &self,
        thread: &str,
        expected: u64,
        run_id: &str,
        holder: &Holder,
    ) -> Result<u64, StoreError>;

    /// Starts a run on a new thread: creates `thread` holding `prompt` and claims it for run
    /// `run_id` in the process `holder`, as [`create_thread`](Self::create_thread), a
    /// [`Write`](crate::Op::Write) of the prompt (running) and [`claim`](Self::claim) would,
    /// leaving it at version 2: the new version. Backends may do it in one transaction (the
    /// provided method makes the three calls).
    ///
    /// # Errors
    ///
    /// [`StoreError::Exists`] when the id is taken (nothing is written).
    async fn start_thread(
        &self,
        thread: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<u64, StoreError> {
        let created = self.create_thread(thread).await?;
        let write = crate::ThreadWrite::new(
            &created.id,
            created.version,
            0,
            prompt,
            crate::ThreadStatus::Running,
        );
        let committed = self.commit(Batch::new().write(write)).await?;
        let version = committed.version.unwrap_or(created.version);
        self.claim(&created.id, version, run_id, holder).await
    }

    /// A sign of life from the run that holds the thread: sets its `updated_at` to now, if its
    /// version is still `expected` (the version is not bumped). A running thread whose
    /// `updated_at` is recent is taken to be held by a live process.
    ///
    /// # Errors
    ///
    /// [`StoreError::Conflict`]; [`StoreError::NotFound`].
    async fn touch(&self, thread: &str, expected: u64) -> Result<(), StoreError>;

    /// The thread's journal, in call order.
    async fn journal(&self, thread: &str) -> Result<Vec<JournalEntry>, StoreError>;

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
    /// account's behalf (as in the agent harness). The bytes are ciphertext:
    /// [`Vault::put_credential`] seals them before they reach the store.
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
}

/// Tools' cached results as a backend keeps them: opaque bytes under opaque keys, each until
/// the moment it expires, shared by every process on the database.
/// [`StoreCache`](crate::StoreCache) is what a run uses: it makes the keys (a keyed digest of
/// the call) and the values (the output, sealed); a backend stores both as given.
///
/// Times are milliseconds since the Unix epoch, passed in by the caller (whose clock decides):
/// an entry whose `expires_at` is at or before `now` has expired. Every backend passes the
/// same rules ([`conformance`](crate::conformance)).
#[async_trait]
pub trait CacheStore: Send + Sync + 'static {
    /// The value stored under `key`, unless it has expired at `now`: an expired entry is
    /// deleted (unless a put renewed it meanwhile) and not returned.
    async fn cache_get(&self, key: &[u8], now: u64) -> Result<Option<Vec<u8>>, StoreError>;

    /// Stores `value` under `key` until `expires_at`, replacing what the key held.
    async fn cache_put(&self, key: &[u8], value: &[u8], expires_at: u64) -> Result<(), StoreError>;

    /// Deletes at most `limit` entries expired at `now`: how many it deleted. Bounded, so that
    /// a sweep never holds the database for long; call it again while it returns `limit`.
    async fn cache_sweep(&self, now: u64, limit: usize) -> Result<usize, StoreError>;
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
