//! Which route each management and operations call of the JS API uses (docs/server.md, management and operations).
//! Ids become path segments only when they are plain (`A-Z a-z 0-9 . _ ~ -`), so no id can
//! reach another route.

use serde_json::Value;

use super::ports::Method;
use crate::protocol::routes::*;

/// An id usable as one path segment.
pub fn segment(what: &str, id: &str) -> Result<String, String> {
    let plain = !id.is_empty()
        && id.len() <= 200
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '-'));
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

/// The route `call` with its ids filled in.
fn to(call: Call, ids: &[&str], body: Option<Value>) -> Route {
    Route { method: call.method, path: fill(call.path, ids), body, needs_session: true }
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
        Ok(match self {
            Management::AddDevice(info) => to(ADD_DEVICE, &[], Some(info.clone())),
            Management::DeleteDevice(id) => to(DELETE_DEVICE, &[&segment("deviceId", id)?], None),
            Management::GetDevices => to(DEVICES, &[], None),
            Management::GetCompanies => to(COMPANIES, &[], None),
            Management::GetCompany(id) => to(COMPANY, &[&segment("companyId", id)?], None),
            Management::UpdateCompany(id, changes) => {
                to(UPDATE_COMPANY, &[&segment("companyId", id)?], Some(changes.clone()))
            }
            Management::DeleteCompany(id) => to(DELETE_COMPANY, &[&segment("companyId", id)?], None),
            Management::UpdateUser(id, changes) => to(UPDATE_USER, &[&segment("userId", id)?], Some(changes.clone())),
            Management::DeleteUser(id) => to(DELETE_USER, &[&segment("userId", id)?], None),
            Management::ListUsers => to(USERS, &[], None),
            Management::GetMyUser => to(ME, &[], None),
            Management::UpdatePaymentReference { company_id, sale_id, data } => to(
                PAYMENT_REFERENCE,
                &[&segment("companyId", company_id)?, &segment("saleId", sale_id)?],
                Some(data.clone()),
            ),
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
        Ok(match self {
            Admin::Health => Route { needs_session: false, ..to(HEALTH, &[], None) },
            Admin::Cluster => to(CLUSTER, &[], None),
            Admin::Tenants => to(TENANTS, &[], None),
            Admin::Reconciliation(id) => to(RECONCILIATION, &[&segment("companyId", id)?], None),
            Admin::CleanupCandidates(id) => to(CLEANUP_CANDIDATES, &[&segment("companyId", id)?], None),
            Admin::Topology(id) => to(TOPOLOGY, &[&segment("companyId", id)?], None),
            Admin::Preflight(id) => to(PREFLIGHT, &[&segment("companyId", id)?], None),
            Admin::SetFlags { company_id, flags, force } => {
                let mut r = to(FLAGS, &[&segment("companyId", company_id)?], Some(flags.clone()));
                if *force {
                    r.path.push_str("?force=true");
                }
                r
            }
            Admin::Crons => to(CRONS, &[], None),
            Admin::RunCron(name) => to(RUN_CRON, &[&segment("cron", name)?], None),
            Admin::CronRun(id) => to(CRON_RUN, &[&segment("runId", id)?], None),
            Admin::InvalidateClients(id) => to(INVALIDATE_CLIENTS, &[&segment("companyId", id)?], None),
            Admin::Audit { company_id, before, limit } => {
                // Written out rather than joined: one generic `join` less in the module.
                let (mut path, mut separator) = (String::from(AUDIT.path), '?');
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
                    param("limit", &super::codec::decimal(*limit));
                }
                Route { method: AUDIT.method, path, body: None, needs_session: true }
            }
        })
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routes_are_the_wire_routes() {
        let r = Management::UpdatePaymentReference {
            company_id: "acme".into(),
            sale_id: "acme-sale-1".into(),
            data: json!({"reference": "X"}),
        }
        .route()
        .unwrap();
        assert_eq!((r.method, r.path.as_str()), (Method::Patch, "/companies/acme/sales/acme-sale-1/payment-reference"));
        assert_eq!(Management::GetMyUser.route().unwrap().path, "/users/me");
        assert_eq!(Management::DeleteDevice("dev-1".into()).route().unwrap().method, Method::Delete);
        let f = Admin::SetFlags { company_id: "acme".into(), flags: json!({"rollingDb": true}), force: true }
            .route()
            .unwrap();
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
