//! Tenants (companies) as the machine sees them.

use crate::store::sql::{Connection, OptionalExtension};

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
