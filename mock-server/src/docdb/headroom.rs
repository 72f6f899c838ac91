//! The cluster's headroom (`max_dbs_open`): whether the handles a rotate keeps in use fit beside
//! the handles every other tenant keeps. A fact of the cluster model (docdb/mod.rs: open handles,
//! the LRU, pinned databases), asked by the rotate before it starts and by the flag's preflight.

use crate::store::sql::Connection;

use super::DocDbResult;

/// The handles a rotate of `tenants` keeps in use (CORE, today's and tomorrow's day database of
/// each), and the cluster's room for them beside the handles other tenants keep in use: the
/// runbook's "the cluster fails without headroom", checked before the rotate starts rather than
/// discovered tenant by tenant. Idle handles do not count: the LRU closes them as needed.
/// The flag's preflight asks the same of the fleet's rolling tenants plus the one turned on.
pub fn headroom(conn: &Connection, tenant_ids: &[String]) -> DocDbResult<Headroom> {
    let mut theirs = 0;
    for id in tenant_ids {
        theirs += super::pinned(conn, id)?.len();
    }
    Ok(Headroom { needed: tenant_ids.len() * PREWARMED_HANDLES, in_use_elsewhere: super::in_use_count(conn)?.saturating_sub(theirs), max: super::max_open(conn)? })
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
