//! The route-agreement test: every row of the one table in `protocol::routes` (the routes the
//! SDK and the console call, the document proxy's) reaches a handler of the server's router under
//! that very template and method, and is authorised as its row says. A path or a method written
//! on one side only fails here, and so does a row whose access the server does not keep.

use crate::common;

use axum::http::{Request, StatusCode};
use protocol::permissions::PermissionMap;
use protocol::routes::{fill, Access, Method, ROUTES};
use serde_json::Value;
use tower::ServiceExt;

/// The method a request for `method` is sent with (a row of every method is tried with `GET`).
fn wire(method: Method) -> &'static str {
    match method {
        Method::Any => "GET",
        m => m.as_str(),
    }
}

#[tokio::test]
async fn every_client_route_reaches_a_handler_under_its_template() {
    let state = mock_server::state::AppState::new(Default::default(), Default::default()).unwrap();
    let app = mock_server::app(state.clone());
    for call in ROUTES {
        let ids = ["x1", "x2", "x3"];
        let path = fill(call.path, &ids);
        let request = Request::builder()
            .method(wire(call.method))
            .uri(&path)
            .header("content-type", "application/json")
            .extension(axum::extract::ConnectInfo("127.0.0.1:9".parse::<std::net::SocketAddr>().unwrap()))
            .body(axum::body::Body::from("{}"))
            .unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        assert_ne!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{} {path}: the server routes the path but not the method",
            wire(call.method)
        );
        let seen = format!("{} {}", wire(call.method), call.path);
        assert!(
            state.stats.snapshot().contains_key(&seen),
            "{seen}: no handler of the server's router matched it ({})",
            response.status()
        );
    }
}

#[tokio::test]
async fn a_route_the_server_does_not_hold_is_seen_as_such() {
    // The check above must be able to fail: a path off the list matches no template.
    let state = mock_server::state::AppState::new(Default::default(), Default::default()).unwrap();
    let request = Request::builder().method("GET").uri("/auth/nowhere").body(axum::body::Body::empty()).unwrap();
    let response = mock_server::app(state.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert!(state.stats.snapshot().keys().all(|k| !k.contains("/auth/nowhere")), "{:?}", state.stats.snapshot());
}

/// Every row asking for a token refuses a request without one (401, the error body) before its
/// handler reads anything; every row naming an action refuses a token whose roles the permission
/// map does not let do it (403), and lets one through whose roles it does; a row taking an
/// expired token takes it. Driven by the table: a row added with the wrong access, or a handler
/// registered apart from its row, fails here.
#[tokio::test]
async fn every_row_is_authorised_as_it_says() {
    let server = common::spawn().await;
    let roles = ["sys_admin", "key_manager", "manager", "cashier"];
    let users = ["admin", "keys", "bob", "alice"];
    let expired = server.token("alice").await;
    server.advance_days(0.5).await;
    let mut tokens = Vec::new();
    for user in users {
        tokens.push(server.token(user).await);
    }
    let send = |call: &protocol::routes::Call, token: Option<&str>| {
        let path = fill(call.path, &["acme", "x2", "x3"]);
        let method = reqwest::Method::from_bytes(wire(call.method).as_bytes()).unwrap();
        let body = (call.method != Method::Get && call.method != Method::Any).then(|| serde_json::json!({}));
        let token = token.map(str::to_owned);
        let server = &server;
        async move { server.call(method, &path, token.as_deref(), body).await }
    };
    let mut checked = 0;
    for call in ROUTES {
        let what = format!("{} {}", call.method.as_str(), call.path);
        match call.access {
            Access::Public | Access::Docdb | Access::FirstFrame => continue,
            Access::Token | Access::AnyToken | Access::Action(_) => {
                let answer = send(call, None).await;
                assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{what} without a token: {:?}", answer.body);
                assert_eq!(answer.body["error"], "missing_token", "{what}");
            }
        }
        if call.access == Access::AnyToken {
            let answer = send(call, Some(&expired)).await;
            assert_ne!(answer.status, StatusCode::UNAUTHORIZED, "{what} with an expired token: {:?}", answer.body);
        } else {
            let answer = send(call, Some(&expired)).await;
            assert_eq!(answer.body["error"], "token_expired", "{what} with an expired token: {:?}", answer.body);
        }
        if let Access::Action(action) = call.access {
            for (role, token) in roles.iter().zip(&tokens) {
                let allowed = PermissionMap::default().allows(action, &[role.to_string()]);
                let answer = send(call, Some(token)).await;
                let forbidden = answer.status == StatusCode::FORBIDDEN
                    && answer.body["message"].as_str().is_some_and(|m| m.contains(action));
                assert_eq!(!forbidden, allowed, "{what} as {role} ({action}): {} {:?}", answer.status, answer.body);
                if !allowed {
                    assert_eq!(answer.body["error"], Value::from("forbidden"), "{what} as {role}");
                }
            }
        }
        checked += 1;
    }
    // Rows of every kind were met: a table that lost its access column would check nothing.
    assert!(checked > 25, "{checked} rows checked");
}
