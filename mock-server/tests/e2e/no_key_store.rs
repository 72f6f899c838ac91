//! A browser where IndexedDB never opens keeps no device key: its device is registered without
//! one, and the server holds no key for it, so it signs in, refreshes and logs out unproven, as
//! before the device key, in the three engines (tests/device-key-attack/, its key store failing
//! from the page's start). A keyed device whose key store fails sends nothing unproven: that is
//! device_key_attack.rs's and proof_faults.rs's.

use serde_json::{json, Value};

use super::browser::{repo_root, serve_with, Browser, Engine};
use super::device_key::call;
use mock_server::settings::Settings;

#[tokio::test]
#[ignore = "needs the built pkg/ and the browsers: run `make test-package`"]
async fn a_device_registered_where_indexeddb_never_opens_signs_in_and_refreshes_unproven() {
    for engine in [Engine::Chromium, Engine::Firefox, Engine::WebKit] {
        let settings = Settings { test_controls: true, auth_rate_per_min: 0, ..Settings::default() };
        let (base, _state) = serve_with(repo_root().join("tests/device-key-attack"), settings).await;
        let b = Browser::start_engine(engine).await;
        // `{"idb":true}`: every IndexedDB open throws, from before the package loads.
        b.client.goto(&format!("{base}/index.html?faults=%7B%22idb%22%3Atrue%7D")).await.unwrap();
        b.wait_text("#out", "the page to load the package", |t| t == "ready").await;
        assert_eq!(call(&b, "login", json!("alice")).await["success"], true, "{engine:?}");
        let registered = call(&b, "register", Value::Null).await;
        assert!(registered["deviceId"].is_string(), "{engine:?}: {registered}");
        let storage = call(&b, "storage", Value::Null).await;
        assert_eq!(storage.get("serviceProxyToken-deviceKeyed"), None, "{engine:?}: registered without a key");
        call(&b, "sent", Value::Null).await;

        let login = call(&b, "login", json!("alice")).await;
        assert_eq!(login["success"], true, "{engine:?}: the registered device signs in: {login}");
        assert_eq!(call(&b, "refresh", Value::Null).await, true, "{engine:?}: and refreshes");
        let logout = call(&b, "logout", Value::Null).await;
        assert_eq!(logout["success"], true, "{engine:?}: and logs out: {logout}");
        let sent = call(&b, "sent", Value::Null).await;
        let paths: Vec<&str> = sent.as_array().unwrap().iter().filter_map(|r| r["url"].as_str()).collect();
        assert_eq!(
            paths,
            ["/auth", "/auth/refresh", "/auth/logout", "/auth/logout"],
            "{engine:?}: no nonce asked, nothing proven: {sent}"
        );
        b.stop().await;
    }
}
