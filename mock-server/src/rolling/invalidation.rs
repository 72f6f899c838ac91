//! Tenant invalidation (`client_invalidations`, one row per tenant): every device meets it at its
//! next realtime handshake, destroys its local database and bootstraps from the routing recorded.

use crate::store::sql::{params, Connection, OptionalExtension};

use super::RollingResult;
use crate::docdb::naming::{day_of, TenantNames};

pub use protocol::ops::{REASON_CUTOVER, REASON_DAILY, REASON_OPERATOR};
pub use protocol::sync_frames::Routing;

pub use protocol::views::TenantInvalidation as Invalidation;

pub fn last(conn: &Connection, company_id: &str) -> RollingResult<Option<Invalidation>> {
    Ok(conn
        .query_row(
            "SELECT invalidated_at, reason, routing FROM client_invalidations WHERE company_id = ?1",
            [company_id],
            |r| {
                Ok(Invalidation {
                    invalidated_at: r.get(0)?,
                    reason: r.get(1)?,
                    routing: r.get_named(2, "routing", Routing::parse)?,
                })
            },
        )
        .optional()?)
}

/// Upserts the tenant's row; `invalidatedAt` always moves forward, so devices see it as newer.
pub fn invalidate(
    conn: &Connection,
    company_id: &str,
    reason: &str,
    routing: Routing,
    now_ms: i64,
) -> RollingResult<i64> {
    // Without a condition the upsert always writes its row.
    Ok(upsert(conn, company_id, reason, routing, now_ms, "")?.ok_or(crate::store::sql::Error::NoRows)?)
}

/// [`invalidate`] unless the tenant's latest invalidation already routes there (the rotate's
/// cutover, once): the check and the write in one statement. `None`: nothing to do.
pub fn invalidate_unless_routed(
    conn: &Connection,
    company_id: &str,
    reason: &str,
    routing: Routing,
    now_ms: i64,
) -> RollingResult<Option<i64>> {
    upsert(conn, company_id, reason, routing, now_ms, " WHERE client_invalidations.routing <> ?4")
}

fn upsert(
    conn: &Connection,
    company_id: &str,
    reason: &str,
    routing: Routing,
    now_ms: i64,
    only: &str,
) -> RollingResult<Option<i64>> {
    let at = conn
        .query_row(
            &format!(
                "INSERT INTO client_invalidations (company_id, invalidated_at, reason, routing) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(company_id) DO UPDATE SET reason = ?3, routing = ?4,
                   invalidated_at = CASE WHEN client_invalidations.invalidated_at >= ?2 THEN client_invalidations.invalidated_at + 1 ELSE ?2 END{only}
                 RETURNING invalidated_at"
            ),
            params![company_id, now_ms, reason, routing.as_str()],
            |r| r.get::<_, i64>(0),
        )
        .optional()?;
    if let Some(at) = at {
        crate::store::notifications::invalidated(conn, company_id, at)?;
    }
    Ok(at)
}

/// An operator's invalidation: routed to where the tenant's catalogue lives now.
pub fn invalidate_tenant(conn: &Connection, env: &str, company_id: &str, now_ms: i64) -> RollingResult<(i64, Routing)> {
    let tenant = super::tenants::get(conn, company_id)?;
    let routing = current_routing(conn, &tenant.names(env), &tenant.id)?;
    Ok((invalidate(conn, &tenant.id, REASON_OPERATOR, routing, now_ms)?, routing))
}

/// Where the tenant's catalogue lives now: CORE once `rollingDb` is on, a rotate has run since it
/// was last turned on (a CORE left from before a rollback is stale until then) and CORE exists.
pub fn current_routing(conn: &Connection, names: &TenantNames, company_id: &str) -> RollingResult<Routing> {
    let (turn, core_exists) = super::enables::turn_and_core(conn, company_id, &names.core())?;
    let core = turn.rolling_db && !turn.first_since_enable && core_exists;
    Ok(if core { Routing::Core } else { Routing::Legacy })
}

/// The legacy behaviour for tenants without `rollingDb`: one invalidation a day.
pub fn invalidate_daily_if_due(conn: &Connection, company_id: &str, now_ms: i64) -> RollingResult<bool> {
    let due = match last(conn, company_id)? {
        Some(prev) => !(prev.reason == REASON_DAILY && day_of(prev.invalidated_at) == day_of(now_ms)),
        None => true,
    };
    if due {
        invalidate(conn, company_id, REASON_DAILY, Routing::Legacy, now_ms)?;
    }
    Ok(due)
}
