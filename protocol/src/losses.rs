//! A device's report of local data it destroyed with documents it could not push
//! (`POST /devices/losses`): what the runbook's first rollback trigger ("loss of orders or payments
//! observed") needs the server to see. The device makes the report's id once, when the loss
//! happens, and sends it until the server has it: the server counts an id once.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::json::object;
use super::DeviceProof;

/// The most documents one report counts for one local database.
pub const MAX_LOST_PER_DATABASE: u64 = 100_000;
/// The most documents one report counts in all.
pub const MAX_LOST_PER_REPORT: u64 = 1_000_000;
/// The most documents one device's reports count in a day (its last 24 hours).
pub const MAX_LOST_PER_DEVICE_DAY: u64 = 2_000_000;
/// The most local databases one report names.
pub const MAX_LOST_DATABASES: usize = 32;
/// The longest local database name a report names, in bytes.
pub const MAX_DATABASE_NAME_BYTES: usize = 256;
/// The most reports one acknowledgement names (and one read of a tenant's open reports lists).
pub const MAX_ACKNOWLEDGED: usize = 500;

named! {
    /// What destroyed the device's data.
    pub enum LossReason {
        /// The operator's invalidation (or a rotate's cutover) told the device to drop its data.
        Invalidation = "invalidation",
        /// A login's cleanup of the previous session's data.
        Login = "login",
        /// A company change's cleanup of the previous company's data.
        CompanyChange = "company-change",
        /// A logout's cleanup.
        Logout = "logout",
        /// The push was refused and the data destroyed all the same.
        PushRefused = "push-refused",
    }
}

/// Body of `POST /devices/losses`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LossReport {
    /// The report's id, made by the device when the loss happened: 8 to 64 of `[A-Za-z0-9_-]`.
    pub id: String,
    /// The device that lost the data.
    pub device_id: String,
    /// The tenant whose data it was.
    pub company_id: String,
    /// What destroyed it.
    pub reason: LossReason,
    /// Documents destroyed unpushed, by local database: 1 to 32 of them, each count from 1 to
    /// 100,000, at most 1,000,000 in all.
    #[cfg_attr(feature = "ts", ts(type = "Record<string, number>"))]
    pub lost: Map<String, Value>,
    /// Proof from the key of the device `deviceId` names, for `POST /devices/losses`: required
    /// when the server holds a key for it. The SDK's transport adds it to the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub device_proof: Option<DeviceProof>,
}

impl LossReport {
    /// The body as the SDK writes it.
    pub fn body(id: &str, device_id: &str, company_id: &str, reason: LossReason, lost: Map<String, Value>) -> Value {
        object([
            ("id", id.into()),
            ("deviceId", device_id.into()),
            ("companyId", company_id.into()),
            ("reason", reason.as_str().into()),
            ("lost", Value::Object(lost)),
        ])
    }

    /// Whether `id` is a report id: 8 to 64 of `[A-Za-z0-9_-]`.
    pub fn valid_id(id: &str) -> bool {
        (8..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    }

    /// The documents lost, in all, or why `lost` is refused: no database, too many, a name too
    /// long, a count that is not an integer from 1 to [`MAX_LOST_PER_DATABASE`], or a total past
    /// [`MAX_LOST_PER_REPORT`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn documents(&self) -> Result<u64, String> {
        if self.lost.is_empty() || self.lost.len() > MAX_LOST_DATABASES {
            return Err(format!("lost: the documents lost by local database, 1 to {MAX_LOST_DATABASES} of them"));
        }
        let mut total = 0u64;
        for (db, n) in &self.lost {
            if db.is_empty() || db.len() > MAX_DATABASE_NAME_BYTES {
                return Err(format!("lost: a local database's name is 1 to {MAX_DATABASE_NAME_BYTES} bytes"));
            }
            match n.as_u64() {
                Some(n @ 1..=MAX_LOST_PER_DATABASE) => total += n,
                _ => {
                    return Err(format!(
                        "lost.{db}: a count of documents lost is an integer from 1 to {MAX_LOST_PER_DATABASE}"
                    ))
                }
            }
        }
        if total > MAX_LOST_PER_REPORT {
            return Err(format!("lost: one report counts at most {MAX_LOST_PER_REPORT} documents in all"));
        }
        Ok(total)
    }
}

/// One loss report as the server keeps it (`GET /admin/rolling-db/tenants/{id}/losses`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct StoredLoss {
    /// The report's id, as the device made it.
    pub report_id: String,
    /// The device that lost the data.
    pub device_id: String,
    /// What destroyed it.
    pub reason: LossReason,
    /// The documents lost, in all.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub documents: u64,
    /// The documents lost, by local database.
    #[cfg_attr(feature = "ts", ts(type = "Record<string, number>"))]
    pub lost: Map<String, Value>,
    /// When the server recorded it (ms since the epoch, server clock).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub reported_at: i64,
}

/// Answer of `GET /admin/rolling-db/tenants/{id}/losses`: the tenant's unresolved reports,
/// oldest first (at most `MAX_ACKNOWLEDGED`, 500; the next read lists those after them).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TenantLosses {
    /// The tenant.
    pub company_id: String,
    /// Its reports neither a rollback nor an acknowledgement has answered, oldest first.
    pub reports: Vec<StoredLoss>,
}

/// Body of `POST /admin/rolling-db/tenants/{id}/losses/acknowledge`: the reports the operator
/// reviewed and dealt with (1 to `MAX_ACKNOWLEDGED`, 500, ids of the tenant's reports).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AcknowledgeLosses {
    /// The reports' ids, as the tenant's losses listed them.
    pub report_ids: Vec<String>,
}

/// Answer of the acknowledgement.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LossesAcknowledged {
    /// The tenant.
    pub company_id: String,
    /// The reports this call resolved (those resolved before are not repeated).
    pub acknowledged: Vec<String>,
    /// The tenant's reports still unresolved: the alarm stays while any is.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub open: u64,
}

/// Answer of `POST /devices/losses`: `recorded` false when that id was recorded before.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LossRecorded {
    /// Whether this request recorded the report (false: it was already).
    pub recorded: bool,
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_sdk_body_is_the_servers_struct_and_counts_are_checked() {
        let mut lost = Map::new();
        lost.insert("till".into(), 3.into());
        let body = LossReport::body("r-12345678", "dev-1", "acme", LossReason::Invalidation, lost.clone());
        let read: LossReport = serde_json::from_value(body.clone()).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), body);
        assert_eq!(read.documents(), Ok(3));
        let many: Map<String, Value> = (0..=MAX_LOST_DATABASES).map(|i| (format!("db{i}"), 1.into())).collect();
        let long: Map<String, Value> = [("d".repeat(MAX_DATABASE_NAME_BYTES + 1), 1.into())].into_iter().collect();
        for bad in [
            json!({"till": -1}),
            json!({"till": 0}),
            json!({"till": 1.5}),
            json!({"till": "3"}),
            json!({}),
            json!({"till": MAX_LOST_PER_DATABASE + 1}),
            json!({"till": u64::MAX}),
            Value::Object((0..11).map(|i| (format!("db{i}"), MAX_LOST_PER_DATABASE.into())).collect()),
            Value::Object(many),
            Value::Object(long),
        ] {
            let report = LossReport { lost: bad.as_object().unwrap().clone(), ..read.clone() };
            assert!(report.documents().is_err(), "{bad}");
        }
        let largest = Value::Object((0..10).map(|i| (format!("db{i}"), MAX_LOST_PER_DATABASE.into())).collect());
        let report = LossReport { lost: largest.as_object().unwrap().clone(), ..read.clone() };
        assert_eq!(report.documents(), Ok(MAX_LOST_PER_REPORT));
        assert!(
            LossReport::valid_id("r-12345678") && !LossReport::valid_id("short") && !LossReport::valid_id("r 12345678")
        );
    }
}
