//! The series recorded as the process works, one set per process: every request's duration by
//! route template and status class and its outcome, the session's events, bootstraps by
//! database, the document proxy's requests, bytes and engine latency, the realtime handshakes,
//! the snapshots the backup cron took. Below every module that records (routes, crons), so any
//! of them may; `metrics` writes them out at each scrape.

mod network;
mod sessions;

pub use network::Upstream;

use std::sync::LazyLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

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
struct Outcome {
    /// `ok`, or the error code of the refusal.
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProxyClass {
    /// What the request does (`read`, `checkpoint`, `write`, `bulk_write`), or `refused` when
    /// the proxy's rule turned it away before the engine saw it.
    class: &'static str,
    /// `ok` (whatever the engine answered), or the error code the proxy answered with.
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CronOutcome {
    cron: &'static str,
    /// `succeeded` or `failed`.
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CronLabel {
    cron: &'static str,
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
    sessions: sessions::Series,
    network: network::Series,
    handshakes: Family<Outcome, Counter>,
    proxy_requests: Family<ProxyClass, Counter>,
    snapshots_taken: Counter,
    snapshot_failures: Counter,
    /// Without labels, but a family: no series at all until the first snapshot (a 0 would read
    /// as a snapshot taken in 1970).
    newest_snapshot: Family<Vec<(String, String)>, FloatGauge>,
    cron_runs: Family<CronOutcome, Counter>,
    cron_durations: Family<CronLabel, Histogram>,
}

type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// 10 ms to about 3 hours: a cron run over a fleet.
fn minutes_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 4.0, 10))
}

fn seconds_histogram() -> Histogram {
    // 0.5 ms to about 16 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

static RECORDED: LazyLock<Recorded> = LazyLock::new(|| {
    let mut registry = Registry::default();
    let durations = Family::<RouteClass, Histogram>::new_with_constructor(seconds_histogram as fn() -> Histogram);
    registry.register_with_unit(
        "http_request_duration",
        "Time to answer a request, by route template and status class",
        Unit::Seconds,
        durations.clone(),
    );
    let requests = Family::<RouteOutcome, Counter>::default();
    registry.register(
        "http_requests",
        "Requests answered, by route template and outcome (ok or the error code)",
        requests.clone(),
    );
    let bootstraps = Family::<DatabaseLabel, Histogram>::new_with_constructor(seconds_histogram as fn() -> Histogram);
    registry.register_with_unit(
        "bootstrap_duration",
        "GET /bootstrap answered, by database (core, legacy): the re-bootstrap peak",
        Unit::Seconds,
        bootstraps.clone(),
    );
    let engine_latency = seconds_histogram();
    registry.register_with_unit(
        "docdb_engine_latency",
        "The document proxy's wait for the engine's answer to begin",
        Unit::Seconds,
        engine_latency.clone(),
    );
    let proxy_bytes = Family::<Direction, Counter>::default();
    registry.register_with_unit(
        "docdb_proxy",
        "Bytes through the document proxy, each way",
        Unit::Bytes,
        proxy_bytes.clone(),
    );
    let invalidations_delivered = Counter::default();
    registry.register(
        "realtime_invalidate_local_delivered",
        "invalidate-local messages sent to devices at their handshake",
        invalidations_delivered.clone(),
    );
    let sessions = sessions::Series::register(&mut registry);
    let network = network::Series::register(&mut registry);
    let handshakes = Family::<Outcome, Counter>::default();
    registry.register(
        "realtime_handshakes",
        "Realtime handshakes (sdk:init) answered, by outcome (ok or the error code)",
        handshakes.clone(),
    );
    let proxy_requests = Family::<ProxyClass, Counter>::default();
    registry.register(
        "docdb_proxy_requests",
        "Requests to the document proxy, by class (read, checkpoint, write, bulk_write, refused) and outcome",
        proxy_requests.clone(),
    );
    let snapshots_taken = Counter::default();
    registry.register(
        "rolling_snapshots_taken",
        "Snapshots of day databases the backup cron took on this replica",
        snapshots_taken.clone(),
    );
    let snapshot_failures = Counter::default();
    registry.register(
        "rolling_snapshot_failures",
        "Tenants whose backup failed (nothing of theirs written) on this replica",
        snapshot_failures.clone(),
    );
    let newest_snapshot = Family::<Vec<(String, String)>, FloatGauge>::default();
    registry.register(
        "rolling_snapshot_newest_timestamp_seconds",
        "When this replica's backup cron last took a snapshot (server clock, Unix seconds; absent until its first)",
        newest_snapshot.clone(),
    );
    let cron_runs = Family::<CronOutcome, Counter>::default();
    registry.register("cron_runs", "Cron runs this replica ran to their end, by cron and outcome", cron_runs.clone());
    let cron_durations = Family::<CronLabel, Histogram>::new_with_constructor(minutes_histogram as fn() -> Histogram);
    registry.register_with_unit(
        "cron_run_duration",
        "How long each cron's runs on this replica took",
        Unit::Seconds,
        cron_durations.clone(),
    );
    Recorded {
        registry,
        durations,
        requests,
        bootstraps,
        engine_latency,
        proxy_bytes,
        invalidations_delivered,
        sessions,
        network,
        handshakes,
        proxy_requests,
        snapshots_taken,
        snapshot_failures,
        newest_snapshot,
        cron_runs,
        cron_durations,
    }
});

/// A run of `cron` ended after `seconds`.
pub fn cron_run(cron: &'static str, succeeded: bool, seconds: f64) {
    let outcome = if succeeded { "succeeded" } else { "failed" };
    RECORDED.cron_runs.get_or_create(&CronOutcome { cron, outcome }).inc();
    RECORDED.cron_durations.get_or_create(&CronLabel { cron }).observe(seconds);
}

/// A realtime handshake answered: `ok`, or the code of the error frame it was refused with.
pub fn handshake(outcome: &str) {
    RECORDED.handshakes.get_or_create(&Outcome { outcome: outcome.to_owned() }).inc();
}

/// The document proxy answered a request of `class` with `outcome` (`ok` or its error code).
pub fn proxy_request(class: &'static str, outcome: &'static str) {
    RECORDED.proxy_requests.get_or_create(&ProxyClass { class, outcome }).inc();
}

/// The backup cron took `taken` snapshots at `now_ms` (server clock) for one tenant.
pub fn snapshots_taken(taken: usize, now_ms: i64) {
    if taken > 0 {
        RECORDED.snapshots_taken.inc_by(taken as u64);
        RECORDED.newest_snapshot.get_or_create(&Vec::new()).set(now_ms as f64 / 1000.0);
    }
}

/// A tenant's backup failed (its step rolled back).
/// A connection to `upstream` could not be made or broke before its answer.
pub fn connection_failed(upstream: Upstream) {
    RECORDED.network.failed(upstream);
}

/// A request to `upstream` sent again after its connection failed.
pub fn retried(upstream: Upstream) {
    RECORDED.network.retried(upstream);
}

pub fn snapshot_failed() {
    RECORDED.snapshot_failures.inc();
}

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

/// The series recorded so far, for the scrape to write out.
pub fn registry() -> &'static Registry {
    &RECORDED.registry
}

fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// A request answered: `method` on the route template `path` (`None`: no route matched), with
/// `status` and `outcome` (`ok` or the error code), after `seconds`.
pub fn request(method: &str, path: Option<&str>, status: u16, outcome: &'static str, seconds: f64) {
    let route = match path {
        Some(path) => {
            RECORDED.sessions.record(method, path, outcome);
            format!("{method} {path}")
        }
        None => format!("{method} (unmatched)"),
    };
    RECORDED
        .durations
        .get_or_create(&RouteClass { route: route.clone(), status_class: status_class(status) })
        .observe(seconds);
    RECORDED.requests.get_or_create(&RouteOutcome { route, outcome }).inc();
}
