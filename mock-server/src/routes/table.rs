//! The routes' table at work: each handler is registered from its row of `protocol::routes`
//! (method and path), and every request is authorised by its row's `Access` in one layer, before
//! its handler runs. A new route is a row there and its handler here.

use axum::extract::{MatchedPath, Request, State};
use axum::handler::Handler;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, on, MethodFilter};
use axum::Router;
use protocol::permissions::PermissionMap;
use protocol::routes::{Access, Call, Method, ROUTES};

use crate::error::AppError;
use crate::extract::{bearer, verify_access, Verified};
use crate::state::AppState;

/// Registering a handler by its row.
pub trait Rows {
    /// The router with `handler` serving `call`'s method at its path (a path of several rows
    /// gets one handler for each method).
    fn row<H: Handler<T, AppState>, T: 'static>(self, call: Call, handler: H) -> Self;
}

impl Rows for Router<AppState> {
    fn row<H: Handler<T, AppState>, T: 'static>(self, call: Call, handler: H) -> Self {
        let filter = match call.method {
            Method::Get => MethodFilter::GET,
            Method::Post => MethodFilter::POST,
            Method::Put => MethodFilter::PUT,
            Method::Patch => MethodFilter::PATCH,
            Method::Delete => MethodFilter::DELETE,
            Method::Any => return self.route(call.path, any(handler)),
        };
        self.route(call.path, on(filter, handler))
    }
}

/// The row a routed request matched (a `HEAD` is its `GET`'s, as the router serves it).
fn row_of(request: &Request) -> Option<&'static Call> {
    let path = request.extensions().get::<MatchedPath>()?.as_str();
    let method = match request.method().as_str() {
        "HEAD" => "GET",
        other => other,
    };
    ROUTES.iter().find(|c| c.path == path && (c.method == Method::Any || c.method.as_str() == method))
}

/// The one authorisation of the server's routes: a request whose row wants a token is refused
/// here without one, and one whose row names an action without the role the permission map
/// asks; what passed is kept for the handler's extractor (checked once). Rows whose credential
/// travels elsewhere (the document headers, a socket's first frame) are checked by their
/// handler's extractor.
pub async fn authorize(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(row) = row_of(&request) else { return next.run(request).await };
    let (mut parts, body) = request.into_parts();
    match check(&state, row.access, &mut parts) {
        Ok(()) => next.run(Request::from_parts(parts, body)).await,
        Err(e) => e.into_response(),
    }
}

fn check(state: &AppState, access: Access, parts: &mut Parts) -> Result<(), AppError> {
    let verified = match access {
        Access::Public | Access::Docdb | Access::FirstFrame => return Ok(()),
        Access::AnyToken => {
            Verified { claims: state.tokens.verify(bearer(parts)?, state.clock.now_secs(), false)?, live: false }
        }
        Access::Token => Verified { claims: verify_access(state, bearer(parts)?)?.claims, live: true },
        Access::Action(action) => {
            let claims = verify_access(state, bearer(parts)?)?.claims;
            if !PermissionMap::default().allows(action, &claims.roles) {
                return Err(AppError::Forbidden(format!("this needs the permission {action}")));
            }
            Verified { claims, live: true }
        }
    };
    parts.extensions.insert(verified);
    Ok(())
}
