//! Secrets at rest: sealed with AES-256-GCM before they reach the database, so that the file
//! holds only ciphertext; the key from a 0600 key file created on first use.

use std::os::unix::fs::PermissionsExt;

use toolsmith_store::{NewThread, SecretKey, SqliteStore, Store, StoreError, Vault};

const SECRET: &str = "sk-live-PLAINTEXT-9f8e7d6c5b4a";

/// Every file of the database (the main file and its WAL), as bytes.
fn database_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("runs.db")
        {
            all.extend(std::fs::read(path).unwrap());
        }
    }
    all
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn a_secret_is_only_ciphertext_in_the_database_file_and_reads_back_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
    store.create_thread(NewThread::new("t1")).await.unwrap();
    let key = SecretKey::load_file(&dir.path().join("keys/secret.key")).unwrap();
    let vault = Vault::new(&store, key.clone());
    vault.put("t1", "API_KEY", SECRET, true).await.unwrap();
    vault
        .put("t1", "REGION", "eu-west-PLAIN", false)
        .await
        .unwrap();

    let bytes = database_bytes(dir.path());
    assert!(
        !contains(&bytes, SECRET.as_bytes()),
        "the secret is in the file"
    );
    assert!(
        contains(&bytes, b"eu-west-PLAIN"),
        "a text variable is stored as text (so the scan above can see plaintext)"
    );
    assert_eq!(
        vault.get("t1").await.unwrap(),
        [
            ("API_KEY".to_string(), SECRET.to_string(), true),
            ("REGION".to_string(), "eu-west-PLAIN".to_string(), false)
        ]
    );
    // Another key cannot read it, and says why.
    let other = Vault::new(&store, SecretKey::generate());
    let error = other.get("t1").await.unwrap_err();
    assert!(
        matches!(&error, StoreError::Corrupt(m) if m.contains("another key")),
        "{error}"
    );
}

#[tokio::test]
async fn an_accounts_credential_is_only_ciphertext_in_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
    let vault = Vault::new(&store, SecretKey::generate());
    vault
        .put_credential("acme", "TAVILY_API_KEY", SECRET)
        .await
        .unwrap();
    assert!(
        !contains(&database_bytes(dir.path()), SECRET.as_bytes()),
        "the credential is in the file"
    );
    assert!(
        contains(&database_bytes(dir.path()), b"TAVILY_API_KEY"),
        "its name is (so the scan above reads the rows)"
    );
    assert_eq!(
        vault.credentials("acme").await.unwrap(),
        [("TAVILY_API_KEY".to_string(), SECRET.to_string())]
    );
    let other = Vault::new(&store, SecretKey::generate());
    assert!(matches!(
        other.credential("acme", "TAVILY_API_KEY").await,
        Err(StoreError::Corrupt(_))
    ));
}

#[test]
fn the_key_file_is_created_private_on_first_use_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config/toolsmith/secret.key");
    let first = SecretKey::load_file(&file).unwrap();
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let again = SecretKey::load_file(&file).unwrap();
    let sealed = first.seal(b"x");
    assert_eq!(
        again.open(&sealed).unwrap(),
        b"x",
        "the same key is read back"
    );
    assert!(!format!("{first:?}").contains(&std::fs::read_to_string(&file).unwrap()[..8]));

    // A key file others may read is refused.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let error = SecretKey::load_file(&file).unwrap_err();
    assert!(error.to_string().contains("chmod 600"), "{error}");
}

#[test]
fn a_malformed_key_is_refused_without_repeating_it() {
    for text in ["", "abc", &"zz".repeat(32), &"ab".repeat(33)] {
        let error = SecretKey::from_hex(text).unwrap_err().to_string();
        assert!(error.contains("64 hex digits"), "{error}");
    }
    assert!(SecretKey::from_hex(&"0a".repeat(32)).is_ok());
}
