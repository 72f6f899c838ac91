//! What operators watch over weeks, in the Prometheus text format (`prometheus-client`), served
//! on a listen address of its own (`METRICS_LISTEN`, loopback by default) and never on the
//! public one. Two kinds of series:
//!
//! - recorded as the process works (`crate::recorded`, one set per process): requests by route
//!   template, the session's events, bootstraps, the document proxy, handshakes, snapshots;
//! - read at each scrape (`scrape`): the rolling machine from the store (tenants by flag state,
//!   day databases by status, handles against the bound, alarms, cron runs, each rolling tenant's
//!   CORE and reconciliation diff), the changes hubs and the sync sockets of this replica.
//!   A replica whose store does not answer serves the recorded series alone.
//!
//! No label holds a tenant's document, a token or a header value; per-tenant series exist only
//! for tenants with `rollingDb` on (the canaries) and for tenants needing attention (their device
//! losses, the steps they are told), so series stay bounded at fleet scale.

mod http;
mod scrape;

pub use http::record_requests;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::error::AppError;
use crate::state::AppState;

/// `GET /metrics`: this replica's series in the Prometheus text format.
pub fn router(state: AppState) -> Router {
    Router::new().route("/metrics", get(metrics)).with_state(state)
}

/// The classic text format (what `promtool check metrics` and older scrapers read) from the
/// OpenMetrics text the crate writes: a counter's family is named with its `_total` there, and
/// there is no `# UNIT` or `# EOF`.
fn classic(openmetrics: &str) -> String {
    let mut counters = std::collections::HashSet::new();
    for line in openmetrics.lines() {
        if let Some(name) = line.strip_prefix("# TYPE ").and_then(|l| l.strip_suffix(" counter")) {
            counters.insert(name.to_owned());
        }
    }
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "].into_iter().find(|p| line.starts_with(p));
        match meta.and_then(|p| line[p.len()..].split_once(' ').map(|(name, rest)| (p, name, rest))) {
            Some((p, name, rest)) if counters.contains(name) => out.push_str(&format!("{p}{name}_total {rest}")),
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

async fn metrics(State(state): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    let mut text = String::new();
    // The store's reads are synchronous: off the async workers, so requests go on beside them. A
    // family the store cannot answer is left out of the scrape, never the whole of it: a replica
    // cut from its store still says what it recorded (its failed connections among it).
    let scraped = match crate::bridge::off_workers(move || scrape::read(&state)).await {
        Ok(registry) => registry,
        Err(e) => return AppError::from(e).into_response(),
    };
    use prometheus_client::encoding::text::{encode_eof, encode_registry};
    let written = encode_registry(&mut text, crate::recorded::registry())
        .and_then(|()| encode_registry(&mut text, &scraped))
        .and_then(|()| encode_eof(&mut text));
    if written.is_err() {
        return AppError::Internal(crate::error::Cause::new(std::fmt::Error)).into_response();
    }
    let openmetrics = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/openmetrics-text"));
    if openmetrics {
        ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], text).into_response()
    } else {
        ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], classic(&text)).into_response()
    }
}
