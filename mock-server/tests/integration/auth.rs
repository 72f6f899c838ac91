//! The auth half of the mock server against the route table of docs/server.md, over real HTTP.

use crate::common;

use common::{assert_error, spawn, spawn_with};
use mock_server::settings::Settings;
use reqwest::{Method, StatusCode};
use serde_json::json;
use session_broker::core::token::Claims;

#[tokio::test]
async fn login_answers_its_documented_shape_with_a_real_jwt() {
    let s = spawn().await;
    let body = s.login("carol").await;
    assert_eq!(body["expiresIn"], 900);
    assert_eq!(body["refreshExpiresIn"], 30 * 24 * 3600);
    assert!(body["refreshToken"].as_str().unwrap().len() >= 32);
    assert!(body["docdbHeaders"]["Remote"]["X-Docdb-Token"].is_string());
    assert!(body["docdbHeaders"]["Local"]["X-Docdb-Token"].is_string());
    assert_ne!(body["docdbHeaders"]["Remote"]["X-Docdb-Token"], body["docdbHeaders"]["Local"]["X-Docdb-Token"]);
    let claims = Claims::decode(body["token"].as_str().unwrap()).unwrap();
    assert_eq!(claims.company_id().as_deref(), Some("acme"));
    assert_eq!(claims.roles(), vec!["cashier"]);
    let m = claims.as_map();
    for claim in ["sub", "userId", "iat", "exp"] {
        assert!(m.contains_key(claim), "{claim}");
    }
    assert_eq!(m["exp"].as_i64().unwrap() - m["iat"].as_i64().unwrap(), 900);
    // The signature is real: the server's own key verifies it.
    assert!(s.state.tokens.verify(body["token"].as_str().unwrap(), s.state.clock.now_secs(), true).is_ok());
}

#[tokio::test]
async fn every_seeded_user_logs_in_with_the_right_role_and_company() {
    let s = spawn().await;
    for (user, role, company) in [
        ("admin", "sys_admin", "acme"),
        ("keys", "key_manager", "acme"),
        ("alice", "cashier", "acme"),
        ("bob", "manager", "globex"),
    ] {
        let c = Claims::decode(&s.token(user).await).unwrap();
        assert_eq!((c.roles(), c.company_id().unwrap()), (vec![role.to_string()], company.to_string()));
    }
}

#[tokio::test]
async fn bad_credentials_and_bad_bodies_get_the_error_body() {
    let s = spawn().await;
    assert_error(
        &s.post("/auth", None, json!({"username": "alice", "password": "nope", "deviceInfo": {}})).await,
        401,
        "invalid_credentials",
    );
    assert_error(
        &s.post("/auth", None, json!({"username": "nobody", "password": "x", "deviceInfo": {}})).await,
        401,
        "invalid_credentials",
    );
    assert_error(&s.post("/auth", None, json!({"username": "alice"})).await, 400, "invalid_body");
    assert_error(&s.post("/auth", None, json!({"username": 5, "password": "x"})).await, 400, "invalid_body");
    assert_error(&s.post("/auth", None, json!({"username": "", "password": ""})).await, 400, "bad_request");
    // serde reads a struct from an array too (fields in order): every body must be an object.
    assert_error(&s.post("/auth", None, json!(["alice", "alice-pass", {}])).await, 400, "invalid_body");
    assert_error(&s.post("/auth", None, json!("alice")).await, 400, "invalid_body");
    let raw = s
        .client
        .post(format!("{}/auth", s.base))
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 400);
    assert_eq!(raw.json::<serde_json::Value>().await.unwrap()["error"], "malformed_json");
    let raw = s.client.post(format!("{}/auth", s.base)).body("{}").send().await.unwrap();
    assert_eq!(raw.status(), 415);
    let big = "x".repeat(mock_server::app::BODY_LIMIT_BYTES + 1);
    assert_error(&s.post("/auth", None, json!({"username": big, "password": "x"})).await, 413, "payload_too_large");
    assert_error(&s.get("/no/such/route", None).await, 404, "not_found");
    assert_error(&s.get("/auth", None).await, 405, "method_not_allowed");
}

#[tokio::test]
async fn google_login_accepts_only_the_mock_credential() {
    let s = spawn().await;
    let ok = s.post("/auth/google", None, json!({"credential": "mock-google:bob"})).await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(Claims::decode(ok.body["token"].as_str().unwrap()).unwrap().company_id().as_deref(), Some("globex"));
    assert_error(
        &s.post("/auth/google", None, json!({"credential": "real-google-token"})).await,
        401,
        "invalid_credential",
    );
    assert_error(
        &s.post("/auth/google", None, json!({"credential": "mock-google:ghost"})).await,
        401,
        "invalid_credentials",
    );
    assert_error(&s.post("/auth/google", None, json!({"credential": 1})).await, 400, "invalid_body");
}

#[tokio::test]
async fn refresh_rotates_and_detects_reuse_after_the_grace_window() {
    let s = spawn().await;
    let first = s.login("alice").await;
    let r0 = first["refreshToken"].as_str().unwrap();
    let second = s.post("/auth/refresh", None, json!({"refreshToken": r0})).await;
    assert_eq!(second.status, StatusCode::OK);
    let r1 = second.body["refreshToken"].as_str().unwrap().to_owned();
    assert_ne!(r0, r1, "each refresh returns a new refresh token");
    assert!(second.body["token"].is_string() && second.body["expiresIn"] == 900);
    // A second tab presenting r0 within the grace window is served, not punished...
    assert_eq!(s.post("/auth/refresh", None, json!({"refreshToken": r0})).await.status, StatusCode::OK);
    // ...once: a further replay inside the window is refused, and the family lives on.
    assert_error(&s.post("/auth/refresh", None, json!({"refreshToken": r0})).await, 401, "refresh_token_replayed");
    let r1 = {
        let third = s.post("/auth/refresh", None, json!({"refreshToken": r1})).await;
        assert_eq!(third.status, StatusCode::OK, "the family survived the refused replay");
        third.body["refreshToken"].as_str().unwrap().to_owned()
    };
    // After the window, reuse revokes the whole family: r1 dies too.
    s.post("/__mock/clock", None, json!({"now": s.state.clock.now_ms() + 11_000})).await;
    assert_error(&s.post("/auth/refresh", None, json!({"refreshToken": r0})).await, 401, "refresh_token_reused");
    assert_error(&s.post("/auth/refresh", None, json!({"refreshToken": r1})).await, 401, "refresh_token_revoked");
    assert_error(
        &s.post("/auth/refresh", None, json!({"refreshToken": "unknown"})).await,
        401,
        "invalid_refresh_token",
    );
    assert_error(&s.post("/auth/refresh", None, json!({})).await, 400, "invalid_body");
}

#[tokio::test]
async fn strict_rotation_refuses_any_reuse_and_revokes_the_family() {
    let s = spawn_with(Settings { test_controls: true, refresh_reuse_grace_secs: 0, ..Settings::default() }).await;
    let r0 = s.login("alice").await["refreshToken"].as_str().unwrap().to_owned();
    let next = s.post("/auth/refresh", None, json!({"refreshToken": r0})).await;
    assert_eq!(next.status, StatusCode::OK);
    let r1 = next.body["refreshToken"].as_str().unwrap().to_owned();
    assert_error(&s.post("/auth/refresh", None, json!({"refreshToken": r0})).await, 401, "refresh_token_reused");
    assert_error(&s.post("/auth/refresh", None, json!({"refreshToken": r1})).await, 401, "refresh_token_revoked");
}

#[tokio::test]
async fn refresh_token_expires() {
    let s = spawn().await;
    let r = s.login("alice").await["refreshToken"].as_str().unwrap().to_owned();
    s.post("/__mock/clock", None, json!({"advanceDays": 31})).await;
    assert_error(&s.post("/auth/refresh", None, json!({"refreshToken": r})).await, 401, "refresh_token_expired");
}

#[tokio::test]
async fn access_tokens_expire_on_the_server_clock() {
    let s = spawn().await;
    let t = s.token("alice").await;
    assert_eq!(s.post("/auth/connect", Some(&t), json!({})).await.status, StatusCode::OK);
    s.post("/__mock/clock", None, json!({"now": s.state.clock.now_ms() + 901_000})).await;
    assert_error(&s.post("/auth/connect", Some(&t), json!({})).await, 401, "token_expired");
    assert_error(&s.post("/auth/connect", None, json!({})).await, 401, "missing_token");
    assert_error(&s.post("/auth/connect", Some("abc.def.ghi"), json!({})).await, 401, "invalid_token");
}

#[tokio::test]
async fn company_switch_is_carried_by_the_next_refresh() {
    let s = spawn().await;
    let login = s.login("carol").await;
    let t = login["token"].as_str().unwrap();
    assert_error(&s.post("/auth/company", Some(t), json!({"companyId": "initech"})).await, 403, "forbidden");
    assert_eq!(s.post("/auth/company", Some(t), json!({"companyId": "globex"})).await.status, StatusCode::OK);
    let next = s.post("/auth/refresh", None, json!({"refreshToken": login["refreshToken"]})).await;
    assert_eq!(Claims::decode(next.body["token"].as_str().unwrap()).unwrap().company_id().as_deref(), Some("globex"));
}

#[tokio::test]
async fn connect_registers_the_device_with_its_sdk_version() {
    let s = spawn().await;
    let t = s.token("alice").await;
    let a = s.post("/auth/connect", Some(&t), json!({"sdkVersion": "1.4.17", "platform": "web"})).await;
    let id = a.body["deviceId"].as_str().unwrap().to_owned();
    let d = mock_server::store::devices::by_id(&s.state.store.lock().unwrap(), &id).unwrap().unwrap();
    assert_eq!((d.sdk_version.as_deref(), d.company_id.as_str(), d.is_online), (Some("1.4.17"), "acme", true));
    // Same id sent back: the same device, not a new one.
    let again = s.post("/auth/connect", Some(&t), json!({"id": id, "sdkVersion": "1.4.18"})).await;
    assert_eq!(again.body["deviceId"], id.as_str());
    // Another user cannot take it over.
    let bob = s.token("bob").await;
    assert_ne!(s.post("/auth/connect", Some(&bob), json!({"id": id})).await.body["deviceId"], id.as_str());
    assert_error(&s.post("/auth/connect", Some(&t), json!({"sdkVersion": 7})).await, 400, "bad_request");
    assert_error(&s.post("/auth/connect", Some(&t), json!([1])).await, 400, "invalid_body");
}

#[tokio::test]
async fn status_and_logout() {
    let s = spawn().await;
    let login = s.login("alice").await;
    let t = login["token"].as_str().unwrap();
    let id = s.post("/auth/connect", Some(t), json!({})).await.body["deviceId"].as_str().unwrap().to_owned();
    let a = s.call(Method::PUT, "/auth/status", Some(t), Some(json!({"isOnline": false}))).await;
    assert_eq!((a.status, a.body["ok"].clone(), a.body["deviceId"].clone()), (StatusCode::OK, json!(true), json!(id)));
    assert_error(
        &s.call(Method::PUT, "/auth/status", Some(t), Some(json!({"isOnline": "yes"}))).await,
        400,
        "invalid_body",
    );
    let out = s.post("/auth/logout", Some(t), json!({"deviceId": id})).await;
    assert_eq!(out.body, json!({"ok": true}));
    // Logout revokes the session's refresh tokens.
    assert_error(
        &s.post("/auth/refresh", None, json!({"refreshToken": login["refreshToken"]})).await,
        401,
        "refresh_token_revoked",
    );
    assert_error(&s.post("/auth/logout", None, json!({"deviceId": id})).await, 401, "missing_token");
}

#[tokio::test]
async fn cors_preflight_is_answered() {
    let s = spawn().await;
    let res = s
        .client
        .request(Method::OPTIONS, format!("{}/auth", s.base))
        .header("Origin", "http://127.0.0.1:9999")
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", "content-type,authorization")
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
    assert!(res.headers().contains_key("access-control-allow-origin"));
    assert!(res.headers().contains_key("access-control-allow-headers"));
}

#[tokio::test]
async fn health_and_test_controls() {
    let s = spawn().await;
    let h = s.get("/health", None).await;
    assert_eq!(h.status, StatusCode::OK);
    assert_eq!(h.body["status"], "ok");
    s.login("alice").await;
    s.login("alice").await;
    let stats = s.get("/__mock/stats", None).await;
    assert_eq!(stats.body["requests"]["POST /auth"], 2);
    assert_error(&s.post("/__mock/clock", None, json!({"now": 1, "advanceDays": 1})).await, 400, "bad_request");
    assert_eq!(
        s.post("/auth/register", None, json!({"username": "dave", "password": "dave-pass"})).await.status,
        StatusCode::CREATED
    );
    assert_eq!(s.post("/__mock/reset", None, json!({})).await.status, StatusCode::OK);
    assert_error(
        &s.post("/auth", None, json!({"username": "dave", "password": "dave-pass"})).await,
        401,
        "invalid_credentials",
    );
}

#[tokio::test]
async fn test_controls_are_absent_by_default() {
    let s = common::spawn_with(mock_server::settings::Settings::default()).await;
    assert_error(&s.post("/__mock/reset", None, json!({})).await, 404, "not_found");
}
