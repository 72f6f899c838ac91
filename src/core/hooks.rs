//! Lifecycle hooks: ordered handler lists whose failures are isolated. Payloads are JSON values
//! (the shapes of CONTRACT §3), so one handler type serves every hook.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::{json, Value};

use super::ports::{LocalBoxFuture, Reporter};

/// A handler: called with the payload; a returned error is reported, never propagated.
pub type Handler = Rc<dyn Fn(&Value) -> LocalBoxFuture<'static, Result<(), String>>>;

pub struct HookList {
    name: &'static str,
    next_id: Cell<u64>,
    handlers: RefCell<Vec<(u64, Handler)>>,
}

impl HookList {
    pub fn new(name: &'static str) -> Self {
        HookList { name, next_id: Cell::new(1), handlers: RefCell::new(Vec::new()) }
    }

    /// Returns the id that [`HookList::unregister`] takes.
    pub fn register(&self, handler: Handler) -> u64 {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        self.handlers.borrow_mut().push((id, handler));
        id
    }

    pub fn unregister(&self, id: u64) -> bool {
        let mut handlers = self.handlers.borrow_mut();
        let before = handlers.len();
        handlers.retain(|(h, _)| *h != id);
        handlers.len() != before
    }

    /// Runs every handler in registration order, one after another, awaiting each.
    pub async fn run(&self, payload: &Value, reporter: &dyn Reporter) {
        // A snapshot: a handler may (un)register handlers while the list runs.
        let snapshot: Vec<Handler> = self.handlers.borrow().iter().map(|(_, h)| h.clone()).collect();
        for handler in snapshot {
            if let Err(e) = handler(payload).await {
                reporter.error(&["session-broker: a ", self.name, " handler failed: ", &e].concat());
            }
        }
    }
}

/// Why the sign-out handlers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignOutReason {
    Logout,
    Login,
    CompanyChange,
    RefreshRejected,
}

impl SignOutReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SignOutReason::Logout => "logout",
            SignOutReason::Login => "login",
            SignOutReason::CompanyChange => "company-change",
            SignOutReason::RefreshRejected => "refresh-rejected",
        }
    }
}

/// `onSignOut` payload: `{reason}`.
pub fn sign_out_event(reason: SignOutReason) -> Value {
    json!({ "reason": reason.as_str() })
}

/// `onTokenRefresh` payload: `{user, roles, companyChanged}`.
pub fn token_refresh_event(user: Value, roles: Vec<String>, company_changed: bool) -> Value {
    json!({ "user": user, "roles": roles, "companyChanged": company_changed })
}

/// The three hook lists of a session.
pub struct Hooks {
    pub login: HookList,
    pub token_refresh: HookList,
    pub sign_out: HookList,
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks { login: HookList::new("onLogin"), token_refresh: HookList::new("onTokenRefresh"), sign_out: HookList::new("onSignOut") }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::core::fakes::RecordingReporter;
    use futures::executor::block_on;

    fn recorder(log: &Rc<RefCell<Vec<String>>>, tag: &'static str, fail: bool) -> Handler {
        let log = log.clone();
        Rc::new(move |p: &Value| {
            log.borrow_mut().push(format!("{tag}:{p}"));
            Box::pin(async move { if fail { Err(format!("{tag} broke")) } else { Ok(()) } })
        })
    }

    #[test]
    fn handlers_run_in_order_and_failures_are_isolated() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let list = HookList::new("onLogin");
        list.register(recorder(&log, "a", false));
        list.register(recorder(&log, "b", true));
        list.register(recorder(&log, "c", false));
        let reporter = RecordingReporter::default();
        block_on(list.run(&json!(7), &reporter));
        assert_eq!(*log.borrow(), vec!["a:7", "b:7", "c:7"]);
        assert_eq!(reporter.messages().len(), 1);
        assert!(reporter.messages()[0].contains("onLogin") && reporter.messages()[0].contains("b broke"));
    }

    #[test]
    fn unregister_removes_only_that_handler() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let list = HookList::new("onSignOut");
        let a = list.register(recorder(&log, "a", false));
        list.register(recorder(&log, "b", false));
        assert!(list.unregister(a));
        assert!(!list.unregister(a), "second unsubscribe is a no-op");
        block_on(list.run(&json!(1), &RecordingReporter::default()));
        assert_eq!(*log.borrow(), vec!["b:1"]);
    }

    #[test]
    fn payloads_have_the_contract_shapes() {
        assert_eq!(sign_out_event(SignOutReason::Logout), json!({"reason": "logout"}));
        assert_eq!(sign_out_event(SignOutReason::Login), json!({"reason": "login"}));
        assert_eq!(sign_out_event(SignOutReason::CompanyChange), json!({"reason": "company-change"}));
        assert_eq!(sign_out_event(SignOutReason::RefreshRejected), json!({"reason": "refresh-rejected"}));
        assert_eq!(token_refresh_event(json!({}), vec!["a".into()], true), json!({"user": {}, "roles": ["a"], "companyChanged": true}));
    }
}
