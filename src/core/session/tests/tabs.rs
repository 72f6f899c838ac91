//! What a single tab on a happy path never shows: several tabs sharing one storage and one
//! refresh lock against a server with strict rotation (a spent refresh token is refused and its
//! family revoked), hooks that call back into the session, handlers that never settle, and
//! answers that land after the session they belonged to has ended.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use serde_json::{json, Value};

use crate::core::fakes::*;
use crate::core::hooks::SignOutReason;
use crate::core::keys;
use crate::core::ports::*;
use crate::core::session::{Ports, RefreshOutcome, Session, SessionConfig};
use crate::core::token::encode_for_test;

const NOW: i64 = 1_700_000_000_000;

/// Runs `f` to completion, or fails the test as a hang. Every fake wakes itself, so a future
/// that is still pending after this many polls is waiting on something that never comes.
fn finish<T>(f: impl Future<Output = T>) -> T {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..5_000_000 {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
    panic!("hang: the future never completed");
}

/// Polls every future in turn, as an event loop interleaves the tabs, until all are done (or
/// fails the test as a hang).
fn finish_all<T>(futures: Vec<std::pin::Pin<Box<dyn Future<Output = T> + '_>>>) -> Vec<T> {
    let mut futures: Vec<_> = futures.into_iter().map(Some).collect();
    let mut out: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1_000_000 {
        for (slot, result) in futures.iter_mut().zip(out.iter_mut()) {
            if let Some(f) = slot {
                if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                    *result = Some(v);
                    *slot = None;
                }
            }
        }
        if futures.iter().all(Option::is_none) {
            return out.into_iter().flatten().collect();
        }
    }
    panic!("hang: some future never completed");
}

/// The strict server: every refresh token may be spent once; a second spend revokes the family.
#[derive(Default)]
struct Strict {
    live: BTreeSet<String>,
    issued: u32,
    refreshes: u32,
    revoked: bool,
    company: String,
    refused_refresh: bool,
    /// The error code a refused refresh carries (default `refresh_token_reused`).
    refusal: Option<&'static str>,
    /// Roles of the tokens issued from now on (default `cashier`).
    roles: Option<&'static str>,
    /// Every request fails as a network error.
    offline: bool,
}

fn jwt(company: &str, sid: &str, n: u32) -> String {
    jwt_with(company, sid, n, "cashier")
}

fn jwt_with(company: &str, sid: &str, n: u32, role: &str) -> String {
    encode_for_test(
        &json!({"sub": "u1", "userId": "u1", "companyId": company, "roles": [role], "sid": sid, "jti": n, "exp": NOW / 1000 + 900}),
    )
}

impl Strict {
    fn issue(&mut self, sid: &str) -> Result<HttpResponse, TransportError> {
        self.issued += 1;
        let refresh = format!("r{}", self.issued);
        self.live.insert(refresh.clone());
        let company = if self.company.is_empty() { "acme".to_string() } else { self.company.clone() };
        let token = jwt_with(&company, sid, self.issued, self.roles.unwrap_or("cashier"));
        let body = json!({"token": token, "expiresIn": 900, "refreshToken": refresh, "refreshExpiresIn": 86400});
        Ok(HttpResponse { status: 200, body: body.to_string(), retry_after: 0 })
    }

    fn answer(&mut self, req: &HttpRequest) -> Result<HttpResponse, TransportError> {
        let path = req.url.trim_start_matches("http://server.test");
        let body: Value = req.body.as_deref().and_then(|b| serde_json::from_str(b).ok()).unwrap_or(Value::Null);
        if self.offline {
            return Err(TransportError::Network("offline".into()));
        }
        match path {
            "/auth" => {
                let sid = format!("s{}", self.issued + 1);
                self.issue(&sid)
            }
            "/auth/refresh" => {
                self.refreshes += 1;
                let spent = body["refreshToken"].as_str().unwrap_or_default().to_owned();
                if self.refused_refresh || !self.live.remove(&spent) {
                    self.revoked = true;
                    self.live.clear();
                    return Ok(HttpResponse {
                        status: 401,
                        body: json!({"error": self.refusal.unwrap_or("refresh_token_reused"), "message": "refused"})
                            .to_string(),
                        retry_after: 0,
                    });
                }
                self.issue("s1")
            }
            // The id the device claims, or a new device.
            "/auth/connect" => {
                let id = body["id"].as_str().map_or_else(|| format!("dev-{}", self.issued), str::to_owned);
                Ok(HttpResponse { status: 200, body: json!({"deviceId": id}).to_string(), retry_after: 0 })
            }
            _ => Ok(HttpResponse { status: 200, body: json!({"ok": true}).to_string(), retry_after: 0 }),
        }
    }
}

struct Tab {
    session: Session,
    reporter: Rc<RecordingReporter>,
    transport: Rc<FakeTransport>,
    log: EventLog,
}

struct World {
    storage: Rc<MemoryStorage>,
    clock: Rc<FakeClock>,
    lock: FakeLock,
    server: Rc<RefCell<Strict>>,
}

impl World {
    fn new() -> World {
        World {
            storage: Rc::default(),
            clock: Rc::new(FakeClock::at(NOW)),
            lock: FakeLock::default(),
            server: Rc::default(),
        }
    }

    fn tab(&self) -> Tab {
        self.tab_with(|_| {})
    }

    fn tab_with(&self, configure: impl FnOnce(&mut SessionConfig)) -> Tab {
        let log: EventLog = Rc::default();
        let server = self.server.clone();
        let transport = Rc::new(FakeTransport {
            latency: 400,
            ..FakeTransport::new(log.clone(), move |r| server.borrow_mut().answer(r))
        });
        let reporter = Rc::new(RecordingReporter::default());
        let mut config = SessionConfig::new("http://server.test").unwrap();
        config.hook_timeout_ms = 50;
        configure(&mut config);
        let ports = Ports {
            storage: self.storage.clone(),
            transport: transport.clone(),
            clock: self.clock.clone(),
            local_databases: Rc::new(FakeLocalDatabases::default()),
            reporter: reporter.clone(),
            lock: Rc::new(self.lock.clone()),
            device_key: Rc::new(FakeDeviceKey::default()),
        };
        Tab { session: Session::new(config, ports), reporter, transport, log }
    }

    /// A logged-in session whose access token has expired (margin included).
    fn expired_session(&self, tab: &Tab) {
        assert!(finish(tab.session.login("alice", "alice-pass")).is_success());
        self.clock.0.set(NOW + 900_000 - 30_000);
    }
}

impl Tab {
    /// Records each hook's payload as `name payload` in the tab's log.
    fn record_hooks(&self) {
        for (name, list) in [
            ("onLogin", &self.session.hooks().login),
            ("onTokenRefresh", &self.session.hooks().token_refresh),
            ("onSignOut", &self.session.hooks().sign_out),
        ] {
            let log = self.log.clone();
            list.register(Rc::new(move |p: &Value| {
                let line = match name {
                    "onLogin" => format!("onLogin {}", p["companyId"]),
                    "onTokenRefresh" => format!("onTokenRefresh changed={}", p["companyChanged"]),
                    _ => format!("onSignOut {} otherTab={}", p["reason"], p["otherTab"]),
                };
                log.borrow_mut().push(line);
                Box::pin(async { Ok(()) })
            }));
        }
    }

    /// Records each auth-state event as `EVENT reason other=… stored=…`: `stored`, the company
    /// of what the tab's own reads say while the listener runs (the session the entry module
    /// hands the app's listeners). Starts with `INITIAL_SESSION`, as the entry module tells a new
    /// listener.
    fn listen(&self) {
        let (log, session) = (self.log.clone(), self.session.clone());
        let record = move |event: &str, reason: &str, other_tab: bool| {
            let stored = session.current_user().map_or("null".into(), |u| u["companyId"].as_str().unwrap().to_owned());
            log.borrow_mut().push(format!("{event} {reason} other={other_tab} stored={stored}"));
        };
        record("INITIAL_SESSION", "stored", false);
        self.session.set_listener(Some(Rc::new(move |e, reason, other| record(e.as_str(), reason, other))));
    }

    /// What `getSession()` is made from: the token, or `[code, message]`.
    fn get_session(&self) -> Value {
        finish(self.session.token_answer().outcome()).answer()
    }

    fn stream(&self) -> Vec<String> {
        self.log.borrow().iter().filter(|l| l.starts_with(char::is_uppercase)).cloned().collect()
    }

    fn hooks_seen(&self) -> Vec<String> {
        self.log.borrow().iter().filter(|l| l.starts_with("on")).cloned().collect()
    }

    fn refresh_requests(&self) -> usize {
        self.transport.paths().iter().filter(|p| *p == "/auth/refresh").count()
    }
}

/// A handler that awaits `call(session)` and records what it got.
fn calling_back<T: std::fmt::Debug + 'static, F: Future<Output = T> + 'static>(
    session: &Session,
    seen: &Rc<RefCell<Vec<String>>>,
    call: fn(Session) -> F,
) -> crate::core::hooks::Handler {
    let (session, seen) = (session.clone(), seen.clone());
    Rc::new(move |_: &Value| {
        let (session, seen) = (session.clone(), seen.clone());
        Box::pin(async move {
            let got = call(session).await;
            seen.borrow_mut().push(format!("{got:?}"));
            Ok(())
        })
    })
}

// ----- re-entrancy --------------------------------------------------------------------------

#[test]
fn a_sign_out_handler_calling_get_token_during_a_rejected_refresh_completes_and_nothing_hangs_after() {
    let w = World::new();
    let tab = w.tab();
    w.expired_session(&tab);
    w.server.borrow_mut().refused_refresh = true;
    let seen = Rc::new(RefCell::new(Vec::new()));
    tab.session.hooks().sign_out.register(calling_back(&tab.session, &seen, |s| async move { s.get_token().await }));
    tab.session
        .hooks()
        .sign_out
        .register(calling_back(&tab.session, &seen, |s| async move { s.has_permission("crons:read").await }));
    tab.session
        .hooks()
        .sign_out
        .register(calling_back(&tab.session, &seen, |s| async move { s.update_device_status(false).await.success }));
    tab.session
        .hooks()
        .sign_out
        .register(calling_back(&tab.session, &seen, |s| async move { s.refresh_authentication().await }));

    assert_eq!(finish(tab.session.get_token()), None);
    assert_eq!(*seen.borrow(), vec!["None", "false", "false", "false"], "answered at once, no refresh");
    assert_eq!(tab.refresh_requests(), 1);
    assert!(w.storage.get(keys::AUTH).is_none() && w.storage.get(keys::REFRESH).is_none());
    // The flight slot is clear: later calls answer.
    assert_eq!(finish(tab.session.get_token()), None);
    assert!(!finish(tab.session.refresh_authentication()));
}

#[test]
fn during_logout_a_handler_gets_the_still_valid_token_for_a_final_replication() {
    let w = World::new();
    let tab = w.tab();
    assert!(finish(tab.session.login("alice", "alice-pass")).is_success());
    let token = w.storage.get(keys::AUTH).unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    tab.session.hooks().sign_out.register(calling_back(&tab.session, &seen, |s| async move { s.get_token().await }));
    tab.session
        .hooks()
        .sign_out
        .register(calling_back(&tab.session, &seen, |s| async move { s.update_device_status(false).await.success }));
    finish(tab.session.sign_out(SignOutReason::Logout));
    assert_eq!(*seen.borrow(), vec![format!("{:?}", Some(token)), "true".to_string()]);
    assert!(w.storage.get(keys::AUTH).is_none());
}

#[test]
fn a_token_refresh_handler_gets_the_new_token_without_a_second_refresh() {
    let w = World::new();
    let tab = w.tab();
    w.expired_session(&tab);
    let seen = Rc::new(RefCell::new(Vec::new()));
    tab.session.hooks().token_refresh.register(calling_back(
        &tab.session,
        &seen,
        |s| async move { s.get_token().await },
    ));
    let token = finish(tab.session.get_token()).expect("refreshed");
    assert_eq!(*seen.borrow(), vec![format!("{:?}", Some(&token))]);
    assert_eq!(tab.refresh_requests(), 1);
}

#[test]
fn a_second_logout_from_inside_a_sign_out_handler_returns_at_once() {
    let w = World::new();
    let tab = w.tab();
    assert!(finish(tab.session.login("alice", "alice-pass")).is_success());
    tab.record_hooks();
    let seen = Rc::new(RefCell::new(Vec::new()));
    tab.session
        .hooks()
        .sign_out
        .register(calling_back(&tab.session, &seen, |s| async move { s.sign_out(SignOutReason::Logout).await }));
    finish(tab.session.sign_out(SignOutReason::Logout));
    assert_eq!(tab.hooks_seen(), vec!["onSignOut \"logout\" otherTab=null"], "the handlers ran once");
    assert_eq!(
        tab.transport.paths().iter().filter(|p| *p == "/auth/logout").count(),
        2,
        "one sign-out: the logout and its completion"
    );
}

#[test]
fn a_handler_that_never_settles_cannot_block_sign_out() {
    let w = World::new();
    let tab = w.tab();
    assert!(finish(tab.session.login("alice", "alice-pass")).is_success());
    tab.session.hooks().sign_out.register(Rc::new(|_: &Value| Box::pin(futures::future::pending())));
    tab.record_hooks();
    finish(tab.session.sign_out(SignOutReason::Logout));
    assert!(w.storage.get(keys::AUTH).is_none(), "sign-out finished");
    assert_eq!(tab.hooks_seen(), vec!["onSignOut \"logout\" otherTab=null"], "the next handler still ran");
    assert!(
        tab.reporter.messages().iter().any(|m| m.contains("did not settle within 50 ms")),
        "{:?}",
        tab.reporter.messages()
    );
}

// ----- one refresh across tabs --------------------------------------------------------------

#[test]
fn four_tabs_of_fifty_callers_on_an_expired_token_send_one_refresh_and_nobody_is_logged_out() {
    let w = World::new();
    let tabs: Vec<Tab> = (0..4).map(|_| w.tab()).collect();
    w.expired_session(&tabs[0]);
    let calls = tabs.iter().flat_map(|t| {
        (0..50).map(move |_| Box::pin(t.session.get_token()) as std::pin::Pin<Box<dyn Future<Output = Option<String>>>>)
    });
    let tokens = finish_all(calls.collect());
    assert_eq!(w.server.borrow().refreshes, 1, "one refresh for every tab");
    assert!(!w.server.borrow().revoked);
    let first = tokens[0].clone().expect("a token");
    assert!(tokens.iter().all(|t| t.as_deref() == Some(first.as_str())), "all 200 callers got the new token");
    assert_eq!(w.storage.get(keys::AUTH).as_deref(), Some(first.as_str()));
    assert_eq!(w.lock.granted.get(), 4, "each tab took the lock once; three found the work done");
}

#[test]
fn a_lock_held_forever_by_a_frozen_tab_is_taken_over() {
    let w = World { lock: FakeLock { patience: 20, ..FakeLock::default() }, ..World::new() };
    let tab = w.tab();
    w.expired_session(&tab);
    w.lock.held.set(true); // an orphaned lock: nobody will release it
    assert!(finish(tab.session.get_token()).is_some());
    assert!(tab.reporter.messages().iter().any(|m| m.contains("taking it over")), "{:?}", tab.reporter.messages());
}

// ----- the commit guard ---------------------------------------------------------------------

#[test]
fn a_refresh_that_lands_after_logout_is_discarded() {
    let w = World::new();
    let tab = w.tab();
    w.expired_session(&tab);
    let (token, ()) =
        finish(futures::future::join(tab.session.get_token(), tab.session.sign_out(SignOutReason::Logout)));
    assert_eq!(token, None);
    assert_eq!(tab.refresh_requests(), 1, "the refresh was sent");
    assert!(
        w.storage.get(keys::AUTH).is_none() && w.storage.get(keys::REFRESH).is_none(),
        "and its answer never written"
    );
}

#[test]
fn a_refresh_that_lands_after_a_login_in_another_tab_is_discarded() {
    let w = World::new();
    let (a, b) = (w.tab(), w.tab());
    w.expired_session(&a);
    let (refreshed, login) = finish(futures::future::join(a.session.get_token(), b.session.login("bob", "bob-pass")));
    assert!(login.is_success());
    let stored = w.storage.get(keys::AUTH).unwrap();
    let sid = crate::core::token::Claims::decode(&stored).unwrap().sid();
    assert_eq!(sid.as_deref(), Some("s2"), "the login's session, not the refreshed s1");
    assert_eq!(refreshed.as_deref(), Some(stored.as_str()), "the refreshing tab follows the new session");
}

// ----- tabs hear each other -----------------------------------------------------------------

#[test]
fn a_sign_out_in_one_tab_runs_the_other_tabs_sign_out_handlers() {
    let w = World::new();
    let (a, b) = (w.tab(), w.tab());
    assert!(finish(a.session.login("alice", "alice-pass")).is_success());
    finish(b.session.follow());
    b.record_hooks();
    finish(a.session.sign_out(SignOutReason::Logout));
    finish(b.session.follow());
    assert_eq!(b.hooks_seen(), vec!["onSignOut \"logout\" otherTab=true"]);
    finish(b.session.follow());
    assert_eq!(b.hooks_seen().len(), 1, "followed once");
    assert_eq!(finish(b.session.get_token()), None);
}

#[test]
fn a_login_elsewhere_runs_sign_out_then_login_handlers_and_a_refresh_elsewhere_is_adopted_quietly() {
    let w = World::new();
    let (a, b) = (w.tab(), w.tab());
    assert!(finish(a.session.login("alice", "alice-pass")).is_success());
    let b = {
        // B opened after the login: it starts on that session, with no handlers run.
        drop(b);
        w.tab()
    };
    b.record_hooks();
    w.clock.0.set(NOW + 900_000 - 30_000);
    assert!(finish(a.session.get_token()).is_some());
    finish(b.session.follow());
    assert_eq!(b.hooks_seen(), vec!["onTokenRefresh changed=false"]);
    w.server.borrow_mut().company = "globex".into();
    assert!(finish(a.session.login("bob", "bob-pass")).is_success());
    finish(b.session.follow());
    assert_eq!(
        b.hooks_seen()[1..],
        ["onSignOut \"login\" otherTab=true".to_string(), "onLogin \"globex\"".to_string()]
    );
    assert_eq!(b.session.current_company().unwrap()["id"], "globex");
}

#[test]
fn a_company_change_elsewhere_is_told_as_such() {
    let w = World::new();
    let a = w.tab();
    w.expired_session(&a);
    let b = w.tab();
    b.record_hooks();
    w.server.borrow_mut().company = "globex".into();
    assert!(finish(a.session.get_token()).is_some());
    finish(b.session.follow());
    assert_eq!(b.hooks_seen(), vec!["onSignOut \"company-change\" otherTab=true", "onLogin \"globex\""]);
}

// ----- proactive refresh --------------------------------------------------------------------

#[test]
fn auto_refresh_waits_for_the_margin_then_refreshes_once_and_rests_offline() {
    // On by default: the core decides the defaults (`SessionConfig::new`), the facade only
    // applies what the app overrides.
    let w = World::new();
    let tab = w.tab();
    assert_eq!(tab.session.auto_refresh_delay(), None, "no session, nothing to watch");
    assert!(finish(tab.session.login("alice", "alice-pass")).is_success());
    assert_eq!(tab.session.auto_refresh_delay(), Some(600_000), "capped: re-checked at least every 10 minutes");
    w.clock.0.set(NOW + 900_000 - 90_000);
    assert_eq!(tab.session.auto_refresh_delay(), Some(30_000));
    w.clock.0.set(NOW + 900_000 - 59_000);
    assert_eq!(finish(tab.session.auto_refresh_step(false)), None, "offline: wait for the online event");
    assert_eq!(tab.refresh_requests(), 0);
    let next = finish(tab.session.auto_refresh_step(true));
    assert_eq!(tab.refresh_requests(), 1);
    assert!(next.is_some_and(|d| d > 0), "{next:?}");
    assert!(!tab.session.is_token_expired());
}

#[test]
fn auto_refresh_backs_off_after_a_transient_failure() {
    let w = World::new();
    let tab = w.tab();
    w.expired_session(&tab);
    *tab.transport.responder.borrow_mut() = Box::new(|_| Err(TransportError::Timeout));
    assert_eq!(finish(tab.session.auto_refresh_step(true)), Some(60_000));
    assert_eq!(finish(tab.session.auto_refresh_step(true)), Some(60_000), "not due again yet: no request");
    assert_eq!(tab.refresh_requests(), 1);
    assert!(tab.session.check_if_logged_in(), "a transient failure keeps the session");
}

#[test]
fn a_disabled_auto_refresh_watches_nothing() {
    let w = World::new();
    let tab = w.tab_with(|c| c.auto_refresh = false);
    w.expired_session(&tab);
    assert_eq!(finish(tab.session.auto_refresh_step(true)), None);
    assert_eq!(tab.refresh_requests(), 0);
}

// ----- hostile values -----------------------------------------------------------------------

#[test]
fn absurd_lifetimes_and_stored_instants_neither_panic_nor_lose_the_session() {
    let w = World::new();
    let tab = w.tab();
    let token = jwt("acme", "s1", 1);
    for seconds in [1e300, -1e300, f64::MAX, f64::MIN, 9.3e18, -9.3e18] {
        tab.session.save_token("Auth", &token, seconds).unwrap();
        let _ = (tab.session.is_token_expired(), tab.session.is_about_to_expire(), tab.session.auto_refresh_delay());
    }
    tab.session.save_token("Auth", &token, 1e300).unwrap();
    assert!(!tab.session.is_token_expired());
    for stored in [i64::MIN.to_string(), i64::MAX.to_string(), "-0".into(), "99999999999999999999999".into()] {
        w.storage.set(keys::EXPIRES_AT_AUTH, &stored).unwrap();
        let _ = (tab.session.is_token_expired(), tab.session.is_about_to_expire(), tab.session.auto_refresh_delay());
    }
    w.server.borrow_mut().live.insert("r-huge".into());
    w.storage.set(keys::REFRESH, "r-huge").unwrap();
    w.storage.set(keys::EXPIRES_AT_AUTH, &i64::MIN.to_string()).unwrap();
    *tab.transport.responder.borrow_mut() = Box::new(|_| {
        let body = json!({"token": jwt("acme", "s1", 9), "expiresIn": u64::MAX, "refreshToken": "r", "refreshExpiresIn": (1u64 << 63) - 1});
        Ok(HttpResponse { status: 200, body: body.to_string(), retry_after: 0 })
    });
    assert!(matches!(finish(tab.session.refresh()), RefreshOutcome::Refreshed(_)));
    assert_eq!(w.storage.get(keys::EXPIRES_AT_AUTH), Some(i64::MAX.to_string()));
    assert!(!tab.session.is_token_expired());
}

#[test]
fn handlers_are_bounded_by_the_configured_time() {
    let w = World::new();
    let tab = w.tab_with(|c| c.hook_timeout_ms = 7);
    tab.session.hooks().login.register(Rc::new(|_: &Value| Box::pin(futures::future::pending())));
    assert!(finish(tab.session.login("alice", "alice-pass")).is_success());
    assert!(
        tab.reporter.messages().iter().any(|m| m.contains("onLogin handler did not settle within 7 ms")),
        "{:?}",
        tab.reporter.messages()
    );
}

// ----- one refresh across tabs whose views of storage lag --------------------------------------

/// Two tabs whose views of `localStorage` learn each other's writes late (as separate renderer
/// processes do), against the strict server: `record` is whether the lock keeps its record of the
/// last token spent. Answers the refresh requests sent and whether a tab was logged out.
fn lagging_tabs_refresh(record: bool, refused: bool) -> (usize, bool) {
    let world = World::new();
    let lock = FakeLock { spent: record.then(Rc::default), ..FakeLock::default() };
    let views = LaggingStorage::views(2, 6);
    let tabs: Vec<Tab> = views
        .iter()
        .map(|view| {
            let log: EventLog = Rc::default();
            let server = world.server.clone();
            let transport = Rc::new(FakeTransport {
                latency: 400,
                ..FakeTransport::new(log.clone(), move |r| server.borrow_mut().answer(r))
            });
            let ports = Ports {
                storage: view.clone(),
                transport: transport.clone(),
                clock: world.clock.clone(),
                local_databases: Rc::new(FakeLocalDatabases::default()),
                reporter: Rc::new(RecordingReporter::default()),
                lock: Rc::new(lock.clone()),
                device_key: Rc::new(FakeDeviceKey::default()),
            };
            Tab {
                session: Session::new(SessionConfig::new("http://server.test").unwrap(), ports),
                reporter: Rc::default(),
                transport,
                log,
            }
        })
        .collect();
    assert!(finish(tabs[0].session.login("alice", "alice-pass")).is_success());
    // The login reaches the other tab's view.
    for _ in 0..10 {
        tabs[1].session.check_if_logged_in();
    }
    assert!(tabs[1].session.check_if_logged_in());
    world.clock.0.set(NOW + 900_000 - 30_000);
    world.server.borrow_mut().refused_refresh = refused;
    let answers = finish_all(
        tabs.iter().map(|t| Box::pin(t.session.get_token()) as std::pin::Pin<Box<dyn Future<Output = _>>>).collect(),
    );
    let requests = tabs.iter().map(Tab::refresh_requests).sum();
    (requests, answers.iter().any(Option::is_none) || world.server.borrow().revoked)
}

#[test]
fn a_tab_whose_view_of_storage_lags_never_spends_a_refresh_token_twice() {
    assert_eq!(lagging_tabs_refresh(true, false), (1, false), "one refresh, both tabs served");
    // The model shows the race: without the record the second tab spends the token again.
    assert_eq!(lagging_tabs_refresh(false, false), (2, true));
}

#[test]
fn a_refused_refresh_is_recorded_too_so_a_lagging_tab_follows_the_sign_out_instead_of_sending_it_again() {
    assert_eq!(lagging_tabs_refresh(true, true), (1, true), "one refresh, refused, both tabs signed out");
    assert_eq!(lagging_tabs_refresh(false, true), (2, true));
}

#[test]
fn a_tab_opened_before_another_registered_the_device_registers_and_signs_in_as_that_device() {
    let world = World::new();
    let (first, second) = (world.tab(), world.tab());
    assert!(finish(first.session.login("alice", "alice-pass")).is_success());
    let registered = finish(first.session.register_device());
    let crate::core::results::DeviceResult::Success { device_id: Some(id) } = registered else {
        panic!("registered: {registered:?}")
    };
    // The second tab read storage before the device had an id: it registers the same device
    // again, not a new one, and its login names that device.
    finish(second.session.register_device());
    assert!(finish(second.session.login("alice", "alice-pass")).is_success());
    let sent = |path: &str| -> Value {
        let requests = second.transport.requests.borrow();
        let r = requests.iter().find(|r| r.url.ends_with(path)).expect("sent");
        serde_json::from_str(r.body.as_deref().unwrap_or("null")).unwrap()
    };
    assert_eq!(sent("/auth/connect")["id"], id.as_str());
    assert_eq!(sent("/auth")["deviceInfo"]["id"], id.as_str());
    assert_eq!(second.session.device_info()["id"], id.as_str());
}

// ----- the auth-state stream and getSession() -----------------------------------------------

#[test]
fn a_first_login_is_signed_in_only_and_a_logout_is_told_after_the_session_is_cleared() {
    let w = World::new();
    let a = w.tab();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = seen.clone();
    a.session.hooks().sign_out.register(Rc::new(move |e: &Value| {
        log.borrow_mut().push(format!("{} hadSession={}", e["reason"], e["hadSession"]));
        Box::pin(async { Ok(()) })
    }));
    a.listen();
    assert!(finish(a.session.login("alice", "alice-pass")).is_success());
    finish(a.session.logout(crate::protocol::LogoutScope::Local));
    assert_eq!(
        a.stream(),
        [
            "INITIAL_SESSION stored other=false stored=null",
            "SIGNED_IN login other=false stored=acme",
            "SIGNED_OUT logout other=false stored=null",
        ]
    );
    // The specification's handler still runs first (and at the first login, with nobody there).
    assert_eq!(*seen.borrow(), ["\"login\" hadSession=false", "\"logout\" hadSession=true"]);
}

#[test]
fn a_listener_set_later_starts_from_the_session_as_it_stands_and_removing_it_stops_the_stream() {
    let w = World::new();
    let a = w.tab();
    assert!(finish(a.session.login("alice", "alice-pass")).is_success());
    a.listen();
    a.session.set_listener(None);
    finish(a.session.sign_out(SignOutReason::Logout));
    assert_eq!(a.stream(), ["INITIAL_SESSION stored other=false stored=acme"]);
}

#[test]
fn refreshes_roles_and_companies_are_told_as_what_changed() {
    let w = World::new();
    let a = w.tab();
    w.expired_session(&a);
    a.listen();
    assert!(finish(a.session.get_token()).is_some());
    w.clock.0.set(NOW + 2 * (900_000 - 30_000));
    w.server.borrow_mut().roles = Some("manager");
    assert!(finish(a.session.get_token()).is_some());
    w.clock.0.set(NOW + 3 * (900_000 - 30_000));
    w.server.borrow_mut().company = "globex".into();
    assert!(finish(a.session.get_token()).is_some());
    assert_eq!(
        a.stream()[1..],
        [
            "TOKEN_REFRESHED refresh other=false stored=acme".to_string(),
            "USER_UPDATED roles-changed other=false stored=acme".to_string(),
            "USER_UPDATED company-change other=false stored=globex".to_string(),
        ]
    );
}

#[test]
fn every_other_tab_hears_each_change_once_from_its_own_stream() {
    let w = World::new();
    let a = w.tab();
    w.expired_session(&a);
    let b = w.tab();
    b.listen();
    assert!(finish(a.session.get_token()).is_some());
    finish(b.session.follow());
    finish(b.session.follow());
    assert!(finish(a.session.login("alice", "alice-pass")).is_success());
    finish(b.session.follow());
    finish(a.session.sign_out(SignOutReason::Logout));
    finish(b.session.follow());
    assert_eq!(
        b.stream(),
        [
            "INITIAL_SESSION stored other=false stored=acme",
            "TOKEN_REFRESHED refresh other=true stored=acme",
            // A new login (another session id) ends the previous session, then begins one.
            "SIGNED_OUT login other=true stored=acme",
            "SIGNED_IN login other=true stored=acme",
            "SIGNED_OUT logout other=true stored=null",
        ]
    );
}

#[test]
fn get_session_says_why_there_is_no_session() {
    let code = |r: Value| r[0].as_str().unwrap_or("none").to_owned();
    let w = World::new();
    let a = w.tab();
    assert_eq!(code(a.get_session()), "not_signed_in");
    assert!(finish(a.session.login("alice", "alice-pass")).is_success());
    assert_eq!(a.get_session().as_str(), finish(a.session.get_token()).as_deref());
    // Offline with an expired token: the session is kept for a later try.
    w.clock.0.set(NOW + 900_000 - 30_000);
    w.server.borrow_mut().offline = true;
    assert_eq!(code(a.get_session()), "network");
    assert!(a.session.check_if_logged_in());
    // The server ended the session: told as such, and signed out.
    w.server.borrow_mut().offline = false;
    w.server.borrow_mut().refused_refresh = true;
    w.server.borrow_mut().refusal = Some("session_ended");
    assert_eq!(code(a.get_session()), "session_ended");
    assert!(!a.session.check_if_logged_in());
    // Any other refusal.
    w.server.borrow_mut().refusal = None;
    assert!(finish(a.session.login("alice", "alice-pass")).is_success());
    a.listen();
    w.clock.0.set(NOW + 2 * (900_000 - 30_000));
    assert_eq!(code(a.get_session()), "refresh_rejected");
    assert_eq!(a.stream()[1], "SIGNED_OUT refresh-rejected other=false stored=null");
}

/// A browser holding a copy of another's storage cannot prove the session's device: the server
/// refuses its refresh with `device_proof_required`. That browser's copy is cleared, and nothing
/// else: no logout is sent with the copied token (it would end the real device's session), the
/// token is not recorded as spent (it was not: the real device still refreshes with it).
#[test]
fn a_refresh_refused_for_want_of_the_devices_proof_signs_out_here_only() {
    let mut w = World::new();
    w.lock.spent = Some(Rc::default());
    let a = w.tab();
    a.record_hooks();
    w.storage.set(keys::DEVICE_ID, "dev-1").unwrap();
    w.expired_session(&a);
    a.listen();
    w.server.borrow_mut().refused_refresh = true;
    w.server.borrow_mut().refusal = Some("device_proof_required");
    assert_eq!(a.get_session()[0], "device_proof_required");
    assert!(!a.transport.paths().iter().any(|p| p == "/auth/logout"), "no logout sent: {:?}", a.transport.paths());
    assert_eq!(*w.lock.spent.as_ref().unwrap().borrow(), None, "nothing recorded as spent");
    assert!(w.storage.get(keys::AUTH).is_none() && w.storage.get(keys::REFRESH).is_none(), "this copy is cleared");
    assert_eq!(w.storage.get(keys::DEVICE_ID).as_deref(), Some("dev-1"));
    assert_eq!(a.hooks_seen().last().map(String::as_str), Some("onSignOut \"device-unproven\" otherTab=null"));
    assert_eq!(a.stream().last().map(String::as_str), Some("SIGNED_OUT device-unproven other=false stored=null"));
}

/// One refresh is one unit under the lock: the device's nonce and the refresh, each within the
/// request timeout. A waiting tab takes the lock over only after the whole unit's time and a
/// margin, never while the holder's refresh token may still be in flight.
#[test]
fn a_waiting_tab_gives_the_holder_a_whole_refresh_nonce_included_before_taking_over() {
    let w = World::new();
    let a = w.tab_with(|c| c.timeout_ms = 15_000);
    w.expired_session(&a);
    assert!(finish(a.session.get_token()).is_some());
    let waits = w.lock.waits.borrow().clone();
    assert_eq!(waits.len(), 1);
    assert!(waits[0] > 2 * 15_000, "waited {} ms: less than a nonce and a refresh may take", waits[0]);
}

/// A logout in one tab while another tab refreshes the same session: the refresh's new tokens,
/// issued by the server before the logout ended the session, never outlive it in storage.
#[test]
fn a_logout_wins_over_another_tabs_refresh_of_the_same_session() {
    let w = World::new();
    let (a, b) = (w.tab(), w.tab());
    w.expired_session(&a);
    let before = w.storage.get(keys::REFRESH);
    let results = finish_all(vec![
        Box::pin(async { a.session.logout(crate::protocol::LogoutScope::Local).await.success }),
        Box::pin(async { b.session.get_token().await.is_some() }),
    ]);
    assert_eq!(b.refresh_requests(), 1, "the other tab's refresh was sent");
    assert!(results[1], "and answered with new tokens");
    assert_ne!(before, None);
    assert!(
        w.storage.get(keys::AUTH).is_none() && w.storage.get(keys::REFRESH).is_none(),
        "no credential of the ended session stays stored: {:?}",
        w.storage.get(keys::REFRESH)
    );
}
