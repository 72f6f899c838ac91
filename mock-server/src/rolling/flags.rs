//! The per-tenant feature flags (`company_feature_flags`), as they are recorded: both default
//! off. How they change (and what a change is refused for) is `flag_change.rs`; the modules that
//! only read them (the preflight, the invalidation's routing, the handshake) read them here.

use crate::store::sql::{params, Connection, OptionalExtension};

use super::{RollingError, RollingResult};
use crate::store::devices;

/// The first SDK with the catalogue cutover switch.
pub use protocol::{has_cutover_switch, parse_version, predates_cutover, CUTOVER_SDK_VERSION};

/// A tenant's flags as recorded.
pub use protocol::views::FlagRecord as Flags;

/// A change of flags, each optional.
pub use protocol::views::FlagChanges as FlagPatch;

/// Tenants by flag state: (`rollingDb`, `rollingDbDrop`, how many); a tenant without a flags
/// row has both off. Read from the flags switched on (the few, during a rollout) and the
/// tenants' count.
pub fn counts(conn: &Connection) -> RollingResult<Vec<(bool, bool, u64)>> {
    let tenants: i64 = conn.query_row("SELECT COUNT(*) FROM companies", [], |r| r.get(0))?;
    let mut stmt = conn.prepare(
        "SELECT CASE WHEN rolling_db != 0 THEN 1 ELSE 0 END AS r, CASE WHEN rolling_db_drop != 0 THEN 1 ELSE 0 END AS d, COUNT(*)
         FROM company_feature_flags WHERE rolling_db != 0 OR rolling_db_drop != 0 GROUP BY r, d ORDER BY r, d",
    )?;
    let on: Vec<(bool, bool, u64)> = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)? != 0, r.get::<_, i64>(1)? != 0, r.get::<_, i64>(2)?.max(0) as u64)))?
        .collect::<crate::store::sql::Result<_>>()?;
    let off = (tenants.max(0) as u64).saturating_sub(on.iter().map(|(.., n)| n).sum());
    Ok(std::iter::once((false, false, off)).chain(on).collect())
}

/// A rolling tenant as the metrics list it: its CORE and the reconciliation diff its last
/// archive run found (`None` before the first).
pub struct RollingCore {
    pub company_id: String,
    pub core: String,
    pub reconciliation_diff: Option<i64>,
}

/// The first `limit` tenants with `rollingDb` on that have a CORE, in tenant order. Read from the
/// flags' side, so it stops at `limit` however large the fleet.
pub fn rolling_cores(conn: &Connection, limit: usize) -> RollingResult<Vec<RollingCore>> {
    let mut stmt = conn.prepare(
        // The flags walked in tenant order, each tenant's CORE found by its index, until the
        // LIMIT (SQLite takes CROSS JOIN's left side as the outer loop; otherwise it scanned every
        // database of the fleet under the store's lock); the diff read for those tenants only.
        "SELECT l.company_id, l.core, (SELECT r.diff FROM guard_reconciliations r WHERE r.company_id = l.company_id)
         FROM (SELECT f.company_id, d.name AS core FROM company_feature_flags f CROSS JOIN docdb_databases d
               WHERE d.company_id = f.company_id AND d.kind = ?1 AND f.rolling_db != 0
               ORDER BY f.company_id LIMIT ?2) l
         ORDER BY l.company_id",
    )?;
    let rows = stmt
        .query_map(params![crate::docdb::Kind::Core.as_str(), i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
            Ok(RollingCore { company_id: r.get(0)?, core: r.get(1)?, reconciliation_diff: r.get(2)? })
        })?;
    Ok(rows.collect::<crate::store::sql::Result<_>>()?)
}

/// Locks the tenant's flags until the transaction ends (on PostgreSQL; SQLite has one writer):
/// a flag change and a rotation of the tenant never interleave.
pub fn lock(conn: &Connection, company_id: &str) -> RollingResult<()> {
    Ok(crate::store::sql::lock_key(conn, &["flags:", company_id].concat())?)
}

pub fn get(conn: &Connection, company_id: &str) -> RollingResult<Flags> {
    // The tenant and its flags in one read: no tenant, no row; a tenant never flagged, NULLs.
    let row = conn
        .query_row(
            "SELECT f.rolling_db, f.rolling_db_drop, f.updated_at, f.updated_by FROM companies c LEFT JOIN company_feature_flags f ON f.company_id = c.id WHERE c.id = ?1",
            [company_id],
            |r| Ok((r.get::<_, Option<i64>>(0)?.is_some_and(|v| v != 0), r.get::<_, Option<i64>>(1)?.is_some_and(|v| v != 0), r.get(2)?, r.get(3)?)),
        )
        .optional()?;
    let (rolling_db, rolling_db_drop, updated_at, updated_by) =
        row.ok_or_else(|| RollingError::UnknownTenant(company_id.to_owned()))?;
    Ok(Flags { company_id: company_id.to_owned(), rolling_db, rolling_db_drop, updated_at, updated_by })
}

/// Records the tenant's flags as given (`flag_change::apply` decides what they may be).
pub fn record(
    conn: &Connection,
    company_id: &str,
    rolling_db: bool,
    rolling_db_drop: bool,
    actor: &str,
    now_ms: i64,
) -> RollingResult<()> {
    conn.execute(
        "INSERT INTO company_feature_flags (company_id, rolling_db, rolling_db_drop, updated_at, updated_by) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(company_id) DO UPDATE SET rolling_db = ?2, rolling_db_drop = ?3, updated_at = ?4, updated_by = ?5",
        params![company_id, rolling_db, rolling_db_drop, now_ms, actor],
    )?;
    Ok(())
}

/// Tenants with `rollingDb` on, in one read (not a flag read a tenant), by id.
pub fn rolling_tenants(conn: &Connection) -> RollingResult<Vec<String>> {
    let mut stmt = conn.prepare("SELECT c.id FROM companies c JOIN company_feature_flags f ON f.company_id = c.id WHERE f.rolling_db != 0 ORDER BY c.id")?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<crate::store::sql::Result<_>>()?)
}

/// Devices reporting a readable SDK version older than the cutover switch.
pub fn devices_too_old(conn: &Connection, company_id: &str) -> RollingResult<Vec<(String, String)>> {
    Ok(devices::for_company(conn, company_id)?
        .into_iter()
        .filter_map(|d| {
            let v = d.sdk_version?;
            predates_cutover(Some(&v)).then_some((d.id, v))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_version("1.4.17"), Some((1, 4, 17)));
        assert_eq!(parse_version("v1.5.0-beta.1"), Some((1, 5, 0)));
        assert_eq!(parse_version("2"), Some((2, 0, 0)));
        assert_eq!(parse_version("web"), None);
        assert!(!has_cutover_switch(Some("1.4.16")));
        assert!(has_cutover_switch(Some("1.10.0")) && has_cutover_switch(Some(CUTOVER_SDK_VERSION)));
        // The console's "too old" and the preflight's refusal: readable and older only.
        assert!(predates_cutover(Some("1.4.16")) && predates_cutover(Some("v1.3.0-beta")));
        assert!(
            !predates_cutover(Some(CUTOVER_SDK_VERSION)) && !predates_cutover(Some("web")) && !predates_cutover(None)
        );
    }
}
