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
