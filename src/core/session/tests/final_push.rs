//! The device's last work, row by row of the table of what happens to local data (docs/sdk.md): what
//! the SDK's final push sends, with which headers, what is destroyed and what is reported. Fakes
//! throughout: a server that issues each login its own header set and refuses a set once its
//! session has ended, and local databases that hold `pending` documents until a push takes them.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::executor::block_on;
use serde_json::{json, Value};

use crate::core::fakes::*;
use crate::core::hooks::SignOutReason;
use crate::core::keys::HeaderKind;
use crate::core::ports::*;
use crate::core::session::{Ports, Session, SessionConfig};
use crate::core::token::encode_for_test;

const NOW: i64 = 1_700_000_000_000;

struct H {
    session: Session,
    storage: Rc<MemoryStorage>,
    dbs: Rc<FakeLocalDatabases>,
    reporter: Rc<RecordingReporter>,
    log: EventLog,
    /// The sign-out events the app's handler saw.
    events: Rc<RefCell<Vec<Value>>>,
    /// Whether the server answers at all.
    online: Rc<Cell<bool>>,
    /// Answer refreshes with 401 (the session ended on the server).
    refuse_refresh: Rc<Cell<bool>>,
    /// The company a refresh answers (a company change), else the user's own.
    moved_to: Rc<RefCell<Option<&'static str>>>,
    /// The ports, for another page of the same origin.
    ports: Ports,
    /// The loss reports the server was sent.
    losses: Rc<RefCell<Vec<Value>>>,
    /// The loss route answers 503.
    losses_down: Rc<Cell<bool>>,
}

fn company_of(user: &str) -> &'static str {
    if user == "carol" {
        "globex"
    } else {
        "acme"
    }
}

/// A server: `alice` and `bob` are of `acme`, `carol` of `globex`; the n-th login's Remote set is
/// `{"X-Docdb-Token": "<user>-<n>"}`; a completed logout or a refused refresh ends that set.
fn harness() -> H {
    let log: EventLog = Rc::default();
    let storage = Rc::new(MemoryStorage::default());
    let dbs = Rc::new(FakeLocalDatabases { log: Some(log.clone()), ..Default::default() });
    let reporter = Rc::new(RecordingReporter::default());
    let (online, refuse_refresh) = (Rc::new(Cell::new(true)), Rc::new(Cell::new(false)));
    let logins = Cell::new(0);
    let moved_to = Rc::new(RefCell::new(None));
    let (up, refuse, ended, live, moved) =
        (online.clone(), refuse_refresh.clone(), dbs.clone(), Rc::new(RefCell::new(String::new())), moved_to.clone());
    let user_now = Rc::new(RefCell::new(String::new()));
    let (losses, losses_down) = (Rc::new(RefCell::new(Vec::new())), Rc::new(Cell::new(false)));
    let (sent, down) = (losses.clone(), losses_down.clone());
    let transport = Rc::new(FakeTransport::new(log.clone(), move |req: &HttpRequest| {
        if !up.get() {
            return Err(TransportError::Network("offline".into()));
        }
        let body: Value = req.body.as_deref().map(|b| serde_json::from_str(b).unwrap()).unwrap_or(Value::Null);
        let answer = |user: &str, set: &str, company: &str| {
            let claims = json!({"sub": user, "userId": user, "companyId": company, "roles": ["cashier"], "iat": NOW / 1000, "exp": NOW / 1000 + 900});
            json!({"token": encode_for_test(&claims), "expiresIn": 900, "refreshToken": format!("refresh-{set}"), "refreshExpiresIn": 86400,
                   "docdbHeaders": {"Remote": {"X-Docdb-Token": set}}})
            .to_string()
        };
        let path = req.url.trim_start_matches("http://server.test");
        let ok = |body: String| Ok(HttpResponse { status: 200, body, retry_after: 0 });
        match path {
            "/auth" => {
                logins.set(logins.get() + 1);
                let user = body["username"].as_str().unwrap().to_owned();
                let set = format!("{user}-{}", logins.get());
                *live.borrow_mut() = set.clone();
                *user_now.borrow_mut() = user.clone();
                ok(answer(&user, &set, company_of(&user)))
            }
            "/auth/refresh" if refuse.get() => {
                ended.refused.borrow_mut().insert(live.borrow().clone());
                Ok(HttpResponse {
                    status: 401,
                    body: json!({"error": "session_ended", "message": "ended"}).to_string(),
                    retry_after: 0,
                })
            }
            "/auth/refresh" => {
                let user = user_now.borrow().clone();
                let company = moved.borrow().unwrap_or(company_of(&user));
                ok(answer(&user, &format!("{user}-{company}"), company))
            }
            "/devices/losses" if down.get() => Ok(HttpResponse { status: 503, body: "{}".into(), retry_after: 0 }),
            "/devices/losses" => {
                sent.borrow_mut().push(body.clone());
                ok("{\"recorded\":true}".into())
            }
            "/auth/logout" if body["complete"] == true => {
                ended.refused.borrow_mut().insert(live.borrow().clone());
                ok("{}".into())
            }
            _ => ok("{}".into()),
        }
    }));
    let ports = Ports {
        storage: storage.clone(),
        transport,
        clock: Rc::new(FakeClock(Cell::new(NOW))),
        local_databases: dbs.clone(),
        reporter: reporter.clone(),
        lock: Rc::new(FakeLock::default()),
        device_key: Rc::new(FakeDeviceKey::default()),
    };
    let session = Session::new(SessionConfig::new("http://server.test/").unwrap(), ports.clone());
    let events = Rc::new(RefCell::new(Vec::new()));
    record_sign_outs(&session, &events, &log);
    H { session, storage, dbs, reporter, log, events, online, refuse_refresh, moved_to, ports, losses, losses_down }
}

/// The app's sign-out handler: each event kept and logged.
fn record_sign_outs(session: &Session, events: &Rc<RefCell<Vec<Value>>>, log: &EventLog) {
    let (seen, l) = (events.clone(), log.clone());
    session.hooks().sign_out.register(Rc::new(move |e: &Value| {
        seen.borrow_mut().push(e.clone());
        l.borrow_mut().push(format!("onSignOut {}", e["reason"].as_str().unwrap()));
        Box::pin(async { Ok(()) })
    }));
}

impl H {
    /// Signs out while the document routes are unreachable (the push refused, as the server
    /// would), then comes back online with the log cleared.
    fn offline_logout(&self, headers: &str) {
        self.online.set(false);
        self.dbs.refused.borrow_mut().insert(headers.into());
        block_on(self.session.sign_out(SignOutReason::Logout));
        self.log.borrow_mut().clear();
        self.online.set(true);
    }

    /// Logs `user` in, routes the device to its tenant's day database (as a realtime `ready`
    /// does) and writes `orders` documents into a tracked database pushed to it.
    fn working(&self, user: &str, orders: u32) {
        assert!(block_on(self.session.login(user, "pw")).is_success());
        let company = company_of(user);
        self.session.note_routing(company, &format!("{company}_day"));
        self.session.track_local_database("orders", "idb", "dynamic").unwrap();
        self.dbs.pending.borrow_mut().insert("orders".into(), orders);
        self.log.borrow_mut().clear();
        self.events.borrow_mut().clear();
    }

    fn pushes(&self) -> Vec<String> {
        self.log.borrow().iter().filter(|e| e.starts_with("push")).cloned().collect()
    }

    fn last_event(&self) -> Value {
        self.events.borrow().last().cloned().unwrap()
    }

    fn destroyed(&self) -> Vec<String> {
        self.dbs.destroyed.borrow().clone()
    }
}

#[test]
fn logout_online_pushes_through_the_sign_out_window_and_destroys_nothing() {
    let h = harness();
    h.working("alice", 2);
    block_on(h.session.sign_out(SignOutReason::Logout));
    assert_eq!(
        *h.log.borrow(),
        vec![
            "http POST http://server.test/auth/logout",
            "push orders -> http://server.test/docdb/acme_day alice-1",
            "onSignOut logout",
            "http POST http://server.test/auth/logout",
        ],
        "pushed after the server opened the window, before the handlers and the window's end"
    );
    assert_eq!(
        h.last_event(),
        json!({"hadSession": true, "reason": "logout", "pushed": {"orders": 2}, "unpushed": {}})
    );
    assert!(h.destroyed().is_empty());
    assert_eq!(h.session.tracked_local_databases(), vec!["orders"]);
}

#[test]
fn logout_offline_reports_what_stays_unpushed_on_the_device_and_the_next_login_pushes_it() {
    let h = harness();
    h.working("alice", 3);
    h.online.set(false);
    // Offline, the push fails as the server would refuse it (modelled by the ended set).
    h.dbs.refused.borrow_mut().insert("alice-1".into());
    block_on(h.session.sign_out(SignOutReason::Logout));
    assert_eq!(
        h.last_event(),
        json!({"hadSession": true, "reason": "logout", "pushed": {"orders": 0}, "unpushed": {"orders": 3}})
    );
    assert!(h.destroyed().is_empty() && !h.session.check_if_logged_in());
    h.online.set(true);
    assert!(block_on(h.session.login("alice", "pw")).is_success());
    assert_eq!(
        h.pushes(),
        vec![
            "push orders -> http://server.test/docdb/acme_day alice-1",
            "push orders -> http://server.test/docdb/acme_day alice-2"
        ]
    );
    assert_eq!(
        h.last_event(),
        json!({"hadSession": false, "reason": "login", "headers": "new", "pushed": {"orders": 3}, "unpushed": {}})
    );
    assert_eq!(h.destroyed(), vec!["orders"]);
}

#[test]
fn a_login_of_the_same_tenant_pushes_with_the_new_sessions_headers_then_destroys() {
    for user in ["alice", "bob"] {
        let h = harness();
        h.working("alice", 2);
        assert!(block_on(h.session.login(user, "pw")).is_success());
        assert_eq!(h.pushes(), vec![format!("push orders -> http://server.test/docdb/acme_day {user}-2")]);
        assert_eq!(
            h.last_event(),
            json!({"hadSession": true, "reason": "login", "headers": "new", "pushed": {"orders": 2}, "unpushed": {}})
        );
        assert_eq!(h.destroyed(), vec!["orders"]);
        assert!(h.reporter.messages().is_empty(), "{:?}", h.reporter.messages());
    }
}

#[test]
fn a_rejected_refresh_then_a_login_of_the_same_tenant_still_pushes_the_work() {
    let h = harness();
    h.working("alice", 4);
    h.refuse_refresh.set(true);
    assert!(!block_on(h.session.refresh_authentication()));
    assert_eq!(
        h.last_event(),
        json!({"hadSession": true, "reason": "refresh-rejected"}),
        "no headers left to push with: nothing tried, nothing destroyed"
    );
    assert!(h.destroyed().is_empty() && !h.session.check_if_logged_in());
    h.refuse_refresh.set(false);
    assert!(block_on(h.session.login("bob", "pw")).is_success());
    assert_eq!(h.pushes(), vec!["push orders -> http://server.test/docdb/acme_day bob-2"]);
    assert_eq!(
        h.last_event(),
        json!({"hadSession": false, "reason": "login", "headers": "new", "pushed": {"orders": 4}, "unpushed": {}})
    );
    assert_eq!(h.destroyed(), vec!["orders"]);
}

#[test]
fn a_login_of_another_tenant_pushes_with_the_previous_sessions_own_headers() {
    let h = harness();
    h.working("alice", 2);
    assert!(block_on(h.session.login("carol", "pw")).is_success());
    assert_eq!(
        h.pushes(),
        vec!["push orders -> http://server.test/docdb/acme_day alice-1"],
        "never carol's headers, never globex's database"
    );
    assert_eq!(
        h.last_event(),
        json!({"hadSession": true, "reason": "login", "headers": "previous", "pushed": {"orders": 2}, "unpushed": {}})
    );
    assert_eq!(h.destroyed(), vec!["orders"]);
    assert_eq!(h.session.local_data_owner("orders"), None, "nothing tracked, nobody's data");
}

#[test]
fn a_login_of_another_tenant_after_the_session_ended_destroys_the_work_counted_and_logged() {
    let h = harness();
    h.working("alice", 5);
    h.refuse_refresh.set(true);
    assert!(!block_on(h.session.refresh_authentication()));
    h.refuse_refresh.set(false);
    assert!(block_on(h.session.login("carol", "pw")).is_success());
    assert!(h.pushes().is_empty(), "carol's headers are never lent to acme's data: {:?}", h.pushes());
    assert_eq!(
        h.last_event(),
        json!({"hadSession": false, "reason": "login", "headers": "previous", "pushed": {}, "unpushed": {"orders": 5}})
    );
    assert_eq!(h.destroyed(), vec!["orders"]);
    assert!(
        h.reporter
            .messages()
            .iter()
            .any(|m| m == "session-broker: 5 document(s) of \"orders\" could not be pushed and were destroyed"),
        "{:?}",
        h.reporter.messages()
    );
}

#[test]
fn a_company_change_pushes_with_the_previous_companys_headers() {
    let h = harness();
    h.working("alice", 1);
    *h.moved_to.borrow_mut() = Some("globex");
    assert!(block_on(h.session.refresh_authentication()));
    assert_eq!(
        h.pushes(),
        vec!["push orders -> http://server.test/docdb/acme_day alice-1"],
        "acme's work with acme's headers"
    );
    assert_eq!(
        h.last_event(),
        json!({"hadSession": true, "reason": "company-change", "headers": "previous", "pushed": {"orders": 1}, "unpushed": {}})
    );
    assert_eq!(h.destroyed(), vec!["orders"]);
    assert_eq!(
        h.session.docdb_headers(HeaderKind::Remote).unwrap()["X-Docdb-Token"],
        "alice-globex",
        "the new company's, after the cleanup"
    );
    assert_eq!(h.session.local_data_owner("orders"), None);
}

#[test]
fn another_tabs_sign_out_pushes_nothing_here() {
    let h = harness();
    h.working("alice", 2);
    // Another tab signed out: the keys are gone when this tab follows.
    for key in crate::core::keys::SESSION_KEYS {
        h.storage.remove(key);
    }
    block_on(h.session.follow());
    assert_eq!(h.last_event(), json!({"hadSession": true, "reason": "logout", "otherTab": true}));
    assert!(h.pushes().is_empty() && h.destroyed().is_empty());
}

#[test]
fn destroy_all_local_databases_pushes_first_and_reports_both() {
    let h = harness();
    h.working("alice", 2);
    h.session.track_local_database("by-name", "", "").unwrap();
    let report = block_on(h.session.destroy_all_local_databases());
    assert_eq!(
        report.to_value(),
        json!({"destroyed": ["orders", "by-name"], "failed": [], "pushed": {"orders": 2}, "unpushed": {}})
    );
    assert_eq!(h.pushes(), vec!["push orders -> http://server.test/docdb/acme_day alice-1"]);
}

#[test]
fn a_named_target_and_an_unknown_routing() {
    let h = harness();
    h.working("alice", 2);
    h.session.track_local_database("orders", "idb", "=acme_archive_in").unwrap();
    block_on(h.session.sign_out(SignOutReason::Logout));
    assert_eq!(h.pushes(), vec!["push orders -> http://server.test/docdb/acme_archive_in alice-1"]);
    // No routed database known yet (no `ready` since the tenant's first login): nothing is sent,
    // the work is counted.
    let h = harness();
    h.working("alice", 2);
    let key = [crate::core::keys::LOCAL_DATABASE_PREFIX, "orders"].concat();
    h.storage.set(&key, "1\nacme\n\nidb\ndynamic").unwrap();
    block_on(h.session.sign_out(SignOutReason::Logout));
    assert!(h.pushes().is_empty());
    assert_eq!(
        h.last_event(),
        json!({"hadSession": true, "reason": "logout", "pushed": {}, "unpushed": {"orders": 2}})
    );
}

#[test]
fn data_of_two_tenants_side_by_side_is_nobodys_and_never_lent() {
    let h = harness();
    h.working("alice", 1);
    // The cleanup of carol's login (globex) cannot destroy acme's database: it stays, acme's.
    h.dbs.failing.borrow_mut().insert("orders".into());
    assert!(block_on(h.session.login("carol", "pw")).is_success());
    assert_eq!(h.session.local_data_owner("orders").as_deref(), Some("acme"));
    h.session.track_local_database("orders", "", "").unwrap();
    assert_eq!(h.session.local_data_owner("orders"), None, "two tenants' data: the owner is unknown");
    h.dbs.failing.borrow_mut().clear();
    h.refuse_refresh.set(true);
    assert!(!block_on(h.session.refresh_authentication()));
    h.refuse_refresh.set(false);
    h.log.borrow_mut().clear();
    assert!(block_on(h.session.login("alice", "pw")).is_success());
    assert!(h.pushes().is_empty(), "alice's headers are never lent to data that may be globex's: {:?}", h.pushes());
    assert_eq!(h.last_event()["headers"], "previous");
}

// ----- The ledger: whichever page destroys pushes or counts first, and owners are the data's ----

/// Another page of the same origin (a reload, or another tab): a session over the same storage
/// and the same local databases, with nothing in memory.
fn another_page(h: &H) -> Session {
    let ports = h.ports.clone();
    let session = Session::new(SessionConfig::new("http://server.test/").unwrap(), ports);
    record_sign_outs(&session, &h.events, &h.log);
    session
}

#[test]
fn a_reload_after_an_offline_logout_still_pushes_at_the_next_login() {
    let h = harness();
    h.working("alice", 1);
    h.offline_logout("alice-1");
    assert_eq!(h.last_event()["unpushed"], json!({"orders": 1}));
    let reloaded = another_page(&h);
    assert!(block_on(reloaded.login("alice", "pw")).is_success());
    assert_eq!(h.pushes(), vec!["push orders -> http://server.test/docdb/acme_day alice-2"]);
    assert_eq!(
        h.last_event(),
        json!({"hadSession": false, "reason": "login", "headers": "new", "pushed": {"orders": 1}, "unpushed": {}})
    );
    assert_eq!(h.destroyed(), vec!["orders"]);
}

#[test]
fn tracking_while_signed_out_keeps_the_datas_owner() {
    let h = harness();
    h.working("alice", 1);
    h.offline_logout("alice-1");
    let reloaded = another_page(&h);
    // The app tracks its till again at page load, before anyone logs in.
    reloaded.track_local_database("orders", "idb", "dynamic").unwrap();
    assert_eq!(reloaded.local_data_owner("orders").as_deref(), Some("acme"));
    assert!(block_on(reloaded.login("bob", "pw")).is_success());
    assert_eq!(h.pushes(), vec!["push orders -> http://server.test/docdb/acme_day bob-2"]);
    assert!(!h.reporter.messages().iter().any(|m| m.contains("destroyed")), "{:?}", h.reporter.messages());
}

#[test]
fn a_page_that_never_tracked_pushes_before_it_destroys() {
    for (user, headers) in [("bob", "bob-2"), ("carol", "alice-1")] {
        let h = harness();
        h.working("alice", 2);
        // Another tab, holding no instance of the till, logs a user in.
        let other = another_page(&h);
        assert!(block_on(other.login(user, "pw")).is_success());
        assert_eq!(h.pushes(), vec![format!("push orders -> http://server.test/docdb/acme_day {headers}")], "{user}");
        assert_eq!(h.last_event()["pushed"], json!({"orders": 2}));
        assert_eq!(h.destroyed(), vec!["orders"]);
        assert_eq!(h.dbs.adapters.borrow().clone(), vec!["idb".to_string()], "opened as it was tracked");
    }
}

#[test]
fn what_a_sign_out_handler_writes_after_the_push_is_pushed_or_counted_before_the_deletion() {
    for online in [true, false] {
        let h = harness();
        h.working("alice", 1);
        let dbs = h.dbs.clone();
        h.session.hooks().sign_out.register(Rc::new(move |_: &Value| {
            // A till's closing record, written after the SDK's push.
            *dbs.pending.borrow_mut().entry("orders".into()).or_default() += 1;
            Box::pin(async { Ok(()) })
        }));
        if !online {
            h.dbs.refused.borrow_mut().insert("bob-2".into());
        }
        assert!(block_on(h.session.login("bob", "pw")).is_success());
        if online {
            assert_eq!(h.pushes().len(), 2, "the second after the handlers: {:?}", h.pushes());
            assert!(h.reporter.messages().is_empty(), "{:?}", h.reporter.messages());
        } else {
            assert!(
                h.reporter
                    .messages()
                    .iter()
                    .any(|m| m == "session-broker: 2 document(s) of \"orders\" could not be pushed and were destroyed"),
                "the handler's write counted too: {:?}",
                h.reporter.messages()
            );
        }
        assert_eq!(h.destroyed(), vec!["orders"]);
    }
}

#[test]
fn destroy_all_counts_what_was_written_while_it_pushed() {
    let h = harness();
    h.working("alice", 1);
    h.online.set(false);
    h.dbs.refused.borrow_mut().insert("alice-1".into());
    let report = block_on(h.session.destroy_all_local_databases());
    assert_eq!(report.push.unpushed, json!({"orders": 1}).as_object().unwrap().clone());
}

#[test]
fn a_track_again_during_the_destruction_keeps_the_database_tracked_with_its_owner() {
    let h = harness();
    h.working("alice", 1);
    // The app opens the till again on PouchDB's `destroyed` and tracks it.
    let (session, dbs) = (h.session.clone(), h.dbs.clone());
    *h.dbs.on_destroy.borrow_mut() = Some(Rc::new(move |name: &str| {
        session.track_local_database(name, "idb", "dynamic").unwrap();
        *dbs.on_destroy.borrow_mut() = None;
    }));
    assert!(block_on(h.session.login("alice", "pw")).is_success());
    assert_eq!(h.session.tracked_local_databases(), vec!["orders"], "still tracked");
    assert_eq!(h.session.local_data_owner("orders").as_deref(), Some("acme"));
    // alice's next order, then bob of another tenant on this device: pushed with alice's own
    // session's headers, never with carol's, never into globex's database.
    h.session.note_routing("acme", "acme_day");
    h.dbs.pending.borrow_mut().insert("orders".into(), 1);
    h.log.borrow_mut().clear();
    assert!(block_on(h.session.login("carol", "pw")).is_success());
    assert_eq!(h.pushes(), vec!["push orders -> http://server.test/docdb/acme_day alice-2"]);
    assert_eq!(h.destroyed(), vec!["orders", "orders"]);
}

#[test]
fn fresh_data_tracked_during_another_tenants_cleanup_is_the_incoming_tenants() {
    let h = harness();
    h.working("alice", 1);
    let session = h.session.clone();
    *h.dbs.on_destroy.borrow_mut() = Some(Rc::new(move |name: &str| {
        session.track_local_database(name, "idb", "dynamic").unwrap();
    }));
    assert!(block_on(h.session.login("carol", "pw")).is_success());
    *h.dbs.on_destroy.borrow_mut() = None;
    assert_eq!(h.session.local_data_owner("orders").as_deref(), Some("globex"));
}

#[test]
fn a_full_storage_refuses_the_track_and_keeps_the_ledger() {
    let h = harness();
    h.working("alice", 1);
    h.storage.refuse_writes.set(true);
    assert!(matches!(
        h.session.track_local_database("more", "idb", "dynamic"),
        Err(crate::core::session::InputError::Storage(_))
    ));
    h.storage.refuse_writes.set(false);
    assert_eq!(h.session.tracked_local_databases(), vec!["orders"]);
    assert_eq!(h.session.local_data_owner("orders").as_deref(), Some("acme"));
}

#[test]
fn a_name_missing_from_the_list_is_still_tracked_by_its_line() {
    // Two tabs wrote the list at the same instant, each without the other's name.
    let h = harness();
    h.working("alice", 1);
    h.storage.set(crate::core::keys::LOCAL_DATABASES, "[]").unwrap();
    assert_eq!(h.session.tracked_local_databases(), vec!["orders"]);
    assert!(block_on(h.session.login("alice", "pw")).is_success());
    assert_eq!(h.destroyed(), vec!["orders"]);
}

mod push_headers_rule {
    use crate::core::session::push_headers;
    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    fn set(tenant: &str) -> Map<String, Value> {
        json!({ "X-Docdb-Token": tenant }).as_object().unwrap().clone()
    }

    proptest! {
        /// Against the table: the data's own tenant's headers (the incoming session's first),
        /// else none; never another tenant's.
        #[test]
        fn headers_are_only_ever_the_datas_own_tenants(
            owner in proptest::option::of("[ab]"),
            new in proptest::option::of("[abc]"),
            stored in proptest::option::of("[abc]"),
        ) {
            let (n, s) = (new.as_deref().map(|t| (t, set(t))), stored.as_deref().map(|t| (t, set(&format!("{t}-stored")))));
            let got = push_headers(owner.as_deref(), n.as_ref().map(|(t, h)| (*t, h)), s.as_ref().map(|(t, h)| (*t, h)));
            let expected = match (&owner, &new, &stored) {
                (None, _, _) => None,
                (Some(o), Some(n), _) if o == n => Some(set(n)),
                (Some(o), _, Some(s)) if o == s => Some(set(&format!("{s}-stored"))),
                _ => None,
            };
            prop_assert_eq!(got.cloned(), expected);
        }
    }
}

#[test]
fn a_track_in_a_tab_that_has_not_followed_another_tabs_login_is_nobodys() {
    let h = harness();
    h.working("alice", 0);
    // Another tab stored carol's session (globex); this tab has not followed yet, and its app,
    // still alice's, tracks a new database: whose its data is cannot be told.
    let claims = json!({"sub": "carol", "userId": "carol", "companyId": "globex", "roles": ["cashier"], "iat": NOW / 1000, "exp": NOW / 1000 + 900});
    h.storage.set(crate::core::keys::AUTH, &encode_for_test(&claims)).unwrap();
    h.session.track_local_database("new-orders", "idb", "dynamic").unwrap();
    assert_eq!(h.session.local_data_owner("new-orders"), None);
}

#[test]
fn another_tabs_track_during_this_tabs_destruction_keeps_its_own_owner() {
    let h = harness();
    h.working("alice", 1);
    // Another tab (alice's session) reopens the till while this tab's login of carol destroys it.
    let other = another_page(&h);
    *h.dbs.on_destroy.borrow_mut() = Some(Rc::new(move |name: &str| {
        other.track_local_database(name, "idb", "dynamic").unwrap();
    }));
    assert!(block_on(h.session.login("carol", "pw")).is_success());
    *h.dbs.on_destroy.borrow_mut() = None;
    assert_eq!(h.session.local_data_owner("orders").as_deref(), Some("acme"), "alice's tab's data, never globex's");
}

#[test]
fn an_unreadable_line_is_kept_and_counted_never_lent() {
    let h = harness();
    h.working("alice", 0);
    let key = [crate::core::keys::LOCAL_DATABASE_PREFIX, "mangled"].concat();
    for garbage in ["{\"not\":\"a line\"}", "2\nacme", "1\nacme\n\nidb\ndynamic\nmore", "0\nacme\n\nidb\ndynamic"] {
        h.storage.set(&key, garbage).unwrap();
        assert_eq!(h.session.tracked_local_databases(), vec!["orders", "mangled"], "{garbage:?}");
        assert_eq!(h.storage.get(&key).as_deref(), Some(garbage), "kept as it is: {garbage:?}");
        assert_eq!(h.session.local_data_owner("mangled"), None);
    }
    h.dbs.pending.borrow_mut().insert("mangled".into(), 3);
    assert!(block_on(h.session.login("carol", "pw")).is_success());
    assert!(h.pushes().is_empty(), "nothing of it is pushed: {:?}", h.pushes());
    assert!(
        h.reporter.messages().iter().any(|m| m.contains("3 document(s) of \"mangled\" could not be pushed")),
        "{:?}",
        h.reporter.messages()
    );
    assert_eq!(h.storage.get(&key), None, "forgotten with the database");
}

#[test]
fn a_generation_at_its_limit_does_not_overflow() {
    let h = harness();
    let key = [crate::core::keys::LOCAL_DATABASE_PREFIX, "worn"].concat();
    h.storage.set(&key, &format!("{}\nacme\n\nidb\ndynamic", i64::MAX)).unwrap();
    h.session.track_local_database("worn", "idb", "dynamic").unwrap();
    assert_eq!(h.session.ledger_entry("worn").gen, i64::MAX);
}

/// What the SDK's cleanup destroys unpushed is reported to the server, with an id made once: kept
/// in storage while the server cannot take it, sent again at the next login, forgotten once taken.
/// The app's own `destroyAllLocalDatabases()` reports nothing (the app decided).
#[test]
fn what_a_cleanup_destroys_unpushed_is_reported_once_kept_until_the_server_takes_it() {
    let h = harness();
    h.storage.set(crate::core::keys::DEVICE_ID, "dev-1").unwrap();
    h.working("alice", 3);
    h.dbs.refused.borrow_mut().insert("alice-1".into());
    h.dbs.refused.borrow_mut().insert("alice-2".into());
    h.losses_down.set(true);
    assert!(block_on(h.session.login("alice", "pw")).is_success());
    assert_eq!(h.destroyed(), vec!["orders"]);
    assert!(h.losses.borrow().is_empty());
    let kept: Value = serde_json::from_str(&h.storage.get(crate::core::keys::LOSSES).unwrap()).unwrap();
    let report = kept[0].clone();
    assert_eq!(
        (report["deviceId"].clone(), report["companyId"].clone(), report["reason"].clone(), report["lost"].clone()),
        (json!("dev-1"), json!("acme"), json!("login"), json!({"orders": 3}))
    );
    assert!(crate::protocol::losses::LossReport::valid_id(report["id"].as_str().unwrap()), "{report}");
    // The server takes it at the next login: the same report, the same id, once.
    h.losses_down.set(false);
    assert!(block_on(h.session.login("alice", "pw")).is_success());
    assert_eq!(*h.losses.borrow(), vec![report]);
    assert_eq!(h.storage.get(crate::core::keys::LOSSES), None, "forgotten once taken");
    // The app's own destruction is the app's to report.
    h.session.track_local_database("orders", "idb", "dynamic").unwrap();
    h.dbs.pending.borrow_mut().insert("orders".into(), 2);
    h.dbs.refused.borrow_mut().insert("alice-3".into());
    block_on(h.session.destroy_all_local_databases());
    assert_eq!(h.losses.borrow().len(), 1);
}
