//! Every route the SDK calls, as the server declares it: the method and the path template, with
//! `{name}` standing for one plain path segment (the server's router reads the same template).
//! The SDK fills the templates ([`fill`]); the mock server routes them; its route-agreement test
//! walks [`CLIENT_CALLS`] against its router, so a path written on one side only cannot pass.

use Method::*;

/// The HTTP methods the SDK sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
}

impl Method {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
}

/// One route: its method and its path template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The HTTP method.
    pub method: Method,
    /// The path, `{name}` for each id segment; a query is appended by the caller.
    pub path: &'static str,
}

/// Declares each route once: the constant, its doc comment, and its entry in [`CLIENT_CALLS`]
/// (as the error codes build their list).
macro_rules! calls {
    ($($(#[doc = $doc:literal])+ $name:ident = $method:ident $path:literal;)+) => {
        $($(#[doc = $doc])+ pub const $name: Call = Call { method: $method, path: $path };)+
        /// Every route the SDK (and the demo console, for re-warm and releasing a held day)
        /// calls: the route-agreement test's list.
        pub const CLIENT_CALLS: &[Call] = &[$($name),+];
    };
}

calls! {
    /// `POST /auth`: log in with username and password.
    LOGIN = Post "/auth";
    /// `POST /auth/google`: log in with a Google credential.
    LOGIN_GOOGLE = Post "/auth/google";
    /// `POST /auth/refresh`: spend a refresh token (the SDK's `refreshPath` default).
    REFRESH = Post "/auth/refresh";
    /// `POST /auth/register`: sign up.
    REGISTER = Post "/auth/register";
    /// `POST /register-user`: a manager creates a user.
    CREATE_USER = Post "/register-user";
    /// `POST /auth/logout`.
    LOGOUT = Post "/auth/logout";
    /// `POST /auth/device-nonce`: a nonce for a device's proof of its key.
    DEVICE_NONCE = Post "/auth/device-nonce";
    /// `POST /auth/connect`: register the device.
    CONNECT = Post "/auth/connect";
    /// `PUT /auth/status`: the device's online status.
    STATUS = Put "/auth/status";
    /// `GET /bootstrap?database=`: a catalogue snapshot.
    BOOTSTRAP = Get "/bootstrap";
    /// `GET /realtime`: the WebSocket (the upgrade request).
    REALTIME = Get "/realtime";
    /// `GET /health`.
    HEALTH = Get "/health";
    /// `GET /devices`.
    DEVICES = Get "/devices";
    /// `POST /devices`.
    ADD_DEVICE = Post "/devices";
    /// `DELETE /devices/{id}`.
    DELETE_DEVICE = Delete "/devices/{id}";
    /// `GET /companies`.
    COMPANIES = Get "/companies";
    /// `GET /companies/{id}`.
    COMPANY = Get "/companies/{id}";
    /// `PATCH /companies/{id}`.
    UPDATE_COMPANY = Patch "/companies/{id}";
    /// `DELETE /companies/{id}`.
    DELETE_COMPANY = Delete "/companies/{id}";
    /// `PATCH /companies/{company_id}/sales/{sale_id}/payment-reference`.
    PAYMENT_REFERENCE = Patch "/companies/{company_id}/sales/{sale_id}/payment-reference";
    /// `GET /users`.
    USERS = Get "/users";
    /// `GET /users/me`.
    ME = Get "/users/me";
    /// `PATCH /users/{id}`.
    UPDATE_USER = Patch "/users/{id}";
    /// `DELETE /users/{id}`.
    DELETE_USER = Delete "/users/{id}";
    /// `GET /admin/rolling-db/cluster`.
    CLUSTER = Get "/admin/rolling-db/cluster";
    /// `GET /admin/rolling-db/tenants`.
    TENANTS = Get "/admin/rolling-db/tenants";
    /// `GET /admin/rolling-db/tenants/{id}/reconciliation`.
    RECONCILIATION = Get "/admin/rolling-db/tenants/{id}/reconciliation";
    /// `GET /admin/rolling-db/tenants/{id}/cleanup-candidates`.
    CLEANUP_CANDIDATES = Get "/admin/rolling-db/tenants/{id}/cleanup-candidates";
    /// `GET /admin/rolling-db/tenants/{id}/topology`.
    TOPOLOGY = Get "/admin/rolling-db/tenants/{id}/topology";
    /// `GET /admin/rolling-db/tenants/{id}/preflight`.
    PREFLIGHT = Get "/admin/rolling-db/tenants/{id}/preflight";
    /// `POST /admin/rolling-db/tenants/{id}/rewarm` (the console's; the SDK does not wrap it).
    REWARM = Post "/admin/rolling-db/tenants/{id}/rewarm";
    /// `GET /admin/rolling-db/tenants/{id}/core-writes` (the console's, before a rollback; the SDK
    /// does not wrap it).
    CORE_WRITES = Get "/admin/rolling-db/tenants/{id}/core-writes";
    /// `POST /admin/rolling-db/tenants/{id}/days/{db}/release` (the console's; the SDK does not wrap it).
    RELEASE_DAY = Post "/admin/rolling-db/tenants/{id}/days/{db}/release";
    /// `PATCH /admin/rolling-db/flags/{id}` (`?force=true` to override the preflight).
    FLAGS = Patch "/admin/rolling-db/flags/{id}";
    /// `GET /admin/crons`.
    CRONS = Get "/admin/crons";
    /// `POST /admin/crons/{name}/run`.
    RUN_CRON = Post "/admin/crons/{name}/run";
    /// `GET /admin/crons/runs/{run_id}`.
    CRON_RUN = Get "/admin/crons/runs/{run_id}";
    /// `POST /admin/invalidate-clients/{id}`.
    INVALIDATE_CLIENTS = Post "/admin/invalidate-clients/{id}";
    /// `GET /admin/audit`.
    AUDIT = Get "/admin/audit";
}

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
