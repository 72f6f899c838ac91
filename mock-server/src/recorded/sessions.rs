//! The session's events an operator counts by outcome: logins (password and Google), refreshes
//! (`refresh_token_reused` among their refusals), logouts, devices registered. Told apart by the
//! route the request matched, as the SDK calls them (`protocol::routes`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use protocol::routes::{self, Call};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Login {
    /// `password` or `google`.
    provider: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    /// `ok`, or the error code the answer carried.
    outcome: &'static str,
}

pub struct Series {
    logins: Family<Login, Counter>,
    refreshes: Family<Outcome, Counter>,
    logouts: Family<Outcome, Counter>,
    devices_registered: Family<Outcome, Counter>,
}

fn is(call: Call, method: &str, path: &str) -> bool {
    call.method.as_str() == method && call.path == path
}

impl Series {
    pub fn register(registry: &mut Registry) -> Series {
        let series = Series {
            logins: Family::default(),
            refreshes: Family::default(),
            logouts: Family::default(),
            devices_registered: Family::default(),
        };
        registry.register(
            "session_logins",
            "Logins answered, by provider (password, google) and outcome (ok or the error code)",
            series.logins.clone(),
        );
        registry.register(
            "session_refreshes",
            "Refreshes answered, by outcome (refresh_token_reused: a spent refresh token came back)",
            series.refreshes.clone(),
        );
        registry.register("session_logouts", "Logouts answered, by outcome", series.logouts.clone());
        registry.register(
            "session_devices_registered",
            "Device registrations answered, by outcome",
            series.devices_registered.clone(),
        );
        series
    }

    /// Counts the answer to `method` on the route template `path`, if it is one of the session's.
    pub fn record(&self, method: &str, path: &str, outcome: &'static str) {
        let counted = if is(routes::LOGIN, method, path) {
            self.logins.get_or_create(&Login { provider: "password", outcome })
        } else if is(routes::LOGIN_GOOGLE, method, path) {
            self.logins.get_or_create(&Login { provider: "google", outcome })
        } else if is(routes::REFRESH, method, path) {
            self.refreshes.get_or_create(&Outcome { outcome })
        } else if is(routes::LOGOUT, method, path) {
            self.logouts.get_or_create(&Outcome { outcome })
        } else if is(routes::ADD_DEVICE, method, path) {
            self.devices_registered.get_or_create(&Outcome { outcome })
        } else {
            return;
        };
        counted.inc();
    }
}
