//! The realtime handshake over a real WebSocket.

use crate::common;

use common::ws::{close_code, hello, open};
use common::{spawn, spawn_with};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn legacy_tenant_handshake_invalidation_and_cutover() {
    let s = spawn().await;
    let alice = s.token("alice").await;
    // Registered by /auth/connect (on an older SDK); the handshake updates what it reports.
    let registered = s.post("/auth/connect", Some(&alice), json!({"sdkVersion": "1.4.16"})).await.body;
    let dev_a = registered["deviceId"].as_str().unwrap().to_owned();
    let (_ws, frames) = hello(&s, &alice, Some(&dev_a), "1.4.17", None).await;
    assert_eq!(frames.len(), 1, "nothing to invalidate yet: {frames:?}");
    let ready = &frames[0]["payload"];
    assert_eq!(
        (ready["companyId"].clone(), ready["database"].clone(), ready["staticDb"].clone()),
        (json!("acme"), json!("legacy"), json!("dev_acme_main_catalog"))
    );
    // The handshake updated the registered device's SDK for the fleet view, and created none.
    let (_ws, _) = hello(&s, &alice, Some("invented-old-device"), "1.0.0", None).await;
    let admin = s.token("admin").await;
    let fleet = s.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
    assert_eq!(
        fleet["tenants"][0]["devices"],
        json!([{"deviceId": dev_a, "beforeCutover": false, "sdkVersion": "1.4.17", "lastSeenAt": fleet["tenants"][0]["devices"][0]["lastSeenAt"]}])
    );
    let dev_a = dev_a.as_str();

    // Cutover: the connected device is closed with 4000 and meets the invalidation on reconnect.
    let (mut connected, _) = hello(&s, &alice, Some(dev_a), "1.4.17", None).await;
    s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": true})).await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    assert_eq!(close_code(&mut connected).await, Some(CloseCode::from(4000)));
    let (_ws, frames) = hello(&s, &alice, Some(dev_a), "1.4.17", Some(0)).await;
    assert_eq!(frames[0]["type"], "invalidate-local");
    assert_eq!(frames[0]["payload"]["reason"], "rolling-db-cutover");
    let at = frames[0]["payload"]["invalidatedAt"].as_i64().unwrap();
    let ready = &frames[1]["payload"];
    assert_eq!((ready["database"].clone(), ready["staticDb"].clone()), (json!("core"), json!("dev_acme_main_core")));
    assert!(ready["dynamicDb"].as_str().unwrap().starts_with("daily_dev_acme_main_"));
    assert_eq!(ready["invalidatedAt"], at);
    // Obeyed: not invalidated again.
    let (_ws, frames) = hello(&s, &alice, Some(dev_a), "1.4.17", Some(at)).await;
    assert_eq!(frames.len(), 1);
    // An old SDK stays on legacy.
    let (_ws, frames) = hello(&s, &alice, Some("dev-old"), "1.4.16", Some(at)).await;
    assert_eq!(frames[0]["payload"]["database"], "legacy");
    let (_ws, frames) = hello(&s, &alice, None, "unknown", Some(at)).await;
    assert_eq!(frames[0]["payload"]["database"], "legacy");
}

#[tokio::test]
async fn bad_tokens_and_bad_frames_are_refused() {
    let s = spawn().await;
    for (token, code) in [("not.a.jwt", "invalid_token")] {
        let (mut ws, frames) = {
            let mut ws = open(&s).await;
            ws.send(Message::Text(json!({"type": "sdk:init", "payload": {"token": token}}).to_string().into()))
                .await
                .unwrap();
            let mut frames = Vec::new();
            if let Some(Ok(Message::Text(t))) = ws.next().await {
                frames.push(serde_json::from_str::<Value>(&t).unwrap());
            }
            (ws, frames)
        };
        assert_eq!(frames[0]["type"], "error");
        assert_eq!(frames[0]["payload"]["code"], code);
        assert_eq!(close_code(&mut ws).await, Some(CloseCode::from(4401)));
    }
    let mut ws = open(&s).await;
    ws.send(Message::Text("{\"type\": \"hello\"}".into())).await.unwrap();
    let first = ws.next().await.unwrap().unwrap();
    assert_eq!(serde_json::from_str::<Value>(first.to_text().unwrap()).unwrap()["payload"]["code"], "bad_request");
    assert_eq!(close_code(&mut ws).await, Some(CloseCode::from(4400)));
    let alice = s.token("alice").await;
    let mut ws = open(&s).await;
    ws.send(Message::Text(
        json!({"type": "sdk:init", "payload": {"token": alice, "lastInvalidation": "yesterday"}}).to_string().into(),
    ))
    .await
    .unwrap();
    let first = ws.next().await.unwrap().unwrap();
    assert!(first.to_text().unwrap().contains("lastInvalidation"), "{first:?}");
}

#[tokio::test]
async fn an_oversize_first_message_is_refused_before_it_is_read_whole() {
    let s = spawn().await;
    let mut ws = open(&s).await;
    // 1 MiB, far over what sdk:init needs: the server drops the socket without answering ready.
    let huge = json!({"type": "sdk:init", "payload": {"token": "x".repeat(1 << 20)}}).to_string();
    let _ = ws.send(Message::Text(huge.into())).await;
    let ended = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => assert!(!t.contains("ready"), "{t}"),
                Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return None,
            }
        }
    })
    .await
    .expect("the socket ends");
    assert!(ended.is_none_or(|code| code == 1009), "closed as too big, or dropped: {ended:?}");
    // The server is still there for everyone else.
    assert_eq!(s.get("/health", None).await.status, reqwest::StatusCode::OK);
}

#[tokio::test]
async fn operator_invalidation_and_rollback_route_back_to_legacy() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let alice = s.token("alice").await;
    s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": true})).await;
    s.run_cron(&admin, "rolling-db-rotate").await;
    let (mut ws, frames) = hello(&s, &alice, Some("d1"), "1.4.17", None).await;
    let seen = frames[0]["payload"]["invalidatedAt"].as_i64().unwrap();
    // Another tenant's invalidation does not touch acme's sockets.
    s.post("/admin/invalidate-clients/globex", Some(&admin), json!({})).await;
    s.patch("/admin/rolling-db/flags/acme", Some(&admin), json!({"rollingDb": false})).await;
    s.post("/admin/invalidate-clients/acme", Some(&admin), json!({})).await;
    assert_eq!(close_code(&mut ws).await, Some(CloseCode::from(4000)));
    let (_ws, frames) = hello(&s, &alice, Some("d1"), "1.4.17", Some(seen)).await;
    assert_eq!(
        (frames[0]["type"].clone(), frames[0]["payload"]["reason"].clone()),
        (json!("invalidate-local"), json!("operator"))
    );
    assert_eq!(frames[1]["payload"]["database"], "legacy");
}

#[tokio::test]
async fn an_invalidation_closes_a_tenants_sockets_in_waves() {
    let settings = mock_server::settings::Settings {
        test_controls: true,
        invalidation_wave_size: 1,
        invalidation_wave_spacing_ms: 300,
        ..Default::default()
    };
    let s = spawn_with(settings).await;
    let alice = s.token("alice").await;
    let admin = s.token("admin").await;
    let mut sockets = Vec::new();
    for _ in 0..3 {
        sockets.push(hello(&s, &alice, None, "1.4.17", None).await.0);
    }
    let started = std::time::Instant::now();
    s.post("/admin/invalidate-clients/acme", Some(&admin), json!({})).await;
    let mut closed_after = Vec::new();
    for ws in &mut sockets {
        assert_eq!(close_code(ws).await, Some(CloseCode::from(4000)));
        closed_after.push(started.elapsed());
    }
    closed_after.sort();
    // Three waves of one, 300 ms apart: the last closes at least ~600 ms after the first wave.
    assert!(closed_after[2] >= std::time::Duration::from_millis(550), "{closed_after:?}");
}

/// alice's registered device, told of an operator's invalidation and obeying it: the server, the
/// admin's and alice's tokens, the device's id, and when the invalidation was.
async fn a_device_that_obeyed() -> (common::Server, String, String, String, i64) {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let alice = s.token("alice").await;
    let device = s.register_device(&alice).await;
    let at = s.invalidate(&admin, "acme").await;
    // Asked by the invalidation: it destroys, bootstraps and remembers `at`. No alarm.
    let (_ws, frames) = hello(&s, &alice, Some(&device), "1.4.17", None).await;
    assert_eq!(frames[0]["type"], "invalidate-local");
    let (_ws, frames) = hello(&s, &alice, Some(&device), "1.4.17", Some(at)).await;
    assert_eq!(frames.len(), 1, "obeyed: ready only");
    (s, admin, alice, device, at)
}

/// A login's cleanup destroys the device's local data and forgets the invalidation it obeyed, as
/// it must: the next handshake, in the new session, reports none, and that is no destructive
/// reset (an ordinary re-login must never tell the operators to roll back).
#[tokio::test]
async fn a_re_login_on_a_device_that_obeyed_raises_no_alarm() {
    let (s, admin, _, device, at) = a_device_that_obeyed().await;
    // The cashier logs out and in again on the same device: a new session, nothing obeyed yet.
    let again = s.token("alice").await;
    let (_ws, frames) = hello(&s, &again, Some(&device), "1.4.17", None).await;
    assert_eq!(frames[0]["type"], "invalidate-local", "the new session is served the invalidation");
    let (_ws, _) = hello(&s, &again, Some(&device), "1.4.17", Some(at)).await;
    let fleet = s.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
    assert!(fleet["tenants"][0]["attention"].is_null(), "a re-login is no destructive reset: {}", fleet["tenants"][0]);
    // Within that session, losing what it obeyed still is one.
    let (_ws, _) = hello(&s, &again, Some(&device), "1.4.17", None).await;
    let fleet = s.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
    assert_eq!(fleet["tenants"][0]["attention"]["alarms"][0]["kind"], "destructive-reset", "{}", fleet["tenants"][0]);
}

#[tokio::test]
async fn a_device_back_with_less_than_it_obeyed_raises_the_rollback_alarm() {
    let (s, admin, alice, device, _) = a_device_that_obeyed().await;
    let fleet = s.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
    assert!(fleet["tenants"][0]["attention"].is_null(), "{}", fleet["tenants"][0]);
    // Then it comes back with nothing: its local database was reset though nobody asked.
    let (_ws, frames) = hello(&s, &alice, Some(&device), "1.4.17", None).await;
    assert_eq!(frames[0]["type"], "invalidate-local", "it is still served");
    let fleet = s.get("/admin/rolling-db/tenants", Some(&admin)).await.body;
    let attention = &fleet["tenants"][0]["attention"];
    assert_eq!(
        (attention["alarms"][0]["kind"].clone(), attention["alarms"][0]["subject"].clone()),
        (json!("destructive-reset"), json!(device)),
        "{attention}"
    );
    assert!(attention["instruction"].as_str().unwrap().contains("Roll back now"));
    // An unregistered device id proves nothing and raises nothing elsewhere.
    let (_ws, _) = hello(&s, &alice, Some("invented"), "1.4.17", None).await;
    let cluster = s.get("/admin/rolling-db/cluster", Some(&admin)).await.body;
    assert_eq!(cluster["attention"].as_array().unwrap().len(), 1);
}
