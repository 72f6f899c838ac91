//! The cluster's headroom (`max_dbs_open`): whether the handles a rotate keeps in use fit beside
//! the handles every other tenant keeps. A fact of the cluster model (docdb/handles.rs: open handles,
//! the LRU, pinned databases), asked by the rotate before it starts and by the flag's preflight.

use crate::store::sql::Connection;

use super::DocDbResult;

/// The handles a rotate of `tenants` keeps in use (CORE, today's and tomorrow's day database of
/// each), and the cluster's room for them beside the handles other tenants keep in use: the
/// rule that the cluster must not fail without headroom, checked before the rotate starts rather than
/// discovered tenant by tenant. Idle handles do not count: the LRU closes them as needed.
/// The flag's preflight asks the same of the fleet's rolling tenants plus the one turned on.
pub fn headroom(conn: &Connection, tenant_ids: &[String]) -> DocDbResult<Headroom> {
    // Every tenant's handles in use in one statement (one a tenant was a round trip each on
    // PostgreSQL, and the preflight of each flag asks it of the whole fleet).
    let ids: std::collections::HashSet<&str> = tenant_ids.iter().map(String::as_str).collect();
    let (mut all, mut theirs) = (0, 0);
    for row in conn.fetch(
        "SELECT company_id, COUNT(*) FROM docdb_databases WHERE open = 1 AND pinned = 1 GROUP BY company_id",
        &[],
    )? {
        let count = row.get::<_, i64>(1)?.max(0) as usize;
        all += count;
        if ids.contains(row.get::<_, String>(0)?.as_str()) {
            theirs += count;
        }
    }
    Ok(Headroom {
        needed: tenant_ids.len() * PREWARMED_HANDLES,
        in_use_elsewhere: all - theirs,
        max: super::max_open(conn)?,
    })
}

/// Handles a rotated tenant keeps in use: CORE, today, tomorrow.
pub const PREWARMED_HANDLES: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headroom {
    /// Handles the rotated tenants will hold in use.
    pub needed: usize,
    /// Handles in use by every other tenant.
    pub in_use_elsewhere: usize,
    /// `ROLLING_DB_MAX_OPEN`.
    pub max: usize,
}

impl Headroom {
    pub fn enough(&self) -> bool {
        self.in_use_elsewhere.saturating_add(self.needed) <= self.max
    }
}
