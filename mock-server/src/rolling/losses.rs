//! The devices' losses (the runbook's first rollback trigger: "loss of orders or payments
//! observed"): a device that destroyed local data it could not push reports it, and the tenant
//! needs attention. On a tenant on the rolling database the answer is the rollback; on one that is
//! not (never enabled, or rolled back already) no rollback applies: the operator recovers the
//! orders with the store and acknowledges the reports it reviewed, by their ids.
//!
//! A device's reports are bounded: at most [`REPORTS_PER_WINDOW`] in [`REPORT_WINDOW_MS`] (the
//! rest wait, told when to come back) and [`MAX_LOST_PER_DEVICE_DAY`] documents in a day; each
//! report's own counts are the protocol's to bound (`LossReport::documents`). The audit log gets
//! one line a device a day in each tenant, written again with each report, so a device's reports
//! never crowd it.

use protocol::losses::{LossReport, LossesAcknowledged, MAX_ACKNOWLEDGED, MAX_LOST_PER_DEVICE_DAY};
use protocol::ops::audit::DEVICE_LOSS;
use serde_json::{json, Map, Value};

use super::alarms::{self, Kind};
use super::{RollingError, RollingResult};
use crate::clock::DAY_MS;
use crate::docdb::naming::day_of;
use crate::store::audit::{self, Actor};
use crate::store::device_losses::{self, Loss};
use crate::store::sql::Connection;

/// The most reports a device makes in [`REPORT_WINDOW_MS`]; past it, it waits.
pub const REPORTS_PER_WINDOW: u64 = 20;
/// The window of [`REPORTS_PER_WINDOW`]: 10 minutes.
pub const REPORT_WINDOW_MS: i64 = 10 * 60 * 1000;
/// The report ids an audit line of a device's day lists (its totals count them all).
const AUDITED_IDS: usize = 20;

/// What became of a report.
#[derive(Debug, PartialEq)]
pub enum Reported {
    /// Recorded now.
    Recorded,
    /// Recorded before: nothing changes.
    Again,
    /// The device reported too many lately: nothing stored; it may come back in that many seconds.
    TooFast { retry_after_secs: u64 },
    /// With it, the device's reports of the last 24 hours would count more than the day's bound:
    /// nothing stored.
    PastTheDay { counted: u64 },
}

/// Records `report` (`documents` lost in all, checked by the caller) once per report id, within
/// the device's bounds; raises the tenant's alarm for its device and sums it up in the audit log.
/// The caller holds the device's key (`sql::lock_key`), so a device's reports are counted one
/// after the other.
pub fn report(
    conn: &Connection,
    report: &LossReport,
    documents: u64,
    actor: &Actor,
    now_ms: i64,
) -> RollingResult<Reported> {
    if device_losses::exists(conn, &report.id)? {
        return Ok(Reported::Again);
    }
    let recent = device_losses::recent(
        conn,
        &report.device_id,
        now_ms.saturating_sub(REPORT_WINDOW_MS),
        now_ms.saturating_sub(DAY_MS),
    )?;
    if recent.reports >= REPORTS_PER_WINDOW {
        let free_at = recent.oldest.unwrap_or(now_ms).saturating_add(REPORT_WINDOW_MS);
        let wait_ms = free_at.saturating_sub(now_ms).max(1);
        return Ok(Reported::TooFast { retry_after_secs: (wait_ms as u64).div_ceil(1000) });
    }
    if recent.documents.saturating_add(documents) > MAX_LOST_PER_DEVICE_DAY {
        return Ok(Reported::PastTheDay { counted: recent.documents });
    }
    let lost = Value::Object(report.lost.clone()).to_string();
    let loss = Loss {
        report_id: &report.id,
        company_id: &report.company_id,
        device_id: &report.device_id,
        reason: report.reason.as_str(),
        documents,
        lost: lost.clone(),
    };
    if !device_losses::record(conn, &loss, now_ms)? {
        return Ok(Reported::Again);
    }
    let detail = format!(
        "device {} destroyed {documents} document(s) it could not push ({}: {lost})",
        report.device_id,
        report.reason.as_str(),
    );
    alarms::raise(conn, &report.company_id, Kind::DeviceDataLost, &report.device_id, &detail, now_ms)?;
    audit_day(conn, report, documents, actor, now_ms)?;
    Ok(Reported::Recorded)
}

/// The device's audit line of the day in the tenant: written at its first report, then its totals
/// (reports, documents, by reason, the first ids, the latest time) written again with each.
fn audit_day(conn: &Connection, report: &LossReport, documents: u64, actor: &Actor, now_ms: i64) -> RollingResult<()> {
    let day = day_of(now_ms);
    let line = device_losses::audit_line(conn, &report.company_id, &report.device_id, &day)?;
    let before = match line {
        Some(id) => audit::detail_of(conn, id)?.unwrap_or_default(),
        None => Map::new(),
    };
    let number = |key: &str| before.get(key).and_then(Value::as_u64).unwrap_or(0);
    let mut by_reason = before.get("byReason").and_then(Value::as_object).cloned().unwrap_or_default();
    let reason = report.reason.as_str();
    let of_reason = by_reason.get(reason).and_then(Value::as_u64).unwrap_or(0).saturating_add(documents);
    by_reason.insert(reason.into(), of_reason.into());
    let mut ids: Vec<Value> = before.get("reportIds").and_then(Value::as_array).cloned().unwrap_or_default();
    if ids.len() < AUDITED_IDS {
        ids.push(report.id.clone().into());
    }
    let detail = json!({
        "companyId": report.company_id,
        "deviceId": report.device_id,
        "day": day,
        "reports": number("reports").saturating_add(1),
        "documents": number("documents").saturating_add(documents),
        "byReason": by_reason,
        "reportIds": ids,
        "lastReportId": report.id,
        "lastReportedAt": now_ms,
    });
    let Value::Object(detail) = detail else { unreachable!("a JSON object literal") };
    match line {
        Some(id) => audit::rewrite(conn, id, actor, detail)?,
        None => {
            let id = audit::record_returning_id(conn, actor, DEVICE_LOSS, detail, now_ms)?;
            device_losses::set_audit_line(conn, &report.company_id, &report.device_id, &day, id)?;
        }
    }
    Ok(())
}

/// The operator reviewed the tenant's reports `ids` and dealt with them outside a rollback: those
/// still open are resolved, and the alarm clears once none of the tenant's is left open. Refused,
/// changing nothing, on a tenant on the rolling database (the rollback is the answer there), and
/// for a list that is empty, too long or names anything but the tenant's reports.
pub fn acknowledge(
    conn: &Connection,
    company_id: &str,
    ids: &[String],
    now_ms: i64,
) -> RollingResult<LossesAcknowledged> {
    if super::flags::get(conn, company_id)?.rolling_db {
        return Err(RollingError::RollbackAnswersLosses(company_id.to_owned()));
    }
    if ids.is_empty() || ids.len() > MAX_ACKNOWLEDGED {
        return Err(RollingError::BadAcknowledgement(format!(
            "reportIds: 1 to {MAX_ACKNOWLEDGED} ids of the tenant's loss reports"
        )));
    }
    let mut wanted: Vec<String> = Vec::with_capacity(ids.len());
    for id in ids {
        if !wanted.contains(id) {
            wanted.push(id.clone());
        }
    }
    let known = device_losses::of_tenant_among(conn, company_id, &wanted)?;
    if let Some(stranger) = wanted.iter().find(|id| !known.contains(id)) {
        return Err(RollingError::BadAcknowledgement(format!("{stranger:?} is no loss report of {company_id}")));
    }
    let resolved = device_losses::resolve_ids(conn, company_id, &wanted, now_ms)?;
    // In the order the operator named them.
    let acknowledged = wanted.into_iter().filter(|id| resolved.contains(id)).collect();
    let open = device_losses::open_count(conn, company_id)?;
    if open == 0 {
        alarms::clear_kind_now(conn, company_id, Kind::DeviceDataLost, now_ms)?;
    }
    Ok(LossesAcknowledged { company_id: company_id.to_owned(), acknowledged, open })
}
