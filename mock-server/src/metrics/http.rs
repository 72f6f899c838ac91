//! Every request's duration and outcome, by route template (`MatchedPath`, never the raw path:
//! a path holds ids and database names, and would make the series unbounded).

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;

use super::{RouteClass, RouteOutcome, RECORDED};
use crate::error::ErrorCode;

fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// Middleware: records the request once its answer is ready (a streamed body, a live feed, is
/// counted when its head is sent).
pub async fn record_requests(request: Request, next: Next) -> Response {
    let route = match request.extensions().get::<MatchedPath>() {
        Some(path) => format!("{} {}", request.method(), path.as_str()),
        None => format!("{} (unmatched)", request.method()),
    };
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let outcome = response.extensions().get::<ErrorCode>().map_or("ok", |c| c.0);
    RECORDED.durations.get_or_create(&RouteClass { route: route.clone(), status_class: status_class(status) }).observe(started.elapsed().as_secs_f64());
    RECORDED.requests.get_or_create(&RouteOutcome { route, outcome }).inc();
    response
}
