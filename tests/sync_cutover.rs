//! The catalogue cutover on a real device: SyncSession against the mock server, real WebSocket,
//! real IndexedDB, in both browsers.
#![cfg(target_arch = "wasm32")]

mod support;

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{json, Value};
use session_broker::js::SyncSession;
use support::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const LEGACY: &str = "dev_acme_main_catalog";
const CORE: &str = "dev_acme_main_core";

async fn delete_idb(name: &str) {
    let factory = web_sys::window().unwrap().indexed_db().unwrap().unwrap();
    let req = factory.delete_database(name).unwrap();
    let done = js_sys::Promise::new(&mut |resolve, reject| {
        req.set_onsuccess(Some(&resolve));
        req.set_onerror(Some(&reject));
    });
    wasm_bindgen_futures::JsFuture::from(done).await.unwrap();
}

/// A fresh server seed, page storage and local catalogues.
async fn fresh_device() {
    fresh().await;
    for name in [LEGACY, CORE] {
        delete_idb(name).await;
    }
}

fn record_events(sync: &SyncSession) -> Rc<RefCell<Vec<String>>> {
    let log = Rc::new(RefCell::new(Vec::new()));
    for name in ["ready", "invalidate-local", "bootstrapped", "error"] {
        sync.on(name.into(), recorder(&log, name)).unwrap();
    }
    log
}

fn count(log: &Rc<RefCell<Vec<String>>>, prefix: &str) -> usize {
    log.borrow().iter().filter(|e| e.starts_with(prefix)).count()
}

async fn connect(sync: &SyncSession) {
    resolve(sync.connect()).await.expect("connect resolves at ready");
}

#[wasm_bindgen_test]
async fn a_device_bootstraps_from_legacy_then_cuts_over_to_core() {
    fresh_device().await;
    let auth = manager();
    login(&auth, "alice").await;
    let sync = SyncSession::new(&auth, None).unwrap();
    let log = record_events(&sync);
    connect(&sync).await;
    assert_eq!(sync.get_state(), "ready");
    let routing = json(&sync.get_routing());
    assert_eq!((routing["database"].as_str(), routing["staticDb"].as_str()), (Some("legacy"), Some(LEGACY)));
    assert_eq!(idb_count(LEGACY).await, 17, "the legacy STATIC catalogue");
    assert_eq!(auth.get_tracked_local_databases(), vec![LEGACY.to_string()]);
    assert_eq!(count(&log, "bootstrapped"), 1);

    // The operator turns the canary on and runs the rotate; the connected device is closed,
    // reconnects, obeys invalidate-local and bootstraps from CORE.
    let admin = token_for("admin").await;
    let (status, _) =
        call("PATCH", "/admin/rolling-db/flags/acme", Some(&admin), Some(json!({"rollingDb": true}))).await;
    assert_eq!(status, 200);
    assert_eq!(run_cron(&admin, "rolling-db-rotate").await["status"], "succeeded");
    eventually("the device routes to CORE", || json(&sync.get_routing())["database"] == "core").await;
    eventually("ready again", || sync.get_state() == "ready").await;
    assert_eq!(count(&log, "invalidate-local"), 1);
    assert!(!idb_exists(LEGACY).await, "the legacy local database is gone");
    assert_eq!(idb_count(CORE).await, 17, "CORE's catalogue");
    assert_eq!(auth.get_tracked_local_databases(), vec![CORE.to_string()]);
    assert!(item("serviceProxyToken-lastInvalidation").is_some());

    // Reconnecting after having obeyed: no second invalidation, no second bootstrap.
    sync.close();
    eventually("closed", || sync.get_state() == "closed").await;
    connect(&sync).await;
    assert_eq!(count(&log, "invalidate-local"), 1);
    assert_eq!(count(&log, "bootstrapped"), 2);

    // Rollback: rollingDb off and invalidate; the device returns to legacy.
    call("PATCH", "/admin/rolling-db/flags/acme", Some(&admin), Some(json!({"rollingDb": false}))).await;
    let (status, _) = call("POST", "/admin/invalidate-clients/acme", Some(&admin), Some(json!({}))).await;
    assert_eq!(status, 200);
    eventually("the device routes back to legacy", || json(&sync.get_routing())["database"] == "legacy").await;
    eventually("ready again", || sync.get_state() == "ready").await;
    assert_eq!(count(&log, "invalidate-local"), 2);
    eventually("bootstrapped from legacy", || count(&log, "bootstrapped") == 3).await;
    assert!(!idb_exists(CORE).await);
    assert_eq!(idb_count(LEGACY).await, 17);

    // Sign-out closes the session, for good.
    resolve(auth.logout(None)).await.unwrap();
    eventually("closed on sign-out", || sync.get_state() == "closed").await;
    sleep(600).await;
    assert_eq!(sync.get_state(), "closed");
}

#[wasm_bindgen_test]
async fn a_device_on_an_old_sdk_is_routed_to_legacy() {
    fresh_device().await;
    let admin = token_for("admin").await;
    call("PATCH", "/admin/rolling-db/flags/acme", Some(&admin), Some(json!({"rollingDb": true}))).await;
    run_cron(&admin, "rolling-db-rotate").await;
    // A raw socket speaking the protocol as SDK 1.4.16 would, on a device it registered first
    // (the handshake updates registered devices only).
    let alice = token_for("alice").await;
    let (_, registered) = call("POST", "/auth/connect", Some(&alice), Some(json!({"sdkVersion": "1.4.16"}))).await;
    let device_id = registered["deviceId"].as_str().unwrap().to_owned();
    let url = format!("{}/realtime", base_url().replace("http://", "ws://"));
    let ws = web_sys::WebSocket::new(&url).unwrap();
    let frames = Rc::new(RefCell::new(Vec::<Value>::new()));
    let sink = frames.clone();
    let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
        sink.borrow_mut().push(serde_json::from_str(&e.data().as_string().unwrap()).unwrap());
    });
    ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    let init = json!({"type": "sdk:init", "payload": {"token": alice, "deviceId": device_id, "sdkVersion": "1.4.16", "lastInvalidation": null}}).to_string();
    let open_ws = ws.clone();
    let on_open = Closure::<dyn FnMut()>::new(move || {
        open_ws.send_with_str(&init).unwrap();
    });
    ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    eventually("ready from the server", || frames.borrow().iter().any(|f| f["type"] == "ready")).await;
    let ready = frames.borrow().iter().find(|f| f["type"] == "ready").unwrap().clone();
    assert_eq!(ready["payload"]["database"], "legacy");
    assert_eq!(ready["payload"]["staticDb"], LEGACY);
    ws.close().unwrap();
    // And the fleet view shows the old SDK, so an operator sees why.
    let (_, fleet) = call("GET", "/admin/rolling-db/tenants", Some(&admin), None).await;
    let acme = fleet["tenants"].as_array().unwrap().iter().find(|t| t["companyId"] == "acme").unwrap().clone();
    assert!(acme["devices"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["deviceId"] == device_id.as_str() && d["sdkVersion"] == "1.4.16"));
}

#[wasm_bindgen_test]
async fn a_bad_token_gets_the_error_frame_and_no_retry_storm() {
    fresh_device().await;
    let auth = manager();
    login(&auth, "alice").await;
    // A token with a valid shape and expiry, but not signed by the server.
    let forged = format!(
        "eyJhbGciOiJIUzI1NiJ9.{}.Zm9yZ2Vk",
        base64_url(
            &json!({"userId": "user-alice", "companyId": "acme", "roles": [], "exp": 4_000_000_000i64}).to_string()
        )
    );
    auth.save_token("Auth".into(), forged.into(), 3600.into()).unwrap();
    let sync = SyncSession::new(&auth, None).unwrap();
    let log = record_events(&sync);
    let before = hits("GET /realtime").await;
    let err = resolve(sync.connect()).await.expect_err("refused");
    assert_eq!(js_sys::Reflect::get(&err, &"code".into()).unwrap(), "realtime_refused");
    assert_eq!(sync.get_state(), "closed");
    assert!(log.borrow().iter().any(|e| e.starts_with("error ") && e.contains("invalid_token")), "{:?}", log.borrow());
    sleep(1500).await;
    assert_eq!(hits("GET /realtime").await, before + 1, "one attempt, no retries");
}

#[wasm_bindgen_test]
async fn connect_without_a_session_is_refused_at_once() {
    fresh_device().await;
    let sync = SyncSession::new(&manager(), None).unwrap();
    let err = resolve(sync.connect()).await.expect_err("no session");
    assert_eq!(js_sys::Reflect::get(&err, &"code".into()).unwrap(), "not_signed_in");
    assert!(SyncSession::new(&manager(), Some(js(json!({"url": "http://not-a-socket"})).unchecked_into())).is_err());
    assert!(sync.on("nope".into(), js_fn("", "")).is_err());
}

fn base64_url(text: &str) -> String {
    let b64 = web_sys::window().unwrap().btoa(text).unwrap();
    b64.trim_end_matches('=').replace('+', "-").replace('/', "_")
}
