//! Tenants (companies) as the machine sees them.

use crate::store::sql::{in_list, Connection, OptionalExtension, ToValue};

use super::{RollingError, RollingResult};
use crate::docdb::naming::TenantNames;

#[derive(Debug, Clone, PartialEq)]
pub struct Tenant {
    pub id: String,
    pub name: String,
    pub store_code: String,
}

impl Tenant {
    pub fn names(&self, env: &str) -> TenantNames {
        TenantNames::new(env, &self.id, &self.store_code)
    }
}

/// Those of `ids` that exist, in one statement (a cron's batch).
pub fn some(conn: &Connection, ids: &[String]) -> crate::store::sql::Result<Vec<Tenant>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let params: Vec<_> = ids.iter().map(|id| id.to_value()).collect();
    let rows = conn.fetch(&format!("SELECT id, name, store_code FROM companies WHERE id IN ({})", in_list(ids.len())), &params)?;
    rows.iter().map(|r| Ok(Tenant { id: r.get(0)?, name: r.get(1)?, store_code: r.get(2)? })).collect()
}

pub fn all(conn: &Connection) -> RollingResult<Vec<Tenant>> {
    let mut stmt = conn.prepare("SELECT id, name, store_code FROM companies ORDER BY id")?;
    let rows = stmt.query_map([], |r| Ok(Tenant { id: r.get(0)?, name: r.get(1)?, store_code: r.get(2)? }))?;
    Ok(rows.collect::<crate::store::sql::Result<_>>()?)
}

pub fn get(conn: &Connection, id: &str) -> RollingResult<Tenant> {
    conn.query_row("SELECT id, name, store_code FROM companies WHERE id = ?1", [id], |r| Ok(Tenant { id: r.get(0)?, name: r.get(1)?, store_code: r.get(2)? }))
        .optional()?
        .ok_or_else(|| RollingError::UnknownTenant(id.to_owned()))
}
