//! Tenants (companies) as the machine sees them.

use crate::store::sql::{in_list, Connection, OptionalExtension, Row, ToValue};

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

/// The columns a tenant is read from, and the reading.
const SELECT: &str = "SELECT id, name, store_code FROM companies";

fn from_row(r: &Row) -> crate::store::sql::Result<Tenant> {
    Ok(Tenant { id: r.get(0)?, name: r.get(1)?, store_code: r.get(2)? })
}

/// Those of `ids` that exist, in one statement (a cron's batch).
pub fn some(conn: &Connection, ids: &[String]) -> crate::store::sql::Result<Vec<Tenant>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let params: Vec<_> = ids.iter().map(|id| id.to_value()).collect();
    conn.fetch(&format!("{SELECT} WHERE id IN ({})", in_list(ids.len())), &params)?.iter().map(from_row).collect()
}

pub fn all(conn: &Connection) -> RollingResult<Vec<Tenant>> {
    let mut stmt = conn.prepare(&format!("{SELECT} ORDER BY id"))?;
    let rows = stmt.query_map([], from_row)?;
    Ok(rows.collect::<crate::store::sql::Result<_>>()?)
}

/// Every tenant's id, in order (one read, whatever the fleet's size).
pub fn ids(conn: &Connection) -> RollingResult<Vec<String>> {
    let mut stmt = conn.prepare("SELECT id FROM companies ORDER BY id")?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<crate::store::sql::Result<_>>()?)
}

pub fn get(conn: &Connection, id: &str) -> RollingResult<Tenant> {
    conn.query_row(&format!("{SELECT} WHERE id = ?1"), [id], from_row)
        .optional()?
        .ok_or_else(|| RollingError::UnknownTenant(id.to_owned()))
}
