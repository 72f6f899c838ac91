//! The device's losses, told to the server: a destruction of local data that leaves documents
//! unpushed (an invalidation, a login's or a company change's cleanup) becomes a report with an id
//! of its own, kept in storage (`serviceProxyToken-losses`, shared by the tabs, surviving a
//! reload) and sent with a session of the tenant whose data it was, at once or at the next login
//! or realtime `ready`, until the server has it. The server counts an id once, so a report carried
//! by two tabs or sent again after a lost answer is one loss.

use serde_json::{Map, Value};

use super::Session;
use crate::core::ports::LocalBoxFuture;
use crate::core::results::CallResult;
use crate::core::{codec, json, keys};
use crate::protocol::errors::DEVICE_PROOF_REQUIRED;
use crate::protocol::losses::{LossReason, LossReport};
use crate::protocol::routes::DEVICE_LOSSES;

impl Session {
    /// Keeps a report of what `why` destroyed unpushed (`lost`: the tenant, the database and the
    /// count, each), one report a tenant, for [`Session::send_losses`]. A device never registered
    /// has nobody to report to: its losses stay in the events and the console only. Not `async`:
    /// the destruction's state machine does not carry it.
    pub(super) fn keep_loss_reports(&self, why: LossReason, lost: Vec<(String, String, Value)>) {
        let Some(device) = self.device_id().filter(|_| !lost.is_empty()) else { return };
        let mut pending = self.pending_losses();
        let stamp = codec::decimal(self.0.ports.clock.now_ms().max(0) as u64);
        for (n, (tenant, _, _)) in lost.iter().enumerate() {
            if lost.iter().take(n).any(|(t, _, _)| t == tenant) {
                continue;
            }
            // Inserted one by one: `collect` into the map sorts first, and the sort is big code.
            let mut counts = Map::new();
            for (_, db, count) in lost.iter().filter(|(t, _, _)| t == tenant) {
                counts.insert(db.clone(), count.clone());
            }
            // The device, the instant and the tenant's place: unique to this loss, made once.
            let id: String = [&device, "-", &stamp, "-", &codec::decimal(n as u64)]
                .concat()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            // No slicing (its panic would bring the formatter into the module): ASCII, so `get`.
            pending.push(LossReport::body(
                id.get(id.len().saturating_sub(64)..).unwrap_or(&id),
                &device,
                tenant,
                why,
                counts,
            ));
        }
        self.keep_losses(&pending);
    }

    /// Sends the reports kept for the stored session's tenant, each with the device's proof (a
    /// copied access token cannot report for a keyed device); each the server answered (recorded
    /// now or before) is forgotten, and so is one it refused as malformed (logged: a defect, not a
    /// loss to hold on to) or for want of the device's proof (this browser holds a copy of
    /// another's session, which must not report for the device: the report goes, and the copied
    /// session with it at its next refresh, refused the same way). A 429 keeps them all and the
    /// time its `Retry-After` names (`keys::LOSSES_RETRY_AT`: the server limits the device's
    /// reports, not one report), before which none is sent. The rest wait for the next try.
    /// Boxed, and with the stored token as it is (an expired one is refused: the report waits for
    /// the next try): its callers' state machines do not each carry a copy of it, nor a refresh's.
    pub fn send_losses(&self) -> LocalBoxFuture<'static, ()> {
        let session = self.clone();
        Box::pin(async move {
            let pending = session.pending_losses();
            let now_ms = session.0.ports.clock.now_ms();
            let waiting = keys::read_ms(session.storage(), keys::LOSSES_RETRY_AT) > Some(now_ms);
            let Some((token, claims)) = session.stored_token().filter(|_| !pending.is_empty() && !waiting) else {
                return;
            };
            let tenant = claims.company_id();
            let mut done = Vec::new();
            for report in pending.into_iter().filter(|r| r["companyId"].as_str() == tenant.as_deref()) {
                let body = json::stringify(&report);
                let Ok(answer) =
                    session.send_proven(DEVICE_LOSSES, DEVICE_LOSSES.path, body.clone(), Some(token.clone())).await
                else {
                    continue;
                };
                if answer.status == 429 {
                    let at = now_ms.saturating_add(i64::from(answer.retry_after) * 1000);
                    let _ = session.storage().set(keys::LOSSES_RETRY_AT, &codec::decimal(at.max(0) as u64));
                    break;
                }
                let unproven = CallResult::from_response(&answer).code.as_deref() == Some(DEVICE_PROOF_REQUIRED);
                if answer.status == 400 || unproven {
                    session.reporter().error(&["session-broker: a loss report was refused: ", &body].concat());
                }
                if answer.status == 200 || answer.status == 400 || unproven {
                    done.push(report["id"].clone());
                }
            }
            // Re-read: another tab may have kept a report meanwhile; only what was answered goes.
            let mut now = session.pending_losses();
            now.retain(|r| !done.iter().any(|id| id.as_str() == r["id"].as_str()));
            session.keep_losses(&now);
        })
    }

    fn pending_losses(&self) -> Vec<Value> {
        match self.storage().get(keys::LOSSES).as_deref().and_then(json::parse) {
            Some(Value::Array(reports)) => reports,
            _ => Vec::new(),
        }
    }

    fn keep_losses(&self, reports: &[Value]) {
        let written = if reports.is_empty() {
            self.storage().remove(keys::LOSSES);
            Ok(())
        } else {
            self.storage().set(keys::LOSSES, &json::stringify(&Value::Array(reports.to_vec())))
        };
        if let Err(e) = written {
            self.reporter().error(&["session-broker: could not keep the device's loss reports: ", &e.0].concat());
        }
    }
}
