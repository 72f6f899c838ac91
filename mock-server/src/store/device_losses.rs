//! The devices' reports of local data destroyed unpushed (`POST /devices/losses`), one row a
//! report: its id is the device's, so a report carried again (another tab, a retry, a reload) is
//! counted once.

use crate::store::sql::{params, Connection};

/// A report as stored.
pub struct Loss<'a> {
    pub report_id: &'a str,
    pub company_id: &'a str,
    pub device_id: &'a str,
    pub reason: &'a str,
    pub documents: u64,
    /// The counts by local database, as JSON text.
    pub lost: String,
}

/// Stores `loss` unless its id is stored already; answers whether it was new.
pub fn record(conn: &Connection, loss: &Loss<'_>, now_ms: i64) -> crate::store::sql::Result<bool> {
    let documents = i64::try_from(loss.documents).unwrap_or(i64::MAX);
    let added = conn.execute(
        "INSERT INTO guard_device_losses (report_id, company_id, device_id, reason, documents, lost, reported_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (report_id) DO NOTHING",
        params![loss.report_id, loss.company_id, loss.device_id, loss.reason, documents, loss.lost, now_ms],
    )?;
    Ok(added == 1)
}

/// Documents lost, by tenant and reason: `(tenant, reason, documents)`, for the metrics; with
/// `unresolved`, only those the rollback or the operator has not dealt with yet.
pub fn by_tenant_and_reason(
    conn: &Connection,
    unresolved: bool,
) -> crate::store::sql::Result<Vec<(String, String, u64)>> {
    let filter = if unresolved { " WHERE resolved_at IS NULL" } else { "" };
    let mut stmt = conn.prepare(&format!(
        "SELECT company_id, reason, SUM(documents) FROM guard_device_losses{filter} GROUP BY company_id, reason ORDER BY company_id, reason"
    ))?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)?.max(0) as u64)))?;
    rows.collect()
}

/// The tenant's losses are dealt with (its rollback, or the operator's acknowledgement).
pub fn resolve(conn: &Connection, company_id: &str, now_ms: i64) -> crate::store::sql::Result<usize> {
    conn.execute(
        "UPDATE guard_device_losses SET resolved_at = ?2 WHERE company_id = ?1 AND resolved_at IS NULL",
        params![company_id, now_ms],
    )
}

/// One tenant's documents lost, by reason.
pub fn of_tenant(conn: &Connection, company_id: &str) -> crate::store::sql::Result<Vec<(String, u64)>> {
    let mut stmt = conn.prepare(
        "SELECT reason, SUM(documents) FROM guard_device_losses WHERE company_id = ?1 GROUP BY reason ORDER BY reason",
    )?;
    let rows = stmt.query_map([company_id], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64)))?;
    rows.collect()
}
