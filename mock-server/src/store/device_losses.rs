//! The devices' reports of local data destroyed unpushed (`POST /devices/losses`), one row a
//! report: its id is the device's, so a report carried again (another tab, a retry, a reload) is
//! counted once.
//!
//! Sums of documents are read as floating point (`SUM(CAST(… AS DOUBLE PRECISION))`, the same in
//! either dialect) and turned into counts that saturate, so that no stored value, however large or
//! however many, can make a scrape or a view fail: SQLite's `SUM` of integers fails on overflow,
//! and PostgreSQL's is a `numeric` past any 64-bit integer.

use protocol::losses::{LossReason, StoredLoss};
use serde_json::{Map, Value};

use crate::store::sql::{params, Connection, OptionalExtension, Row, ToValue};

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

/// The documents of the rows summed, never below 0 (a row's own count is, as the route bounds it).
const SUM_DOCUMENTS: &str = "SUM(CASE WHEN documents > 0 THEN CAST(documents AS DOUBLE PRECISION) ELSE 0 END)";

/// A sum of [`SUM_DOCUMENTS`] as a count: `as` saturates (and reads no rows, or NaN, as 0).
fn count(r: &Row, i: usize) -> crate::store::sql::Result<u64> {
    Ok(r.get::<_, Option<f64>>(i)?.unwrap_or(0.0) as u64)
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

/// Whether a report with this id is stored.
pub fn exists(conn: &Connection, report_id: &str) -> crate::store::sql::Result<bool> {
    Ok(conn
        .query_row("SELECT 1 FROM guard_device_losses WHERE report_id = ?1", [report_id], |r| r.get::<_, i64>(0))
        .optional()?
        .is_some())
}

/// What a device reported lately: its reports since `window_from` (how many, and when the oldest
/// of them came), and the documents its reports since `day_from` count.
pub struct Recent {
    pub reports: u64,
    pub oldest: Option<i64>,
    pub documents: u64,
}

/// [`Recent`] of `device_id` (`window_from` is later than `day_from`).
pub fn recent(
    conn: &Connection,
    device_id: &str,
    window_from: i64,
    day_from: i64,
) -> crate::store::sql::Result<Recent> {
    conn.query_row(
        &format!(
            "SELECT SUM(CASE WHEN reported_at > ?3 THEN 1 ELSE 0 END), MIN(CASE WHEN reported_at > ?3 THEN reported_at END), {SUM_DOCUMENTS}
             FROM guard_device_losses WHERE device_id = ?1 AND reported_at > ?2"
        ),
        params![device_id, day_from, window_from],
        |r| {
            Ok(Recent {
                reports: r.get::<_, Option<i64>>(0)?.unwrap_or(0).max(0) as u64,
                oldest: r.get(1)?,
                documents: count(r, 2)?,
            })
        },
    )
}

/// Documents lost, by tenant and reason: `(tenant, reason, documents)`, for the metrics; with
/// `unresolved`, only those the rollback or the operator has not dealt with yet.
pub fn by_tenant_and_reason(
    conn: &Connection,
    unresolved: bool,
) -> crate::store::sql::Result<Vec<(String, String, u64)>> {
    let filter = if unresolved { " WHERE resolved_at IS NULL" } else { "" };
    let mut stmt = conn.prepare(&format!(
        "SELECT company_id, reason, {SUM_DOCUMENTS} FROM guard_device_losses{filter} GROUP BY company_id, reason ORDER BY company_id, reason"
    ))?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, count(r, 2)?)))?;
    rows.collect()
}

/// The tenant's losses are dealt with (its rollback).
pub fn resolve(conn: &Connection, company_id: &str, now_ms: i64) -> crate::store::sql::Result<usize> {
    conn.execute(
        "UPDATE guard_device_losses SET resolved_at = ?2 WHERE company_id = ?1 AND resolved_at IS NULL",
        params![company_id, now_ms],
    )
}

/// Those of `ids` that are reports of the tenant, resolved or not.
pub fn of_tenant_among(conn: &Connection, company_id: &str, ids: &[String]) -> crate::store::sql::Result<Vec<String>> {
    let mut values = vec![company_id.to_value()];
    values.extend(ids.iter().map(|id| id.to_value()));
    let list = (2..=ids.len() + 1).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
    conn.fetch(
        &format!("SELECT report_id FROM guard_device_losses WHERE company_id = ?1 AND report_id IN ({list})"),
        &values,
    )?
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// The reports `ids` of the tenant still unresolved are resolved now (an operator's
/// acknowledgement); answers those this call resolved.
pub fn resolve_ids(
    conn: &Connection,
    company_id: &str,
    ids: &[String],
    now_ms: i64,
) -> crate::store::sql::Result<Vec<String>> {
    let mut values = vec![company_id.to_value(), now_ms.to_value()];
    values.extend(ids.iter().map(|id| id.to_value()));
    let list = (3..=ids.len() + 2).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
    conn.fetch(
        &format!(
            "UPDATE guard_device_losses SET resolved_at = ?2
             WHERE company_id = ?1 AND resolved_at IS NULL AND report_id IN ({list}) RETURNING report_id"
        ),
        &values,
    )?
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// How many of the tenant's reports are unresolved.
pub fn open_count(conn: &Connection, company_id: &str) -> crate::store::sql::Result<u64> {
    conn.query_row(
        "SELECT COUNT(*) FROM guard_device_losses WHERE company_id = ?1 AND resolved_at IS NULL",
        [company_id],
        |r| Ok(r.get::<_, i64>(0)?.max(0) as u64),
    )
}

/// The tenant's unresolved reports, oldest first, at most `limit`.
pub fn unresolved(conn: &Connection, company_id: &str, limit: usize) -> crate::store::sql::Result<Vec<StoredLoss>> {
    let mut stmt = conn.prepare(
        "SELECT report_id, device_id, reason, documents, lost, reported_at FROM guard_device_losses
         WHERE company_id = ?1 AND resolved_at IS NULL ORDER BY reported_at, report_id LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![company_id, i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
        let lost: String = r.get(4)?;
        Ok(StoredLoss {
            report_id: r.get(0)?,
            device_id: r.get(1)?,
            reason: r.get_named(2, "loss reason", LossReason::parse)?,
            documents: r.get::<_, i64>(3)?.max(0) as u64,
            // Written by the server from a checked object; anything else reads as none.
            lost: serde_json::from_str::<Map<String, Value>>(&lost).unwrap_or_default(),
            reported_at: r.get(5)?,
        })
    })?;
    rows.collect()
}

/// One tenant's documents lost, by reason.
pub fn of_tenant(conn: &Connection, company_id: &str) -> crate::store::sql::Result<Vec<(String, u64)>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT reason, {SUM_DOCUMENTS} FROM guard_device_losses WHERE company_id = ?1 GROUP BY reason ORDER BY reason"
    ))?;
    let rows = stmt.query_map([company_id], |r| Ok((r.get(0)?, count(r, 1)?)))?;
    rows.collect()
}

/// The audit line that sums up the device's reports of `day` in the tenant, if one is written.
pub fn audit_line(
    conn: &Connection,
    company_id: &str,
    device_id: &str,
    day: &str,
) -> crate::store::sql::Result<Option<i64>> {
    conn.query_row(
        "SELECT audit_id FROM guard_device_loss_audits WHERE company_id = ?1 AND device_id = ?2 AND day = ?3",
        params![company_id, device_id, day],
        |r| r.get(0),
    )
    .optional()
}

/// Remembers the audit line of the device's reports of `day` in the tenant.
pub fn set_audit_line(
    conn: &Connection,
    company_id: &str,
    device_id: &str,
    day: &str,
    audit_id: i64,
) -> crate::store::sql::Result<()> {
    conn.execute(
        "INSERT INTO guard_device_loss_audits (company_id, device_id, day, audit_id) VALUES (?1, ?2, ?3, ?4)",
        params![company_id, device_id, day, audit_id],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_saturate_whatever_is_stored() {
        let c = crate::store::test_connection(crate::store::schema::GUARDS);
        for i in 0..4 {
            c.execute(
                "INSERT INTO guard_device_losses (report_id, company_id, device_id, reason, documents, lost, reported_at) VALUES (?1, 'acme', 'd1', 'login', ?2, '{}', ?3)",
                rusqlite::params![format!("r-{i}"), i64::MAX, i],
            )
            .unwrap();
        }
        c.execute(
            "INSERT INTO guard_device_losses (report_id, company_id, device_id, reason, documents, lost, reported_at) VALUES ('r-neg', 'acme', 'd1', 'login', -5, '{}', 9)",
            [],
        )
        .unwrap();
        assert_eq!(by_tenant_and_reason(&c, false).unwrap(), [("acme".to_owned(), "login".to_owned(), u64::MAX)]);
        assert_eq!(of_tenant(&c, "acme").unwrap(), [("login".to_owned(), u64::MAX)]);
        let recent = recent(&c, "d1", 1, -1).unwrap();
        assert_eq!((recent.reports, recent.oldest, recent.documents), (3, Some(2), u64::MAX));
    }
}
