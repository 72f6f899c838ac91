//! The doors of issue "the mock server hardened", tried from outside: sign-ups into existing
//! tenants, user creation by the wrong role, forged tokens with well-known secrets, the stored
//! password format, password changes with only a token, document-database headers that outlive
//! their session. Each refusal is checked for its status and code, and for what did not change.

use crate::common;

use common::{assert_error, spawn, Server};
use jsonwebtoken::{encode, EncodingKey, Header};
use reqwest::StatusCode;
use serde_json::{json, Value};

async fn users_of(s: &Server, company: &str) -> Vec<String> {
    let admin = s.token("admin").await;
    let all = s.get("/users", Some(&admin)).await.body["users"].as_array().cloned().unwrap_or_default();
    all.iter()
        .filter(|u| u["companies"].as_array().is_some_and(|c| c.contains(&json!(company))))
        .map(|u| u["username"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn sign_up_never_joins_an_existing_company_and_creates_its_own_tenant() {
    let s = spawn().await;
    let before = users_of(&s, "globex").await;
    let refused = s
        .post("/auth/register", None, json!({"username": "mallory", "password": "mallory-pass", "companyId": "globex"}))
        .await;
    assert_error(&refused, 409, "company_exists");
    assert_eq!(users_of(&s, "globex").await, before, "nobody joined globex");
    assert_error(
        &s.post("/auth", None, json!({"username": "mallory", "password": "mallory-pass"})).await,
        401,
        "invalid_credentials",
    );
    assert_error(
        &s.post(
            "/auth/register",
            None,
            json!({"username": "mallory", "password": "mallory-pass", "roles": ["sys_admin"]}),
        )
        .await,
        403,
        "forbidden",
    );
    assert_error(
        &s.post(
            "/auth/register",
            None,
            json!({"username": "mallory", "password": "mallory-pass", "companyId": "Bad_Id"}),
        )
        .await,
        400,
        "bad_request",
    );

    let made = s
        .post(
            "/auth/register",
            None,
            json!({"username": "dave", "password": "dave-pass", "companyName": "Dave's Diner"}),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{:?}", made.body);
    assert_eq!(
        (made.body["user"]["companyId"].clone(), made.body["user"]["roles"].clone()),
        (json!("dave"), json!(["manager"]))
    );
    assert_eq!(made.body["company"], json!({"id": "dave", "name": "Dave's Diner"}));
    assert!(made.body["user"].get("password_hash").is_none());
    // The new tenant is seeded like the others: its own legacy catalogue to bootstrap.
    let dave = s.token("dave").await;
    let boot = s.get("/bootstrap?database=legacy", Some(&dave)).await;
    assert_eq!((boot.status, boot.body["db"].clone()), (StatusCode::OK, json!("dev_dave_main_catalog")));
    assert!(boot.body["docs"].as_array().is_some_and(|d| !d.is_empty()));
    assert_error(
        &s.post("/auth/register", None, json!({"username": "dave", "password": "dave-pass", "companyId": "dave-2"}))
            .await,
        409,
        "username_taken",
    );
    assert_error(
        &s.post("/auth/register", None, json!({"username": "eve", "password": "short"})).await,
        400,
        "bad_request",
    );
}

#[tokio::test]
async fn only_a_manager_of_the_company_or_sys_admin_creates_users() {
    let s = spawn().await;
    let new = |name: &str, extra: Value| {
        let mut body = json!({"username": name, "password": "long-enough-pass"});
        body.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        body
    };
    let before = users_of(&s, "acme").await;
    assert_error(
        &s.post("/register-user", None, new("gina", json!({"companyId": "acme"}))).await,
        401,
        "missing_token",
    );
    let alice = s.token("alice").await;
    assert_error(&s.post("/register-user", Some(&alice), new("gina", json!({}))).await, 403, "forbidden");
    let keys = s.token("keys").await;
    assert_error(&s.post("/register-user", Some(&keys), new("gina", json!({}))).await, 403, "forbidden");
    assert_eq!(users_of(&s, "acme").await, before, "nobody was created");

    let bob = s.token("bob").await; // manager of globex
    assert_error(
        &s.post("/register-user", Some(&bob), new("gina", json!({"companyId": "acme"}))).await,
        403,
        "forbidden",
    );
    assert_error(
        &s.post("/register-user", Some(&bob), new("gina", json!({"roles": ["manager"]}))).await,
        403,
        "forbidden",
    );
    let made = s.post("/register-user", Some(&bob), new("gina", json!({}))).await;
    assert_eq!(
        (made.status, made.body["user"]["companyId"].clone(), made.body["user"]["roles"].clone()),
        (StatusCode::CREATED, json!("globex"), json!(["cashier"]))
    );

    let admin = s.token("admin").await;
    let made = s
        .post("/register-user", Some(&admin), new("frank", json!({"companyId": "initech", "roles": ["manager"]})))
        .await;
    assert_eq!(
        (made.status, made.body["user"]["companyId"].clone(), made.body["user"]["roles"].clone()),
        (StatusCode::CREATED, json!("initech"), json!(["manager"]))
    );
    assert_error(
        &s.post("/register-user", Some(&admin), new("hank", json!({"companyId": "nope"}))).await,
        404,
        "unknown_company",
    );
}

#[tokio::test]
async fn tokens_forged_with_a_well_known_secret_are_refused() {
    let s = spawn().await;
    let now = s.now() / 1000;
    let claims = json!({"sub": "user-admin", "userId": "user-admin", "companyId": "acme", "roles": ["sys_admin"], "iat": now, "exp": now + 900});
    for secret in ["session-broker-dev-secret", "secret", ""] {
        let forged = encode(&Header::default(), &claims, &EncodingKey::from_secret(secret.as_bytes())).unwrap();
        assert_error(&s.get("/admin/rolling-db/tenants", Some(&forged)).await, 401, "invalid_token");
    }
}

#[tokio::test]
async fn passwords_are_argon2id_and_an_unknown_user_is_answered_like_a_wrong_password() {
    let s = spawn().await;
    let stored: String = s
        .state
        .store
        .lock()
        .unwrap()
        .query_row("SELECT password_hash FROM users WHERE username = 'alice'", [], |r| r.get(0))
        .unwrap();
    assert!(stored.starts_with("$argon2id$"), "{stored}");
    assert!(!stored.contains("alice-pass"));
    let wrong = s.post("/auth", None, json!({"username": "alice", "password": "not-her-pass"})).await;
    let ghost = s.post("/auth", None, json!({"username": "ghost", "password": "not-her-pass"})).await;
    assert_eq!((wrong.status, &wrong.body), (ghost.status, &ghost.body), "no enumeration by answer");
    assert_error(&ghost, 401, "invalid_credentials");
}

#[tokio::test]
async fn a_password_change_needs_the_current_password_and_ends_every_session() {
    let s = spawn().await;
    let login = s.login("alice").await;
    let (token, refresh) = (login["token"].as_str().unwrap().to_owned(), login["refreshToken"].clone());
    let path = "/users/user-alice";
    // A stolen access token alone is not enough.
    assert_error(
        &s.patch(path, Some(&token), json!({"password": "stolen-new-pass"})).await,
        400,
        "current_password_required",
    );
    assert_error(
        &s.patch(path, Some(&token), json!({"password": "stolen-new-pass", "currentPassword": "guess"})).await,
        401,
        "invalid_credentials",
    );
    assert_eq!(
        s.post("/auth", None, json!({"username": "alice", "password": "alice-pass"})).await.status,
        StatusCode::OK,
        "unchanged"
    );
    assert_eq!(
        s.post("/auth/refresh", None, json!({"refreshToken": refresh})).await.status,
        StatusCode::OK,
        "sessions untouched"
    );

    let other = s.login("alice").await;
    let changed =
        s.patch(path, Some(&token), json!({"password": "alice-new-pass", "currentPassword": "alice-pass"})).await;
    assert_eq!(changed.status, StatusCode::OK, "{:?}", changed.body);
    assert_error(
        &s.post("/auth/refresh", None, json!({"refreshToken": other["refreshToken"]})).await,
        401,
        "refresh_token_revoked",
    );
    assert_error(
        &s.post("/auth", None, json!({"username": "alice", "password": "alice-pass"})).await,
        401,
        "invalid_credentials",
    );
    assert_eq!(
        s.post("/auth", None, json!({"username": "alice", "password": "alice-new-pass"})).await.status,
        StatusCode::OK
    );

    // sys_admin resets another user's password without knowing it; a role change ends sessions too.
    let admin = s.token("admin").await;
    let carol = s.login("carol").await;
    assert_eq!(
        s.patch("/users/user-carol", Some(&admin), json!({"password": "carol-reset-pass"})).await.status,
        StatusCode::OK
    );
    assert_error(
        &s.post("/auth/refresh", None, json!({"refreshToken": carol["refreshToken"]})).await,
        401,
        "refresh_token_revoked",
    );
    let bob = s.login("bob").await;
    assert_eq!(s.patch("/users/user-bob", Some(&admin), json!({"roles": ["cashier"]})).await.status, StatusCode::OK);
    assert_error(
        &s.post("/auth/refresh", None, json!({"refreshToken": bob["refreshToken"]})).await,
        401,
        "refresh_token_revoked",
    );
}

#[tokio::test]
async fn docdb_headers_work_only_while_their_session_lives() {
    let s = spawn().await;
    let login = s.login("alice").await;
    let headers = login["docdbHeaders"]["Remote"].as_object().unwrap().clone();
    assert!(headers.contains_key("X-Docdb-Session"));
    let db = "dev_acme_main_catalog";
    let read = |h: serde_json::Map<String, Value>| {
        let req = s.client.get(format!("{}/docdb/{db}/_all_docs", s.base));
        h.iter().fold(req, |r, (k, v)| r.header(k, v.as_str().unwrap_or_default())).send()
    };
    assert_eq!(read(headers.clone()).await.unwrap().status(), StatusCode::OK);
    let mut forged = headers.clone();
    forged.insert("X-Docdb-Company".into(), json!("globex"));
    assert_eq!(read(forged).await.unwrap().status(), StatusCode::UNAUTHORIZED);
    // The sign-out complete (the SDK's second call, once its handlers have run).
    s.post("/auth/logout", Some(login["token"].as_str().unwrap()), json!({"complete": true})).await;
    let after = read(headers).await.unwrap();
    assert_eq!(after.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(after.json::<Value>().await.unwrap()["error"], "session_ended");
}

#[tokio::test]
async fn sign_in_routes_are_rate_limited_per_address_with_the_error_body() {
    // One request a minute refills the burst: a loaded machine cannot refill it mid-test.
    let settings = mock_server::settings::Settings {
        test_controls: true,
        auth_rate_per_min: 1,
        auth_rate_burst: 3,
        ..Default::default()
    };
    let s = common::spawn_with(settings).await;
    for _ in 0..3 {
        assert_error(
            &s.post("/auth", None, json!({"username": "alice", "password": "wrong-pass"})).await,
            401,
            "invalid_credentials",
        );
    }
    let limited = s.post("/auth", None, json!({"username": "alice", "password": "alice-pass"})).await;
    assert_error(&limited, 429, "rate_limited");
    assert!(limited.headers.get("retry-after").is_some());
    // Only the sign-in routes: the rest of the server answers as before.
    assert_eq!(s.get("/health", None).await.status, StatusCode::OK);
}

#[tokio::test]
async fn every_flag_cron_invalidation_and_user_change_is_audited_newest_first_and_paged() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let keys = s.token("keys").await;
    s.patch("/admin/rolling-db/flags/acme", Some(&keys), json!({"rollingDb": true})).await;
    s.patch("/admin/rolling-db/flags/globex?force=true", Some(&admin), json!({"rollingDb": true})).await;
    s.run_cron(&keys, "rolling-db-rotate").await;
    s.post("/admin/invalidate-clients/initech", Some(&admin), json!({})).await;
    s.post("/register-user", Some(&admin), json!({"username": "ivan", "password": "ivan-pass-1", "companyId": "acme"}))
        .await;
    s.patch("/users/user-alice", Some(&admin), json!({"roles": ["manager"]})).await;

    assert_error(&s.get("/admin/audit", Some(&keys)).await, 403, "forbidden");
    assert_error(&s.get("/admin/audit", None).await, 401, "missing_token");
    let all = s.get("/admin/audit", Some(&admin)).await.body;
    let actions: Vec<&str> = all["entries"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    // The rotate cut both rolling tenants over: one invalidation each, by the cron.
    assert_eq!(
        actions,
        [
            "user.roles",
            "user.create",
            "clients.invalidate",
            "clients.invalidate",
            "clients.invalidate",
            "cron.run",
            "flags.force",
            "flags.change"
        ],
        "newest first: {all}"
    );
    let first = &all["entries"][7];
    assert_eq!(
        (first["actor"].clone(), first["detail"]["companyId"].clone(), first["detail"]["after"]["rollingDb"].clone()),
        (json!("user-keys"), json!("acme"), json!(true))
    );
    assert!(first["at"].as_i64().is_some() && first.get("ip").is_some());
    assert_eq!(all["entries"][3]["actor"], "system:rolling-db-rotate", "the cutover invalidation names the cron");

    let acme = s.get("/admin/audit?companyId=acme", Some(&admin)).await.body;
    assert!(acme["entries"].as_array().unwrap().iter().all(|e| e["detail"]["companyId"] == "acme"), "{acme}");
    let page = s.get("/admin/audit?limit=2", Some(&admin)).await.body;
    assert_eq!(page["entries"].as_array().unwrap().len(), 2);
    let next = page["nextBefore"].as_i64().unwrap();
    let page2 = s.get(&format!("/admin/audit?limit=2&before={next}"), Some(&admin)).await.body;
    assert_eq!(page2["entries"][0]["action"], "clients.invalidate");
    assert_error(&s.get("/admin/audit?limit=x", Some(&admin)).await, 400, "bad_request");
}

#[tokio::test]
async fn session_prune_removes_expired_sessions_old_runs_and_long_unseen_devices() {
    let s = spawn().await;
    let admin = s.token("admin").await;
    let names: Vec<String> = s.get("/admin/crons", Some(&admin)).await.body["crons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"session-prune".to_string()), "{names:?}");
    let alice = s.token("alice").await;
    s.post("/auth/connect", Some(&alice), json!({"sdkVersion": "1.4.17"})).await;
    let count = |sql: &str| -> i64 { s.state.store.lock().unwrap().query_row(sql, [], |r| r.get(0)).unwrap() };
    assert!(count("SELECT COUNT(*) FROM refresh_tokens") >= 2);
    assert_eq!(count("SELECT COUNT(*) FROM devices"), 1);
    // Half a year and more later: every refresh token has expired, the device was never seen again.
    s.advance_days(200.0).await;
    let admin = s.token("admin").await;
    let run = s.run_cron(&admin, "session-prune").await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert!(run["log"].as_array().unwrap().iter().any(|l| l.as_str().unwrap().contains("device(s) unseen")), "{run}");
    assert_eq!(count("SELECT COUNT(*) FROM devices"), 0);
    assert_eq!(
        count("SELECT COUNT(*) FROM refresh_tokens WHERE expires_at <= (SELECT MAX(created_at) FROM refresh_tokens)"),
        0,
        "only the fresh admin session is left"
    );
    assert_eq!(s.post("/auth/refresh", None, json!({"refreshToken": "gone"})).await.status, StatusCode::UNAUTHORIZED);
}

/// One request through the app as if it came from `peer` (the binary records connection info).
async fn from_peer(app: axum::Router, peer: &str, method: &str, path: &str, body: Value) -> (StatusCode, Value) {
    use tower::ServiceExt;
    let mut request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    request.extensions_mut().insert(axum::extract::ConnectInfo(peer.parse::<std::net::SocketAddr>().unwrap()));
    let response = app.oneshot(request).await.unwrap();
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn test_controls_answer_only_this_machine_and_the_rate_limit_counts_per_address() {
    let settings = mock_server::settings::Settings {
        test_controls: true,
        auth_rate_burst: 2,
        auth_rate_per_min: 1,
        ..Default::default()
    };
    let state = mock_server::state::AppState::new(settings, Default::default()).unwrap();
    let app = mock_server::app(state);
    let (status, body) = from_peer(app.clone(), "192.0.2.10:5000", "POST", "/__mock/reset", json!({})).await;
    assert_eq!((status, body["error"].clone()), (StatusCode::FORBIDDEN, json!("forbidden")));
    assert_eq!(from_peer(app.clone(), "127.0.0.1:5000", "POST", "/__mock/reset", json!({})).await.0, StatusCode::OK);

    let login = json!({"username": "alice", "password": "wrong-pass"});
    for _ in 0..2 {
        assert_eq!(
            from_peer(app.clone(), "192.0.2.10:5000", "POST", "/auth", login.clone()).await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    let (status, body) = from_peer(app.clone(), "192.0.2.10:5001", "POST", "/auth", login.clone()).await;
    assert_eq!(
        (status, body["error"].clone()),
        (StatusCode::TOO_MANY_REQUESTS, json!("rate_limited")),
        "the address, not the port, is counted"
    );
    assert_eq!(
        from_peer(app.clone(), "192.0.2.11:5000", "POST", "/auth", login).await.0,
        StatusCode::UNAUTHORIZED,
        "another address has its own budget"
    );
}

#[tokio::test]
async fn a_corrupt_stored_row_is_an_error_reported_never_an_empty_answer() {
    let s = spawn().await;
    let alice = s.token("alice").await;
    let db = "dev_acme_main_catalog";
    assert_eq!(s.get(&format!("/docdb/{db}/_all_docs"), Some(&alice)).await.status, StatusCode::OK);
    s.state.store.lock().unwrap().execute("UPDATE docdb_documents SET body = '{not json' WHERE db = ?1", [db]).unwrap();
    let broken = s.get(&format!("/docdb/{db}/_all_docs"), Some(&alice)).await;
    assert_error(&broken, 500, "internal");
    assert!(!broken.body["message"].as_str().unwrap().contains("not json"), "no internals to the client");
    s.state.store.lock().unwrap().execute("UPDATE docdb_databases SET kind = 'mystery' WHERE name = ?1", [db]).unwrap();
    assert_error(&s.get(&format!("/docdb/{db}/_all_docs"), Some(&alice)).await, 500, "internal");
}

/// One truth about roles: for every action of the SDK's default permission map and every demo
/// role, `hasPermission` (the same map over the token's roles) answers what the server does with
/// a request that needs that action.
#[tokio::test]
async fn every_action_of_the_permission_map_agrees_with_the_server_for_every_demo_role() {
    use protocol::permissions::{self as p, PermissionMap};
    let s = spawn().await;
    let admin = s.token("admin").await;
    // CORE exists for the catalogue write, and on a tenant of every user's company.
    for id in ["acme", "globex"] {
        s.patch(&format!("/admin/rolling-db/flags/{id}?force=true"), Some(&admin), json!({"rollingDb": true})).await;
    }
    s.run_cron(&admin, "rolling-db-rotate").await;
    let mut actions: Vec<&str> = p::DEFAULTS.iter().map(|(a, _)| *a).collect();
    actions.extend([p::ROLLING_DB_REWARM, p::ROLLING_DB_RELEASE, p::ROLLING_DB_FORCE]);
    for user in ["admin", "keys", "alice", "bob", "carol"] {
        let login = s.login(user).await;
        let token = login["token"].as_str().unwrap().to_owned();
        // What hasPermission reads: the token's own claims.
        let claims = session_broker::core::token::Claims::decode(&token).unwrap();
        let (company, roles) = (claims.company_id().unwrap(), claims.roles());
        for &action in &actions {
            let sdk = PermissionMap::default().allows(action, &roles);
            let answer = match action {
                p::ROLLING_DB_READ => s.get("/admin/rolling-db/cluster", Some(&token)).await,
                p::ROLLING_DB_FLAGS => {
                    s.get(&format!("/admin/rolling-db/tenants/{company}/preflight"), Some(&token)).await
                }
                // The state of a run (the list answers crons:run holders the names, state null).
                p::CRONS_READ => s.get("/admin/crons/runs/run-none", Some(&token)).await,
                p::CRONS_RUN => s.post("/admin/crons/session-prune/run", Some(&token), json!({})).await,
                p::CLIENTS_INVALIDATE => s.post("/admin/invalidate-clients/initech", Some(&token), json!({})).await,
                // The open reports of the caller's tenant (reading them changes nothing).
                p::ROLLING_DB_LOSSES => {
                    s.get(&format!("/admin/rolling-db/tenants/{company}/losses"), Some(&token)).await
                }
                p::CATALOG_WRITE => {
                    s.call(
                        reqwest::Method::PUT,
                        &format!("/docdb/dev_{company}_main_core/walk-{user}"),
                        Some(&token),
                        Some(json!({"type": "note"})),
                    )
                    .await
                }
                // Re-warm is refused after its role check when the tenant has no CORE: initech has none.
                p::ROLLING_DB_REWARM => {
                    s.post("/admin/rolling-db/tenants/initech/rewarm", Some(&token), json!({})).await
                }
                // Refused after its role check (404) when the day is not held: none is.
                p::ROLLING_DB_RELEASE => {
                    s.post(&format!("/admin/rolling-db/tenants/{company}/days/none/release"), Some(&token), json!({}))
                        .await
                }
                // Forcing past the prerequisites: a flag change that leaves initech's drop off.
                p::ROLLING_DB_FORCE => {
                    s.patch("/admin/rolling-db/flags/initech?force=true", Some(&token), json!({"rollingDbDrop": false}))
                        .await
                }
                other => panic!("the walk has no request for {other}: add one"),
            };
            let server = answer.status != reqwest::StatusCode::FORBIDDEN;
            assert_eq!(
                sdk, server,
                "{user} ({roles:?}) on {action}: hasPermission says {sdk}, the server answered {} {:?}",
                answer.status, answer.body
            );
        }
    }
}

#[tokio::test]
async fn request_headers_past_16_kib_are_answered_431_with_the_error_body() {
    let s = spawn().await;
    let token = s.token("alice").await;
    for (what, size) in [("a large cookie", 200 * 1024), ("just past the bound", 16 * 1024)] {
        let a = s
            .client
            .get(format!("{}/users/me", s.base))
            .bearer_auth(&token)
            .header("x-padding", "a".repeat(size))
            .send()
            .await
            .unwrap();
        assert_eq!(a.status().as_u16(), 431, "{what}");
        let body: Value = a.json().await.unwrap();
        assert_eq!(body["error"], "headers_too_large", "{what}: {body}");
    }
    let fine = s
        .client
        .get(format!("{}/users/me", s.base))
        .bearer_auth(&token)
        .header("x-padding", "a".repeat(8 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(fine.status(), StatusCode::OK, "8 KiB of headers are served");
}

/// Failed sign-ins of one account are slowed whatever the address: past the free failures each
/// one locks the account for a doubling while, bounded; the right password waits too, even
/// naming a device the user registered (only a proof of the device's key spares it:
/// tests/integration/device_keys.rs); the lock is audited and a success forgets it all.
#[tokio::test]
async fn failed_sign_ins_are_throttled_per_account_from_every_address() {
    // The per-address limit off: what is left is the account's own.
    let settings = mock_server::settings::Settings {
        test_controls: true,
        auth_rate_per_min: 0,
        auth_account_lock_max_secs: 60,
        ..Default::default()
    };
    let state = mock_server::state::AppState::new(settings, Default::default()).unwrap();
    let app = mock_server::app(state.clone());
    let wrong = json!({"username": "alice", "password": "wrong-pass"});
    let right = json!({"username": "alice", "password": "alice-pass", "deviceInfo": {}});
    // A device alice signed in on before, registered to her.
    let (_, login) = from_peer(app.clone(), "192.0.2.1:1", "POST", "/auth", right.clone()).await;
    let token = login["token"].as_str().unwrap().to_owned();
    let connect = {
        use tower::ServiceExt;
        let request = axum::http::Request::post("/auth/connect")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {token}"))
            .body(axum::body::Body::from("{}"))
            .unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        serde_json::from_slice::<Value>(&axum::body::to_bytes(response.into_body(), 1 << 16).await.unwrap()).unwrap()
    };
    let device_id = connect["deviceId"].as_str().unwrap().to_owned();

    for i in 0..5 {
        let peer = format!("198.51.100.{i}:4000");
        assert_eq!(
            from_peer(app.clone(), &peer, "POST", "/auth", wrong.clone()).await.0,
            StatusCode::UNAUTHORIZED,
            "free failure {i}"
        );
    }
    // The fifth failure locked the account for a second: from any address, even the right password.
    let (status, body) = from_peer(app.clone(), "203.0.113.9:1", "POST", "/auth", right.clone()).await;
    assert_eq!((status, body["error"].clone()), (StatusCode::TOO_MANY_REQUESTS, json!("account_throttled")), "{body}");
    // Another account is not touched.
    assert_eq!(
        from_peer(app.clone(), "203.0.113.9:1", "POST", "/auth", json!({"username": "bob", "password": "bob-pass"}))
            .await
            .0,
        StatusCode::OK
    );
    // Her device's id alone, which listings show, is locked out like any other sign-in.
    let own = json!({"username": "alice", "password": "alice-pass", "deviceInfo": {"id": device_id}});
    assert_eq!(
        from_peer(
            app.clone(),
            "192.0.2.1:1",
            "POST",
            "/auth",
            json!({"username": "alice", "password": "typo", "deviceInfo": {"id": device_id}})
        )
        .await
        .0,
        StatusCode::TOO_MANY_REQUESTS
    );
    // The failures go on doubling the lock, bounded by AUTH_ACCOUNT_LOCK_MAX_SECS.
    let mut locks = Vec::new();
    for _ in 0..10 {
        state.clock.set_offset(state.clock.offset_ms() + 3_600_000 / 60);
        assert_eq!(
            from_peer(app.clone(), "198.51.100.77:1", "POST", "/auth", wrong.clone()).await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    let audited = state
        .store
        .lock()
        .unwrap()
        .query_map("SELECT detail FROM audit_log WHERE action = 'account.throttled' ORDER BY id", [], |r| {
            r.get::<_, String>(0)
        })
        .unwrap();
    for detail in &audited {
        let detail: Value = serde_json::from_str(detail).unwrap();
        assert_eq!((detail["username"].as_str(), detail["companyId"].as_str()), (Some("alice"), Some("acme")));
        locks.push(detail["lockedForSecs"].as_u64().unwrap());
    }
    assert_eq!(locks, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60, 60], "every lock audited, doubling, bounded");
    assert_eq!(
        from_peer(app.clone(), "192.0.2.1:1", "POST", "/auth", own).await.0,
        StatusCode::TOO_MANY_REQUESTS,
        "a device id without its key's proof waits as well"
    );
    state.clock.set_offset(state.clock.offset_ms() + 61_000);
    assert_eq!(from_peer(app.clone(), "192.0.2.1:1", "POST", "/auth", right.clone()).await.0, StatusCode::OK);
    // The success forgot the failures: a wrong password from elsewhere is a free failure again.
    assert_eq!(from_peer(app.clone(), "198.51.100.77:1", "POST", "/auth", right.clone()).await.0, StatusCode::OK);
}
