//! The devices' losses (the runbook's first rollback trigger: "loss of orders or payments
//! observed"): a device that destroyed local data it could not push reports it, and the tenant
//! needs attention. On a tenant on the rolling database the answer is the rollback; on one that is
//! not (never enabled, or rolled back already) no rollback applies: the operator recovers the
//! orders with the store and acknowledges the alarm.

use protocol::losses::LossReport;

use super::alarms::{self, Kind};
use super::RollingResult;
use crate::store::device_losses::{self, Loss};
use crate::store::sql::Connection;

/// Records `report` (`documents` lost in all), once per report id, and raises the tenant's alarm
/// for its device. Answers whether the report was new (a repeat changes nothing).
pub fn report(conn: &Connection, report: &LossReport, documents: u64, now_ms: i64) -> RollingResult<bool> {
    let loss = Loss {
        report_id: &report.id,
        company_id: &report.company_id,
        device_id: &report.device_id,
        reason: report.reason.as_str(),
        documents,
        lost: serde_json::Value::Object(report.lost.clone()).to_string(),
    };
    if !device_losses::record(conn, &loss, now_ms)? {
        return Ok(false);
    }
    if documents > 0 {
        let detail = format!(
            "device {} destroyed {documents} document(s) it could not push ({}: {})",
            report.device_id,
            report.reason.as_str(),
            loss.lost
        );
        alarms::raise(conn, &report.company_id, Kind::DeviceDataLost, &report.device_id, &detail, now_ms)?;
    }
    Ok(true)
}

/// The operator dealt with the tenant's device losses outside a rollback: their alarms clear
/// (kept, with the time). Answers how many cleared.
pub fn acknowledge(conn: &Connection, company_id: &str, now_ms: i64) -> RollingResult<usize> {
    device_losses::resolve(conn, company_id, now_ms)?;
    alarms::clear_kind_now(conn, company_id, Kind::DeviceDataLost, now_ms)
}
