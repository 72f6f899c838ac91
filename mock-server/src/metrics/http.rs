//! Every request's duration and outcome, by route template (`MatchedPath`, never the raw path:
//! a path holds ids and database names, and would make the series unbounded).

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::ErrorCode;

/// Middleware: records the request once its answer is ready (a streamed body, a live feed, is
/// counted when its head is sent).
pub async fn record_requests(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.extensions().get::<MatchedPath>().cloned();
    let started = Instant::now();
    let response = next.run(request).await;
    let outcome = response.extensions().get::<ErrorCode>().map_or("ok", |c| c.0);
    crate::recorded::request(
        method.as_str(),
        path.as_ref().map(MatchedPath::as_str),
        response.status().as_u16(),
        outcome,
        started.elapsed().as_secs_f64(),
    );
    response
}
