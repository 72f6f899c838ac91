//! The device's losses, told to the server: a destruction of local data that leaves documents
//! unpushed (an invalidation, a login's or a company change's cleanup) becomes a report with an id
//! of its own, kept in storage (`serviceProxyToken-losses`, shared by the tabs, surviving a
//! reload) and sent with a session of the tenant whose data it was, at once or at the next login
//! or realtime `ready`, until the server has it. The server counts an id once, so a report carried
//! by two tabs or sent again after a lost answer is one loss.

use serde_json::{Map, Value};

use super::Session;
use crate::core::ports::LocalBoxFuture;
use crate::core::{codec, json, keys};
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

    /// Sends the reports kept for the stored session's tenant; each the server answered (recorded
    /// now or before) is forgotten, and so is one it refused as malformed (logged: a defect, not a
    /// loss to hold on to). The rest wait for the next try.
    /// Boxed, and with the stored token as it is (an expired one is refused: the report waits for
    /// the next try): its callers' state machines do not each carry a copy of it, nor a refresh's.
    pub fn send_losses(&self) -> LocalBoxFuture<'static, ()> {
        let session = self.clone();
        Box::pin(async move {
            let pending = session.pending_losses();
            let Some((token, claims)) = session.stored_token().filter(|_| !pending.is_empty()) else { return };
            let tenant = claims.company_id();
            let mut done = Vec::new();
            for report in pending.into_iter().filter(|r| r["companyId"].as_str() == tenant.as_deref()) {
                let body = Some(json::stringify(&report));
                let Ok(answer) =
                    session.send(DEVICE_LOSSES.method, DEVICE_LOSSES.path, body, Some(token.clone())).await
                else {
                    continue;
                };
                if answer.status == 400 {
                    session
                        .reporter()
                        .error(&["session-broker: a loss report was refused: ", &json::stringify(&report)].concat());
                }
                if answer.status == 200 || answer.status == 400 {
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
