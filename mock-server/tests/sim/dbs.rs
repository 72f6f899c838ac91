//! A browser's local databases (IndexedDB, PouchDB), in memory: the till's orders, each with the
//! tenant it was written for and whether a push took it, and the bootstrapped catalogues. The
//! SDK's final pushes go through the browser's link to the server's document routes.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use serde_json::{json, Value};
use session_broker::core::ports::{DestroyError, LocalBoxFuture, LocalDatabases, PushPlan, PushReport};

use super::browser::BrowserShared;
use super::env::Env;
use super::net::{exchange, Exchange};

/// The till's name in every browser.
pub const TILL: &str = "till";

#[derive(Debug, Clone)]
pub struct Order {
    pub id: u64,
    pub tenant: String,
    pub pushed: bool,
}

#[derive(Default)]
pub struct Databases {
    pub dbs: RefCell<BTreeMap<String, Vec<Order>>>,
    /// Orders destroyed before any push took them, by the SDK (its cleanup), with the device the
    /// browser was registered as then (only a device has anyone to report its losses to; `None`
    /// too for what the app's own `destroyAllLocalDatabases()` destroyed).
    pub destroyed_unpushed: RefCell<Vec<(Order, Option<String>)>>,
    /// While the app's own `destroyAllLocalDatabases()` runs: what it destroys is the app's to
    /// answer for (its report says what was unpushed), not a loss the SDK reports.
    pub app_destroying: std::cell::Cell<u32>,
    /// Orders the server took: (order, the order's tenant, the database, the headers' company).
    pub pushed: RefCell<Vec<(u64, String, String, String)>>,
}

/// The port, for one tab.
pub struct DatabasesPort {
    pub env: Rc<Env>,
    pub b: Weak<BrowserShared>,
    pub tab: usize,
}

impl LocalDatabases for DatabasesPort {
    fn destroy(&self, name: &str, _adapter: &str) -> LocalBoxFuture<'static, Result<(), DestroyError>> {
        if let Some(b) = self.b.upgrade() {
            if let Some(orders) = b.dbs.dbs.borrow_mut().remove(name) {
                let lost: Vec<Order> = orders.into_iter().filter(|o| !o.pushed).collect();
                if !lost.is_empty() {
                    self.env
                        .hist
                        .note(self.env.now(), format!("b{} destroyed {} unpushed of {name}", b.id, lost.len()));
                }
                let id = b.truth.borrow().get(session_broker::core::keys::DEVICE_ID).cloned();
                let device = id.filter(|_| b.dbs.app_destroying.get() == 0);
                b.dbs.destroyed_unpushed.borrow_mut().extend(lost.into_iter().map(|o| (o, device.clone())));
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn push(&self, plans: Vec<PushPlan>, bound_ms: u32) -> LocalBoxFuture<'static, PushReport> {
        let (env, b, tab) = (self.env.clone(), self.b.clone(), self.tab);
        Box::pin(async move {
            let Some(b) = b.upgrade() else { return PushReport::default() };
            let bound = std::time::Duration::from_millis(bound_ms.into());
            let mut report = PushReport::default();
            for plan in plans {
                let pending: Vec<Order> = b
                    .dbs
                    .dbs
                    .borrow()
                    .get(&plan.name)
                    .map(|orders| orders.iter().filter(|o| !o.pushed).cloned().collect())
                    .unwrap_or_default();
                let mut taken = 0usize;
                if let Some((url, headers)) = &plan.to {
                    let pushing = push_orders(&env, &b, tab, &plan.name, url, headers, &pending, &mut taken);
                    let _ = tokio::time::timeout(bound, pushing).await;
                    report.pushed.insert(plan.name.clone(), taken.into());
                }
                let left = pending.len() - taken;
                if left > 0 {
                    report.unpushed.insert(plan.name.clone(), left.into());
                }
            }
            report
        })
    }
}

#[allow(clippy::too_many_arguments)]
async fn push_orders(
    env: &Rc<Env>,
    b: &Rc<BrowserShared>,
    tab: usize,
    name: &str,
    url: &str,
    headers: &serde_json::Map<String, Value>,
    pending: &[Order],
    taken: &mut usize,
) {
    let db = url.rsplit('/').next().unwrap_or_default().to_owned();
    let company = headers.get("X-Docdb-Company").and_then(Value::as_str).unwrap_or("").to_owned();
    let path = url.strip_prefix("http://sim").unwrap_or(url).to_owned();
    let headers: Vec<(String, String)> =
        headers.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())).collect();
    for order in pending {
        let x = Exchange {
            method: "PUT",
            path: &format!("{path}/order-{}", order.id),
            bearer: None,
            headers: headers.clone(),
            body: Some(json!({"type": "order", "status": "closed", "amountCents": 1250}).to_string()),
            tab,
        };
        // A 409: the server has the order already (an earlier push whose answer was lost); PouchDB's
        // replication finds the same revision there and moves on.
        let ok = exchange(env, b, x).await.is_ok_and(|a| (200..300).contains(&a.status) || a.status == 409);
        if !ok {
            return;
        }
        *taken += 1;
        if let Some(o) = b.dbs.dbs.borrow_mut().get_mut(name).and_then(|os| os.iter_mut().find(|o| o.id == order.id)) {
            o.pushed = true;
        }
        // No order of one tenant reaches another tenant's database.
        if !db.contains(&format!("_{}_", order.tenant)) || company != order.tenant {
            env.hist.violate(
                env.now(),
                "no order of one tenant reaches another tenant's database",
                format!("order {} of {} pushed to {db} with {company}'s headers", order.id, order.tenant),
            );
        }
        b.dbs.pushed.borrow_mut().push((order.id, order.tenant.clone(), db.clone(), company.clone()));
    }
}
