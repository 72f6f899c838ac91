//! The requests the JS API's management and operations calls send (docs/server.md, management and
//! operations): a row of the route table with its ids filled in. Ids become path segments only
//! when they are plain (`A-Z a-z 0-9 . _ ~ -`), so no id can reach another route.

use serde_json::Value;

use super::ports::Method;
use crate::protocol::routes::{fill, Call};

pub use crate::protocol::ops::{CRON_ARCHIVE, CRON_DROP_EVAL, CRON_ROTATE};

/// An id checked by [`segment`]: the only kind a route's template is filled with.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment(String);

impl Segment {
    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An id usable as one path segment.
pub fn segment(what: &str, id: &str) -> Result<Segment, String> {
    let plain = !id.is_empty()
        && id.len() <= 200
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '-'));
    if plain {
        Ok(Segment(id.to_owned()))
    } else {
        Err([what, " must be a plain id (letters, digits, . _ ~ -), got \"", id, "\""].concat())
    }
}

/// A request the session sends: method, path, JSON body, and whether it needs a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// The HTTP method.
    pub method: Method,
    /// The path under the base URL.
    pub path: String,
    /// The JSON body, if any.
    pub body: Option<Value>,
    /// Sent with the session's token (and refreshed first when needed).
    pub needs_session: bool,
}

impl Route {
    /// The route of `call`, its template filled with `ids` in order, sent with the session.
    pub fn to(call: Call, ids: &[&Segment], body: Option<Value>) -> Route {
        let ids: Vec<&str> = ids.iter().map(|id| id.as_str()).collect();
        Route { method: call.method, path: fill(call.path, &ids), body, needs_session: true }
    }

    /// The route of `call`, open to anyone: sent without a session too (the token goes along
    /// when there is one).
    pub fn public(call: Call) -> Route {
        Route { needs_session: false, ..Route::to(call, &[], None) }
    }

    /// The route with `?name=value&…` appended for each pair whose value is given, in order
    /// (values are the caller's: numbers, `true`, or ids checked by [`segment`]).
    pub fn query(mut self, pairs: &[(&str, Option<&str>)]) -> Route {
        // Written out rather than joined: one generic `join` less in the module.
        for (name, value) in pairs {
            if let Some(value) = value {
                self.path.push(if self.path.contains('?') { '&' } else { '?' });
                self.path.push_str(name);
                self.path.push('=');
                self.path.push_str(value);
            }
        }
        self
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::protocol::routes::{AUDIT, DELETE_DEVICE, FLAGS, HEALTH, ME, PAYMENT_REFERENCE, RUN_CRON, TOPOLOGY};
    use serde_json::json;

    fn id(id: &str) -> Segment {
        segment("id", id).unwrap()
    }

    #[test]
    fn routes_are_the_wire_routes() {
        let r = Route::to(PAYMENT_REFERENCE, &[&id("acme"), &id("acme-sale-1")], Some(json!({"reference": "X"})));
        assert_eq!((r.method, r.path.as_str()), (Method::Patch, "/companies/acme/sales/acme-sale-1/payment-reference"));
        assert_eq!(r.body, Some(json!({"reference": "X"})));
        assert_eq!(Route::to(ME, &[], None).path, "/users/me");
        assert_eq!(Route::to(DELETE_DEVICE, &[&id("dev-1")], None).method, Method::Delete);
        let f = Route::to(FLAGS, &[&id("acme")], Some(json!({"rollingDb": true}))).query(&[("force", Some("true"))]);
        assert_eq!((f.method, f.path.as_str()), (Method::Patch, "/admin/rolling-db/flags/acme?force=true"));
        assert_eq!(
            Route::to(FLAGS, &[&id("acme")], None).query(&[("force", None)]).path,
            "/admin/rolling-db/flags/acme"
        );
        let audit = |c, b, l| Route::to(AUDIT, &[], None).query(&[("companyId", c), ("before", b), ("limit", l)]).path;
        assert_eq!(audit(Some("acme"), Some("9"), Some("5")), "/admin/audit?companyId=acme&before=9&limit=5");
        assert_eq!(audit(None, None, Some("5")), "/admin/audit?limit=5");
        assert_eq!(audit(None, Some("9"), None), "/admin/audit?before=9");
        assert_eq!(audit(None, None, None), "/admin/audit");
        assert_eq!(Route::to(RUN_CRON, &[&id(CRON_ROTATE)], None).path, "/admin/crons/rolling-db-rotate/run");
        assert_eq!(Route::to(TOPOLOGY, &[&id("acme")], None).path, "/admin/rolling-db/tenants/acme/topology");
        assert!(Route::to(TOPOLOGY, &[&id("acme")], None).needs_session);
        assert!(!Route::public(HEALTH).needs_session);
        assert_eq!(Route::public(HEALTH).path, "/health");
    }

    #[test]
    fn ids_that_are_not_plain_are_refused() {
        for bad in ["", "../admin", "a/b", "a?b=1", "a&b=c", "é", "a b", &"x".repeat(201)] {
            let refused = segment("companyId", bad).unwrap_err();
            assert!(refused.starts_with("companyId must be a plain id"), "{bad}: {refused}");
        }
        for good in ["acme", "acme-sale-1", "a.b_c~d", &"x".repeat(200)] {
            assert_eq!(segment("companyId", good).unwrap().as_str(), good);
        }
    }
}
