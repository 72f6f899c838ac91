//! The device key when its proof cannot be made or is refused, in the three engines, through a
//! relay that answers in the server's place: a nonce route answering anything but a nonce is a
//! passing failure (the session kept, nothing sent unproven), a browser holding a copy of another
//! browser's storage is signed out there alone, and a refusal of the proof posts no logout.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::browser::{repo_root, serve_with, Browser, Engine};
use super::device_key::{call, me, open, stored};
use super::relay::{Relay, Rewrite};
use mock_server::settings::Settings;

const NONCE: &str = "/auth/device-nonce";
const REFRESH: &str = "/auth/refresh";

fn signed_out(told: &Value) -> Vec<Value> {
    told.as_array().unwrap().iter().filter(|t| t[0] == "SIGNED_OUT").cloned().collect()
}

#[tokio::test]
#[ignore = "needs the built pkg/ and the browsers: run `make test-package`"]
async fn a_proof_that_cannot_be_made_keeps_the_session_and_a_copied_storage_ends_only_the_copy() {
    for engine in [Engine::Chromium, Engine::Firefox, Engine::WebKit] {
        let settings = Settings { test_controls: true, auth_rate_per_min: 0, ..Settings::default() };
        let (server, _state) = serve_with(repo_root().join("tests/device-key"), settings).await;
        let relay = Relay::start(&server).await;
        let base = relay.base.clone();
        let a = Browser::start_engine(engine).await;
        open(&a, &base).await;
        assert_eq!(call(&a, "login", json!("alice")).await["success"], true, "{engine:?}");
        let registered = call(&a, "register", Value::Null).await;
        assert!(registered["deviceId"].is_string(), "{engine:?}: {registered}");
        assert_eq!(call(&a, "refresh", Value::Null).await, true, "{engine:?}: a proven refresh");
        call(&a, "told", Value::Null).await;

        // The nonce route answering anything but a nonce: the refresh fails as a network failure.
        for (status, body) in [(404, "{}"), (408, "{}"), (429, "{}"), (503, "{}"), (200, "not json")] {
            let refresh_token = stored(&a, "serviceProxyToken-Refresh").await.unwrap();
            let access = stored(&a, "serviceProxyToken-Auth").await.unwrap();
            relay.take_seen();
            relay.set(Some((NONCE, Rewrite::Answer(status, body))));
            let refreshed = call(&a, "refresh", Value::Null).await;
            relay.set(None);
            let seen = relay.take_seen();
            let case = format!("{engine:?}, nonce answered {status} {body}");
            assert_ne!(refreshed, true, "{case}");
            assert!(seen.iter().any(|p| p == NONCE), "{case}: {seen:?}");
            assert!(!seen.iter().any(|p| p == REFRESH || p == "/auth/logout"), "{case}: sent unproven: {seen:?}");
            assert_eq!(stored(&a, "serviceProxyToken-Refresh").await, Some(refresh_token), "{case}: kept");
            assert_eq!(me(&server, &access).await, StatusCode::OK, "{case}: the session goes on");
            assert_eq!(signed_out(&call(&a, "told", Value::Null).await), Vec::<Value>::new(), "{case}");
            assert_eq!(call(&a, "refresh", Value::Null).await, true, "{case}: tried again, it refreshes");
        }

        // A's whole localStorage in a second browser (its own profile, no key of A's).
        let copy = call(&a, "storage", Value::Null).await;
        let a_access = stored(&a, "serviceProxyToken-Auth").await.unwrap();
        let b = Browser::start_engine(engine).await;
        open(&b, &base).await;
        call(&b, "restore", copy).await;
        open(&b, &base).await;
        relay.take_seen();
        let refreshed = call(&b, "refresh", Value::Null).await;
        let seen = relay.take_seen();
        assert_ne!(refreshed, true, "{engine:?}: the copy refreshes nothing");
        assert!(!seen.iter().any(|p| p == "/auth/logout"), "{engine:?}: the copy posted a logout: {seen:?}");
        assert_eq!(stored(&b, "serviceProxyToken-Auth").await, None, "{engine:?}: the copy cleared");
        assert_eq!(stored(&b, "serviceProxyToken-Refresh").await, None, "{engine:?}: the copy cleared");
        let told = call(&b, "told", Value::Null).await;
        assert_eq!(signed_out(&told), vec![json!(["SIGNED_OUT", "device-unproven"])], "{engine:?}: {told}");
        b.stop().await;
        assert_eq!(me(&server, &a_access).await, StatusCode::OK, "{engine:?}: the victim's token still works");
        assert_eq!(call(&a, "refresh", Value::Null).await, true, "{engine:?}: and its refresh token");

        // The server refusing the proof (as it would another key's): signed out here, no logout
        // posted, so the session this browser cannot prove is not ended for whoever holds the key.
        let a_access = stored(&a, "serviceProxyToken-Auth").await.unwrap();
        call(&a, "told", Value::Null).await;
        relay.take_seen();
        let refused = r#"{"error":"device_proof_required","message":"the device's proof is required"}"#;
        relay.set(Some((REFRESH, Rewrite::Answer(401, refused))));
        let refreshed = call(&a, "refresh", Value::Null).await;
        relay.set(None);
        let seen = relay.take_seen();
        assert_ne!(refreshed, true, "{engine:?}");
        assert!(!seen.iter().any(|p| p == "/auth/logout"), "{engine:?}: a logout posted: {seen:?}");
        let told = call(&a, "told", Value::Null).await;
        assert_eq!(signed_out(&told), vec![json!(["SIGNED_OUT", "device-unproven"])], "{engine:?}: {told}");
        assert_eq!(me(&server, &a_access).await, StatusCode::OK, "{engine:?}: the session was not ended");
        a.stop().await;
    }
}

/// A logout in one tab running while another tab's refresh of the same session lands (the relay
/// holds the refresh's answer and the logout's request): the logout wins, no credential of the session stays stored and both tabs are told.
#[tokio::test]
#[ignore = "needs the built pkg/ and the browsers: run `make test-package`"]
async fn a_logout_wins_over_another_tabs_refresh_of_the_same_session() {
    for engine in [Engine::Chromium, Engine::Firefox, Engine::WebKit] {
        let settings = Settings { test_controls: true, auth_rate_per_min: 0, ..Settings::default() };
        let (server, _state) = serve_with(repo_root().join("tests/device-key"), settings).await;
        let relay = Relay::start(&server).await;
        let b = Browser::start_engine(engine).await;
        open(&b, &relay.base).await;
        assert_eq!(call(&b, "login", json!("alice")).await["success"], true, "{engine:?}");
        assert!(call(&b, "register", Value::Null).await["deviceId"].is_string(), "{engine:?}");
        let first = b.client.window().await.unwrap();
        let second = b.client.new_window(true).await.unwrap().handle;
        b.client.switch_to_window(second.clone()).await.unwrap();
        open(&b, &relay.base).await;
        call(&b, "told", Value::Null).await;
        b.client.switch_to_window(first.clone()).await.unwrap();
        call(&b, "told", Value::Null).await;

        // The refresh reaches the server, its answer held while the other tab logs out; the
        // logout reaches the server after the refresh's answer landed in storage.
        relay.set(Some((REFRESH, Rewrite::DelayOnce(std::time::Duration::from_secs(3)))));
        relay.set(Some(("/auth/logout", Rewrite::HoldOnce(std::time::Duration::from_secs(4)))));
        b.client.execute("window.pending = window.sb.refresh();", vec![]).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        b.client.switch_to_window(second.clone()).await.unwrap();
        let out = call(&b, "logout", Value::Null).await;
        assert_eq!(out["success"], true, "{engine:?}: {out}");
        b.client.switch_to_window(first.clone()).await.unwrap();
        let script = "const done = arguments[0]; window.pending.then(done, (e) => done({thrown: String(e)}));";
        let refreshed = b.client.execute_async(script, vec![]).await.unwrap();
        let seen = relay.take_seen();
        let refresh_at = seen.iter().position(|p| p == REFRESH);
        let logout_at = seen.iter().position(|p| p == "/auth/logout");
        assert!(
            refresh_at.is_some() && refresh_at < logout_at,
            "{engine:?}: the race did not happen (the refresh answered {refreshed}): {seen:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;

        for (tab, handle) in [("the refreshing tab", first), ("the tab that logged out", second)] {
            b.client.switch_to_window(handle).await.unwrap();
            let storage = call(&b, "storage", Value::Null).await;
            assert_eq!(storage.get("serviceProxyToken-Auth"), None, "{engine:?}, {tab}: {storage}");
            assert_eq!(storage.get("serviceProxyToken-Refresh"), None, "{engine:?}, {tab}: {storage}");
            let told = call(&b, "told", Value::Null).await;
            assert!(!signed_out(&told).is_empty(), "{engine:?}, {tab}: told {told}");
            assert_eq!(call(&b, "authed", Value::Null).await, false, "{engine:?}, {tab}");
        }
        b.stop().await;
    }
}

/// One refresh (the nonce and the refresh) is one unit under the tabs' lock: with both held by the
/// relay, together longer than one request's timeout and the lock's old margin but each within its
/// timeout, a second tab's refresh waits for the first's outcome and never sends the same token.
#[tokio::test]
#[ignore = "needs the built pkg/ and the browsers: run `make test-package`"]
async fn a_slow_nonce_and_a_slow_refresh_stay_one_unit_under_the_tabs_lock() {
    for engine in [Engine::Chromium, Engine::Firefox, Engine::WebKit] {
        let settings =
            Settings { test_controls: true, auth_rate_per_min: 0, refresh_reuse_grace_secs: 0, ..Settings::default() };
        let (server, _state) = serve_with(repo_root().join("tests/device-key"), settings).await;
        let relay = Relay::start(&server).await;
        let page = format!("{}/index.html?timeout=8000", relay.base);
        let b = Browser::start_engine(engine).await;
        b.client.goto(&page).await.unwrap();
        b.wait_text("#out", "the page to load the package", |t| t == "ready").await;
        assert_eq!(call(&b, "login", json!("alice")).await["success"], true, "{engine:?}");
        assert!(call(&b, "register", Value::Null).await["deviceId"].is_string(), "{engine:?}");
        let first = b.client.window().await.unwrap();
        let second = b.client.new_window(true).await.unwrap().handle;
        b.client.switch_to_window(second.clone()).await.unwrap();
        b.client.goto(&page).await.unwrap();
        b.wait_text("#out", "the page to load the package", |t| t == "ready").await;
        call(&b, "told", Value::Null).await;
        b.client.switch_to_window(first.clone()).await.unwrap();
        call(&b, "told", Value::Null).await;
        relay.take_seen();

        let hold = std::time::Duration::from_millis(7_500);
        relay.set(Some((NONCE, Rewrite::HoldOnce(hold))));
        relay.set(Some((REFRESH, Rewrite::DelayOnce(hold))));
        b.client.execute("window.pending = window.sb.refresh();", vec![]).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        b.client.switch_to_window(second.clone()).await.unwrap();
        let second_refreshed = call(&b, "refresh", Value::Null).await;
        b.client.switch_to_window(first.clone()).await.unwrap();
        let script = "const done = arguments[0]; window.pending.then(done, (e) => done({thrown: String(e)}));";
        let first_refreshed = b.client.execute_async(script, vec![]).await.unwrap();
        relay.set(None);
        let seen = relay.take_seen();
        let case = format!("{engine:?}: refreshed {first_refreshed} and {second_refreshed}, {seen:?}");
        assert_eq!(first_refreshed, true, "{case}");
        assert!(!seen.iter().any(|p| p == "/auth/logout"), "{case}");
        for handle in [first, second] {
            b.client.switch_to_window(handle).await.unwrap();
            assert_eq!(signed_out(&call(&b, "told", Value::Null).await), Vec::<Value>::new(), "{case}");
            let access = stored(&b, "serviceProxyToken-Auth").await.unwrap_or_else(|| panic!("{case}"));
            assert_eq!(me(&server, &access).await, StatusCode::OK, "{case}: the session goes on");
        }
        assert_eq!(call(&b, "refresh", Value::Null).await, true, "{case}: and refreshes again");
        b.stop().await;
    }
}
