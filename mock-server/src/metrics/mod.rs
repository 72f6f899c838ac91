//! What operators watch over weeks, in the Prometheus text format (`prometheus-client`), served
//! on a listen address of its own (`METRICS_LISTEN`, loopback by default) and never on the
//! public one. Two kinds of series:
//!
//! - recorded as requests are answered (`Recorded`, one per process): every request's duration by
//!   route template and status class, and its outcome (`ok` or the error code it was answered
//!   with); bootstraps by database;
//! - read at each scrape (`scrape`): the rolling machine from the store (tenants by flag state,
//!   day databases by status, handles against the bound, alarms, cron runs, each rolling tenant's
//!   CORE), the changes hubs and the realtime sockets of this replica.
//!
//! No label holds a tenant's document, a token or a header value; per-tenant series exist only
//! for tenants with `rollingDb` on (the canaries), so series stay bounded at fleet scale.

mod http;
mod scrape;

pub use http::record_requests;

use std::sync::LazyLock;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

use crate::error::AppError;
use crate::state::AppState;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteClass {
    /// `METHOD /route/{template}` (never the raw path).
    route: String,
    /// `2xx`, `4xx`, …
    status_class: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteOutcome {
    route: String,
    /// `ok`, or the error code the answer carried.
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DatabaseLabel {
    database: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Direction {
    /// `to_engine` (what devices sent) or `to_device` (what the engine answered).
    direction: &'static str,
}

/// The series recorded as the process answers.
struct Recorded {
    registry: Registry,
    durations: Family<RouteClass, Histogram>,
    requests: Family<RouteOutcome, Counter>,
    bootstraps: Family<DatabaseLabel, Histogram>,
    engine_latency: Histogram,
    proxy_bytes: Family<Direction, Counter>,
    invalidations_delivered: Counter,
}

fn seconds_histogram() -> Histogram {
    // 0.5 ms to about 16 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

static RECORDED: LazyLock<Recorded> = LazyLock::new(|| {
    let mut registry = Registry::default();
    let durations = Family::<RouteClass, Histogram>::new_with_constructor(seconds_histogram as fn() -> Histogram);
    registry.register_with_unit("http_request_duration", "Time to answer a request, by route template and status class", Unit::Seconds, durations.clone());
    let requests = Family::<RouteOutcome, Counter>::default();
    registry.register("http_requests", "Requests answered, by route template and outcome (ok or the error code)", requests.clone());
    let bootstraps = Family::<DatabaseLabel, Histogram>::new_with_constructor(seconds_histogram as fn() -> Histogram);
    registry.register_with_unit("bootstrap_duration", "GET /bootstrap answered, by database (core, legacy): the re-bootstrap peak", Unit::Seconds, bootstraps.clone());
    let engine_latency = seconds_histogram();
    registry.register_with_unit("docdb_engine_latency", "The document proxy's wait for the engine's answer to begin", Unit::Seconds, engine_latency.clone());
    let proxy_bytes = Family::<Direction, Counter>::default();
    registry.register_with_unit("docdb_proxy", "Bytes through the document proxy, each way", Unit::Bytes, proxy_bytes.clone());
    let invalidations_delivered = Counter::default();
    registry.register("realtime_invalidate_local_delivered", "invalidate-local messages sent to devices at their handshake", invalidations_delivered.clone());
    Recorded { registry, durations, requests, bootstraps, engine_latency, proxy_bytes, invalidations_delivered }
});

/// The engine began answering a proxied request after `seconds`.
pub fn engine_answered(seconds: f64) {
    RECORDED.engine_latency.observe(seconds);
}

/// Bytes a device sent through the proxy to the engine.
pub fn proxied_to_engine(bytes: usize) {
    RECORDED.proxy_bytes.get_or_create(&Direction { direction: "to_engine" }).inc_by(bytes as u64);
}

/// Counts the engine's answer's bytes as they go to the device.
pub fn counting_to_device<S, E>(stream: S) -> impl futures_util::Stream<Item = Result<bytes::Bytes, E>>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>>,
{
    use futures_util::StreamExt;
    let counter = RECORDED.proxy_bytes.get_or_create(&Direction { direction: "to_device" }).clone();
    stream.map(move |chunk| {
        if let Ok(bytes) = &chunk {
            counter.inc_by(bytes.len() as u64);
        }
        chunk
    })
}

/// An `invalidate-local` was sent to a device.
pub fn invalidate_local_delivered() {
    RECORDED.invalidations_delivered.inc();
}

/// A bootstrap answered for `database` (`core` or `legacy`) in `seconds`.
pub fn bootstrap_answered(database: &'static str, seconds: f64) {
    RECORDED.bootstraps.get_or_create(&DatabaseLabel { database }).observe(seconds);
}

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
    // The store's reads are synchronous: off the async workers, so requests go on beside them.
    let read = match tokio::task::spawn_blocking(move || scrape::read(&state)).await {
        Ok(read) => read,
        Err(e) => Err(e.into()),
    };
    let scraped = match read {
        Ok(registry) => registry,
        Err(e) => return e.into_response(),
    };
    use prometheus_client::encoding::text::{encode_eof, encode_registry};
    let written = encode_registry(&mut text, &RECORDED.registry).and_then(|()| encode_registry(&mut text, &scraped)).and_then(|()| encode_eof(&mut text));
    if written.is_err() {
        return AppError::Internal(crate::error::Cause::new(std::fmt::Error)).into_response();
    }
    let openmetrics = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("application/openmetrics-text"));
    if openmetrics {
        ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], text).into_response()
    } else {
        ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], classic(&text)).into_response()
    }
}
