//! The session-token state table and the documented sequences, row by row, with a fake
//! clock, fake storage, fake transport and fake local databases.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::executor::block_on;
use serde_json::{json, Value};

use crate::core::calls::segment;
use crate::core::fakes::*;
use crate::core::keys::{self, HeaderKind};
use crate::core::ports::*;
use crate::core::results::{CallResult, DeviceResult, LoginResult};
use crate::core::session::{Ports, RefreshOutcome, Session, SessionConfig};
use crate::core::token::encode_for_test;
use crate::protocol::LogoutScope;

mod device_key;
mod final_push;
mod tabs;

const NOW: i64 = 1_700_000_000_000;

struct H {
    session: Session,
    storage: Rc<MemoryStorage>,
    transport: Rc<FakeTransport>,
    clock: Rc<FakeClock>,
    dbs: Rc<FakeLocalDatabases>,
    reporter: Rc<RecordingReporter>,
    log: EventLog,
    key: Rc<FakeDeviceKey>,
}

fn jwt(company: &str, roles: &[&str]) -> String {
    encode_for_test(
        &json!({"sub": "u1", "userId": "u1", "companyId": company, "roles": roles, "iat": NOW / 1000, "exp": NOW / 1000 + 900}),
    )
}

fn auth_body(token: &str, refresh: &str, headers: bool) -> String {
    let mut body = json!({"token": token, "expiresIn": 900, "refreshToken": refresh, "refreshExpiresIn": 86400});
    if headers {
        body["docdbHeaders"] = json!({"Remote": {"X-Docdb-Token": "r"}, "Local": {"X-Docdb-Token": "l"}});
    }
    body.to_string()
}

fn ok(body: String) -> Result<HttpResponse, TransportError> {
    Ok(HttpResponse { status: 200, body, retry_after: 0 })
}

fn status(code: u16, error: &str) -> Result<HttpResponse, TransportError> {
    Ok(HttpResponse {
        status: code,
        body: json!({"error": error, "message": format!("{error} happened")}).to_string(),
        retry_after: 0,
    })
}

fn harness(responder: impl FnMut(&HttpRequest) -> Result<HttpResponse, TransportError> + 'static) -> H {
    let log: EventLog = Rc::default();
    let storage = Rc::new(MemoryStorage { log: Some(log.clone()), ..Default::default() });
    let transport = Rc::new(FakeTransport::new(log.clone(), responder));
    let clock = Rc::new(FakeClock(Cell::new(NOW)));
    let dbs = Rc::new(FakeLocalDatabases { log: Some(log.clone()), ..Default::default() });
    let reporter = Rc::new(RecordingReporter::default());
    let key = Rc::new(FakeDeviceKey::default());
    let ports = Ports {
        storage: storage.clone(),
        transport: transport.clone(),
        clock: clock.clone(),
        local_databases: dbs.clone(),
        reporter: reporter.clone(),
        lock: Rc::new(FakeLock::default()),
        device_key: key.clone(),
    };
    let session = Session::new(SessionConfig::new("http://server.test/").unwrap(), ports);
    H { session, storage, transport, clock, dbs, reporter, log, key }
}

/// A server that logs in to `acme`, refreshes to `refresh_company`, and acknowledges the rest.
fn server(refresh_company: Rc<RefCell<String>>) -> impl FnMut(&HttpRequest) -> Result<HttpResponse, TransportError> {
    let n = Cell::new(0);
    move |req| {
        let path = req.url.trim_start_matches("http://server.test");
        match path {
            "/auth" | "/auth/google" => ok(auth_body(&jwt("acme", &["cashier"]), "r0", true)),
            "/auth/refresh" => {
                n.set(n.get() + 1);
                ok(auth_body(&jwt(&refresh_company.borrow(), &["manager"]), &format!("r{}", n.get()), false))
            }
            "/auth/connect" => ok(json!({"deviceId": "dev-1"}).to_string()),
            _ => ok(json!({"ok": true}).to_string()),
        }
    }
}

fn logged_in() -> (H, Rc<RefCell<String>>) {
    let company = Rc::new(RefCell::new("acme".to_string()));
    let h = harness(server(company.clone()));
    assert!(block_on(h.session.login("alice", "alice-pass")).is_success());
    h.log.borrow_mut().clear();
    h.transport.requests.borrow_mut().clear();
    (h, company)
}

fn record_hooks(h: &H) {
    let log = h.log.clone();
    h.session.hooks().sign_out.register(Rc::new(move |e: &Value| {
        log.borrow_mut().push(format!("onSignOut {}", e["reason"].as_str().unwrap()));
        Box::pin(async { Ok(()) })
    }));
    let log = h.log.clone();
    h.session.hooks().login.register(Rc::new(move |u: &Value| {
        log.borrow_mut().push(format!("onLogin {}", u["companyId"].as_str().unwrap()));
        Box::pin(async { Ok(()) })
    }));
    let log = h.log.clone();
    h.session.hooks().token_refresh.register(Rc::new(move |e: &Value| {
        let roles: Vec<String> = serde_json::from_value(e["roles"].clone()).unwrap();
        log.borrow_mut().push(format!("onTokenRefresh changed={} roles={:?}", e["companyChanged"], roles));
        Box::pin(async { Ok(()) })
    }));
}

fn events(h: &H) -> Vec<String> {
    h.log.borrow().clone()
}

fn expire(h: &H) {
    h.clock.0.set(NOW + 900_000 - 60_000);
}

// ----- no token --(login, 200)--> token stored ---------------------------------------------------

#[test]
fn login_runs_cleanup_then_persists_then_login_handlers() {
    let h = harness(server(Rc::new(RefCell::new("acme".into()))));
    record_hooks(&h);
    h.session.track_local_database("previous-tenant", "", "").unwrap();
    h.storage.set(keys::LAST_INVALIDATION, "123").unwrap();
    h.log.borrow_mut().clear();

    let result = block_on(h.session.login("alice", "alice-pass"));
    assert!(result.is_success());
    assert_eq!(
        events(&h),
        vec![
            "http POST http://server.test/auth",
            "onSignOut login",
            "destroy previous-tenant",
            "remove serviceProxyToken-localDatabase:previous-tenant",
            "remove serviceProxyToken-localDatabases",
            "remove serviceProxyToken-lastInvalidation",
            "onLogin acme",
        ]
    );
    let s = &h.storage;
    assert_eq!(s.get(keys::AUTH), Some(jwt("acme", &["cashier"])));
    assert_eq!(s.get(keys::REFRESH).as_deref(), Some("r0"));
    assert_eq!(s.get(keys::EXPIRES_AT_AUTH), Some((NOW + 900_000).to_string()));
    assert_eq!(s.get(keys::EXPIRES_AT_REFRESH), Some((NOW + 86_400_000).to_string()));
    assert_eq!(s.get(keys::HEADERS_REMOTE).as_deref(), Some(r#"{"X-Docdb-Token":"r"}"#));
    assert_eq!(s.get(keys::HEADERS_LOCAL).as_deref(), Some(r#"{"X-Docdb-Token":"l"}"#));
    assert_eq!(h.session.current_company(), Some(json!({"id": "acme"})));
    assert_eq!(h.session.last_username().as_deref(), Some("alice"));
}

#[test]
fn login_sends_username_password_and_device_info() {
    let (h, _) = logged_in();
    block_on(h.session.login("bob", "pw"));
    let req = h.transport.requests.borrow()[0].clone();
    let body: Value = serde_json::from_str(req.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["username"], "bob");
    assert_eq!(body["password"], "pw");
    assert_eq!(body["deviceInfo"]["sdkVersion"], "1.4.17");
    assert_eq!(body["deviceInfo"]["platform"], "web");
    assert_eq!(req.bearer, None);
}

#[test]
fn google_login_posts_the_credential_to_auth_google() {
    let h = harness(server(Rc::new(RefCell::new("acme".into()))));
    assert!(block_on(h.session.login_with_google("mock-google:alice")).is_success());
    let req = h.transport.requests.borrow()[0].clone();
    assert_eq!(req.url, "http://server.test/auth/google");
    let body: Value = serde_json::from_str(req.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["credential"], "mock-google:alice");
    assert_eq!(body["deviceInfo"]["sdkVersion"], "1.4.17");
    assert_eq!(req.prove, None, "no device registered yet: nothing to prove");
    assert!(h.session.check_if_logged_in());
}

/// A Google sign-in on a registered device proves it as a password's does: the session it
/// starts is bound to the device's key, and ended with the device.
#[test]
fn google_login_on_a_registered_device_proves_it() {
    let h = harness(server(Rc::new(RefCell::new("acme".into()))));
    h.storage.set(keys::DEVICE_ID, "dev-0").unwrap();
    assert!(block_on(h.session.login_with_google("mock-google:alice")).is_success());
    let req = h.transport.requests.borrow()[0].clone();
    let body: Value = serde_json::from_str(req.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["deviceInfo"]["id"], "dev-0");
    assert_eq!(req.prove.map(|(_, route)| route).as_deref(), Some("POST /auth/google"));
}

// ----- no token --(login, not 200)--> no token, nothing touched ---------------------------------

fn assert_failed_login_touches_nothing(answer: Result<HttpResponse, TransportError>, want_status: u16) {
    let mut answer = Some(answer);
    let h = harness(move |_| answer.take().unwrap());
    record_hooks(&h);
    h.session.track_local_database("kept", "", "").unwrap();
    h.storage.set(keys::LAST_INVALIDATION, "5").unwrap();
    let before = h.storage.map.borrow().clone();
    h.log.borrow_mut().clear();
    let result = block_on(h.session.login("alice", "wrong"));
    match result {
        LoginResult::Failure { status, error, .. } => {
            assert_eq!(status, want_status);
            assert!(!error.is_empty());
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(*h.storage.map.borrow(), before, "storage untouched");
    assert_eq!(events(&h).len(), 1, "only the request: {:?}", events(&h));
    assert!(h.dbs.destroyed.borrow().is_empty());
}

#[test]
fn failed_login_touches_nothing() {
    assert_failed_login_touches_nothing(status(401, "invalid_credentials"), 401);
    assert_failed_login_touches_nothing(status(500, "boom"), 500);
    assert_failed_login_touches_nothing(Err(TransportError::Network("refused".into())), 0);
    assert_failed_login_touches_nothing(Err(TransportError::Timeout), 0);
    // 200 without a decodable JWT is validated before any cleanup.
    assert_failed_login_touches_nothing(ok(auth_body("not-a-jwt", "r", true)), 200);
    assert_failed_login_touches_nothing(ok("<html>".into()), 200);
    assert_failed_login_touches_nothing(ok(auth_body(&jwt("acme", &[]), " ", true)), 200);
}

#[test]
fn a_login_storage_refuses_says_storage_unavailable_with_the_platforms_words() {
    let h = harness(|_| ok(auth_body(&jwt("acme", &["cashier"]), "r1", true)));
    h.storage.refuse_writes.set(true);
    let LoginResult::Failure { error, code, status } = block_on(h.session.login("alice", "pw")) else { panic!() };
    assert_eq!((code.as_str(), status), ("storage_unavailable", 200));
    assert!(error.ends_with(": QuotaExceededError"), "{error}");
}

#[test]
fn failed_login_reports_the_servers_message() {
    let h = harness(|_| status(401, "invalid_credentials"));
    let LoginResult::Failure { error, .. } = block_on(h.session.login("a", "b")) else { panic!() };
    assert_eq!(error, "invalid_credentials happened");
}

// ----- token valid --(getToken, not expired)--> no request --------------------------------------

#[test]
fn get_token_returns_a_valid_token_without_a_request() {
    let (h, _) = logged_in();
    assert_eq!(block_on(h.session.get_token()), Some(jwt("acme", &["cashier"])));
    assert!(h.transport.requests.borrow().is_empty());
}

#[test]
fn get_token_without_token_is_null_and_sends_nothing() {
    let h = harness(|_| panic!("no request expected"));
    assert_eq!(block_on(h.session.get_token()), None);
}

// ----- token valid --(getToken, isTokenExpired)--> refreshed ------------------------------------

#[test]
fn expired_token_is_refreshed_and_the_pair_rewritten() {
    let (h, _) = logged_in();
    record_hooks(&h);
    h.session.track_local_database("offline-orders", "", "").unwrap();
    expire(&h);
    let token = block_on(h.session.get_token()).unwrap();
    assert_eq!(token, jwt("acme", &["manager"]));
    assert_eq!(h.storage.get(keys::AUTH), Some(token));
    assert_eq!(h.storage.get(keys::REFRESH).as_deref(), Some("r1"));
    assert_eq!(h.storage.get(keys::EXPIRES_AT_AUTH), Some((NOW + 840_000 + 900_000).to_string()));
    // The refresh answer had no header sets: the login's are kept.
    assert!(h.storage.get(keys::HEADERS_REMOTE).is_some());
    let req = h.transport.requests.borrow()[0].clone();
    assert_eq!(req.url, "http://server.test/auth/refresh");
    assert_eq!(req.body.as_deref(), Some(r#"{"refreshToken":"r0"}"#));
    // Same company: local databases kept, handlers told.
    assert!(h.dbs.destroyed.borrow().is_empty());
    assert_eq!(h.session.tracked_local_databases(), vec!["offline-orders"]);
    assert!(events(&h).contains(&"onTokenRefresh changed=false roles=[\"manager\"]".to_string()));
    assert_eq!(h.session.current_roles(), vec!["manager"]);
}

#[test]
fn concurrent_get_token_calls_share_one_refresh() {
    let (h, _) = logged_in();
    expire(&h);
    let (a, b, c) = block_on(futures::future::join3(
        h.session.get_token(),
        h.session.get_token(),
        h.session.refresh_authentication(),
    ));
    assert_eq!(a, b);
    assert!(a.is_some() && c);
    assert_eq!(h.transport.paths(), vec!["/auth/refresh"]);
    // The flight is over: the next refresh is a new request with the rotated token.
    assert!(block_on(h.session.refresh_authentication()));
    assert_eq!(h.transport.requests.borrow()[1].body.as_deref(), Some(r#"{"refreshToken":"r1"}"#));
}

// ----- token expired --(getToken, refresh fails)--> no token, logout ---------------------------

#[test]
fn rejected_refresh_logs_out_and_returns_null() {
    for code in [400, 401, 403] {
        let h = harness(move |req: &HttpRequest| {
            if req.url.ends_with("/auth/refresh") {
                status(code, "refresh_token_reused")
            } else {
                server(Rc::new(RefCell::new("acme".into())))(req)
            }
        });
        block_on(h.session.login("alice", "pw"));
        record_hooks(&h);
        h.log.borrow_mut().clear();
        expire(&h);
        assert_eq!(block_on(h.session.get_token()), None);
        let ev = events(&h);
        assert_eq!(ev[0], "http POST http://server.test/auth/refresh");
        assert_eq!(ev[1], "http POST http://server.test/auth/logout");
        assert_eq!(ev[2], "onSignOut refresh-rejected");
        for key in keys::SESSION_KEYS {
            assert_eq!(h.storage.get(key), None, "{key}");
        }
        assert!(!h.session.check_if_logged_in());
    }
}

#[test]
fn missing_refresh_token_is_a_rejection() {
    let (h, _) = logged_in();
    h.storage.remove(keys::REFRESH);
    expire(&h);
    assert_eq!(block_on(h.session.get_token()), None);
    assert!(!h.session.check_if_logged_in());
    assert_eq!(h.transport.paths(), vec!["/auth/logout", "/auth/logout"], "the logout, then its completion");
}

#[test]
fn transient_refresh_failure_keeps_the_session() {
    for answer in [
        Err(TransportError::Network("offline".into())),
        Err(TransportError::Timeout),
        status(503, "unavailable"),
        ok("{}".into()),
    ] {
        let mut answer = Some(answer);
        let (h, _) = logged_in();
        *h.transport.responder.borrow_mut() = Box::new(move |_| answer.take().unwrap());
        record_hooks(&h);
        h.session.track_local_database("unsynced", "", "").unwrap();
        let before = h.storage.map.borrow().clone();
        expire(&h);
        assert_eq!(block_on(h.session.get_token()), None);
        assert_eq!(*h.storage.map.borrow(), before, "tokens and local data kept");
        assert!(h.session.check_if_logged_in());
        assert!(!events(&h).iter().any(|e| e.starts_with("onSignOut")));
        assert!(h.reporter.messages().iter().any(|m| m.contains("session kept")));
    }
}

// ----- token stored --(refreshAuthentication, companyId changed)--> full cleanup ---------------

#[test]
fn company_change_on_refresh_runs_the_login_cleanup_before_refresh_handlers() {
    let (h, company) = logged_in();
    record_hooks(&h);
    h.session.track_local_database("acme-orders", "", "").unwrap();
    h.storage.set(keys::LAST_INVALIDATION, "9").unwrap();
    *company.borrow_mut() = "globex".into();
    h.log.borrow_mut().clear();
    assert!(block_on(h.session.refresh_authentication()));
    assert_eq!(
        events(&h),
        vec![
            "http POST http://server.test/auth/refresh",
            "onSignOut company-change",
            "destroy acme-orders",
            "remove serviceProxyToken-localDatabase:acme-orders",
            "remove serviceProxyToken-localDatabases",
            "remove serviceProxyToken-lastInvalidation",
            "onTokenRefresh changed=true roles=[\"manager\"]",
        ]
    );
    assert_eq!(h.session.current_company(), Some(json!({"id": "globex"})));
    assert!(h.session.check_if_logged_in());
}

/// What `docdbFetch` serves the sign-out handlers of a cleanup, for a final push of the previous
/// session's work: the new session's headers within one tenant, never across tenants, and the
/// previous company's own at a company change.
#[test]
fn a_cleanup_serves_the_headers_its_final_push_may_use() {
    let company = Rc::new(RefCell::new("acme".to_string()));
    let n = Rc::new(Cell::new(0));
    let (c, count) = (company.clone(), n.clone());
    let h = harness(move |req| {
        count.set(count.get() + 1);
        let headers = json!({"Remote": {"X-Docdb-Token": format!("set-{}", count.get())}});
        let mut body: Value =
            serde_json::from_str(&auth_body(&jwt(&c.borrow(), &["cashier"]), &format!("r{}", count.get()), false))
                .unwrap();
        body["docdbHeaders"] = headers;
        match req.url.trim_start_matches("http://server.test") {
            "/auth" | "/auth/refresh" => ok(body.to_string()),
            _ => ok(json!({"ok": true}).to_string()),
        }
    });
    let seen = Rc::new(RefCell::new(Vec::new()));
    let (session, log) = (h.session.clone(), seen.clone());
    h.session.hooks().sign_out.register(Rc::new(move |e: &Value| {
        let served = session.docdb_headers(HeaderKind::Remote).map(|s| s["X-Docdb-Token"].clone());
        log.borrow_mut().push(format!("{} {} {}", e["reason"], e["headers"], served.unwrap_or_default()));
        Box::pin(async { Ok(()) })
    }));
    assert!(block_on(h.session.login("alice", "pw")).is_success());
    assert!(block_on(h.session.login("alice", "pw")).is_success());
    *company.borrow_mut() = "globex".into();
    assert!(block_on(h.session.login("carol", "pw")).is_success());
    *company.borrow_mut() = "acme".into();
    assert!(block_on(h.session.refresh_authentication()));
    assert_eq!(
        *seen.borrow(),
        vec![
            // The first login has no previous session: nothing to lend, the (empty) stored headers.
            r#""login" "previous" null"#.to_owned(),
            r#""login" "new" "set-2""#.to_owned(),
            r#""login" "previous" "set-2""#.to_owned(),
            r#""company-change" "previous" "set-3""#.to_owned(),
        ]
    );
    assert_eq!(
        h.session.docdb_headers(HeaderKind::Remote).unwrap()["X-Docdb-Token"],
        "set-4",
        "the cleanup's headers are not kept"
    );
}

#[test]
fn same_company_refresh_keeps_local_databases() {
    let (h, _) = logged_in();
    h.session.track_local_database("acme-orders", "", "").unwrap();
    assert!(block_on(h.session.refresh_authentication()));
    assert!(h.dbs.destroyed.borrow().is_empty());
    assert_eq!(h.session.tracked_local_databases(), vec!["acme-orders"]);
}

// ----- token stored --(logout / signOut)--> no token --------------------------------------------

#[test]
fn sign_out_notifies_server_then_handlers_then_clears_keys() {
    let (h, _) = logged_in();
    block_on(h.session.register_device());
    h.session.track_local_database("db", "", "").unwrap();
    h.storage.set(keys::LAST_INVALIDATION, "1").unwrap();
    let storage = h.storage.clone();
    let log = h.log.clone();
    h.session.hooks().sign_out.register(Rc::new(move |_| {
        // A handler may need a valid token (a final replication): it is still there.
        log.borrow_mut().push(format!("handler sees token: {}", storage.get(keys::AUTH).is_some()));
        Box::pin(async { Ok(()) })
    }));
    h.log.borrow_mut().clear();
    block_on(h.session.sign_out(crate::core::hooks::SignOutReason::Logout));
    let ev = events(&h);
    assert_eq!(ev[0], "http POST http://server.test/auth/logout");
    assert_eq!(ev[1], "handler sees token: true");
    // Once the handlers have run, the server is told the sign-out is complete: the session's
    // document headers, which served the handlers' final replication, stop working.
    assert_eq!(ev[2], "http POST http://server.test/auth/logout");
    assert_eq!(&ev[3..], keys::SESSION_KEYS.iter().map(|k| format!("remove {k}")).collect::<Vec<_>>().as_slice());
    let requests = h.transport.requests.borrow().clone();
    let [.., first, second] = requests.as_slice() else { panic!("two logout calls") };
    let body = |r: &HttpRequest| serde_json::from_str::<Value>(r.body.as_deref().unwrap()).unwrap();
    assert_eq!(body(first), json!({"deviceId": "dev-1", "complete": false, "scope": "local"}));
    assert_eq!(body(second), json!({"deviceId": "dev-1", "complete": true, "scope": "local"}));
    assert_eq!(second.bearer, Some(jwt("acme", &["cashier"])));
    // Kept: same device, databases still to destroy at the next login, last obeyed invalidation.
    assert_eq!(h.storage.get(keys::DEVICE_ID).as_deref(), Some("dev-1"));
    assert!(h.storage.get(keys::LOCAL_DATABASES).is_some());
    assert!(h.storage.get(keys::LAST_INVALIDATION).is_some());
    assert_eq!(h.session.current_company(), None);
    assert_eq!(h.session.last_username(), None);
}

#[test]
fn a_sign_out_leaves_the_session_another_tab_stored_while_its_handlers_ran() {
    let (h, _) = logged_in();
    let storage = h.storage.clone();
    let newer = jwt("globex", &["manager"]);
    let stored = newer.clone();
    h.session.hooks().sign_out.register(Rc::new(move |_| {
        // Another tab's login lands while this tab's handlers run.
        storage.set(keys::AUTH, &stored).unwrap();
        storage.set(keys::REFRESH, "the-other-tabs-refresh").unwrap();
        Box::pin(async { Ok(()) })
    }));
    block_on(h.session.sign_out(crate::core::hooks::SignOutReason::RefreshRejected));
    assert_eq!(h.storage.get(keys::AUTH), Some(newer));
    assert_eq!(h.storage.get(keys::REFRESH).as_deref(), Some("the-other-tabs-refresh"));
}

#[test]
fn sign_out_without_token_sends_nothing_and_still_runs_handlers() {
    let h = harness(|_| panic!("no request expected"));
    record_hooks(&h);
    block_on(h.session.sign_out(crate::core::hooks::SignOutReason::Logout));
    assert_eq!(events(&h), vec!["onSignOut logout"]);
}

/// `logout()` during a login's cleanup (a sign-out handler calls it) or while the login's answer
/// is on its way: the device ends signed out, the new session ended on the server.
#[test]
fn a_logout_during_a_login_is_never_lost() {
    use crate::core::hooks::SignOutReason;
    // Inside the cleanup, with a previous session stored.
    let (h, _) = logged_in();
    let session = h.session.clone();
    h.session.hooks().sign_out.register(Rc::new(move |e: &Value| {
        let (session, login) = (session.clone(), e["reason"] == "login");
        Box::pin(async move {
            if login {
                session.sign_out(SignOutReason::Logout).await;
            }
            Ok(())
        })
    }));
    let result = block_on(h.session.login("alice", "pw"));
    assert!(matches!(&result, LoginResult::Failure { code, .. } if code == "signed_out"), "{result:?}");
    assert!(!h.session.check_if_logged_in());
    for key in keys::SESSION_KEYS {
        assert_eq!(h.storage.get(key), None, "{key}");
    }
    let requests = h.transport.requests.borrow().clone();
    let logouts: Vec<&HttpRequest> = requests.iter().filter(|r| r.url.ends_with("/auth/logout")).collect();
    assert_eq!(logouts.len(), 2, "the new session's logout and its completion: {requests:?}");
    assert!(logouts[0].bearer.is_some() && logouts[0].bearer == logouts[1].bearer, "with the new session's token");

    // While the answer is on its way, with nothing stored before.
    let h = harness(server(Rc::new(RefCell::new("acme".into()))));
    let (result, ()) =
        block_on(futures::future::join(h.session.login("alice", "pw"), h.session.sign_out(SignOutReason::Logout)));
    assert!(matches!(&result, LoginResult::Failure { code, .. } if code == "signed_out"), "{result:?}");
    assert!(!h.session.check_if_logged_in());
    assert_eq!(h.storage.get(keys::AUTH), None);
    assert_eq!(
        h.transport.paths(),
        vec!["/auth", "/auth/logout", "/auth/logout"],
        "the new session was ended on the server"
    );
}

#[test]
fn a_logout_the_server_refused_is_not_completed() {
    let (h, _) = logged_in();
    *h.transport.responder.borrow_mut() = Box::new(|_| status(500, "internal"));
    block_on(h.session.sign_out(crate::core::hooks::SignOutReason::Logout));
    assert!(!h.session.check_if_logged_in());
    assert_eq!(h.transport.paths(), vec!["/auth/logout"], "nothing to complete");
}

#[test]
fn sign_out_never_depends_on_the_network() {
    let (h, _) = logged_in();
    *h.transport.responder.borrow_mut() = Box::new(|_| Err(TransportError::Timeout));
    block_on(h.session.sign_out(crate::core::hooks::SignOutReason::Logout));
    assert!(!h.session.check_if_logged_in());
    assert!(h.reporter.messages().iter().any(|m| m.contains("the logout failed")));
}

// ----- expiry -------------------------------------------------------------------------------------

#[test]
fn a_fetched_company_is_kept_only_when_it_is_the_current_one() {
    let (h, _) = logged_in();
    let answer = |company: Value| CallResult::from_response(&ok(json!({ "company": company }).to_string()).unwrap());
    let id = |id: &str| segment("companyId", id).unwrap();
    h.session.keep_company_details(&id("globex"), &answer(json!({"id": "globex", "name": "Globex"})));
    assert_eq!(h.session.current_company(), Some(json!({"id": "acme"})));
    let refused = CallResult::from_response(&status(403, "forbidden").unwrap());
    h.session.keep_company_details(&id("acme"), &refused);
    assert_eq!(h.session.current_company(), Some(json!({"id": "acme"})));
    h.session.keep_company_details(&id("acme"), &answer(json!({"id": "acme", "name": "Acme Corp"})));
    assert_eq!(h.session.current_company(), Some(json!({"id": "acme", "name": "Acme Corp"})));
    assert!(h.transport.requests.borrow().is_empty());
}

#[test]
fn expiry_uses_the_stored_expires_at_with_a_one_minute_margin() {
    let (h, _) = logged_in();
    let at = NOW + 900_000;
    h.clock.0.set(at - 60_001);
    assert!(!h.session.is_token_expired());
    assert!(!h.session.is_about_to_expire());
    h.clock.0.set(at - 60_000);
    assert!(h.session.is_token_expired());
    assert!(h.session.is_about_to_expire());
    h.clock.0.set(at);
    assert!(h.session.is_token_expired());
    assert!(!h.session.is_about_to_expire());
}

#[test]
fn corrupt_expiry_falls_back_to_the_jwt_exp_and_is_removed() {
    let (h, _) = logged_in();
    h.storage.set(keys::EXPIRES_AT_AUTH, "tomorrow").unwrap();
    assert!(!h.session.is_token_expired(), "exp claim used");
    assert_eq!(h.storage.get(keys::EXPIRES_AT_AUTH), None);
}

#[test]
fn no_token_is_expired_and_not_about_to_expire() {
    let h = harness(|_| panic!());
    assert!(h.session.is_token_expired());
    assert!(!h.session.is_about_to_expire());
    assert!(!h.session.check_if_logged_in());
    assert_eq!(h.session.current_user(), None);
    assert_eq!(h.session.current_company(), None);
    assert!(h.session.current_roles().is_empty());
}

#[test]
fn corrupt_auth_token_is_absent_and_removed() {
    let h = harness(|_| panic!("no request expected"));
    h.storage.set(keys::AUTH, "garbage").unwrap();
    assert!(!h.session.check_if_logged_in());
    assert_eq!(h.storage.get(keys::AUTH), None);
    assert_eq!(block_on(h.session.get_token()), None);
}

// ----- roles and permissions ---------------------------------------------------------------------

#[test]
fn roles_and_permissions_follow_the_jwt() {
    let (h, _) = logged_in();
    assert_eq!(h.session.current_roles(), vec!["cashier"]);
    assert!(!h.session.allows("crons:run"));
    assert!(!block_on(h.session.has_permission("crons:run")));
    h.session.save_token("Auth", &jwt("acme", &["key_manager"]), 900.0).unwrap();
    assert!(h.session.allows("crons:run"));
    assert!(block_on(h.session.has_permission("rollingDb:flags")));
    assert!(!block_on(h.session.has_permission("rollingDb:read")));
}

impl H {
    /// Another session (a second manager of the page) on this harness's ports, configured so.
    fn second_session(&self, config: SessionConfig) -> Session {
        let ports = Ports {
            storage: self.storage.clone(),
            transport: self.transport.clone(),
            clock: self.clock.clone(),
            local_databases: self.dbs.clone(),
            reporter: self.reporter.clone(),
            lock: Rc::new(FakeLock::default()),
            device_key: self.key.clone(),
        };
        Session::new(config, ports)
    }
}

/// A second session on `h`'s ports whose app adds the action `orders:void` for managers.
fn orders_void_for_managers(h: &H) -> Session {
    let o = vec![("orders:void".to_string(), vec!["manager".to_string()])];
    h.second_session(SessionConfig {
        permissions: crate::core::permissions::PermissionMap::with_overrides(o),
        ..SessionConfig::new("http://server.test").unwrap()
    })
}

#[test]
fn has_permission_refreshes_first() {
    let (h, _) = logged_in();
    expire(&h);
    // The refreshed token carries "manager" — the permission follows the new roles.
    let session = orders_void_for_managers(&h);
    assert!(!session.allows("orders:void"));
    assert!(block_on(session.has_permission("orders:void")));
    assert_eq!(h.transport.paths(), vec!["/auth/refresh"]);
}

#[test]
fn judge_permission_judges_a_known_action_on_a_token_that_has_not_expired() {
    use crate::core::session::Refusal;
    let h = harness(|_| panic!("no request expected"));
    assert_eq!(h.session.judge_permission("crons:run", true), Err(Refusal::NotSignedIn));
    assert_eq!(h.session.judge_permission("crons:rnu", true), Err(Refusal::UnknownAction), "a typo is not a \"no\"");
    h.session.save_token("Auth", &jwt("acme", &["cashier"]), 900.0).unwrap();
    assert_eq!(h.session.judge_permission("crons:run", true), Err(Refusal::Denied));
    assert_eq!(h.session.judge_permission("orders:void", true), Err(Refusal::UnknownAction));
    h.session.save_token("Auth", &jwt("acme", &["key_manager"]), 900.0).unwrap();
    assert_eq!(h.session.judge_permission("crons:run", true), Ok(()));
    assert_eq!(h.session.judge_permission("users:delete", true), Err(Refusal::Denied), "sys_admin's alone");
    // Inside the one-minute margin the token counts as expired (isTokenExpired()), as past it.
    h.session.save_token("Auth", &jwt("acme", &["key_manager"]), 30.0).unwrap();
    assert_eq!(h.session.judge_permission("crons:run", true), Err(Refusal::Expired));
    h.session.save_token("Auth", &jwt("acme", &["sys_admin"]), 0.0).unwrap();
    assert_eq!(h.session.judge_permission("users:delete", true), Err(Refusal::Expired), "stale roles are not judged");
    assert_eq!(h.session.judge_permission("users:delete", false), Ok(()), "the read cache's own judgement");
    assert_eq!(h.session.judge_permission("crons:rnu", true), Err(Refusal::UnknownAction));
    assert_eq!(
        [Refusal::UnknownAction, Refusal::NotSignedIn, Refusal::Expired, Refusal::Denied].map(Refusal::code),
        ["invalid_argument", "not_signed_in", "session_expired", "permission_denied"]
    );
}

#[test]
fn the_app_s_own_actions_are_known_to_its_session_only() {
    let h = harness(|_| panic!("no request expected"));
    let own = orders_void_for_managers(&h);
    assert!(own.knows_action("orders:void") && own.knows_action("crons:run") && own.knows_action("users:delete"));
    assert!(!h.session.knows_action("orders:void") && !own.knows_action("orders:viod"));
    h.session.save_token("Auth", &jwt("acme", &["manager"]), 900.0).unwrap();
    assert_eq!(own.judge_permission("orders:void", true), Ok(()));
}

// ----- device --------------------------------------------------------------------------------------

#[test]
fn register_device_needs_a_token_and_sends_nothing_without_one() {
    let h = harness(|_| panic!("no request expected"));
    match block_on(h.session.register_device()) {
        DeviceResult::Failure(f) => assert!(!f.success && f.error.is_some()),
        other => panic!("{other:?}"),
    }
}

/// The answer "may contain `deviceId`": without one, the registration succeeded and the id the
/// device had stays (none, or the one a previous registration stored).
#[test]
fn register_device_without_a_device_id_in_the_answer_succeeds_and_keeps_the_id() {
    let (h, _) = logged_in();
    *h.transport.responder.borrow_mut() = Box::new(|_| ok(json!({"ok": true}).to_string()));
    assert_eq!(block_on(h.session.register_device()), DeviceResult::Success { device_id: None });
    assert!(h.session.device_info().get("id").is_none());
    h.storage.set(keys::DEVICE_ID, "dev-0").unwrap();
    h.session.update_device_info(serde_json::from_value(json!({"id": "dev-0"})).unwrap());
    assert_eq!(block_on(h.session.register_device()), DeviceResult::Success { device_id: Some("dev-0".into()) });
    assert_eq!(h.session.device_info()["id"], "dev-0");
    assert_eq!(h.storage.get(keys::DEVICE_ID).as_deref(), Some("dev-0"));
}

#[test]
fn register_device_stores_the_returned_device_id() {
    let (h, _) = logged_in();
    h.session.update_device_info(serde_json::from_value(json!({"name": "till 3", "sdkVersion": "0.1"})).unwrap());
    let result = block_on(h.session.register_device());
    assert_eq!(result, DeviceResult::Success { device_id: Some("dev-1".into()) });
    assert_eq!(h.storage.get(keys::DEVICE_ID).as_deref(), Some("dev-1"));
    let info = h.session.device_info();
    assert_eq!(info["id"], "dev-1");
    assert_eq!(info["name"], "till 3");
    assert_eq!(info["sdkVersion"], "1.4.17", "the SDK's own version always wins");
    let req = h.transport.requests.borrow()[0].clone();
    assert_eq!(req.bearer, Some(jwt("acme", &["cashier"])));
    assert!(req.body.unwrap().contains("till 3"));
}

#[test]
fn device_status_is_put_with_the_token() {
    let (h, _) = logged_in();
    let r = block_on(h.session.update_device_status(false));
    assert!(r.success);
    let req = h.transport.requests.borrow()[0].clone();
    assert_eq!((req.method, req.body.as_deref()), (Method::Put, Some(r#"{"isOnline":false}"#)));
}

// ----- tokens, headers, local databases ----------------------------------------------------------

#[test]
fn save_token_validates_and_writes_expiry() {
    let h = harness(|_| panic!());
    assert!(h.session.save_token("Bearer", "x", 1.0).is_err());
    assert!(h.session.save_token("Auth", "not-a-jwt", 1.0).is_err());
    assert!(h.session.save_token("Auth", &jwt("acme", &[]), f64::NAN).is_err());
    assert!(h.session.save_token("Refresh", "", 1.0).is_err());
    assert!(h.storage.map.borrow().is_empty(), "nothing written on bad input");
    h.session.save_token("Refresh", "opaque", 10.0).unwrap();
    h.session.save_token("Auth", &jwt("acme", &[]), -5.0).unwrap();
    assert!(h.session.is_token_expired(), "a negative lifetime stores an expired token");
    assert_eq!(h.storage.get(keys::EXPIRES_AT_REFRESH), Some((NOW + 10_000).to_string()));
    assert_eq!(h.session.refresh_token().as_deref(), Some("opaque"));
}

#[test]
fn header_sets_are_read_back() {
    let (h, _) = logged_in();
    assert_eq!(h.session.docdb_headers(HeaderKind::Remote).unwrap()["X-Docdb-Token"], "r");
    assert_eq!(h.session.docdb_headers(HeaderKind::Local).unwrap()["X-Docdb-Token"], "l");
}

#[test]
fn a_database_that_fails_to_destroy_stays_tracked() {
    let h = harness(|_| panic!());
    h.session.track_local_database("a", "", "").unwrap();
    h.session.track_local_database("b", "", "").unwrap();
    h.session.track_local_database("a", "", "").unwrap();
    assert!(h.session.track_local_database(" ", "", "").is_err());
    h.dbs.failing.borrow_mut().insert("b".into());
    let report = block_on(h.session.destroy_all_local_databases());
    assert_eq!((report.destroyed, report.failed), (vec!["a".to_string()], vec!["b".to_string()]));
    assert_eq!(h.session.tracked_local_databases(), vec!["b"]);
}

#[test]
fn a_failing_handler_does_not_stop_the_login() {
    let h = harness(server(Rc::new(RefCell::new("acme".into()))));
    h.session.hooks().login.register(Rc::new(|_| Box::pin(async { Err("boom".to_string()) })));
    record_hooks(&h);
    assert!(block_on(h.session.login("a", "b")).is_success());
    assert!(events(&h).contains(&"onLogin acme".to_string()));
    assert!(h.reporter.messages()[0].contains("boom"));
}

#[test]
fn refresh_outcome_kinds_are_distinct() {
    let (h, _) = logged_in();
    assert!(matches!(block_on(h.session.refresh()), RefreshOutcome::Refreshed(_)));
}

#[test]
fn reads_follow_whatever_storage_holds_though_decoding_is_cached() {
    let (h, _) = logged_in();
    assert_eq!(h.session.current_roles(), ["cashier"]);
    // The app (or a tab whose storage event never came) writes another token straight into
    // storage: the next read sees it, since the stored text is compared every time.
    h.storage.set(keys::AUTH, &jwt("globex", &["manager"])).unwrap();
    assert_eq!(h.session.current_roles(), ["manager"]);
    assert_eq!(h.session.current_user().unwrap()["companyId"], "globex");
    // Back to a token decoded before, then garbage: removed as corrupt, logged out.
    h.storage.set(keys::AUTH, &jwt("acme", &["cashier"])).unwrap();
    assert_eq!(h.session.current_roles(), ["cashier"]);
    h.storage.set(keys::AUTH, "not.a-jwt").unwrap();
    assert!(!h.session.check_if_logged_in());
    assert_eq!(h.storage.get(keys::AUTH), None, "a corrupt value is removed, not served from the cache");
    h.storage.remove(keys::AUTH);
    assert!(h.session.current_user().is_none());
}

// ----- the read snapshot (what a cache in front of storage may answer) -------------------------

#[test]
fn the_read_snapshot_answers_what_the_reads_answer() {
    let h = harness(|_| panic!("no request expected"));
    let empty = h.session.read_snapshot();
    assert_eq!((empty.token, empty.user, empty.roles.len()), (None, None, 0));
    assert!(
        empty.window.expired(NOW) && !empty.window.about_to_expire(NOW),
        "no token: expired, never about to expire"
    );

    let token = jwt("acme", &["cashier"]);
    h.session.save_token("Auth", &token, 900.0).unwrap();
    let snap = h.session.read_snapshot();
    assert_eq!(snap.token.as_deref(), Some(token.as_str()));
    assert_eq!(snap.roles, h.session.current_roles());
    assert_eq!(snap.user, h.session.current_user());
    assert!(snap.token_usable);
    for now in [NOW, NOW + 900_000 - 60_001, NOW + 900_000 - 60_000, NOW + 899_999, NOW + 900_000] {
        h.clock.0.set(now);
        assert_eq!(snap.window.expired(now), h.session.is_token_expired(), "expired at {now}");
        assert_eq!(snap.window.about_to_expire(now), h.session.is_about_to_expire(), "about to expire at {now}");
    }
}

/// A sign-out's handlers see the snapshot of their phase, and every phase change is announced
/// (a cache of the reads would otherwise hand out a token the session now refuses).
#[test]
fn phase_changes_are_announced_and_the_snapshot_follows_them() {
    use crate::core::hooks::SignOutReason;
    for (reason, usable_inside) in [(SignOutReason::Logout, true), (SignOutReason::RefreshRejected, false)] {
        let (h, _) = logged_in();
        let seen = Rc::new(RefCell::new(Vec::new()));
        let (session, storage, seen_in) = (h.session.clone(), h.storage.clone(), seen.clone());
        h.session.hooks().sign_out.register(Rc::new(move |_| {
            let snap = session.read_snapshot();
            seen_in.borrow_mut().push((snap.token.is_some(), snap.token_usable, storage.reads_changed.get()));
            Box::pin(async { Ok(()) })
        }));
        let before = h.storage.reads_changed.get();
        block_on(h.session.sign_out(reason));
        assert_eq!(*seen.borrow(), vec![(true, usable_inside, before + 1)], "{reason:?}: inside the handler");
        assert_eq!(h.storage.reads_changed.get(), before + 2, "{reason:?}: the end of the sign-out is announced too");
        assert!(h.session.read_snapshot().token_usable);
    }
}

/// Callers during one refresh are handed that refresh, and all get its answer.
#[test]
fn callers_during_a_refresh_are_handed_the_same_flight() {
    use crate::core::session::TokenAnswer;
    let (h, _) = logged_in();
    expire(&h);
    let (TokenAnswer::After(first), TokenAnswer::After(second)) = (h.session.token_answer(), h.session.token_answer())
    else {
        panic!("an expired token is answered after a refresh");
    };
    assert!(first.ptr_eq(&second), "one flight for both");
    let token = block_on(first).token().expect("refreshed");
    assert_eq!(block_on(second).token().as_deref(), Some(token.as_str()));
    assert!(matches!(h.session.token_answer(), TokenAnswer::Now(Some(t)) if t == token), "then answered at once");
    assert_eq!(h.transport.requests.borrow().iter().filter(|r| r.url.ends_with("/auth/refresh")).count(), 1);
}

// ----- the device's key and logout's scopes ----------------------------------------------------

fn body_of(r: &HttpRequest) -> Value {
    serde_json::from_str(r.body.as_deref().unwrap()).unwrap()
}

fn sent_to(h: &H, path: &str) -> Vec<Value> {
    let url = format!("http://server.test{path}");
    h.transport.requests.borrow().iter().filter(|r| r.url == url).map(body_of).collect()
}

fn proofs_asked(h: &H) -> Vec<(String, Option<(String, String)>)> {
    let requests = h.transport.requests.borrow();
    requests.iter().map(|r| (r.url.trim_start_matches("http://server.test").to_owned(), r.prove.clone())).collect()
}

#[test]
fn a_registered_device_asks_for_its_keys_proof_at_login_and_refresh_only() {
    let (h, _) = logged_in();
    *h.key.public.borrow_mut() = Some("04ab".into());
    assert!(block_on(h.session.refresh_authentication()));
    block_on(h.session.register_device());
    assert_eq!(sent_to(&h, "/auth/connect")[0]["publicKey"], "04ab");
    assert!(block_on(h.session.login("alice", "alice-pass")).is_success());
    assert!(block_on(h.session.refresh_authentication()));
    block_on(h.session.update_device_status(true));
    let nonce = || Some(("http://server.test/auth/device-nonce".to_owned(), "POST /auth".to_owned()));
    let refresh = || Some(("http://server.test/auth/device-nonce".to_owned(), "POST /auth/refresh".to_owned()));
    assert_eq!(
        proofs_asked(&h),
        [
            ("/auth/refresh".to_owned(), None),
            ("/auth/connect".to_owned(), None),
            ("/auth".to_owned(), nonce()),
            ("/auth/refresh".to_owned(), refresh()),
            ("/auth/status".to_owned(), None),
        ],
        "a device not registered yet has nothing to prove; only sign-ins and refreshes carry proofs"
    );
}

#[test]
fn a_custom_refresh_path_still_signs_the_protocols_route() {
    let company = Rc::new(RefCell::new("acme".to_string()));
    let mut inner = server(company);
    let h = harness(move |req| {
        let mut req = req.clone();
        req.url = req.url.replace("/api/renew", "/auth/refresh");
        inner(&req)
    });
    let session = h.second_session(SessionConfig {
        refresh_path: "/api/renew".into(),
        ..SessionConfig::new("http://server.test").unwrap()
    });
    assert!(block_on(session.login("alice", "alice-pass")).is_success());
    block_on(session.register_device());
    assert!(block_on(session.refresh_authentication()));
    let last = h.transport.requests.borrow().last().cloned().unwrap();
    assert_eq!(last.url, "http://server.test/api/renew");
    assert_eq!(last.prove.map(|(_, route)| route).as_deref(), Some("POST /auth/refresh"));
}

#[test]
fn a_device_without_a_key_registers_no_key() {
    let (h, _) = logged_in();
    block_on(h.session.register_device());
    assert_eq!(sent_to(&h, "/auth/connect")[0].get("publicKey"), None);
}

#[test]
fn logout_others_asks_the_server_and_keeps_this_session() {
    let (h, _) = logged_in();
    let result = block_on(h.session.logout(LogoutScope::Others));
    assert!(result.success, "{result:?}");
    assert_eq!(sent_to(&h, "/auth/logout"), [json!({"deviceId": null, "complete": false, "scope": "others"})]);
    assert_eq!(h.transport.requests.borrow()[0].bearer, Some(jwt("acme", &["cashier"])));
    assert!(h.storage.get(keys::AUTH).is_some() && h.storage.get(keys::REFRESH).is_some(), "this session goes on");
}

#[test]
fn logout_global_tells_the_server_its_scope_then_signs_out_here() {
    let (h, _) = logged_in();
    let result = block_on(h.session.logout(LogoutScope::Global));
    assert!(result.success, "{result:?}");
    let logouts = sent_to(&h, "/auth/logout");
    assert_eq!(logouts[0], json!({"deviceId": null, "complete": false, "scope": "global"}));
    assert_eq!(logouts[1], json!({"deviceId": null, "complete": true, "scope": "global"}));
    assert!(h.storage.get(keys::AUTH).is_none(), "signed out here");
}

#[test]
fn a_refused_logout_is_answered_and_the_local_sign_out_still_happens() {
    let h = harness(|req| match req.url.as_str() {
        "http://server.test/auth" => ok(auth_body(&jwt("acme", &["cashier"]), "r0", false)),
        _ => status(401, "session_ended"),
    });
    assert!(block_on(h.session.login("alice", "alice-pass")).is_success());
    let result = block_on(h.session.logout(LogoutScope::Global));
    assert_eq!((result.success, result.code.as_deref(), result.status), (false, Some("session_ended"), 401));
    assert!(h.storage.get(keys::AUTH).is_none());
    let result = block_on(h.session.logout(LogoutScope::Local));
    assert_eq!(result.code.as_deref(), Some("not_signed_in"), "no session: nothing asked");
}

/// `auth.fetch`'s replay asks the one rule the tabs follow ([`super::auth_state`]'s `classify`):
/// a request goes again only with a refresh of the session it was sent with.
#[test]
fn a_request_may_go_again_only_with_a_refresh_of_its_session() {
    let h = harness(|_| status(500, "unused"));
    let token = |user: &str, company: &str, sid: Option<&str>| {
        let mut c = json!({"sub": user, "userId": user, "companyId": company, "exp": NOW / 1000 + 900});
        if let Some(sid) = sid {
            c["sid"] = json!(sid);
        }
        encode_for_test(&c)
    };
    let sent = token("u", "acme", Some("s1"));
    let stored_now = |t: &str| {
        h.storage.set(keys::AUTH, t).unwrap();
        h.session.may_replay(&sent)
    };
    assert!(!stored_now(&sent), "the same token: nothing to replay with");
    // A refresh: another token of the same session (here with another expiry).
    let refreshed = encode_for_test(&json!({"sub": "u", "userId": "u", "companyId": "acme", "sid": "s1", "exp": 1}));
    assert!(stored_now(&refreshed));
    // The issuer's `sid` on one side only is a refresh, as the tabs read it.
    assert!(stored_now(&token("u", "acme", None)));
    assert!(!stored_now(&token("u", "acme", Some("s2"))), "another session of the same user");
    assert!(!stored_now(&token("v", "acme", Some("s1"))), "another user");
    assert!(!stored_now(&token("u", "globex", Some("s1"))), "a company change");
    h.storage.remove(keys::AUTH);
    assert!(!h.session.may_replay(&sent), "signed out");
    h.storage.set(keys::AUTH, &refreshed).unwrap();
    assert!(!h.session.may_replay("not a token"));
}
