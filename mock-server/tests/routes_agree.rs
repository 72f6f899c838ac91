//! The route-agreement test: every route the SDK (and the console) calls, from the one list in
//! `protocol::routes`, reaches a handler of the server's router under that very
//! template and method. A path or a method written on one side only fails here.

use axum::http::{Request, StatusCode};
use protocol::routes::{fill, CLIENT_CALLS};
use tower::ServiceExt;

#[tokio::test]
async fn every_client_route_reaches_a_handler_under_its_template() {
    let state = mock_server::state::AppState::new(Default::default(), Default::default()).unwrap();
    let app = mock_server::app(state.clone());
    for call in CLIENT_CALLS {
        let ids = ["x1", "x2", "x3"];
        let path = fill(call.path, &ids);
        let request = Request::builder()
            .method(call.method.as_str())
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
            call.method.as_str()
        );
        let seen = format!("{} {}", call.method.as_str(), call.path);
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
