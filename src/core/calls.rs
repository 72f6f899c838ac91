//! Which route each management and operations call of the JS API uses (CONTRACT §5, §6).
//! Ids become path segments only when they are plain (`A-Z a-z 0-9 . _ ~ -`), so no id can
//! reach another route.

use serde_json::Value;

use super::ports::Method;

/// An id usable as one path segment.
pub fn segment(what: &str, id: &str) -> Result<String, String> {
    let plain = !id.is_empty() && id.len() <= 200 && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '-'));
    if plain {
        Ok(id.to_owned())
    } else {
        Err([what, " must be a plain id (letters, digits, . _ ~ -), got \"", id, "\""].concat())
    }
}

/// A request the session sends: method, path, JSON body, and whether it needs a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// The HTTP method.
    pub method: Method,
    /// The path under the base URL (ids already checked by [`segment`]).
    pub path: String,
    /// The JSON body, if any.
    pub body: Option<Value>,
    /// Sent with the session's token (and refreshed first when needed).
    pub needs_session: bool,
}

fn route(method: Method, path: String, body: Option<Value>) -> Route {
    Route { method, path, body, needs_session: true }
}

/// `AuthManager`'s management calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Management {
    /// `POST /devices`.
    AddDevice(Value),
    /// `DELETE /devices/:id`.
    DeleteDevice(String),
    /// `GET /devices`.
    GetDevices,
    /// `GET /companies`.
    GetCompanies,
    /// `GET /companies/:id` (caches the current company's details).
    GetCompany(String),
    /// `PATCH /companies/:id`.
    UpdateCompany(String, Value),
    /// `DELETE /companies/:id`.
    DeleteCompany(String),
    /// `PATCH /users/:id`.
    UpdateUser(String, Value),
    /// `DELETE /users/:id`.
    DeleteUser(String),
    /// `GET /users`.
    ListUsers,
    /// `GET /users/me`.
    GetMyUser,
    /// `PATCH /companies/:id/sales/:saleId/payment-reference`.
    UpdatePaymentReference {
        /// The sale's company.
        company_id: String,
        /// The sale.
        sale_id: String,
        /// The payment reference fields.
        data: Value,
    },
}

impl Management {
    /// The route, or why an id cannot be one.
    pub fn route(&self) -> Result<Route, String> {
        use Method::*;
        Ok(match self {
            Management::AddDevice(info) => route(Post, "/devices".into(), Some(info.clone())),
            Management::DeleteDevice(id) => route(Delete, ["/devices/", &segment("deviceId", id)?].concat(), None),
            Management::GetDevices => route(Get, "/devices".into(), None),
            Management::GetCompanies => route(Get, "/companies".into(), None),
            Management::GetCompany(id) => route(Get, ["/companies/", &segment("companyId", id)?].concat(), None),
            Management::UpdateCompany(id, changes) => route(Patch, ["/companies/", &segment("companyId", id)?].concat(), Some(changes.clone())),
            Management::DeleteCompany(id) => route(Delete, ["/companies/", &segment("companyId", id)?].concat(), None),
            Management::UpdateUser(id, changes) => route(Patch, ["/users/", &segment("userId", id)?].concat(), Some(changes.clone())),
            Management::DeleteUser(id) => route(Delete, ["/users/", &segment("userId", id)?].concat(), None),
            Management::ListUsers => route(Get, "/users".into(), None),
            Management::GetMyUser => route(Get, "/users/me".into(), None),
            Management::UpdatePaymentReference { company_id, sale_id, data } => {
                route(Patch, ["/companies/", &segment("companyId", company_id)?, "/sales/", &segment("saleId", sale_id)?, "/payment-reference"].concat(), Some(data.clone()))
            }
        })
    }
}

pub use crate::protocol::ops::{CRON_ARCHIVE, CRON_DROP_EVAL, CRON_ROTATE};

/// `RollingDbAdmin`'s operations calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Admin {
    /// `GET /health` (no session needed).
    Health,
    /// `GET /admin/rolling-db/cluster`.
    Cluster,
    /// `GET /admin/rolling-db/tenants`.
    Tenants,
    /// `GET /admin/rolling-db/tenants/:id/reconciliation`.
    Reconciliation(String),
    /// `GET /admin/rolling-db/tenants/:id/cleanup-candidates`.
    CleanupCandidates(String),
    /// `GET /admin/rolling-db/tenants/:id/topology`.
    Topology(String),
    /// `GET /admin/rolling-db/tenants/:id/preflight`.
    Preflight(String),
    /// `PATCH /admin/rolling-db/flags/:id`.
    SetFlags {
        /// The tenant.
        company_id: String,
        /// `{rollingDb?, rollingDbDrop?}`.
        flags: Value,
        /// `?force=true`: override the preflight (sys_admin only).
        force: bool,
    },
    /// `GET /admin/crons`.
    Crons,
    /// `POST /admin/crons/:name/run`.
    RunCron(String),
    /// `GET /admin/crons/runs/:id`.
    CronRun(String),
    /// `POST /admin/invalidate-clients/:id`.
    InvalidateClients(String),
    /// `GET /admin/audit`, optionally for one tenant, a page of `limit` before entry `before`.
    Audit {
        /// Only this tenant's entries.
        company_id: Option<String>,
        /// Entries older than this id.
        before: Option<u64>,
        /// At most this many.
        limit: Option<u32>,
    },
}

impl Admin {
    /// The route, or why an id cannot be one.
    pub fn route(&self) -> Result<Route, String> {
        use Method::*;
        let tenant = |id: &str, read: &str| -> Result<String, String> { Ok(["/admin/rolling-db/tenants/", &segment("companyId", id)?, "/", read].concat()) };
        Ok(match self {
            Admin::Health => Route { method: Get, path: "/health".into(), body: None, needs_session: false },
            Admin::Cluster => route(Get, "/admin/rolling-db/cluster".into(), None),
            Admin::Tenants => route(Get, "/admin/rolling-db/tenants".into(), None),
            Admin::Reconciliation(id) => route(Get, tenant(id, "reconciliation")?, None),
            Admin::CleanupCandidates(id) => route(Get, tenant(id, "cleanup-candidates")?, None),
            Admin::Topology(id) => route(Get, tenant(id, "topology")?, None),
            Admin::Preflight(id) => route(Get, tenant(id, "preflight")?, None),
            Admin::SetFlags { company_id, flags, force } => {
                route(Patch, ["/admin/rolling-db/flags/", &segment("companyId", company_id)?, if *force { "?force=true" } else { "" }].concat(), Some(flags.clone()))
            }
            Admin::Crons => route(Get, "/admin/crons".into(), None),
            Admin::RunCron(name) => route(Post, ["/admin/crons/", &segment("cron", name)?, "/run"].concat(), None),
            Admin::CronRun(id) => route(Get, ["/admin/crons/runs/", &segment("runId", id)?].concat(), None),
            Admin::InvalidateClients(id) => route(Post, ["/admin/invalidate-clients/", &segment("companyId", id)?].concat(), None),
            Admin::Audit { company_id, before, limit } => {
                // Written out rather than joined: one generic `join` less in the module.
                let (mut path, mut separator) = (String::from("/admin/audit"), '?');
                let mut param = |name: &str, value: &str| {
                    path.push(separator);
                    separator = '&';
                    path.push_str(name);
                    path.push('=');
                    path.push_str(value);
                };
                if let Some(id) = company_id {
                    param("companyId", &segment("companyId", id)?);
                }
                if let Some(before) = before {
                    param("before", &before.to_string());
                }
                if let Some(limit) = limit {
                    param("limit", &limit.to_string());
                }
                route(Get, path, None)
            }
        })
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routes_are_the_contracts() {
        let r = Management::UpdatePaymentReference { company_id: "acme".into(), sale_id: "acme-sale-1".into(), data: json!({"reference": "X"}) }.route().unwrap();
        assert_eq!((r.method, r.path.as_str()), (Method::Patch, "/companies/acme/sales/acme-sale-1/payment-reference"));
        assert_eq!(Management::GetMyUser.route().unwrap().path, "/users/me");
        assert_eq!(Management::DeleteDevice("dev-1".into()).route().unwrap().method, Method::Delete);
        let f = Admin::SetFlags { company_id: "acme".into(), flags: json!({"rollingDb": true}), force: true }.route().unwrap();
        assert_eq!((f.method, f.path.as_str()), (Method::Patch, "/admin/rolling-db/flags/acme?force=true"));
        let audit = Admin::Audit { company_id: Some("acme".into()), before: Some(9), limit: Some(5) };
        assert_eq!(audit.route().unwrap().path, "/admin/audit?companyId=acme&before=9&limit=5");
        assert_eq!(Admin::Audit { company_id: None, before: None, limit: None }.route().unwrap().path, "/admin/audit");
        assert!(Admin::Audit { company_id: Some("a&b=c".into()), before: None, limit: None }.route().is_err());
        assert!(Admin::RunCron("../x".into()).route().is_err());
        assert_eq!(Admin::RunCron(CRON_ROTATE.into()).route().unwrap().path, "/admin/crons/rolling-db-rotate/run");
        assert_eq!(Admin::Topology("acme".into()).route().unwrap().path, "/admin/rolling-db/tenants/acme/topology");
        assert!(!Admin::Health.route().unwrap().needs_session);
    }

    #[test]
    fn ids_that_are_not_plain_are_refused() {
        for bad in ["", "../admin", "a/b", "a?b=1", "é", "a b"] {
            assert!(Management::GetCompany(bad.into()).route().is_err(), "{bad}");
            assert!(Admin::Topology(bad.into()).route().is_err(), "{bad}");
        }
    }
}
