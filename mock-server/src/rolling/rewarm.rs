//! Re-warm (the runbook: "drop CORE and let the next rotate recreate it"): CORE goes, and the
//! next rotate warms it again from the legacy catalogue with fresh revisions and cuts the devices
//! over with its invalidation. While devices are routed to CORE, dropping it under them would
//! leave them replicating a database that is gone, so the re-warm then needs an invalidation of
//! its own (they return to the legacy catalogue until the rotate); without one it is refused,
//! saying so.

use serde::Serialize;

use super::invalidation::{self, Routing};
use super::{RollingError, RollingResult};
use crate::docdb::{self, Cluster};

/// The invalidation reason a re-warm gives its devices.
pub const REASON_REWARM: &str = "rewarm";

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rewarm {
    pub company_id: String,
    pub dropped: String,
    /// When the tenant's devices were invalidated (they go to the legacy catalogue until the
    /// next rotate recreates CORE).
    pub invalidated_at: Option<i64>,
}

pub fn rewarm(conn: &Cluster, db_prefix: &str, company_id: &str, invalidate: bool, now_ms: i64) -> RollingResult<Rewarm> {
    let tenant = super::tenants::get(conn, company_id)?;
    let names = tenant.names(db_prefix);
    let core = names.core();
    if !docdb::exists(conn, &core)? {
        return Err(RollingError::NoCore(tenant.id));
    }
    let routed_to_core = invalidation::current_routing(conn, &names, &tenant.id)? == Routing::Core;
    if routed_to_core && !invalidate {
        return Err(RollingError::RewarmNeedsInvalidation(tenant.id));
    }
    docdb::drop_database(conn, &core)?;
    let invalidated_at = match invalidate {
        // CORE is gone now, so the invalidation routes the devices to the legacy catalogue.
        true => Some(invalidation::invalidate(conn, &tenant.id, REASON_REWARM, Routing::Legacy, now_ms)?),
        false => None,
    };
    Ok(Rewarm { company_id: tenant.id, dropped: core, invalidated_at })
}
