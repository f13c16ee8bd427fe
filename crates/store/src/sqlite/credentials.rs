//! An account's credentials: sealed bytes by account and name (schema version 6).

use rusqlite::{Connection, params};

use super::backend;
use crate::StoreError;
use crate::store::now_millis;

/// Stores (or replaces) a sealed credential.
pub(super) fn put(
    conn: &Connection,
    account: &str,
    name: &str,
    sealed: &[u8],
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO credentials (account_id, name, value, updated_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (account_id, name) DO UPDATE SET value = excluded.value, \
         updated_at = excluded.updated_at",
    )
    .and_then(|mut upsert| upsert.execute(params![account, name, sealed, now_millis() as i64]))
    .map_err(backend)?;
    Ok(())
}

/// The account's sealed credentials, by name.
pub(super) fn list(conn: &Connection, account: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
    let mut select = conn
        .prepare_cached("SELECT name, value FROM credentials WHERE account_id = ?1 ORDER BY name")
        .map_err(backend)?;
    let rows = select
        .query_map([account], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(backend)?;
    rows.map(|r| r.map_err(backend)).collect()
}

/// Removes a credential: whether there was one.
pub(super) fn delete(conn: &Connection, account: &str, name: &str) -> Result<bool, StoreError> {
    let removed = conn
        .prepare_cached("DELETE FROM credentials WHERE account_id = ?1 AND name = ?2")
        .and_then(|mut delete| delete.execute([account, name]))
        .map_err(backend)?;
    Ok(removed == 1)
}
