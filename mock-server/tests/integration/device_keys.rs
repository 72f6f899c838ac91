//! A device's key (docs/server.md, "Device keys"): only a proof of possession spares a device the
//! account's sign-in throttle, a keyed device's refresh tokens are refused without its proof, a
//! proof is good once; and `logout`'s scopes end exactly the sessions they name.

use crate::common;

use common::device_key::{nonce, Key};
use common::{assert_error, spawn_with, Server};
use mock_server::settings::Settings;
use protocol::routes::{self, Call};
use reqwest::StatusCode;
use serde_json::{json, Value};

async fn prove(s: &Server, key: &Key, route: Call) -> Value {
    key.prove(s, route).await
}

/// The per-address limit off: what is left is the account's own throttle.
async fn server() -> Server {
    spawn_with(Settings {
        test_controls: true,
        auth_rate_per_min: 0,
        auth_account_lock_max_secs: 300,
        ..Default::default()
    })
    .await
}

fn login_body(username: &str, password: &str, device: Option<&str>, proof: Option<Value>) -> Value {
    let mut body = json!({"username": username, "password": password, "deviceInfo": {}});
    if let Some(id) = device {
        body["deviceInfo"]["id"] = id.into();
    }
    if let Some(proof) = proof {
        body["deviceProof"] = proof;
    }
    body
}

/// Logs `alice` in and registers her device with `key`; the login's answer and the device id.
async fn keyed_login(s: &Server, key: &Key) -> (Value, String) {
    let login = s.post("/auth", None, login_body("alice", "alice-pass", None, None)).await.body;
    let token = login["token"].as_str().unwrap();
    let connect =
        s.post("/auth/connect", Some(token), json!({"sdkVersion": "1.4.17", "publicKey": key.public()})).await;
    assert_eq!(connect.status, StatusCode::OK, "{:?}", connect.body);
    (login, connect.body["deviceId"].as_str().unwrap().to_owned())
}

async fn refresh(s: &Server, token: &str, proof: Option<Value>) -> common::Answer {
    let mut body = json!({"refreshToken": token});
    if let Some(proof) = proof {
        body["deviceProof"] = proof;
    }
    s.post("/auth/refresh", None, body).await
}

/// `n` wrong passwords for alice naming `device`, proven by `key` if given: the statuses. (The
/// per-address limit is off: many addresses or one are alike to the account's throttle.)
async fn guesses(s: &Server, device: &str, key: Option<&Key>, n: usize) -> Vec<u16> {
    let mut statuses = Vec::new();
    for i in 0..n {
        let proof = match key {
            Some(key) => Some(prove(s, key, routes::LOGIN).await),
            None => None,
        };
        let body = login_body("alice", &format!("guess-{}-{i}", i % 20), Some(device), proof);
        statuses.push(s.post("/auth", None, body).await.status.as_u16());
    }
    statuses
}

#[tokio::test]
async fn a_device_id_alone_earns_no_exemption_from_the_throttle_a_proof_of_its_key_does() {
    let s = server().await;
    let key = Key::new();
    let (_, device) = keyed_login(&s, &key).await;
    // The device signs in once with its key (a key earns the exemption from then on).
    let first = login_body("alice", "alice-pass", Some(&device), Some(prove(&s, &key, routes::LOGIN).await));
    assert_eq!(s.post("/auth", None, first).await.status, StatusCode::OK);
    // Named, unproven: locked like any other sign-in after the free failures.
    let named = guesses(&s, &device, None, 40).await;
    let throttled = named.iter().filter(|&&c| c == 429).count();
    assert!(throttled >= 30, "the device id alone was spared the lock: {named:?}");
    // Proven by the device's key: every guess is checked (a wrong password is a 401), none locked.
    let proven = guesses(&s, &device, Some(&key), 40).await;
    assert!(proven.iter().all(|&c| c == 401), "{proven:?}");
    // The right password from the proven device gets in during the lock; from elsewhere it waits.
    let elsewhere = s.post("/auth", None, login_body("alice", "alice-pass", Some(&device), None)).await;
    assert_error(&elsewhere, 429, "account_throttled");
    let own = login_body("alice", "alice-pass", Some(&device), Some(prove(&s, &key, routes::LOGIN).await));
    assert_eq!(s.post("/auth", None, own).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_replayed_a_foreign_or_a_misdirected_proof_earns_nothing() {
    let s = server().await;
    let key = Key::new();
    let (_, device) = keyed_login(&s, &key).await;
    let first = login_body("alice", "alice-pass", Some(&device), Some(prove(&s, &key, routes::LOGIN).await));
    assert_eq!(s.post("/auth", None, first).await.status, StatusCode::OK);
    // Failures the device's proofs got checked: the account is locked for the longest while.
    assert!(guesses(&s, &device, Some(&key), 15).await.iter().all(|&c| c == 401));
    let right = |proof| login_body("alice", "alice-pass", Some(&device), Some(proof));
    let proof = prove(&s, &key, routes::LOGIN).await;
    let mut wrong = right(proof.clone());
    wrong["password"] = "still-wrong".into();
    assert_error(&s.post("/auth", None, wrong).await, 401, "invalid_credentials");
    // The same proof again, with the right password: spent.
    assert_error(&s.post("/auth", None, right(proof)).await, 429, "account_throttled");
    let foreign = Key::new();
    assert_error(
        &s.post("/auth", None, right(prove(&s, &foreign, routes::LOGIN).await)).await,
        429,
        "account_throttled",
    );
    // Signed for the refresh route, or over a nonce this server never issued.
    assert_error(&s.post("/auth", None, right(prove(&s, &key, routes::REFRESH).await)).await, 429, "account_throttled");
    let made_up = key.sign(routes::LOGIN, "1.00.00");
    assert_error(&s.post("/auth", None, right(made_up)).await, 429, "account_throttled");
    // A fresh proof.
    assert_eq!(s.post("/auth", None, right(prove(&s, &key, routes::LOGIN).await)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_keyed_devices_refresh_token_is_refused_without_its_proof_and_is_not_spent_by_the_refusal() {
    let s = server().await;
    let key = Key::new();
    let (_, device) = keyed_login(&s, &key).await;
    let login = s
        .post(
            "/auth",
            None,
            login_body("alice", "alice-pass", Some(&device), Some(prove(&s, &key, routes::LOGIN).await)),
        )
        .await
        .body;
    let token = login["refreshToken"].as_str().unwrap();
    // Copied elsewhere: no proof, another key's, a replayed one, one for another route.
    assert_error(&refresh(&s, token, None).await, 401, "device_proof_required");
    assert_error(
        &refresh(&s, token, Some(prove(&s, &Key::new(), routes::REFRESH).await)).await,
        401,
        "device_proof_required",
    );
    assert_error(&refresh(&s, token, Some(prove(&s, &key, routes::LOGIN).await)).await, 401, "device_proof_required");
    let proof = prove(&s, &key, routes::REFRESH).await;
    // The refusals spent nothing: the device refreshes with the same token.
    let refreshed = refresh(&s, token, Some(proof.clone())).await;
    assert_eq!(refreshed.status, StatusCode::OK, "{:?}", refreshed.body);
    let next = refreshed.body["refreshToken"].as_str().unwrap();
    assert_error(&refresh(&s, next, Some(proof)).await, 401, "device_proof_required");
    assert_eq!(refresh(&s, next, Some(prove(&s, &key, routes::REFRESH).await)).await.status, StatusCode::OK);

    // A session bound by the registration itself (the key came after the login).
    let (first, _) = keyed_login(&s, &Key::new()).await;
    assert_error(&refresh(&s, first["refreshToken"].as_str().unwrap(), None).await, 401, "device_proof_required");
}

#[tokio::test]
async fn without_a_key_tokens_stay_unbound_and_a_device_keeps_its_first_key() {
    let s = server().await;
    let login = s.login("alice").await;
    let token = login["token"].as_str().unwrap();
    let device = s.register_device(token).await;
    let signed_in = s.post("/auth", None, login_body("alice", "alice-pass", Some(&device), None)).await.body;
    assert_eq!(refresh(&s, signed_in["refreshToken"].as_str().unwrap(), None).await.status, StatusCode::OK);

    let key = Key::new();
    let (_, keyed) = keyed_login(&s, &key).await;
    let again = |public: Option<String>| {
        let mut body = json!({"id": keyed});
        if let Some(public) = public {
            body["publicKey"] = public.into();
        }
        s.post("/auth/connect", Some(token), body)
    };
    assert_eq!(again(Some(key.public())).await.body["deviceId"], keyed.as_str(), "its own key: the same device");
    assert_ne!(again(Some(Key::new().public())).await.body["deviceId"], keyed.as_str(), "another key: a new device");
    assert_ne!(again(None).await.body["deviceId"], keyed.as_str(), "no key: a new device");
    assert_error(&again(Some("04abcd".into())).await, 400, "bad_request");
    let listed = s.get("/devices", Some(&s.token("admin").await)).await;
    assert_eq!(listed.status, StatusCode::OK);
    let listed = listed.body.to_string();
    assert!(listed.contains(&keyed));
    assert!(!listed.contains("publicKey"), "the key is kept beside the device, not in its info: {listed}");
}

/// Four sessions of alice and one of bob: the refresh token and access token of each.
async fn sessions(s: &Server) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for user in ["alice", "alice", "alice", "alice", "bob"] {
        let login = s.login(user).await;
        all.push((login["token"].as_str().unwrap().to_owned(), login["refreshToken"].as_str().unwrap().to_owned()));
    }
    all
}

async fn logout(s: &Server, token: &str, scope: &str) -> common::Answer {
    s.post("/auth/logout", Some(token), json!({"deviceId": null, "scope": scope})).await
}

async fn live(s: &Server, (access, _): &(String, String)) -> bool {
    s.get("/users/me", Some(access)).await.status == StatusCode::OK
}

#[tokio::test]
async fn logout_scopes_end_exactly_the_sessions_they_name() {
    let s = server().await;
    let all = sessions(&s).await;
    assert_eq!(logout(&s, &all[0].0, "others").await.status, StatusCode::OK);
    assert!(live(&s, &all[0]).await, "others: this session goes on");
    assert!(live(&s, &all[4]).await, "another user's session is not touched");
    for other in &all[1..4] {
        assert!(!live(&s, other).await, "others: every other session of the user ends at once");
        assert_error(&refresh(&s, &other.1, None).await, 401, "refresh_token_revoked");
    }
    let refreshed = refresh(&s, &all[0].1, None).await;
    assert_eq!(refreshed.status, StatusCode::OK);

    let more = sessions(&s).await;
    assert_error(&logout(&s, &all[1].0, "global").await, 401, "session_ended");
    assert_error(&s.post("/auth/logout", Some(&all[0].0), json!({"scope": "everywhere"})).await, 400, "invalid_body");
    assert_eq!(logout(&s, &more[0].0, "global").await.status, StatusCode::OK);
    for ended in [&more[1], &more[2], &more[3]] {
        assert!(!live(&s, ended).await, "global: the others end at once");
    }
    assert_error(&refresh(&s, &more[0].1, None).await, 401, "refresh_token_revoked");
    assert_error(
        &refresh(&s, refreshed.body["refreshToken"].as_str().unwrap(), None).await,
        401,
        "refresh_token_revoked",
    );
    assert!(live(&s, &more[4]).await, "bob's session is not touched");
    // This session got the sign-out window (its handlers may still push) until it completes.
    assert!(live(&s, &more[0]).await);
    assert_eq!(
        s.post("/auth/logout", Some(&more[0].0), json!({"complete": true, "scope": "global"})).await.status,
        StatusCode::OK
    );
    assert!(!live(&s, &more[0]).await);

    // local (the default) ends this session only.
    let last = sessions(&s).await;
    assert_eq!(s.post("/auth/logout", Some(&last[0].0), json!({"complete": true})).await.status, StatusCode::OK);
    assert!(!live(&s, &last[0]).await && live(&s, &last[1]).await);

    // A live session's expired token may widen its logout (as any logout takes one), an ended one's not.
    s.state.clock.set_offset(s.state.clock.offset_ms() + 3_600_000);
    assert!(!live(&s, &last[1]).await, "expired");
    assert_error(&logout(&s, &last[0].0, "others").await, 401, "session_ended");
    assert_eq!(logout(&s, &last[1].0, "others").await.status, StatusCode::OK);
    assert_error(&refresh(&s, &last[2].1, None).await, 401, "refresh_token_revoked");
}

#[tokio::test]
async fn a_key_added_with_an_access_token_alone_earns_nothing() {
    let s = server().await;
    let key = Key::new();
    let thief = Key::new();
    let (_, device) = keyed_login(&s, &key).await;
    // Alice's session on her keyed device, signed in with its proof: bound to her key.
    let own = login_body("alice", "alice-pass", Some(&device), Some(prove(&s, &key, routes::LOGIN).await));
    let bound = s.post("/auth", None, own).await.body;
    let access = bound["token"].as_str().unwrap();
    // With that session's access token, a device with another key cannot join the session...
    let joined =
        s.post("/auth/connect", Some(access), json!({"sdkVersion": "1.4.17", "publicKey": thief.public()})).await;
    assert_error(&joined, 403, "forbidden");
    // ...so its refresh still answers to her key only.
    let stolen = bound["refreshToken"].as_str().unwrap();
    assert_error(
        &refresh(&s, stolen, Some(prove(&s, &thief, routes::REFRESH).await)).await,
        401,
        "device_proof_required",
    );
    assert_eq!(refresh(&s, stolen, Some(prove(&s, &key, routes::REFRESH).await)).await.status, StatusCode::OK);

    // An unbound session's access token may register a keyed device (the SDK's first
    // registration), but that key never signed in with the password: it earns no exemption.
    let unbound = s.post("/auth", None, login_body("alice", "alice-pass", None, None)).await.body;
    let planted = s
        .post(
            "/auth/connect",
            Some(unbound["token"].as_str().unwrap()),
            json!({"sdkVersion": "1.4.17", "publicKey": thief.public()}),
        )
        .await;
    assert_eq!(planted.status, StatusCode::OK, "{:?}", planted.body);
    let planted = planted.body["deviceId"].as_str().unwrap().to_owned();
    let statuses = guesses(&s, &planted, Some(&thief), 40).await;
    assert!(statuses.iter().filter(|&&c| c == 429).count() >= 30, "a planted key was spared the lock: {statuses:?}");
}

#[tokio::test]
async fn a_proof_shown_on_any_request_is_spent() {
    let s = server().await;
    let key = Key::new();
    let (_, device) = keyed_login(&s, &key).await;
    let first = login_body("alice", "alice-pass", Some(&device), Some(prove(&s, &key, routes::LOGIN).await));
    assert_eq!(s.post("/auth", None, first).await.status, StatusCode::OK);
    // A proof of alice's key shown on bob's sign-in (naming her device) is taken by nothing...
    let proof = prove(&s, &key, routes::LOGIN).await;
    let on_bob = s.post("/auth", None, login_body("bob", "wrong", Some(&device), Some(proof.clone()))).await;
    assert_error(&on_bob, 401, "invalid_credentials");
    // ...and spent all the same: kept for a locked account later, it spares nothing.
    guesses(&s, &device, None, 12).await;
    let later = s.post("/auth", None, login_body("alice", "alice-pass", Some(&device), Some(proof))).await;
    assert_error(&later, 429, "account_throttled");
    // A proof shown on an unbound session's refresh is spent too.
    let unbound = s.post("/auth", None, login_body("carol", "carol-pass", None, None)).await.body;
    let shown = prove(&s, &key, routes::REFRESH).await;
    let carol = refresh(&s, unbound["refreshToken"].as_str().unwrap(), Some(shown.clone())).await;
    assert_eq!(carol.status, StatusCode::OK, "{:?}", carol.body);
    let bound = s
        .post(
            "/auth",
            None,
            login_body("alice", "alice-pass", Some(&device), Some(prove(&s, &key, routes::LOGIN).await)),
        )
        .await;
    assert_eq!(bound.status, StatusCode::OK);
    assert_error(
        &refresh(&s, bound.body["refreshToken"].as_str().unwrap(), Some(shown)).await,
        401,
        "device_proof_required",
    );
}

/// Nonces are outside the sign-in rate limit: a keyed refresh costs the address one token of it,
/// not two, and nonces left over from a spent bucket still come.
#[tokio::test]
async fn nonces_do_not_draw_on_the_sign_in_rate_limit() {
    let s =
        spawn_with(Settings { test_controls: true, auth_rate_per_min: 1, auth_rate_burst: 1, ..Default::default() })
            .await;
    for _ in 0..5 {
        nonce(&s).await;
    }
    assert_eq!(s.post("/auth", None, login_body("alice", "alice-pass", None, None)).await.status, StatusCode::OK);
    assert_error(&s.post("/auth", None, login_body("alice", "alice-pass", None, None)).await, 429, "rate_limited");
    nonce(&s).await;
}

/// A session kept alive by its refreshes alone keeps its device, unseen or not: pruning the
/// device would forget its key and unbind the session.
#[tokio::test]
async fn a_live_sessions_device_is_never_pruned_with_its_key() {
    let s = server().await;
    let key = Key::new();
    let (_, device) = keyed_login(&s, &key).await;
    let own = login_body("alice", "alice-pass", Some(&device), Some(prove(&s, &key, routes::LOGIN).await));
    let mut refresh_token = s.post("/auth", None, own).await.body["refreshToken"].as_str().unwrap().to_owned();
    for _ in 0..7 {
        s.advance_days(29.0).await;
        let next = refresh(&s, &refresh_token, Some(prove(&s, &key, routes::REFRESH).await)).await;
        assert_eq!(next.status, StatusCode::OK, "{:?}", next.body);
        refresh_token = next.body["refreshToken"].as_str().unwrap().to_owned();
    }
    let admin = s.token("admin").await;
    assert_eq!(s.run_cron(&admin, "session-prune").await["status"], "succeeded");
    let ids: Vec<String> = s.state.store.lock().unwrap().query_map("SELECT id FROM devices", [], |r| r.get(0)).unwrap();
    assert!(ids.contains(&device), "{ids:?}");
    assert_error(&refresh(&s, &refresh_token, None).await, 401, "device_proof_required");
}

/// A Google sign-in on a registered, keyed device is bound to the key when it proves it, as a
/// password's is: its refresh token needs the proof, and deleting the device ends it. Unproven, it
/// runs unbound, off the device.
#[tokio::test]
async fn a_google_sign_in_proven_on_a_keyed_device_is_bound_and_ends_with_the_device() {
    let s = server().await;
    let key = Key::new();
    let (_, device) = keyed_login(&s, &key).await;
    let google = |proof: Option<Value>| {
        let mut body = json!({"credential": "mock-google:alice", "deviceInfo": {"id": device.clone()}});
        if let Some(proof) = proof {
            body["deviceProof"] = proof;
        }
        body
    };
    let proven = s.post("/auth/google", None, google(Some(prove(&s, &key, routes::LOGIN_GOOGLE).await))).await;
    assert_eq!(proven.status, StatusCode::OK, "{:?}", proven.body);
    let (token, refresh_token) =
        (proven.body["token"].as_str().unwrap().to_owned(), proven.body["refreshToken"].as_str().unwrap().to_owned());
    assert_error(&refresh(&s, &refresh_token, None).await, 401, "device_proof_required");
    // Unproven (or proven for another route): a session of its own, not on the device.
    let unproven = s.post("/auth/google", None, google(Some(prove(&s, &key, routes::LOGIN).await))).await;
    assert_eq!(unproven.status, StatusCode::OK, "{:?}", unproven.body);
    let loose = unproven.body["refreshToken"].as_str().unwrap().to_owned();
    // The device deleted (by its user): the proven session ends with it.
    let deleted = s.call(reqwest::Method::DELETE, &format!("/devices/{device}"), Some(&token), None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{:?}", deleted.body);
    assert_error(&s.get("/users/me", Some(&token)).await, 401, "session_ended");
    assert_eq!(refresh(&s, &loose, None).await.status, StatusCode::OK, "the unbound session was never the device's");
}

/// A session bound to its device's key is logged out only with that key's proof, in every scope
/// and by either call (the first, and the one saying the handlers have run): a copy of its tokens
/// (the whole storage of the key's browser) cannot end it, nor the user's other sessions. A
/// refusal ends nothing; the key's own proof does what the scope says.
#[tokio::test]
async fn a_keyed_session_is_logged_out_only_with_its_keys_proof_in_every_scope() {
    let s = server().await;
    let key = Key::new();
    let (_, device) = keyed_login(&s, &key).await;
    let own = login_body("alice", "alice-pass", Some(&device), Some(prove(&s, &key, routes::LOGIN).await));
    let bound = s.post("/auth", None, own).await.body;
    let access = bound["token"].as_str().unwrap().to_owned();
    let other = s.login("alice").await["token"].as_str().unwrap().to_owned();
    let logout_with = |scope: &str, complete: bool, proof: Option<Value>| {
        let mut body = json!({"deviceId": device, "scope": scope, "complete": complete});
        if let Some(proof) = proof {
            body["deviceProof"] = proof;
        }
        s.post("/auth/logout", Some(&access), body)
    };
    for scope in ["local", "others", "global"] {
        for complete in [false, true] {
            assert_error(&logout_with(scope, complete, None).await, 401, "device_proof_required");
            let foreign = prove(&s, &Key::new(), routes::LOGOUT).await;
            assert_error(&logout_with(scope, complete, Some(foreign)).await, 401, "device_proof_required");
            let misdirected = prove(&s, &key, routes::REFRESH).await;
            assert_error(&logout_with(scope, complete, Some(misdirected)).await, 401, "device_proof_required");
        }
        assert!(s.get("/users/me", Some(&access)).await.status == StatusCode::OK, "{scope}: refused, yet ended");
        assert!(s.get("/users/me", Some(&other)).await.status == StatusCode::OK, "{scope}: another session ended");
    }
    let bound_refresh = bound["refreshToken"].as_str().unwrap();
    let refreshed = refresh(&s, bound_refresh, Some(prove(&s, &key, routes::REFRESH).await)).await;
    assert_eq!(refreshed.status, StatusCode::OK, "the refusals left the session whole: {:?}", refreshed.body);

    // The key's own proof: `others` ends the other session, this one goes on; a proof is good once.
    let proof = prove(&s, &key, routes::LOGOUT).await;
    assert_eq!(logout_with("others", false, Some(proof.clone())).await.status, StatusCode::OK);
    assert_error(&s.get("/users/me", Some(&other)).await, 401, "session_ended");
    assert!(s.get("/users/me", Some(&access)).await.status == StatusCode::OK);
    assert_error(&logout_with("local", false, Some(proof)).await, 401, "device_proof_required");
    // `local`, proven twice: the window opens, then the completion ends the session.
    assert_eq!(logout_with("local", false, Some(prove(&s, &key, routes::LOGOUT).await)).await.status, StatusCode::OK);
    assert!(s.get("/users/me", Some(&access)).await.status == StatusCode::OK, "the sign-out window");
    assert_error(&logout_with("local", true, None).await, 401, "device_proof_required");
    assert_eq!(logout_with("local", true, Some(prove(&s, &key, routes::LOGOUT).await)).await.status, StatusCode::OK);
    assert_error(&s.get("/users/me", Some(&access)).await, 401, "session_ended");
}
