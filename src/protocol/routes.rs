//! Every route the SDK calls, as the server declares it: the method and the path template, with
//! `{name}` standing for one plain path segment (the server's router reads the same template).
//! The SDK fills the templates ([`fill`]); the mock server routes them; its route-agreement test
//! walks [`CLIENT_CALLS`] against its router, so a path written on one side only cannot pass.

use crate::core::ports::Method::{self, *};

/// One route: its method and its path template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The HTTP method.
    pub method: Method,
    /// The path, `{name}` for each id segment; a query is appended by the caller.
    pub path: &'static str,
}

const fn call(method: Method, path: &'static str) -> Call {
    Call { method, path }
}

/// `POST /auth`: log in with username and password.
pub const LOGIN: Call = call(Post, "/auth");
/// `POST /auth/google`: log in with a Google credential.
pub const LOGIN_GOOGLE: Call = call(Post, "/auth/google");
/// `POST /auth/refresh`: spend a refresh token (the SDK's `refreshPath` default).
pub const REFRESH: Call = call(Post, "/auth/refresh");
/// `POST /auth/register`: sign up.
pub const REGISTER: Call = call(Post, "/auth/register");
/// `POST /register-user`: a manager creates a user.
pub const CREATE_USER: Call = call(Post, "/register-user");
/// `POST /auth/logout`.
pub const LOGOUT: Call = call(Post, "/auth/logout");
/// `POST /auth/connect`: register the device.
pub const CONNECT: Call = call(Post, "/auth/connect");
/// `PUT /auth/status`: the device's online status.
pub const STATUS: Call = call(Put, "/auth/status");
/// `GET /bootstrap?database=`: a catalogue snapshot.
pub const BOOTSTRAP: Call = call(Get, "/bootstrap");
/// `GET /realtime`: the WebSocket (the upgrade request).
pub const REALTIME: Call = call(Get, "/realtime");
/// `GET /health`.
pub const HEALTH: Call = call(Get, "/health");

/// `GET /devices`.
pub const DEVICES: Call = call(Get, "/devices");
/// `POST /devices`.
pub const ADD_DEVICE: Call = call(Post, "/devices");
/// `DELETE /devices/{id}`.
pub const DELETE_DEVICE: Call = call(Delete, "/devices/{id}");
/// `GET /companies`.
pub const COMPANIES: Call = call(Get, "/companies");
/// `GET /companies/{id}`.
pub const COMPANY: Call = call(Get, "/companies/{id}");
/// `PATCH /companies/{id}`.
pub const UPDATE_COMPANY: Call = call(Patch, "/companies/{id}");
/// `DELETE /companies/{id}`.
pub const DELETE_COMPANY: Call = call(Delete, "/companies/{id}");
/// `PATCH /companies/{company_id}/sales/{sale_id}/payment-reference`.
pub const PAYMENT_REFERENCE: Call = call(Patch, "/companies/{company_id}/sales/{sale_id}/payment-reference");
/// `GET /users`.
pub const USERS: Call = call(Get, "/users");
/// `GET /users/me`.
pub const ME: Call = call(Get, "/users/me");
/// `PATCH /users/{id}`.
pub const UPDATE_USER: Call = call(Patch, "/users/{id}");
/// `DELETE /users/{id}`.
pub const DELETE_USER: Call = call(Delete, "/users/{id}");

/// `GET /admin/rolling-db/cluster`.
pub const CLUSTER: Call = call(Get, "/admin/rolling-db/cluster");
/// `GET /admin/rolling-db/tenants`.
pub const TENANTS: Call = call(Get, "/admin/rolling-db/tenants");
/// `GET /admin/rolling-db/tenants/{id}/reconciliation`.
pub const RECONCILIATION: Call = call(Get, "/admin/rolling-db/tenants/{id}/reconciliation");
/// `GET /admin/rolling-db/tenants/{id}/cleanup-candidates`.
pub const CLEANUP_CANDIDATES: Call = call(Get, "/admin/rolling-db/tenants/{id}/cleanup-candidates");
/// `GET /admin/rolling-db/tenants/{id}/topology`.
pub const TOPOLOGY: Call = call(Get, "/admin/rolling-db/tenants/{id}/topology");
/// `GET /admin/rolling-db/tenants/{id}/preflight`.
pub const PREFLIGHT: Call = call(Get, "/admin/rolling-db/tenants/{id}/preflight");
/// `POST /admin/rolling-db/tenants/{id}/rewarm` (the console's; the SDK does not wrap it).
pub const REWARM: Call = call(Post, "/admin/rolling-db/tenants/{id}/rewarm");
/// `POST /admin/rolling-db/tenants/{id}/days/{db}/release` (the console's; the SDK does not wrap it).
pub const RELEASE_DAY: Call = call(Post, "/admin/rolling-db/tenants/{id}/days/{db}/release");
/// `PATCH /admin/rolling-db/flags/{id}` (`?force=true` to override the preflight).
pub const FLAGS: Call = call(Patch, "/admin/rolling-db/flags/{id}");
/// `GET /admin/crons`.
pub const CRONS: Call = call(Get, "/admin/crons");
/// `POST /admin/crons/{name}/run`.
pub const RUN_CRON: Call = call(Post, "/admin/crons/{name}/run");
/// `GET /admin/crons/runs/{run_id}`.
pub const CRON_RUN: Call = call(Get, "/admin/crons/runs/{run_id}");
/// `POST /admin/invalidate-clients/{id}`.
pub const INVALIDATE_CLIENTS: Call = call(Post, "/admin/invalidate-clients/{id}");
/// `GET /admin/audit`.
pub const AUDIT: Call = call(Get, "/admin/audit");

/// Every route the SDK (and the demo console, for re-warm and releasing a held day) calls: the
/// route-agreement test's list.
pub const CLIENT_CALLS: [Call; 37] = [
    LOGIN,
    LOGIN_GOOGLE,
    REFRESH,
    REGISTER,
    CREATE_USER,
    LOGOUT,
    CONNECT,
    STATUS,
    BOOTSTRAP,
    REALTIME,
    HEALTH,
    DEVICES,
    ADD_DEVICE,
    DELETE_DEVICE,
    COMPANIES,
    COMPANY,
    UPDATE_COMPANY,
    DELETE_COMPANY,
    PAYMENT_REFERENCE,
    USERS,
    ME,
    UPDATE_USER,
    DELETE_USER,
    CLUSTER,
    TENANTS,
    RECONCILIATION,
    CLEANUP_CANDIDATES,
    TOPOLOGY,
    PREFLIGHT,
    REWARM,
    RELEASE_DAY,
    FLAGS,
    CRONS,
    RUN_CRON,
    CRON_RUN,
    INVALIDATE_CLIENTS,
    AUDIT,
];

/// The template with its `{…}` segments replaced by `ids`, in order (ids already checked to be
/// plain segments by the caller).
pub fn fill(template: &str, ids: &[&str]) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut ids = ids.iter();
    for (i, part) in template.split('{').enumerate() {
        match part.split_once('}') {
            Some((_, rest)) if i > 0 => {
                out.push_str(ids.next().copied().unwrap_or_default());
                out.push_str(rest);
            }
            _ => out.push_str(part),
        }
    }
    out
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_in_order() {
        assert_eq!(fill(PAYMENT_REFERENCE.path, &["acme", "s-1"]), "/companies/acme/sales/s-1/payment-reference");
        assert_eq!(fill(LOGIN.path, &[]), "/auth");
        assert_eq!(fill(RECONCILIATION.path, &["acme"]), "/admin/rolling-db/tenants/acme/reconciliation");
    }
}
