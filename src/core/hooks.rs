//! Lifecycle hooks: ordered handler lists whose failures are isolated. Payloads are JSON values
//! (the shapes of docs/sdk.md), so one handler type serves every hook.

use crate::core::cell::RefCell;
use std::cell::Cell;
use std::rc::Rc;

use crate::core::json;
use serde_json::Value;

use futures_util::future::{select, Either};

use super::ports::{Clock, LocalBoxFuture, Reporter};

/// `hookTimeoutMs` default: a handler past it is reported and the sequence goes on.
pub const DEFAULT_HOOK_TIMEOUT_MS: u32 = 10_000;

/// What running handlers needs: where failures go, and the clock that bounds each handler.
#[derive(Clone)]
pub struct HookContext {
    /// Where a failing or hanging handler is reported.
    pub reporter: Rc<dyn Reporter>,
    /// The clock that bounds each handler.
    pub clock: Rc<dyn Clock>,
    /// `hookTimeoutMs`: how long one handler may run.
    pub timeout_ms: u32,
}

/// A handler: called with the payload; a returned error is reported, never propagated.
pub type Handler = Rc<dyn Fn(&Value) -> LocalBoxFuture<'static, Result<(), String>>>;

/// The handlers of one event, run in registration order.
pub struct HookList {
    name: &'static str,
    next_id: Cell<u64>,
    handlers: RefCell<Vec<(u64, Handler)>>,
}

impl HookList {
    /// An empty list; `name` appears in the reports of failing handlers.
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

    /// Removes a handler; `false` when the id was not registered (or already removed).
    pub fn unregister(&self, id: u64) -> bool {
        let mut handlers = self.handlers.borrow_mut();
        let before = handlers.len();
        handlers.retain(|(h, _)| *h != id);
        handlers.len() != before
    }

    /// Runs every handler in registration order, one after another, awaiting each for at most
    /// `ctx.timeout_ms`: a handler that never settles must not stop a sign-out.
    pub async fn run(&self, payload: &Value, ctx: &HookContext) {
        // A snapshot: a handler may (un)register handlers while the list runs.
        let snapshot: Vec<Handler> = self.handlers.borrow().iter().map(|(_, h)| h.clone()).collect();
        for handler in snapshot {
            match select(handler(payload), ctx.clock.sleep(ctx.timeout_ms)).await {
                Either::Left((Ok(()), _)) => {}
                Either::Left((Err(e), _)) => {
                    ctx.reporter.error(&["session-broker: a ", self.name, " handler failed: ", &e].concat())
                }
                Either::Right(_) => ctx.reporter.error(
                    &[
                        "session-broker: a ",
                        self.name,
                        " handler did not settle within ",
                        &crate::core::codec::decimal(ctx.timeout_ms),
                        " ms (hookTimeoutMs); going on without it",
                    ]
                    .concat(),
                ),
            }
        }
    }
}

/// Why the sign-out handlers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignOutReason {
    /// `logout()` ran.
    Logout,
    /// A login replaced the session.
    Login,
    /// A refresh brought a token of another company.
    CompanyChange,
    /// The server refused the refresh token.
    RefreshRejected,
    /// This browser cannot prove the device the session is bound to (its storage was copied
    /// from another browser, or its key is not the device's): only this browser's copy of the
    /// session is cleared; the session itself, on the server and in the key's own browser, goes on.
    DeviceUnproven,
}

impl SignOutReason {
    /// The wire name of the reason (`"logout"`, `"company-change"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            SignOutReason::Logout => "logout",
            SignOutReason::Login => "login",
            SignOutReason::CompanyChange => "company-change",
            SignOutReason::RefreshRejected => "refresh-rejected",
            SignOutReason::DeviceUnproven => "device-unproven",
        }
    }
}

/// `onSignOut` payload: `{reason, hadSession}`. `hadSession` is false when nothing was signed in
/// (a first login's cleanup on a fresh browser, a `logout()` without a session).
pub fn sign_out_event(reason: SignOutReason, had_session: bool) -> Value {
    json::object([("reason", reason.as_str().into()), ("hadSession", had_session.into())])
}

/// `onSignOut` payload of a login's or a company change's cleanup: `{reason, hadSession, headers}`,
/// naming the headers `docdbFetch` serves its handlers: `"new"` (the new session's, same tenant)
/// or `"previous"`.
pub fn cleanup_sign_out_event(reason: SignOutReason, had_session: bool, new_headers: bool) -> Value {
    json::object([
        ("reason", reason.as_str().into()),
        ("hadSession", had_session.into()),
        ("headers", if new_headers { "new" } else { "previous" }.into()),
    ])
}

/// `onSignOut` payload when another tab ended the session (this tab had one):
/// `{reason, hadSession: true, otherTab: true}`.
pub fn other_tab_sign_out_event(reason: SignOutReason) -> Value {
    json::object([("reason", reason.as_str().into()), ("hadSession", true.into()), ("otherTab", true.into())])
}

/// `onTokenRefresh` payload: `{user, roles, companyChanged}`.
pub fn token_refresh_event(user: Value, roles: Vec<String>, company_changed: bool) -> Value {
    json::object([("user", user), ("roles", roles.into()), ("companyChanged", company_changed.into())])
}

/// The three hook lists of a session.
pub struct Hooks {
    /// `onLogin` handlers.
    pub login: HookList,
    /// `onTokenRefresh` handlers.
    pub token_refresh: HookList,
    /// `onSignOut` handlers.
    pub sign_out: HookList,
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
    use crate::core::fakes::{FakeClock, RecordingReporter};
    use futures::executor::block_on;
    use serde_json::json;

    fn ctx(reporter: &Rc<RecordingReporter>) -> HookContext {
        HookContext { reporter: reporter.clone(), clock: Rc::new(FakeClock::at(0)), timeout_ms: 50 }
    }

    fn recorder(log: &Rc<RefCell<Vec<String>>>, tag: &'static str, fail: bool) -> Handler {
        let log = log.clone();
        Rc::new(move |p: &Value| {
            log.borrow_mut().push(format!("{tag}:{p}"));
            Box::pin(async move {
                if fail {
                    Err(format!("{tag} broke"))
                } else {
                    Ok(())
                }
            })
        })
    }

    #[test]
    fn handlers_run_in_order_and_failures_are_isolated() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let list = HookList::new("onLogin");
        list.register(recorder(&log, "a", false));
        list.register(recorder(&log, "b", true));
        list.register(recorder(&log, "c", false));
        let reporter = Rc::new(RecordingReporter::default());
        block_on(list.run(&json!(7), &ctx(&reporter)));
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
        block_on(list.run(&json!(1), &ctx(&Rc::default())));
        assert_eq!(*log.borrow(), vec!["b:1"]);
    }

    #[test]
    fn a_handler_that_never_settles_is_cut_off_and_the_next_one_runs() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let list = HookList::new("onSignOut");
        list.register(Rc::new(|_: &Value| Box::pin(futures::future::pending())));
        list.register(recorder(&log, "after", false));
        let reporter = Rc::new(RecordingReporter::default());
        block_on(list.run(&json!(1), &ctx(&reporter)));
        assert_eq!(*log.borrow(), vec!["after:1"]);
        assert!(reporter.messages()[0].contains("did not settle within 50 ms"), "{:?}", reporter.messages());
    }

    #[test]
    fn payloads_have_their_documented_shapes() {
        assert_eq!(sign_out_event(SignOutReason::Logout, true), json!({"reason": "logout", "hadSession": true}));
        assert_eq!(sign_out_event(SignOutReason::Login, false), json!({"reason": "login", "hadSession": false}));
        assert_eq!(
            sign_out_event(SignOutReason::CompanyChange, true),
            json!({"reason": "company-change", "hadSession": true})
        );
        assert_eq!(
            sign_out_event(SignOutReason::RefreshRejected, true),
            json!({"reason": "refresh-rejected", "hadSession": true})
        );
        assert_eq!(
            cleanup_sign_out_event(SignOutReason::Login, false, true),
            json!({"reason": "login", "hadSession": false, "headers": "new"})
        );
        assert_eq!(
            other_tab_sign_out_event(SignOutReason::Logout),
            json!({"reason": "logout", "hadSession": true, "otherTab": true})
        );
        assert_eq!(
            token_refresh_event(json!({}), vec!["a".into()], true),
            json!({"user": {}, "roles": ["a"], "companyChanged": true})
        );
    }
}
