//! [`SecretKey`] and [`Vault`]: secrets at rest encrypted with AES-256-GCM, so that the
//! database only ever holds ciphertext.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use aes_gcm::aead::{Aead, Generate, Key, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};

use crate::{Store, StoreError, StoredValue};

/// The variable that holds the key, as 64 hex digits.
pub const SECRET_KEY_VAR: &str = "TOOLSMITH_SECRET_KEY";

const NONCE_LEN: usize = 12;

/// The key that encrypts secrets at rest (AES-256-GCM, a fresh random nonce per value). Its
/// `Debug` never prints it.
#[derive(Clone)]
pub struct SecretKey(Key<Aes256Gcm>);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl SecretKey {
    /// A new random key.
    pub fn generate() -> Self {
        SecretKey(Key::<Aes256Gcm>::generate())
    }

    /// The key written as 64 hex digits.
    ///
    /// # Errors
    ///
    /// Anything else (the message never repeats the text).
    pub fn from_hex(text: &str) -> Result<Self, StoreError> {
        let text = text.trim();
        let bytes: Option<Vec<u8>> = (text.len() == 64)
            .then(|| {
                (0..32)
                    .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok())
                    .collect()
            })
            .flatten();
        let bytes = bytes.ok_or_else(|| {
            StoreError::Backend("a secret key is 64 hex digits (32 bytes)".to_string())
        })?;
        let key = Key::<Aes256Gcm>::try_from(bytes.as_slice())
            .map_err(|_| StoreError::Backend("a secret key is 32 bytes".to_string()))?;
        Ok(SecretKey(key))
    }

    fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The key from [`SECRET_KEY_VAR`] if set, else from `file`, which is created (mode
    /// 0600, a new random key) on first use.
    ///
    /// # Errors
    ///
    /// A malformed key; a key file others may read; an unreadable or unwritable file.
    pub fn load(file: &Path) -> Result<Self, StoreError> {
        if let Ok(text) = std::env::var(SECRET_KEY_VAR) {
            return Self::from_hex(&text)
                .map_err(|e| StoreError::Backend(format!("{SECRET_KEY_VAR}: {e}")));
        }
        Self::load_file(file)
    }

    /// The key in `file`, created (mode 0600, a new random key) when it does not exist.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn load_file(file: &Path) -> Result<Self, StoreError> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let io = |e: std::io::Error| {
            StoreError::Backend(format!("the secret key file {}: {e}", file.display()))
        };
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(file);
        match created {
            Ok(mut out) => {
                let key = Self::generate();
                writeln!(out, "{}", key.to_hex()).map_err(io)?;
                out.sync_all().map_err(io)?;
                Ok(key)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let mode = std::fs::metadata(file).map_err(io)?.permissions().mode();
                if mode & 0o077 != 0 {
                    return Err(StoreError::Backend(format!(
                        "the secret key file {} may be read by others (mode {:o}); \
                         chmod 600 it",
                        file.display(),
                        mode & 0o777
                    )));
                }
                let text = std::fs::read_to_string(file).map_err(io)?;
                Self::from_hex(&text).map_err(|e| {
                    StoreError::Backend(format!("the secret key file {}: {e}", file.display()))
                })
            }
            Err(e) => Err(io(e)),
        }
    }

    /// Where the key file lives by default: `$XDG_CONFIG_HOME/toolsmith/secret.key`, else
    /// `~/.config/toolsmith/secret.key`.
    pub fn default_file() -> PathBuf {
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
            .unwrap_or_else(|| PathBuf::from("."));
        config.join("toolsmith").join("secret.key")
    }

    /// A 256-bit key for another purpose derived from this one (SHA-256 over the key and the
    /// purpose's name), such as the key approval ids are signed with: every process holding
    /// the secret key derives the same one.
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        use sha2::Digest;
        let mut hash = sha2::Sha256::new();
        hash.update(b"toolsmith key derivation\0");
        hash.update(self.0.as_slice());
        hash.update(purpose.as_bytes());
        hash.finalize().into()
    }

    /// `plaintext` encrypted: the nonce, then the ciphertext and its tag.
    pub fn seal(&self, plaintext: &[u8]) -> Vec<u8> {
        let nonce = Nonce::generate();
        let sealed = Aes256Gcm::new(&self.0)
            .encrypt(&nonce, plaintext)
            .expect("AES-GCM encrypts any message shorter than 64 GiB");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        out
    }

    /// The plaintext of a sealed value.
    ///
    /// # Errors
    ///
    /// [`StoreError::Corrupt`] when the value was sealed with another key or altered.
    pub fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, StoreError> {
        let wrong = || {
            StoreError::Corrupt(format!(
                "a stored secret does not decrypt: it was encrypted with another key (check \
                 {SECRET_KEY_VAR} or the key file) or altered"
            ))
        };
        if sealed.len() < NONCE_LEN {
            return Err(wrong());
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_from(nonce).map_err(|_| wrong())?;
        Aes256Gcm::new(&self.0)
            .decrypt(&nonce, body)
            .map_err(|_| wrong())
    }
}

/// A thread's variables through a [`Store`], secrets sealed with a [`SecretKey`] before they
/// reach the backend and opened after: the database holds only their ciphertext.
///
/// ```
/// use toolsmith_store::{MemoryStore, NewThread, SecretKey, Store, Vault};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// store.create_thread(NewThread::new("t1")).await.unwrap();
/// let vault = Vault::new(&store, SecretKey::generate());
/// vault.put("t1", "API_KEY", "sk-live-123", true).await.unwrap();
/// let read = vault.get("t1").await.unwrap();
/// assert_eq!(read, [("API_KEY".to_string(), "sk-live-123".to_string(), true)]);
/// # });
/// ```
#[derive(Debug)]
pub struct Vault<'a, S: Store + ?Sized> {
    store: &'a S,
    key: SecretKey,
}

impl<'a, S: Store + ?Sized> Vault<'a, S> {
    /// A vault over `store` with `key`.
    pub fn new(store: &'a S, key: SecretKey) -> Self {
        Vault { store, key }
    }

    /// Stores a variable of `thread`: sealed when `secret`, as text otherwise.
    ///
    /// # Errors
    ///
    /// The store's.
    pub async fn put(
        &self,
        thread: &str,
        name: &str,
        value: &str,
        secret: bool,
    ) -> Result<(), StoreError> {
        let bytes = if secret {
            self.key.seal(value.as_bytes())
        } else {
            value.as_bytes().to_vec()
        };
        self.store
            .put_variable(thread, name, &StoredValue { secret, bytes })
            .await
    }

    /// The thread's variables, `(name, value, secret)`, secrets opened, by name.
    ///
    /// # Errors
    ///
    /// The store's; [`StoreError::Corrupt`] for a secret sealed with another key.
    pub async fn get(&self, thread: &str) -> Result<Vec<(String, String, bool)>, StoreError> {
        let stored = self.store.variables(thread).await?;
        stored
            .into_iter()
            .map(|(name, value)| {
                let bytes = if value.secret {
                    self.key.open(&value.bytes)?
                } else {
                    value.bytes
                };
                let text = String::from_utf8(bytes)
                    .map_err(|_| StoreError::Corrupt(format!("variable {name} is not UTF-8")))?;
                Ok((name, text, value.secret))
            })
            .collect()
    }

    /// Stores `account`'s credential `name`, always sealed, replacing an earlier one.
    ///
    /// ```
    /// use toolsmith_store::{MemoryStore, SecretKey, Vault};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = MemoryStore::new();
    /// let vault = Vault::new(&store, SecretKey::generate());
    /// vault.put_credential("acme", "TAVILY_API_KEY", "tvly-123").await.unwrap();
    /// assert_eq!(
    ///     vault.credential("acme", "TAVILY_API_KEY").await.unwrap().as_deref(),
    ///     Some("tvly-123")
    /// );
    /// assert_eq!(vault.credential("other", "TAVILY_API_KEY").await.unwrap(), None);
    /// # });
    /// ```
    ///
    /// # Errors
    ///
    /// The store's.
    pub async fn put_credential(
        &self,
        account: &str,
        name: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        let sealed = self.key.seal(value.as_bytes());
        self.store.put_credential(account, name, &sealed).await
    }

    /// The account's credentials, `(name, value)`, opened, by name.
    ///
    /// # Errors
    ///
    /// The store's; [`StoreError::Corrupt`] for a credential sealed with another key.
    pub async fn credentials(&self, account: &str) -> Result<Vec<(String, String)>, StoreError> {
        let stored = self.store.credentials(account).await?;
        stored
            .into_iter()
            .map(|(name, sealed)| {
                let text = String::from_utf8(self.key.open(&sealed)?)
                    .map_err(|_| StoreError::Corrupt(format!("credential {name} is not UTF-8")))?;
                Ok((name, text))
            })
            .collect()
    }

    /// The account's credential `name`, opened; `None` when it has none of that name.
    ///
    /// # Errors
    ///
    /// As [`credentials`](Self::credentials).
    pub async fn credential(
        &self,
        account: &str,
        name: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(self
            .credentials(account)
            .await?
            .into_iter()
            .find_map(|(n, value)| (n == name).then_some(value)))
    }
}
