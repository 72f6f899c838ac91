//! The device's key in real browsers (tests/device-key/): registration keeps a non-extractable
//! key in IndexedDB that survives a reload and spares the device the account's lock, a refresh
//! token copied out of the browser's localStorage is refused elsewhere, and logout's scopes end
//! the sessions of another browser.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::browser::{repo_root, serve_with, Browser, Engine};
use mock_server::settings::Settings;

pub async fn open(b: &Browser, base: &str) {
    b.client.goto(&format!("{base}/index.html")).await.unwrap();
    b.wait_text("#out", "the page to load the package", |t| t == "ready").await;
}

/// `window.sb[what](arg)` in the page, awaited.
pub async fn call(b: &Browser, what: &str, arg: Value) -> Value {
    let script =
        "const [what, arg, done] = arguments; window.sb[what](arg).then(done, (e) => done({thrown: String(e)}));";
    b.client.execute_async(script, vec![what.into(), arg]).await.unwrap()
}

async fn post(base: &str, path: &str, token: Option<&str>, body: Value) -> (StatusCode, Value) {
    let mut request = reqwest::Client::new().post(format!("{base}{path}")).json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    (response.status(), response.json().await.unwrap_or(Value::Null))
}

pub async fn me(base: &str, token: &str) -> StatusCode {
    reqwest::Client::new().get(format!("{base}/users/me")).bearer_auth(token).send().await.unwrap().status()
}

pub async fn stored(b: &Browser, key: &str) -> Option<String> {
    call(b, "storage", Value::Null).await[key].as_str().map(str::to_owned)
}

#[tokio::test]
#[ignore = "needs the built pkg/ and the browsers: run `make test-package`"]
async fn the_device_key_survives_a_reload_binds_the_refresh_token_and_logout_scopes_reach_other_browsers() {
    for engine in [Engine::Chromium, Engine::Firefox, Engine::WebKit] {
        // The per-address limit off: the account's own lock is what is tested.
        let settings = Settings { test_controls: true, auth_rate_per_min: 0, ..Settings::default() };
        let (base, state) = serve_with(repo_root().join("tests/device-key"), settings).await;
        let a = Browser::start_engine(engine).await;
        open(&a, &base).await;
        assert_eq!(call(&a, "login", json!("alice")).await["success"], true, "{engine:?}");
        let registered = call(&a, "register", Value::Null).await;
        let device = registered["deviceId"].as_str().unwrap_or_else(|| panic!("{engine:?}: {registered}")).to_owned();
        assert_eq!(call(&a, "keyKept", Value::Null).await, true, "{engine:?}: the key is in IndexedDB");
        let storage = call(&a, "storage", Value::Null).await.to_string();
        assert!(
            !storage.contains("publicKey") && !storage.to_lowercase().contains("privatekey"),
            "{engine:?}: {storage}"
        );

        // Reloaded: the key is still there. The device signs in with it once (from then on its
        // key spares it the account's lock), then proves it while the account is locked.
        open(&a, &base).await;
        assert_eq!(call(&a, "login", json!("alice")).await["success"], true, "{engine:?}: a sign-in with the key");
        for i in 0..6 {
            post(&base, "/auth", None, json!({"username": "alice", "password": format!("guess-{i}")})).await;
        }
        // The server's clock an hour back: the lock (a second from the fifth failure) lasts the test.
        state.clock.set_offset(state.clock.offset_ms() - 3_600_000);
        let (status, body) = post(
            &base,
            "/auth",
            None,
            json!({"username": "alice", "password": "alice-pass", "deviceInfo": {"id": device}}),
        )
        .await;
        assert_eq!(
            (status, &body["error"]),
            (StatusCode::TOO_MANY_REQUESTS, &json!("account_throttled")),
            "{engine:?}: the id alone"
        );
        let login = call(&a, "login", json!("alice")).await;
        assert_eq!(login["success"], true, "{engine:?}: the device proves its key after a reload: {login}");

        // The refresh token copied out of this browser's localStorage is useless elsewhere.
        let copied = stored(&a, "serviceProxyToken-Refresh").await.unwrap();
        let (status, body) = post(&base, "/auth/refresh", None, json!({"refreshToken": copied})).await;
        assert_eq!((status, &body["error"]), (StatusCode::UNAUTHORIZED, &json!("device_proof_required")), "{engine:?}");
        assert_eq!(call(&a, "refresh", Value::Null).await, true, "{engine:?}: the browser refreshes with it");
        assert_ne!(stored(&a, "serviceProxyToken-Refresh").await.unwrap(), copied);

        // Logout's scopes across two browsers.
        let b = Browser::start_engine(engine).await;
        open(&b, &base).await;
        assert_eq!(call(&b, "login", json!("alice")).await["success"], true, "{engine:?}");
        let b_token = stored(&b, "serviceProxyToken-Auth").await.unwrap();
        let others = call(&a, "logout", json!("others")).await;
        assert_eq!(others["success"], true, "{engine:?}: {others}");
        assert_eq!(
            me(&base, &b_token).await,
            StatusCode::UNAUTHORIZED,
            "{engine:?}: the other browser's session ended"
        );
        assert_eq!(call(&b, "refresh", Value::Null).await, false, "{engine:?}");
        let a_token = stored(&a, "serviceProxyToken-Auth").await.unwrap();
        assert_eq!(me(&base, &a_token).await, StatusCode::OK, "{engine:?}: this one goes on");
        assert_eq!(call(&a, "refresh", Value::Null).await, true, "{engine:?}");

        assert_eq!(call(&b, "login", json!("alice")).await["success"], true, "{engine:?}");
        let b_token = stored(&b, "serviceProxyToken-Auth").await.unwrap();
        let a_token = stored(&a, "serviceProxyToken-Auth").await.unwrap();
        let global = call(&a, "logout", json!("global")).await;
        assert_eq!(global["success"], true, "{engine:?}: {global}");
        assert_eq!(me(&base, &b_token).await, StatusCode::UNAUTHORIZED, "{engine:?}");
        assert_eq!(me(&base, &a_token).await, StatusCode::UNAUTHORIZED, "{engine:?}: this one too");
        assert_eq!(stored(&a, "serviceProxyToken-Auth").await, None, "{engine:?}: signed out here");
        b.stop().await;
        a.stop().await;
    }
}
