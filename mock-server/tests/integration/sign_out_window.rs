//! A logout's sign-out window: `POST /auth/logout` ends the session's refresh at once, while its
//! access token and its document headers keep working for the sign-out's handlers (a device status,
//! the device's final replication) until the SDK reports the sign-out complete or
//! `SIGN_OUT_GRACE_SECS` passes; no live feed or socket opens in it, and nothing reopens or
//! lengthens it.

use crate::common;

use common::{assert_error, spawn, spawn_with, ws, Answer, Server};
use reqwest::{Method, StatusCode};
use serde_json::{json, Map, Value};

fn day(s: &Server) -> String {
    format!("daily_dev_acme_main_{}", mock_server::docdb::naming::day_of(s.now()))
}

/// An order written with the session's `X-Docdb-*` headers, as a final push would.
async fn push(s: &Server, headers: &Map<String, Value>, id: &str) -> Answer {
    let mut req =
        s.client.put(format!("{}/docdb/{}/{id}", s.base, day(s))).json(&json!({"type": "order", "total": 12}));
    for (k, v) in headers {
        req = req.header(k, v.as_str().unwrap());
    }
    let res = req.send().await.unwrap();
    let (status, headers) = (res.status(), res.headers().clone());
    Answer { status, body: res.json().await.unwrap_or(Value::Null), headers }
}

async fn logged_in(s: &Server) -> (String, Value, Map<String, Value>) {
    let login = s.login("alice").await;
    let admin = s.token("admin").await;
    // The day database exists once the tenant rolls (the rotate prewarms it).
    s.patch("/admin/rolling-db/flags/acme?force=true", Some(&admin), json!({"rollingDb": true})).await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    (
        login["token"].as_str().unwrap().to_owned(),
        login["refreshToken"].clone(),
        login["docdbHeaders"]["Remote"].as_object().unwrap().clone(),
    )
}

#[tokio::test]
async fn the_final_push_goes_through_between_the_logout_and_its_completion() {
    let s = spawn().await;
    let (token, refresh, headers) = logged_in(&s).await;
    assert_eq!(push(&s, &headers, "order-before").await.status, StatusCode::OK);
    assert_eq!(s.post("/auth/logout", Some(&token), json!({"deviceId": null})).await.status, StatusCode::OK);
    // The refresh family ends at once...
    assert_error(&s.post("/auth/refresh", None, json!({"refreshToken": refresh})).await, 401, "refresh_token_revoked");
    // ...the headers serve the final push...
    let pushed = push(&s, &headers, "order-final").await;
    assert_eq!(pushed.status, StatusCode::OK, "{:?}", pushed.body);
    // ...until the sign-out completes.
    assert_eq!(
        s.post("/auth/logout", Some(&token), json!({"deviceId": null, "complete": true})).await.status,
        StatusCode::OK
    );
    assert_error(&push(&s, &headers, "order-late").await, 401, "session_ended");
    // Nothing reopens it: a logout with the ended session's token is harmless.
    assert_eq!(s.post("/auth/logout", Some(&token), json!({})).await.status, StatusCode::OK);
    assert_error(&push(&s, &headers, "order-later").await, 401, "session_ended");
    let admin = s.token("admin").await;
    let written = s.get(&format!("/docdb/{}/_all_docs", day(&s)), Some(&admin)).await.body;
    let ids: Vec<&str> = written["rows"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["order-before", "order-final"]);
}

#[tokio::test]
async fn a_device_that_dies_mid_sign_out_keeps_its_headers_no_longer_than_the_window() {
    let settings =
        mock_server::settings::Settings { test_controls: true, sign_out_grace_secs: 30, ..Default::default() };
    let s = spawn_with(settings).await;
    let (token, _, headers) = logged_in(&s).await;
    s.post("/auth/logout", Some(&token), json!({})).await;
    s.state.clock.set_offset(s.state.clock.offset_ms() + 29_000);
    assert_eq!(push(&s, &headers, "order-29s").await.status, StatusCode::OK, "inside the window");
    // A second logout call does not lengthen it.
    s.post("/auth/logout", Some(&token), json!({})).await;
    s.state.clock.set_offset(s.state.clock.offset_ms() + 1_000);
    assert_error(&push(&s, &headers, "order-30s").await, 401, "session_ended");
}

#[tokio::test]
async fn a_password_change_ends_a_sign_out_window_at_once() {
    let s = spawn().await;
    let (token, _, headers) = logged_in(&s).await;
    s.post("/auth/logout", Some(&token), json!({})).await;
    assert_eq!(push(&s, &headers, "order-1").await.status, StatusCode::OK);
    let admin = s.token("admin").await;
    assert_eq!(
        s.patch("/users/user-alice", Some(&admin), json!({"password": "alice-new-pass"})).await.status,
        StatusCode::OK
    );
    assert_error(&push(&s, &headers, "order-2").await, 401, "session_ended");
    assert_error(&s.get("/users/me", Some(&token)).await, 401, "session_ended");
    // The embedded routes and the proxy answer the same way (one check for the headers).
    let a = s.call(Method::GET, &format!("/docdb/{}/_all_docs", day(&s)), None, None).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
}

/// A sign-out handler's call with the session's access token, as `updateDeviceStatus` makes it.
async fn offline(s: &Server, token: &str) -> Answer {
    s.call(Method::PUT, "/auth/status", Some(token), Some(json!({"isOnline": false}))).await
}

#[tokio::test]
async fn a_sign_out_handler_s_bearer_calls_go_through_until_the_sign_out_completes() {
    let s = spawn().await;
    let login = s.login("alice").await;
    let token = login["token"].as_str().unwrap();
    assert_eq!(s.post("/auth/logout", Some(token), json!({})).await.status, StatusCode::OK);
    let status = offline(&s, token).await;
    assert_eq!(status.status, StatusCode::OK, "{:?}", status.body);
    assert_eq!(s.get("/users/me", Some(token)).await.status, StatusCode::OK);
    // No refresh and no realtime socket inside the window.
    assert_error(
        &s.post("/auth/refresh", None, json!({"refreshToken": login["refreshToken"]})).await,
        401,
        "refresh_token_revoked",
    );
    let (_, frames) = ws::hello(&s, token, None, "1.4.17", None).await;
    assert_eq!(frames.last().map(|f| f["payload"]["code"].clone()), Some(json!("session_ended")), "{frames:?}");
    s.post("/auth/logout", Some(token), json!({"complete": true})).await;
    assert_error(&offline(&s, token).await, 401, "session_ended");
    // A logout with the ended session's token reopens nothing.
    s.post("/auth/logout", Some(token), json!({})).await;
    assert_error(&offline(&s, token).await, 401, "session_ended");
    assert_error(&s.get("/users/me", Some(token)).await, 401, "session_ended");
}

#[tokio::test]
async fn a_sign_out_handler_s_token_works_no_longer_than_the_window() {
    let settings =
        mock_server::settings::Settings { test_controls: true, sign_out_grace_secs: 30, ..Default::default() };
    let s = spawn_with(settings).await;
    let token = s.token("alice").await;
    s.post("/auth/logout", Some(&token), json!({})).await;
    s.state.clock.set_offset(s.state.clock.offset_ms() + 29_000);
    assert_eq!(offline(&s, &token).await.status, StatusCode::OK, "inside the window");
    // A second logout call does not lengthen it.
    s.post("/auth/logout", Some(&token), json!({})).await;
    s.state.clock.set_offset(s.state.clock.offset_ms() + 1_000);
    assert_error(&offline(&s, &token).await, 401, "session_ended");
}
