//! `fn app(state) -> Router`: every route, with CORS, a body limit, tracing and request counts.

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::handler::HandlerWithoutStateExt;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower_http::cors::CorsLayer;
use tower_http::services::ServeDir;
use tower_http::trace::TraceLayer;

use crate::error::AppError;
use crate::routes;
use crate::state::AppState;
use protocol::errors as code;

/// Bodies above this are refused with 413 and the error body (`{error, message}`).
pub const BODY_LIMIT_BYTES: usize = 64 * 1024;

/// Requests whose headers (names, values and the request's target) add up to more than this are
/// refused with 431 before any route reads them, as most servers do past 8 to 16 KiB.
pub const HEADER_LIMIT_BYTES: usize = 16 * 1024;

async fn bound_headers(request: Request, next: Next) -> Response {
    let target = request.uri().path_and_query().map_or(0, |p| p.as_str().len());
    let size = request
        .headers()
        .iter()
        .fold(target, |n, (name, value)| n.saturating_add(name.as_str().len() + value.len() + 4));
    if size > HEADER_LIMIT_BYTES {
        let mut response = AppError::HeadersTooLarge.into_response();
        // What follows the headers was never read: this connection carries no other request.
        response.headers_mut().insert(axum::http::header::CONNECTION, axum::http::HeaderValue::from_static("close"));
        return response;
    }
    next.run(request).await
}

async fn not_found() -> AppError {
    AppError::NotFound(code::NOT_FOUND, "no such route".into())
}

async fn method_not_allowed() -> AppError {
    AppError::MethodNotAllowed
}

async fn count_requests(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Some(path) = request.extensions().get::<MatchedPath>() {
        state.stats.hit(format!("{} {}", request.method(), path.as_str()));
    }
    next.run(request).await
}

/// The server's listener: every connection it accepts sends each write at once (`TCP_NODELAY`).
/// Without it a response written in pieces (a static file, a proxied answer) meets Nagle's
/// algorithm and the client's delayed ACK: about 40 ms on every response after the first on a
/// keep-alive connection.
pub fn listener(
    listener: tokio::net::TcpListener,
) -> axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)> {
    use axum::serve::ListenerExt;
    listener.tap_io(no_delay as fn(&mut tokio::net::TcpStream))
}

fn no_delay(tcp: &mut tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!("TCP_NODELAY on an accepted connection: {e}");
    }
}

pub fn app(state: AppState) -> Router {
    let mut router = Router::new()
        .merge(routes::health::router())
        .merge(crate::rate_limit::limit(routes::auth::router(), &state.settings))
        .merge(routes::auth::nonce_router())
        .merge(routes::devices::router())
        .merge(routes::admin::router())
        .merge(routes::crons::router())
        .merge(routes::bootstrap::router())
        .merge(routes::sync_socket::router())
        .merge(routes::management::router());
    if state.settings.test_controls {
        router = router.merge(routes::mock::router());
    }
    // Every route's row authorises it, once the router matched it and before its handler; inside
    // the CORS layer, so a refusal reaches a browser as the error body. (The document routes are
    // merged below with their own CORS: their credential is the proxy's to read.)
    router = router.route_layer(middleware::from_fn_with_state(state.clone(), routes::table::authorize));
    for (at, dir) in [("/pkg", &state.static_dirs.pkg), ("/vendor", &state.static_dirs.vendor)] {
        if let Some(dir) = dir {
            router = router.nest_service(at, ServeDir::new(dir).fallback(not_found.into_service()));
        }
    }
    router = match &state.static_dirs.www {
        Some(www) => router.fallback_service(ServeDir::new(www).fallback(not_found.into_service())),
        None => router.fallback(not_found),
    };
    // Browser tests and the demo reach the server from other origins; preflight included. The
    // document routes answer CORS themselves: credentialed, to the origins DOCDB_CORS_ORIGINS names.
    // The 405 fallback first: a layer covers only what the router holds when it is added.
    router = router
        .method_not_allowed_fallback(method_not_allowed)
        .layer(CorsLayer::permissive())
        .merge(routes::docdb::router(&state));
    // Requests are recorded for the metrics unless they are not served (METRICS_LISTEN=off).
    if state.settings.metrics_listen.is_some() {
        router = router.layer(middleware::from_fn(crate::metrics::record_requests));
    }
    router
        .layer(middleware::from_fn_with_state(state.clone(), count_requests))
        .layer(middleware::from_fn(crate::error::log_internal_errors))
        .layer(DefaultBodyLimit::max(BODY_LIMIT_BYTES))
        .layer(TraceLayer::new_for_http())
        .layer(middleware::from_fn(bound_headers))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn every_accepted_connection_sends_without_delay() {
        use axum::serve::Listener;
        let raw = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = raw.local_addr().unwrap();
        let mut listener = super::listener(raw);
        let (accepted, client) = tokio::join!(listener.accept(), tokio::net::TcpStream::connect(addr));
        let _client = client.unwrap();
        assert!(accepted.0.nodelay().unwrap(), "TCP_NODELAY on the accepted side");
    }
}
