//! An account's credentials: sealed bytes by account and name (schema version 5).

use deadpool_postgres::GenericClient;

use super::backend;
use super::journal::execute;
use crate::StoreError;
use crate::store::now_millis;

/// Stores (or replaces) a sealed credential.
pub(super) async fn put(
    client: &impl GenericClient,
    account: &str,
    name: &str,
    sealed: &[u8],
) -> Result<(), StoreError> {
    execute(
        client,
        "INSERT INTO credentials (account_id, name, value, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (account_id, name) DO UPDATE SET value = EXCLUDED.value, \
         updated_at = EXCLUDED.updated_at",
        &[&account, &name, &sealed, &(now_millis() as i64)],
    )
    .await?;
    Ok(())
}

/// The account's sealed credentials, by name.
pub(super) async fn list(
    client: &impl GenericClient,
    account: &str,
) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
    let rows = client
        .query(
            "SELECT name, value FROM credentials WHERE account_id = $1 ORDER BY name",
            &[&account],
        )
        .await
        .map_err(backend)?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
}

/// Removes a credential: whether there was one.
pub(super) async fn delete(
    client: &impl GenericClient,
    account: &str,
    name: &str,
) -> Result<bool, StoreError> {
    let removed = execute(
        client,
        "DELETE FROM credentials WHERE account_id = $1 AND name = $2",
        &[&account, &name],
    )
    .await?;
    Ok(removed == 1)
}
