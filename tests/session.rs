//! The session broker in real browsers: real localStorage, real fetch, real IndexedDB, against
//! the mock server that tests/run-browser.sh starts on a free port.
#![cfg(target_arch = "wasm32")]

mod support;

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::json;
use session_broker::js::AuthManager;
use support::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const SESSION_KEYS: [&str; 6] = [
    "X-Docdb-Headers-Local",
    "X-Docdb-Headers-Remote",
    "serviceProxyToken-Auth",
    "serviceProxyToken-Refresh",
    "serviceProxyToken-expiresAt-Auth",
    "serviceProxyToken-expiresAt-Refresh",
];

fn keys() -> Vec<String> {
    storage_snapshot().into_iter().map(|(k, _)| k).collect()
}

/// Makes the stored access token expired (margin included) without touching the refresh token.
fn expire(m: &AuthManager) {
    let token = item("serviceProxyToken-Auth").unwrap();
    m.save_token("Auth".into(), token.into(), 0.into()).unwrap();
}

#[wasm_bindgen_test]
async fn login_writes_exactly_the_documented_keys() {
    fresh().await;
    let m = manager();
    let before = js_sys::Date::now();
    let r = login(&m, "alice").await;
    assert_eq!(r["user"]["companyId"], "acme");
    assert_eq!(r["user"]["roles"], json!(["cashier"]));
    assert_eq!(keys(), SESSION_KEYS);
    let expires: f64 = item("serviceProxyToken-expiresAt-Auth").unwrap().parse().unwrap();
    assert!(expires >= before + 900_000.0 && expires <= js_sys::Date::now() + 900_000.0);
    let refresh_expires: f64 = item("serviceProxyToken-expiresAt-Refresh").unwrap().parse().unwrap();
    assert!(refresh_expires > expires);
    let remote: serde_json::Value = serde_json::from_str(&item("X-Docdb-Headers-Remote").unwrap()).unwrap();
    assert!(remote["X-Docdb-Token"].is_string());
    assert_eq!(json(&m.get_docdb_headers("Local".into()).unwrap())["X-Docdb-User"], "user-alice");
    assert!(m.check_if_logged_in());
    assert!(!m.is_token_expired());
    assert_eq!(m.get_current_roles(), vec!["cashier".to_string()]);
    assert_eq!(json(&m.get_current_company()), json!({"id": "acme"}));
    assert_eq!(AuthManager::token_prefix(), "serviceProxyToken");
}

#[wasm_bindgen_test]
async fn failed_login_touches_nothing() {
    fresh().await;
    let m = manager();
    login(&m, "alice").await;
    m.track_local_database("alice-orders".into(), None).unwrap();
    create_idb("alice-orders").await;
    let log = Rc::new(RefCell::new(Vec::new()));
    m.register_on_sign_out(recorder(&log, "signOut")).unwrap();
    m.register_on_login(recorder(&log, "login")).unwrap();
    let before = storage_snapshot();
    let r = value(m.login(js(json!({"username": "alice", "password": "wrong"}))).unwrap()).await;
    assert_eq!(r["success"], false);
    assert_eq!(r["status"], 401);
    assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()));
    assert_eq!(storage_snapshot(), before, "localStorage untouched");
    assert!(log.borrow().is_empty(), "no handler ran: {:?}", log.borrow());
    assert!(idb_exists("alice-orders").await, "local data untouched");
    // Unreachable server: status 0, still nothing touched.
    let offline = manager_for("http://127.0.0.1:9");
    let r = value(offline.login(js(json!({"username": "alice", "password": "alice-pass"}))).unwrap()).await;
    assert_eq!((r["success"].clone(), r["status"].clone()), (json!(false), json!(0)));
    assert_eq!(storage_snapshot(), before);
}

#[wasm_bindgen_test]
async fn login_cleanup_destroys_the_previous_tenants_databases_before_handlers_see_the_new_user() {
    fresh().await;
    let m = manager();
    login(&m, "bob").await;
    create_idb("globex-catalog").await;
    create_idb("_pouch_globex-catalog").await;
    m.track_local_database("globex-catalog".into(), None).unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    m.register_on_sign_out(recorder(&log, "signOut")).unwrap();
    m.register_on_login(recorder(&log, "login")).unwrap();
    login(&m, "alice").await;
    assert!(!idb_exists("globex-catalog").await);
    assert!(!idb_exists("_pouch_globex-catalog").await);
    assert!(m.get_tracked_local_databases().is_empty());
    let log = log.borrow();
    // Another tenant's login: a final push would go with bob's own headers, never alice's.
    assert_eq!(log[0], r#"signOut {"hadSession":true,"headers":"previous","reason":"login"}"#);
    assert!(log[1].starts_with("login {") && log[1].contains(r#""companyId":"acme""#), "{log:?}");
}

#[wasm_bindgen_test]
async fn refresh_rewrites_the_token_pair() {
    fresh().await;
    let m = manager();
    login(&m, "alice").await;
    let (auth, refresh) = (item("serviceProxyToken-Auth"), item("serviceProxyToken-Refresh"));
    let log = Rc::new(RefCell::new(Vec::new()));
    m.register_on_token_refresh(recorder(&log, "refresh")).unwrap();
    assert_eq!(value(m.refresh_authentication()).await, json!(true));
    assert_ne!(item("serviceProxyToken-Refresh"), refresh);
    assert_ne!(item("serviceProxyToken-Auth"), auth, "a new JWT (its iat moved or its jti differs)");
    assert_eq!(m.get_refresh_token().as_string(), item("serviceProxyToken-Refresh"));
    let log = log.borrow();
    assert_eq!(log.len(), 1);
    assert!(log[0].contains(r#""companyChanged":false"#) && log[0].contains(r#""roles":["cashier"]"#), "{log:?}");
}

#[wasm_bindgen_test]
async fn concurrent_get_token_on_an_expired_token_sends_one_refresh() {
    fresh().await;
    let m = manager();
    login(&m, "alice").await;
    // Counted before the expiry: awaiting after it would let the proactive refresh that the
    // expiry arms (autoRefresh is on by default) reach the server first, uncounted. Here it
    // runs after both calls below and joins their flight, so the one request covers all three.
    let before = hits("POST /auth/refresh").await;
    expire(&m);
    assert!(m.is_token_expired());
    let both = js_sys::Array::of2(&m.get_token(), &m.get_token());
    let tokens = json(&resolve(js_sys::Promise::all(&both)).await.unwrap());
    assert_eq!(hits("POST /auth/refresh").await, before + 1, "one request for two callers and the proactive refresh");
    assert!(tokens[0].is_string());
    assert_eq!(tokens[0], tokens[1]);
    assert_eq!(tokens[0].as_str(), item("serviceProxyToken-Auth").as_deref());
    assert!(!m.is_token_expired());
}

#[wasm_bindgen_test]
async fn company_change_on_refresh_destroys_local_data_and_same_company_keeps_it() {
    fresh().await;
    let m = manager();
    login(&m, "carol").await;
    create_idb("acme-orders").await;
    m.track_local_database("acme-orders".into(), None).unwrap();
    // Same company: the offline data stays.
    assert_eq!(value(m.refresh_authentication()).await, json!(true));
    assert!(idb_exists("acme-orders").await);
    assert_eq!(m.get_tracked_local_databases(), vec!["acme-orders".to_string()]);
    // The backend switches carol to globex; the next refresh carries it.
    let log = Rc::new(RefCell::new(Vec::new()));
    m.register_on_sign_out(recorder(&log, "signOut")).unwrap();
    m.register_on_token_refresh(recorder(&log, "refresh")).unwrap();
    let token = value(m.get_token()).await;
    let (status, _) = post_with_token("/auth/company", token.as_str().unwrap(), json!({"companyId": "globex"})).await;
    assert_eq!(status, 200);
    assert_eq!(value(m.refresh_authentication()).await, json!(true));
    assert!(!idb_exists("acme-orders").await, "the previous tenant's database is gone");
    assert!(m.get_tracked_local_databases().is_empty());
    assert_eq!(json(&m.get_current_company()), json!({"id": "globex"}));
    let log = log.borrow();
    assert_eq!(log[0], r#"signOut {"hadSession":true,"headers":"previous","reason":"company-change"}"#);
    assert!(log[1].contains(r#""companyChanged":true"#), "{log:?}");
}

#[wasm_bindgen_test]
async fn sign_out_calls_the_server_then_handlers_then_clears_keys() {
    fresh().await;
    let m = manager();
    login(&m, "alice").await;
    let device = value(m.register_device()).await;
    let device_id = device["deviceId"].as_str().unwrap().to_owned();
    m.track_local_database("kept-for-next-login".into(), None).unwrap();
    let before = hits("POST /auth/logout").await;
    // The handler looks at the world as it runs: server already told, token still there.
    let seen = Rc::new(RefCell::new(None));
    let seen_in = seen.clone();
    let handler = Closure::<dyn FnMut(JsValue) -> js_sys::Promise>::new(move |_e: JsValue| {
        let seen = seen_in.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            *seen.borrow_mut() = Some((hits("POST /auth/logout").await, item("serviceProxyToken-Auth").is_some()));
            Ok(JsValue::UNDEFINED)
        })
    });
    m.register_on_sign_out(handler.into_js_value().unchecked_into()).unwrap();
    resolve(m.logout(None)).await.unwrap();
    assert_eq!(*seen.borrow(), Some((before + 1, true)));
    for key in SESSION_KEYS {
        assert_eq!(item(key), None, "{key}");
    }
    assert_eq!(item("serviceProxyToken-deviceId"), Some(device_id), "same device");
    assert_eq!(m.get_tracked_local_databases(), vec!["kept-for-next-login".to_string()]);
    assert!(!m.check_if_logged_in());
    assert_eq!(json(&m.get_current_company()), serde_json::Value::Null);
    // The logout, then its completion once the handlers had run.
    assert_eq!(hits("POST /auth/logout").await, before + 2);
    // Without a token, sign-out sends nothing.
    resolve(m.sign_out()).await.unwrap();
    assert_eq!(hits("POST /auth/logout").await, before + 2);
}

#[wasm_bindgen_test]
async fn a_throwing_or_rejecting_hook_does_not_stop_the_next() {
    fresh().await;
    let m = manager();
    let log = Rc::new(RefCell::new(Vec::new()));
    m.register_on_login(js_fn("user", "throw new Error('first handler broke')")).unwrap();
    m.register_on_login(js_fn("user", "return Promise.reject(new Error('second handler rejected'))")).unwrap();
    m.register_on_login(recorder(&log, "third")).unwrap();
    let unsubscribe = m.register_on_login(recorder(&log, "removed")).unwrap();
    unsubscribe.call0(&JsValue::UNDEFINED).unwrap();
    login(&m, "alice").await;
    assert_eq!(log.borrow().len(), 1);
    assert!(log.borrow()[0].starts_with("third "));
}

#[wasm_bindgen_test]
async fn async_handlers_are_awaited_in_order() {
    fresh().await;
    let m = manager();
    m.register_on_login(js_fn("u", "return new Promise(r => setTimeout(() => { globalThis.__order = (globalThis.__order || '') + 'a'; r(); }, 30))")).unwrap();
    m.register_on_login(js_fn("u", "globalThis.__order = (globalThis.__order || '') + 'b';")).unwrap();
    js_sys::Reflect::set(&js_sys::global(), &"__order".into(), &"".into()).unwrap();
    login(&m, "alice").await;
    assert_eq!(js_sys::Reflect::get(&js_sys::global(), &"__order".into()).unwrap().as_string().unwrap(), "ab");
}

#[wasm_bindgen_test]
async fn a_401_on_refresh_logs_out() {
    fresh().await;
    let m = manager();
    login(&m, "alice").await;
    let log = Rc::new(RefCell::new(Vec::new()));
    m.register_on_sign_out(recorder(&log, "signOut")).unwrap();
    m.save_token("Refresh".into(), "not-a-token-the-server-issued".into(), 3600.into()).unwrap();
    expire(&m);
    assert_eq!(value(m.get_token()).await, serde_json::Value::Null);
    assert!(!m.check_if_logged_in());
    for key in SESSION_KEYS {
        assert_eq!(item(key), None, "{key}");
    }
    assert_eq!(*log.borrow(), vec![r#"signOut {"hadSession":true,"reason":"refresh-rejected"}"#.to_string()]);
}

#[wasm_bindgen_test]
async fn an_unreachable_server_keeps_the_session() {
    fresh().await;
    login(&manager(), "alice").await;
    let offline = manager_for("http://127.0.0.1:9");
    expire(&offline);
    let before = storage_snapshot();
    assert_eq!(value(offline.get_token()).await, serde_json::Value::Null);
    assert_eq!(storage_snapshot(), before, "tokens kept for the next try");
    assert!(offline.check_if_logged_in());
    // Back online, the same session refreshes.
    assert!(value(manager().get_token()).await.is_string());
}

#[wasm_bindgen_test]
async fn device_registration_needs_a_token_and_persists_the_device_id() {
    fresh().await;
    let m = manager();
    let before = hits("POST /auth/connect").await;
    let r = value(m.register_device()).await;
    assert_eq!(r["success"], false);
    assert!(r["error"].is_string());
    assert_eq!(hits("POST /auth/connect").await, before, "no request without a token");
    login(&m, "alice").await;
    m.update_device_info(js(json!({"name": "till 3"}))).unwrap();
    let r = value(m.register_device()).await;
    let id = r["deviceId"].as_str().unwrap();
    assert_eq!(item("serviceProxyToken-deviceId").as_deref(), Some(id));
    let info = json(&m.get_device_info());
    assert_eq!(
        (info["id"].as_str(), info["name"].as_str(), info["sdkVersion"].as_str(), info["platform"].as_str()),
        (Some(id), Some("till 3"), Some("1.4.17"), Some("web"))
    );
    let s = value(m.update_device_status(js(json!({"isOnline": false}))).unwrap()).await;
    assert_eq!(s["success"], true);
    let err = m.update_device_status(js(json!({"isOnline": "no"}))).unwrap_err();
    assert_eq!(json(&js_sys::Reflect::get(&err, &"code".into()).unwrap()), "invalid_argument");
}

#[wasm_bindgen_test]
async fn permissions_follow_the_roles() {
    fresh().await;
    let m = manager();
    assert!(m.get_current_roles().is_empty());
    login(&m, "keys").await;
    assert_eq!(value(m.has_permission("rollingDb:flags".into()).unwrap()).await, json!(true));
    assert_eq!(value(m.has_permission("rollingDb:read".into()).unwrap()).await, json!(false));
    assert!(m.require_permission("crons:run".into()).is_ok());
    let err = m.require_permission("crons:read".into()).unwrap_err();
    let err: js_sys::Error = err.dyn_into().expect("a real Error");
    assert_eq!(String::from(err.name()), "SessionBrokerError");
    assert_eq!(js_sys::Reflect::get(&err, &"code".into()).unwrap(), "permission_denied");
    let custom =
        AuthManager::new(js(json!({"baseUrl": base_url(), "permissions": {"orders:void": ["key_manager"]}}))).unwrap();
    assert!(custom.require_permission("orders:void".into()).is_ok());
    // An action nobody knows is a mistake, not a "no" (thrown here; the entry module rejects).
    assert!(m.require_permission("orders:void".into()).is_err() && m.has_permission("crons:rnu".into()).is_err());
}

#[wasm_bindgen_test]
async fn corrupt_storage_is_treated_as_absent() {
    fresh().await;
    storage().set_item("serviceProxyToken-Auth", "garbage").unwrap();
    storage().set_item("serviceProxyToken-localDatabases", "{not json").unwrap();
    storage().set_item("X-Docdb-Headers-Remote", "[1,2").unwrap();
    let m = manager();
    assert!(!m.check_if_logged_in());
    assert!(m.get_current_roles().is_empty());
    assert!(m.get_tracked_local_databases().is_empty());
    assert_eq!(json(&m.get_docdb_headers("Remote".into()).unwrap()), serde_json::Value::Null);
    assert_eq!(value(m.get_token()).await, serde_json::Value::Null);
    assert!(storage_snapshot().is_empty(), "corrupt values removed");
}

#[wasm_bindgen_test]
fn bad_options_and_arguments_throw_session_broker_errors() {
    for bad in [
        json!({}),
        json!({"baseUrl": 7}),
        json!({"baseUrl": "not a url"}),
        json!({"baseUrl": "http://x", "timeoutMs": -1}),
    ] {
        let err = AuthManager::new(js(bad.clone())).err().unwrap_or_else(|| panic!("{bad} accepted"));
        assert_eq!(js_sys::Reflect::get(&err, &"code".into()).unwrap(), "invalid_argument", "{bad}");
    }
    assert!(AuthManager::new(JsValue::UNDEFINED).is_err());
    let m = manager();
    assert!(m.save_token("Bearer".into(), "x".into(), 1.into()).is_err());
    assert!(m.get_docdb_headers("Elsewhere".into()).is_err());
    assert!(m.track_local_database(5.into(), None).is_err());
    // An object is a local PouchDB or nothing: no name, no destroy, or a remote one is refused.
    let remote = js_sys::Function::new_no_args("return { name: 'http://x/db', adapter: 'http', destroy() {} }")
        .call0(&JsValue::NULL)
        .unwrap();
    for bad in [js(json!({})), js(json!({"name": "orders"})), remote] {
        let err = m.track_local_database(bad, None).err().expect("refused");
        assert_eq!(js_sys::Reflect::get(&err, &"code".into()).unwrap(), "invalid_argument");
    }
    assert!(!m.get_tracked_local_databases().iter().any(|n| n == "orders" || n == "http://x/db"));
    // pushTo: a local PouchDB's only, and "dynamic" or {database: string}; nothing tracked otherwise.
    use wasm_bindgen::JsCast;
    let local = js_sys::Function::new_no_args("return { name: 'till', adapter: 'idb', destroy() {} }")
        .call0(&JsValue::NULL)
        .unwrap();
    let options = |v: serde_json::Value| Some(js(v).unchecked_into::<session_broker::js::types::TrackOptionsArg>());
    for (db, bad) in [
        (JsValue::from("till"), json!({"pushTo": "dynamic"})),
        (local.clone(), json!({"pushTo": "static"})),
        (local.clone(), json!({"pushTo": {"database": 7}})),
        (local.clone(), json!({"pushTo": 7})),
        (local.clone(), json!({"pushTo": {"database": ""}})),
        (local.clone(), json!({"pushTo": {"database": "a\nb"}})),
        (local.clone(), json!({"pushTo": {"database": "../other"}})),
    ] {
        let err = m.track_local_database(db, options(bad.clone())).err().unwrap_or_else(|| panic!("{bad} accepted"));
        assert_eq!(js_sys::Reflect::get(&err, &"code".into()).unwrap(), "invalid_argument", "{bad}");
    }
    assert!(!m.get_tracked_local_databases().iter().any(|n| n == "till"));
    m.track_local_database(local, options(json!({"pushTo": {"database": "acme_orders"}}))).expect("a database by name");
    assert!(m.get_tracked_local_databases().iter().any(|n| n == "till"));
}

#[wasm_bindgen_test]
async fn absent_values_are_null_and_handlers_must_be_functions() {
    fresh().await;
    let m = manager();
    assert!(m.get_refresh_token().is_null(), "null, not undefined");
    assert!(m.get_current_user().is_null());
    assert!(m.get_current_company().is_null());
    assert!(m.register_on_login(JsValue::from_str("not a function")).is_err());
    assert!(m.register_on_sign_out(JsValue::NULL).is_err());
    login(&m, "alice").await;
    assert_eq!(m.get_refresh_token().as_string(), item("serviceProxyToken-Refresh"));
    // A negative lifetime stores an already expired token.
    let token = item("serviceProxyToken-Auth").unwrap();
    m.save_token("Auth".into(), token.into(), (-30).into()).unwrap();
    assert!(m.is_token_expired());
    assert!(!m.is_about_to_expire());
}

/// The browser decodes a JWT's payload (`atob`, core::codec) as the base64 crate does natively:
/// base64url padded or not, UTF-8 claims, and nothing outside that alphabet.
#[wasm_bindgen_test]
async fn jwt_payloads_decode_in_the_browser_as_natively() {
    fresh().await;
    let m = manager();
    let padded = "eyJzdWIiOiJ1IiwibmFtZSI6IsOpfn5-IiwiZXhwIjo0MTAyNDQ0ODAwfQ==";
    for payload in [padded, padded.trim_end_matches('=')] {
        m.save_token("Auth".into(), ["eyJhbGciOiJIUzI1NiJ9.", payload, ".c2ln"].concat().into(), 60.into()).unwrap();
        assert_eq!(json(&m.get_current_user())["name"], "é~~~", "{payload}");
    }
    for bad in [padded.replace('-', "+"), padded.replace("==", "="), [padded, "="].concat(), padded.replace('J', " J")]
    {
        assert!(
            m.save_token("Auth".into(), ["eyJhbGciOiJIUzI1NiJ9.", &bad, ".c2ln"].concat().into(), 60.into()).is_err(),
            "{bad}"
        );
    }
}
