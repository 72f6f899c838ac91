//! The doors of issue "the mock server hardened", tried from outside: sign-ups into existing
//! tenants, user creation by the wrong role, forged tokens with well-known secrets, the stored
//! password format, password changes with only a token, document-database headers that outlive
//! their session. Each refusal is checked for its status and code, and for what did not change.

mod common;

use common::{assert_error, spawn, Server};
use jsonwebtoken::{encode, EncodingKey, Header};
use reqwest::StatusCode;
use serde_json::{json, Value};

async fn users_of(s: &Server, company: &str) -> Vec<String> {
    let admin = s.token("admin").await;
    let all = s.get("/users", Some(&admin)).await.body["users"].as_array().cloned().unwrap_or_default();
    all.iter().filter(|u| u["companies"].as_array().is_some_and(|c| c.contains(&json!(company)))).map(|u| u["username"].as_str().unwrap_or_default().to_owned()).collect()
}

#[tokio::test]
async fn sign_up_never_joins_an_existing_company_and_creates_its_own_tenant() {
    let s = spawn().await;
    let before = users_of(&s, "globex").await;
    let refused = s.post("/auth/register", None, json!({"username": "mallory", "password": "mallory-pass", "companyId": "globex"})).await;
    assert_error(&refused, 409, "company_exists");
    assert_eq!(users_of(&s, "globex").await, before, "nobody joined globex");
    assert_error(&s.post("/auth", None, json!({"username": "mallory", "password": "mallory-pass"})).await, 401, "invalid_credentials");
    assert_error(&s.post("/auth/register", None, json!({"username": "mallory", "password": "mallory-pass", "roles": ["sys_admin"]})).await, 403, "forbidden");
    assert_error(&s.post("/auth/register", None, json!({"username": "mallory", "password": "mallory-pass", "companyId": "Bad_Id"})).await, 400, "bad_request");

    let made = s.post("/auth/register", None, json!({"username": "dave", "password": "dave-pass", "companyName": "Dave's Diner"})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{:?}", made.body);
    assert_eq!((made.body["user"]["companyId"].clone(), made.body["user"]["roles"].clone()), (json!("dave"), json!(["manager"])));
    assert_eq!(made.body["company"], json!({"id": "dave", "name": "Dave's Diner"}));
    assert!(made.body["user"].get("password_hash").is_none());
    // The new tenant is seeded like the others: its own legacy catalogue to bootstrap.
    let dave = s.token("dave").await;
    let boot = s.get("/bootstrap?database=legacy", Some(&dave)).await;
    assert_eq!((boot.status, boot.body["db"].clone()), (StatusCode::OK, json!("dev_dave_main_catalog")));
    assert!(boot.body["docs"].as_array().is_some_and(|d| !d.is_empty()));
    assert_error(&s.post("/auth/register", None, json!({"username": "dave", "password": "dave-pass", "companyId": "dave-2"})).await, 409, "username_taken");
    assert_error(&s.post("/auth/register", None, json!({"username": "eve", "password": "short"})).await, 400, "bad_request");
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
    assert_error(&s.post("/register-user", None, new("gina", json!({"companyId": "acme"}))).await, 401, "missing_token");
    let alice = s.token("alice").await;
    assert_error(&s.post("/register-user", Some(&alice), new("gina", json!({}))).await, 403, "forbidden");
    let keys = s.token("keys").await;
    assert_error(&s.post("/register-user", Some(&keys), new("gina", json!({}))).await, 403, "forbidden");
    assert_eq!(users_of(&s, "acme").await, before, "nobody was created");

    let bob = s.token("bob").await; // manager of globex
    assert_error(&s.post("/register-user", Some(&bob), new("gina", json!({"companyId": "acme"}))).await, 403, "forbidden");
    assert_error(&s.post("/register-user", Some(&bob), new("gina", json!({"roles": ["manager"]}))).await, 403, "forbidden");
    let made = s.post("/register-user", Some(&bob), new("gina", json!({}))).await;
    assert_eq!((made.status, made.body["user"]["companyId"].clone(), made.body["user"]["roles"].clone()), (StatusCode::CREATED, json!("globex"), json!(["cashier"])));

    let admin = s.token("admin").await;
    let made = s.post("/register-user", Some(&admin), new("frank", json!({"companyId": "initech", "roles": ["manager"]}))).await;
    assert_eq!((made.status, made.body["user"]["companyId"].clone(), made.body["user"]["roles"].clone()), (StatusCode::CREATED, json!("initech"), json!(["manager"])));
    assert_error(&s.post("/register-user", Some(&admin), new("hank", json!({"companyId": "nope"}))).await, 404, "unknown_company");
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
    let stored: String = s.state.store.lock().query_row("SELECT password_hash FROM users WHERE username = 'alice'", [], |r| r.get(0)).unwrap();
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
    assert_error(&s.patch(path, Some(&token), json!({"password": "stolen-new-pass"})).await, 400, "current_password_required");
    assert_error(&s.patch(path, Some(&token), json!({"password": "stolen-new-pass", "currentPassword": "guess"})).await, 401, "invalid_credentials");
    assert_eq!(s.post("/auth", None, json!({"username": "alice", "password": "alice-pass"})).await.status, StatusCode::OK, "unchanged");
    assert_eq!(s.post("/auth/refresh", None, json!({"refreshToken": refresh})).await.status, StatusCode::OK, "sessions untouched");

    let other = s.login("alice").await;
    let changed = s.patch(path, Some(&token), json!({"password": "alice-new-pass", "currentPassword": "alice-pass"})).await;
    assert_eq!(changed.status, StatusCode::OK, "{:?}", changed.body);
    assert_error(&s.post("/auth/refresh", None, json!({"refreshToken": other["refreshToken"]})).await, 401, "refresh_token_revoked");
    assert_error(&s.post("/auth", None, json!({"username": "alice", "password": "alice-pass"})).await, 401, "invalid_credentials");
    assert_eq!(s.post("/auth", None, json!({"username": "alice", "password": "alice-new-pass"})).await.status, StatusCode::OK);

    // sys_admin resets another user's password without knowing it; a role change ends sessions too.
    let admin = s.token("admin").await;
    let carol = s.login("carol").await;
    assert_eq!(s.patch("/users/user-carol", Some(&admin), json!({"password": "carol-reset-pass"})).await.status, StatusCode::OK);
    assert_error(&s.post("/auth/refresh", None, json!({"refreshToken": carol["refreshToken"]})).await, 401, "refresh_token_revoked");
    let bob = s.login("bob").await;
    assert_eq!(s.patch("/users/user-bob", Some(&admin), json!({"roles": ["cashier"]})).await.status, StatusCode::OK);
    assert_error(&s.post("/auth/refresh", None, json!({"refreshToken": bob["refreshToken"]})).await, 401, "refresh_token_revoked");
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
    s.post("/auth/logout", Some(login["token"].as_str().unwrap()), json!({})).await;
    let after = read(headers).await.unwrap();
    assert_eq!(after.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(after.json::<Value>().await.unwrap()["error"], "session_ended");
}

#[tokio::test]
async fn sign_in_routes_are_rate_limited_per_address_with_the_error_body() {
    let settings = mock_server::settings::Settings { test_controls: true, auth_rate_per_min: 60, auth_rate_burst: 3, ..Default::default() };
    let s = common::spawn_with(settings).await;
    for _ in 0..3 {
        assert_error(&s.post("/auth", None, json!({"username": "alice", "password": "wrong-pass"})).await, 401, "invalid_credentials");
    }
    let limited = s.post("/auth", None, json!({"username": "alice", "password": "alice-pass"})).await;
    assert_error(&limited, 429, "rate_limited");
    assert!(limited.headers.get("retry-after").is_some());
    // Only the sign-in routes: the rest of the server answers as before.
    assert_eq!(s.get("/health", None).await.status, StatusCode::OK);
}
