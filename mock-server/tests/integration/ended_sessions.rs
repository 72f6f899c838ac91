//! An ended session reaches nothing, by any credential: once a session ends (logout, a password
//! or role change, the user deleted, its device deleted, a refresh token reused), its access token is refused on the
//! document routes, the device routes, every operator route and the realtime handshake, as its
//! document-database headers are; and a role taken away takes effect at once.

use crate::common;

use common::{assert_error, spawn, ws, Server};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// What one access token can reach, each call answering its status (the token's routes).
async fn reaches(s: &Server, token: &str, operator: bool) -> Vec<(String, u16)> {
    let mut calls: Vec<(Method, &str, Option<Value>)> = vec![
        (Method::GET, "/docdb/dev_acme_main_catalog/_all_docs", None),
        (Method::POST, "/auth/connect", Some(json!({"sdkVersion": "1.4.17"}))),
        (Method::PUT, "/auth/status", Some(json!({"isOnline": true}))),
        (Method::GET, "/devices", None),
        (Method::GET, "/users/me", None),
        (Method::GET, "/bootstrap?database=legacy", None),
    ];
    if operator {
        calls.extend([
            (Method::GET, "/admin/rolling-db/cluster", None),
            (Method::PATCH, "/admin/rolling-db/flags/globex", Some(json!({"rollingDb": false}))),
            (Method::POST, "/admin/invalidate-clients/globex", Some(json!({}))),
            (Method::GET, "/admin/crons", None),
        ]);
    }
    let mut answers = Vec::new();
    for (method, path, body) in calls {
        let a = s.call(method.clone(), path, Some(token), body).await;
        answers.push((format!("{method} {path} {}", a.body["error"].as_str().unwrap_or("")), a.status.as_u16()));
    }
    answers
}

fn all_refused_as_ended(answers: &[(String, u16)]) {
    for (call, status) in answers {
        assert!(*status == 401 && call.ends_with("session_ended"), "{call}: {status}");
    }
}

fn all_served(answers: &[(String, u16)]) {
    for (call, status) in answers {
        assert!((200..300).contains(status), "{call}: {status}");
    }
}

#[tokio::test]
async fn after_logout_the_access_token_reaches_nothing() {
    let s = spawn().await;
    for (user, operator) in [("alice", false), ("admin", true)] {
        let login = s.login(user).await;
        let token = login["token"].as_str().unwrap();
        all_served(&reaches(&s, token, operator).await);
        // The logout's sign-out window (`sign_out_window.rs`) closed by the SDK's completion.
        assert_eq!(s.post("/auth/logout", Some(token), json!({})).await.status, StatusCode::OK);
        assert_eq!(s.post("/auth/logout", Some(token), json!({"complete": true})).await.status, StatusCode::OK);
        all_refused_as_ended(&reaches(&s, token, operator).await);
        let (_, frames) = ws::hello(&s, token, None, "1.4.17", None).await;
        assert_eq!(
            frames.last().map(|f| (f["type"].clone(), f["payload"]["code"].clone())),
            Some((json!("error"), json!("session_ended"))),
            "{frames:?}"
        );
        // Logging out again with the same token stays harmless.
        assert_eq!(s.post("/auth/logout", Some(token), json!({})).await.status, StatusCode::OK);
    }
    // Another session of the same user is not touched by one logout.
    let a = s.token("alice").await;
    let b = s.token("alice").await;
    s.post("/auth/logout", Some(&a), json!({})).await;
    all_served(&reaches(&s, &b, false).await);
}

#[tokio::test]
async fn a_realtime_socket_open_when_its_session_ends_is_closed_4401() {
    let s = spawn().await;
    let token = s.token("alice").await;
    let other = s.token("alice").await;
    let (mut socket, frames) = ws::hello(&s, &token, None, "1.4.17", None).await;
    let (mut others, _) = ws::hello(&s, &other, None, "1.4.17", None).await;
    assert_eq!(frames.last().unwrap()["type"], "ready");
    s.post("/auth/logout", Some(&token), json!({})).await;
    assert_eq!(ws::close_code(&mut socket).await, Some(4401.into()));
    // Another session's socket stays.
    use futures_util::SinkExt;
    others
        .send(tokio_tungstenite::tungstenite::Message::Text(json!({"type": "ping"}).to_string().into()))
        .await
        .unwrap();
    let pong = tokio::time::timeout(std::time::Duration::from_secs(5), futures_util::StreamExt::next(&mut others))
        .await
        .unwrap();
    assert!(matches!(pong, Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t))) if t.contains("pong")));
}

#[tokio::test]
async fn a_role_taken_away_takes_effect_on_the_operator_routes_at_once() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let keys = s.token("keys").await;
    assert_eq!(
        s.patch("/admin/rolling-db/flags/globex", Some(&keys), json!({"rollingDb": false})).await.status,
        StatusCode::OK
    );
    assert_eq!(s.patch("/users/user-keys", Some(&admin), json!({"roles": ["cashier"]})).await.status, StatusCode::OK);
    assert_error(
        &s.patch("/admin/rolling-db/flags/globex", Some(&keys), json!({"rollingDb": false})).await,
        401,
        "session_ended",
    );
    assert_error(&s.post("/admin/invalidate-clients/acme", Some(&keys), json!({})).await, 401, "session_ended");
    // A new login carries the new role, and the operator routes answer it as such.
    let demoted = s.token("keys").await;
    assert_error(
        &s.patch("/admin/rolling-db/flags/globex", Some(&demoted), json!({"rollingDb": false})).await,
        403,
        "forbidden",
    );
}

#[tokio::test]
async fn a_password_change_a_deleted_user_and_a_reused_refresh_token_end_the_access_token_too() {
    let s = spawn().await;
    let admin = s.token("admin").await;

    let alice = s.token("alice").await;
    assert_eq!(
        s.patch("/users/user-alice", Some(&admin), json!({"password": "alice-new-pass"})).await.status,
        StatusCode::OK
    );
    all_refused_as_ended(&reaches(&s, &alice, false).await);

    let carol = s.token("carol").await;
    assert_eq!(s.call(Method::DELETE, "/users/user-carol", Some(&admin), None).await.status, StatusCode::OK);
    assert_error(&s.get("/users/me", Some(&carol)).await, 401, "session_ended");

    // Strict rotation: the first refresh's token presented again ends the whole session, the
    // access token the second refresh issued included.
    let bob = s.login("bob").await;
    let next = s.post("/auth/refresh", None, json!({"refreshToken": bob["refreshToken"]})).await;
    assert_eq!(next.status, StatusCode::OK);
    let newest = next.body["token"].as_str().unwrap().to_owned();
    s.state.clock.set_offset(60_000);
    assert_error(
        &s.post("/auth/refresh", None, json!({"refreshToken": bob["refreshToken"]})).await,
        401,
        "refresh_token_reused",
    );
    assert_error(&s.get("/users/me", Some(&newest)).await, 401, "session_ended");
    assert_error(&s.get("/users/me", Some(bob["token"].as_str().unwrap())).await, 401, "session_ended");
}

#[tokio::test]
async fn a_restarted_server_still_refuses_the_tokens_of_sessions_ended_before() {
    let dir = std::env::temp_dir().join(mock_server::auth::secrets::random_id("ended-restart"));
    let settings =
        || mock_server::settings::Settings { test_controls: true, data_dir: Some(dir.clone()), ..Default::default() };
    let first = common::spawn_with(settings()).await;
    let token = first.token("alice").await;
    first.post("/auth/logout", Some(&token), json!({})).await;
    first.post("/auth/logout", Some(&token), json!({"complete": true})).await;
    drop(first);
    let second = common::spawn_with(settings()).await;
    assert_error(&second.get("/users/me", Some(&token)).await, 401, "session_ended");
    let _ = std::fs::remove_dir_all(dir);
}

/// The document headers' answer on the proxy-less document route (their session checked).
async fn headers_reach(s: &Server, login: &Value) -> u16 {
    let mut req = s.client.get(format!("{}/docdb/dev_acme_main_catalog/_all_docs", s.base));
    for (k, v) in login["docdbHeaders"]["Remote"].as_object().unwrap() {
        req = req.header(k, v.as_str().unwrap());
    }
    req.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn deleting_a_device_ends_its_sessions() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    // A session that registered the device, and one signed in later naming it.
    let first = s.login("alice").await;
    let token = first["token"].as_str().unwrap();
    let device = s.post("/auth/connect", Some(token), json!({"sdkVersion": "1.4.17"})).await.body["deviceId"]
        .as_str()
        .unwrap()
        .to_owned();
    let again = s
        .post("/auth", None, json!({"username": "alice", "password": "alice-pass", "deviceInfo": {"id": device}}))
        .await
        .body;
    // A session on another device of the same user.
    let other = s.login("alice").await;
    let other_token = other["token"].as_str().unwrap();
    s.post("/auth/connect", Some(other_token), json!({"sdkVersion": "1.4.17"})).await;
    let (mut socket, frames) = ws::hello(&s, token, Some(&device), "1.4.17", None).await;
    assert_eq!(frames.last().unwrap()["type"], "ready");
    for login in [&first, &again, &other] {
        all_served(&reaches(&s, login["token"].as_str().unwrap(), false).await);
        assert_eq!(headers_reach(&s, login).await, 200);
    }

    assert_eq!(s.call(Method::DELETE, &format!("/devices/{device}"), Some(&admin), None).await.status, StatusCode::OK);
    for login in [&first, &again] {
        all_refused_as_ended(&reaches(&s, login["token"].as_str().unwrap(), false).await);
        assert_eq!(headers_reach(&s, login).await, 401, "no sign-out window for a deleted device");
        assert_error(
            &s.post("/auth/refresh", None, json!({"refreshToken": login["refreshToken"]})).await,
            401,
            "refresh_token_revoked",
        );
    }
    assert_eq!(ws::close_code(&mut socket).await, Some(4401.into()));
    all_served(&reaches(&s, other_token, false).await);
    assert_eq!(headers_reach(&s, &other).await, 200);
}
