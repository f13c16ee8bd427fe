//! Who is calling: account bearer secrets and the admin secret.
//!
//! An account's secret is `ts_<account>_<64 hex digits>` (32 random bytes), shown once when
//! the account is created; the store keeps its SHA-256 only. A request names its account in
//! the secret, the service reads that account and compares the hashes in constant time, so a
//! wrong secret costs the same whatever it shares with the right one. The admin secret
//! (`TOOLSMITH_ADMIN_SECRET`) is compared the same way, through its hash.

use axum::http::HeaderMap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use toolsmith_store::Account;

use crate::{ApiError, Service};

/// The variable holding the admin secret (the admin routes are off without it).
pub const ADMIN_SECRET_VAR: &str = "TOOLSMITH_ADMIN_SECRET";

/// SHA-256 of a secret.
pub fn hash_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Whether an account name is acceptable: 1 to 64 of `a-z`, `0-9` and `-`.
///
/// ```
/// use toolsmith_server::auth::valid_account_name;
///
/// assert!(valid_account_name("acme-2"));
/// assert!(!valid_account_name("Acme") && !valid_account_name("a_b") && !valid_account_name(""));
/// ```
pub fn valid_account_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A new secret for `account`: `ts_<account>_<64 hex digits>`.
///
/// # Errors
///
/// When the system's random source fails.
pub fn new_account_secret(account: &str) -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no random bytes: {e}"))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("ts_{account}_{hex}"))
}

/// The account a secret names, if the secret is its own.
pub async fn account_of(service: &Service, secret: &str) -> Result<Option<Account>, ApiError> {
    let Some(name) = secret
        .strip_prefix("ts_")
        .and_then(|rest| rest.rsplit_once('_'))
        .map(|(name, _)| name)
        .filter(|name| valid_account_name(name))
    else {
        return Ok(None);
    };
    let Some(account) = service.account(name).await? else {
        return Ok(None);
    };
    let matches: bool = hash_secret(secret).ct_eq(&account.secret_hash).into();
    Ok(matches.then_some(account))
}

/// The bearer token of `Authorization: Bearer <token>`, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The calling account, or 401 `{"error":"Unauthorized"}`.
///
/// # Errors
///
/// [`ApiError::unauthorized`] without a bearer token or with one of no account.
pub async fn caller(service: &Service, headers: &HeaderMap) -> Result<Account, ApiError> {
    let token = bearer(headers).ok_or_else(ApiError::unauthorized)?;
    account_of(service, token)
        .await?
        .ok_or_else(ApiError::unauthorized)
}

/// Checks the admin secret: 401 unless the bearer token is the configured admin secret (and
/// always when none is configured).
///
/// # Errors
///
/// [`ApiError::unauthorized`].
pub fn admin(admin_hash: Option<&[u8; 32]>, headers: &HeaderMap) -> Result<(), ApiError> {
    let (Some(expected), Some(token)) = (admin_hash, bearer(headers)) else {
        return Err(ApiError::unauthorized());
    };
    let matches: bool = hash_secret(token).ct_eq(expected).into();
    matches.then_some(()).ok_or_else(ApiError::unauthorized)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use toolsmith_store::{MemoryStore, SecretKey, ServiceStore};

    #[tokio::test]
    async fn a_secret_authenticates_its_account_only() {
        let store = Arc::new(MemoryStore::new());
        let service = Service::new(
            store.clone(),
            SecretKey::generate(),
            crate::ServiceOptions::default(),
            "http://127.0.0.1:1",
        );
        let secret = new_account_secret("acme").unwrap();
        assert!(secret.starts_with("ts_acme_") && secret.len() == "ts_acme_".len() + 64);
        store
            .create_account(&Account {
                name: "acme".into(),
                secret_hash: hash_secret(&secret),
                created_at: 0,
            })
            .await
            .unwrap();
        let found = account_of(&service, &secret).await.unwrap().unwrap();
        assert_eq!(found.name, "acme");
        // One digit changed, another account's prefix, garbage: nobody.
        let mut wrong = secret.clone();
        let last = if wrong.ends_with('0') { "1" } else { "0" };
        wrong.replace_range(wrong.len() - 1.., last);
        for token in [wrong.as_str(), "ts_other_00", "ts__", "", "Bearer"] {
            assert!(
                account_of(&service, token).await.unwrap().is_none(),
                "{token}"
            );
        }
    }

    #[test]
    fn the_admin_secret_must_match_and_be_configured() {
        let mut headers = HeaderMap::new();
        headers.insert("authorization", "Bearer s3cret".parse().unwrap());
        assert!(admin(Some(&hash_secret("s3cret")), &headers).is_ok());
        assert!(admin(Some(&hash_secret("other")), &headers).is_err());
        assert!(admin(None, &headers).is_err());
        headers.insert("authorization", "Basic s3cret".parse().unwrap());
        assert!(admin(Some(&hash_secret("s3cret")), &headers).is_err());
    }
}
