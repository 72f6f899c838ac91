//! A device's report of local data it destroyed with documents it could not push
//! (`POST /devices/losses`): what the runbook's first rollback trigger ("loss of orders or payments
//! observed") needs the server to see. The device makes the report's id once, when the loss
//! happens, and sends it until the server has it: the server counts an id once.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::json::object;

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
    /// Documents destroyed unpushed, by local database (non-negative integers; at least one).
    #[cfg_attr(feature = "ts", ts(type = "Record<string, number>"))]
    pub lost: Map<String, Value>,
    /// Proof from the key of the device the report names, as a refresh carries it: a copied
    /// access token cannot report for a keyed device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub device_proof: Option<super::DeviceProof>,
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

    /// The documents lost, in all: `None` when a count is not a non-negative integer, or none is given.
    pub fn documents(&self) -> Option<u64> {
        if self.lost.is_empty() {
            return None;
        }
        self.lost.values().try_fold(0u64, |sum, n| n.as_u64().and_then(|n| sum.checked_add(n)))
    }
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
        assert_eq!(read.documents(), Some(3));
        for bad in [json!({"till": -1}), json!({"till": 1.5}), json!({"till": "3"}), json!({})] {
            let report = LossReport { lost: bad.as_object().unwrap().clone(), ..read.clone() };
            assert_eq!(report.documents(), None, "{bad}");
        }
        assert!(
            LossReport::valid_id("r-12345678") && !LossReport::valid_id("short") && !LossReport::valid_id("r 12345678")
        );
    }
}
