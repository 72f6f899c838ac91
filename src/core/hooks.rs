//! Lifecycle hooks: ordered handler lists whose failures are isolated.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde::Serialize;
use serde_json::Value;

use super::ports::{LocalBoxFuture, Reporter};

/// A handler: called with the payload; a returned error is reported, never propagated.
pub type Handler<P> = Rc<dyn Fn(&P) -> LocalBoxFuture<'static, Result<(), String>>>;

pub struct HookList<P> {
    name: &'static str,
    next_id: Cell<u64>,
    handlers: RefCell<Vec<(u64, Handler<P>)>>,
}

impl<P> HookList<P> {
    pub fn new(name: &'static str) -> Self {
        HookList { name, next_id: Cell::new(1), handlers: RefCell::new(Vec::new()) }
    }

    /// Returns the id that [`HookList::unregister`] takes.
    pub fn register(&self, handler: Handler<P>) -> u64 {
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

    pub fn len(&self) -> usize {
        self.handlers.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs every handler in registration order, one after another, awaiting each.
    pub async fn run(&self, payload: &P, reporter: &dyn Reporter) {
        // A snapshot: a handler may (un)register handlers while the list runs.
        let snapshot: Vec<Handler<P>> = self.handlers.borrow().iter().map(|(_, h)| h.clone()).collect();
        for handler in snapshot {
            if let Err(e) = handler(payload).await {
                reporter.error(&format!("session-broker: a {} handler failed: {e}", self.name));
            }
        }
    }
}

/// Why the sign-out handlers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignOutReason {
    Logout,
    Login,
    CompanyChange,
    RefreshRejected,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SignOutEvent {
    pub reason: SignOutReason,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenRefreshEvent {
    pub user: Value,
    pub roles: Vec<String>,
    #[serde(rename = "companyChanged")]
    pub company_changed: bool,
}

/// The three hook lists of a session.
pub struct Hooks {
    pub login: HookList<Value>,
    pub token_refresh: HookList<TokenRefreshEvent>,
    pub sign_out: HookList<SignOutEvent>,
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks {
            login: HookList::new("onLogin"),
            token_refresh: HookList::new("onTokenRefresh"),
            sign_out: HookList::new("onSignOut"),
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::core::fakes::RecordingReporter;
    use futures::executor::block_on;

    fn recorder(log: &Rc<RefCell<Vec<String>>>, tag: &'static str, fail: bool) -> Handler<u32> {
        let log = log.clone();
        Rc::new(move |p: &u32| {
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
        block_on(list.run(&7, &reporter));
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
        block_on(list.run(&1, &RecordingReporter::default()));
        assert_eq!(*log.borrow(), vec!["b:1"]);
    }

    #[test]
    fn sign_out_reasons_serialise_as_contract_strings() {
        let s = |r| serde_json::to_value(SignOutEvent { reason: r }).unwrap()["reason"].clone();
        assert_eq!(s(SignOutReason::Logout), "logout");
        assert_eq!(s(SignOutReason::Login), "login");
        assert_eq!(s(SignOutReason::CompanyChange), "company-change");
        assert_eq!(s(SignOutReason::RefreshRejected), "refresh-rejected");
    }
}
