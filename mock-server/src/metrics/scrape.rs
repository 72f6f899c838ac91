//! The series read at each scrape: what the console shows now, as numbers a Prometheus keeps.
//! Aggregates from the store (so a scrape costs about the same at 10 or 10,000 tenants), each
//! under the store's lock of its own, one catalogue read per listed rolling tenant, then this
//! replica's changes hubs and sync sockets. Each family is read on its own: one the store cannot
//! answer is left out and named in `metrics_scrape_failed`, and the scrape serves the rest.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use crate::error::AppResult;
use crate::state::AppState;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct State {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Status {
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AlarmKind {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Cron {
    cron: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantReason {
    tenant: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantStep {
    tenant: String,
    step: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScrapeFamily {
    family: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Tenant {
    tenant: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

fn flag_state(rolling: bool, drop: bool) -> &'static str {
    match (rolling, drop) {
        (false, false) => "off",
        (true, false) => "rolling",
        (true, true) => "rolling_with_drop",
        (false, true) => "drop_only",
    }
}

fn gauge(registry: &mut Registry, name: &str, help: &str, value: i64) {
    let g = Gauge::<i64>::default();
    g.set(value);
    registry.register(name, help, g);
}

fn counter(registry: &mut Registry, name: &str, help: &str, value: u64) {
    let c = Counter::<u64>::default();
    c.inc_by(value);
    registry.register(name, help, c);
}

fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// The families read from the store, each on its own: one whose read fails is left out of the
/// scrape (logged, and `metrics_scrape_failed{family}` says which), and the others are served.
/// The per-tenant family comes last: it counts the rolling tenants the first one read.
const FAMILIES: [&str; 8] = [
    "rolling_tenants",
    "day_databases",
    "handles",
    "alarms",
    "attention_steps",
    "device_losses",
    "crons",
    "rolling_tenant_series",
];

/// Every series of this scrape, in a registry of its own. It never fails: a family whose read
/// fails is left out (see [`FAMILIES`]).
pub fn read(state: &AppState) -> Registry {
    let mut r = Registry::default();
    let failed = Family::<ScrapeFamily, Gauge>::default();
    let mut rolling = None;
    for family in FAMILIES {
        let read = match family {
            "rolling_tenants" => tenants(state, &mut r).map(|n| rolling = Some(n)),
            "day_databases" => day_databases(state, &mut r),
            "handles" => handles(state, &mut r),
            "alarms" => alarms(state, &mut r),
            "attention_steps" => attention_steps(state, &mut r),
            "device_losses" => device_losses(state, &mut r),
            "crons" => crons(state, &mut r),
            _ => per_tenant(state, &mut r, rolling),
        };
        if let Err(e) = &read {
            tracing::error!(family, "a scrape could not read its series: {}", e.describe());
        }
        failed.get_or_create(&ScrapeFamily { family }).set(i64::from(read.is_err()));
    }
    r.register(
        "metrics_scrape_failed",
        "Families of series this scrape could not read from the store and left out (1), by family",
        failed,
    );
    this_replica(state, &mut r);
    r
}

/// Tenants by flag state; answers how many are rolling.
fn tenants(state: &AppState, r: &mut Registry) -> AppResult<u64> {
    use crate::rolling::flags;
    // Each read takes the store's lock for itself: a request waits for one query, not the scrape.
    let store = || state.store.lock();
    let tenants_by_state = Family::<State, Gauge>::default();
    for state in ["off", "rolling", "rolling_with_drop"] {
        tenants_by_state.get_or_create(&State { state }).set(0);
    }
    let mut rolling = 0;
    for (on, drop, n) in flags::counts(&store()?)? {
        tenants_by_state.get_or_create(&State { state: flag_state(on, drop) }).set(int(n));
        rolling += if on { n } else { 0 };
    }
    r.register("rolling_tenants", "Tenants by flag state (off, rolling, rolling_with_drop)", tenants_by_state);
    Ok(rolling)
}

fn day_databases(state: &AppState, r: &mut Registry) -> AppResult<()> {
    let days_by_status = Family::<Status, Gauge>::default();
    for (status, n) in crate::rolling::days::counts_by_status(&state.store.lock()?)? {
        days_by_status.get_or_create(&Status { status: status.as_str() }).set(int(n));
    }
    r.register("rolling_day_databases", "Day databases by status, every tenant", days_by_status);
    Ok(())
}

fn handles(state: &AppState, r: &mut Registry) -> AppResult<()> {
    let open = crate::docdb::open_count(&state.store.lock()?)?;
    let max = crate::docdb::max_open(&state.store.lock()?)?;
    gauge(r, "docdb_open_handles", "Database handles open (CouchDB's max_dbs_open counts these)", int(open));
    gauge(r, "docdb_max_open_handles", "The bound on open handles (ROLLING_DB_MAX_OPEN)", int(max));
    Ok(())
}

fn alarms(state: &AppState, r: &mut Registry) -> AppResult<()> {
    let (raised, open) = (Family::<AlarmKind, Counter>::default(), Family::<AlarmKind, Gauge>::default());
    for kind in protocol::views::AlarmKind::ALL.iter().map(|k| k.as_str()) {
        raised.get_or_create(&AlarmKind { kind: kind.into() }).inc_by(0);
        open.get_or_create(&AlarmKind { kind: kind.into() }).set(0);
    }
    for (kind, ever, now) in crate::rolling::alarms::counts(&state.store.lock()?)? {
        raised.get_or_create(&AlarmKind { kind: kind.clone() }).inc_by(ever);
        open.get_or_create(&AlarmKind { kind }).set(int(now));
    }
    r.register(
        "rolling_alarms_raised",
        "Alarms raised, by kind (a destructive reset, a regressed reconciliation: roll back; today's day database missing: run the rotate)",
        raised,
    );
    r.register(
        "rolling_alarms_open",
        "Alarms raised and not cleared (by a rollback; the missing day's by the rotate), by kind",
        open,
    );
    Ok(())
}

/// What the views tell each tenant's operators, step by step (the tenants with an alarm only): the
/// alert rules read the step from here, so they ask for what the console says.
fn attention_steps(state: &AppState, r: &mut Registry) -> AppResult<()> {
    use crate::rolling::alarms;
    let told = Family::<TenantStep, Gauge>::default();
    let needing = alarms::tenants_needing_attention(&state.store.lock()?)?;
    for tenant in needing {
        let attention = alarms::attention(&state.store.lock()?, &tenant)?;
        for step in attention.iter().flat_map(|a| &a.steps) {
            told.get_or_create(&TenantStep { tenant: tenant.clone(), step: step.step.as_str() }).set(1);
        }
    }
    r.register(
        "rolling_attention_step",
        "The steps the server tells a tenant's operators to take (1), as the tenants view and the console say them: roll-back, restore-day, run-rotate, recover-orders",
        told,
    );
    Ok(())
}

fn device_losses(state: &AppState, r: &mut Registry) -> AppResult<()> {
    let store = || state.store.lock();
    let (lost, unresolved) = (Family::<TenantReason, Counter>::default(), Family::<TenantReason, Gauge>::default());
    for (tenant, reason, n) in crate::store::device_losses::by_tenant_and_reason(&store()?, false)? {
        lost.get_or_create(&TenantReason { tenant, reason }).inc_by(n);
    }
    for (tenant, reason, n) in crate::store::device_losses::by_tenant_and_reason(&store()?, true)? {
        unresolved.get_or_create(&TenantReason { tenant, reason }).set(int(n));
    }
    r.register(
        "device_lost_documents",
        "Documents devices destroyed without pushing them, by tenant and reason (their loss reports, each counted once): orders lost",
        lost,
    );
    r.register(
        "device_lost_documents_unresolved",
        "Of those, the ones neither a rollback nor an operator's acknowledgement has answered yet",
        unresolved,
    );
    Ok(())
}

fn crons(state: &AppState, r: &mut Registry) -> AppResult<()> {
    use crate::crons::{runs, CRONS};
    let store = || state.store.lock();
    let (last_success, last_ok, last_duration, scheduled) = (
        Family::<Cron, FloatGauge>::default(),
        Family::<Cron, Gauge>::default(),
        Family::<Cron, FloatGauge>::default(),
        Family::<Cron, Gauge>::default(),
    );
    for cron in &CRONS {
        let label = Cron { cron: cron.name };
        if crate::crons::is_scheduled(cron, &state.settings) {
            scheduled.get_or_create(&label).set(1);
        }
        if let Some(at) = runs::last_success(&store()?, cron.name)? {
            last_success.get_or_create(&label).set(at as f64 / 1000.0);
        }
        if let Some((succeeded, started, finished)) = runs::last_outcome(&store()?, cron.name)? {
            last_ok.get_or_create(&label).set(i64::from(succeeded));
            last_duration.get_or_create(&label).set(finished.saturating_sub(started) as f64 / 1000.0);
        }
    }
    r.register(
        "cron_last_success_timestamp_seconds",
        "When each cron last finished a run that succeeded (server clock, Unix seconds)",
        last_success,
    );
    r.register("cron_last_run_succeeded", "Whether each cron's last finished run succeeded (1) or failed (0)", last_ok);
    // With the start time, what lets an alert see a scheduled cron that never succeeded at all.
    r.register("cron_scheduled", "The crons this server runs on their schedule (1)", scheduled);
    r.register_with_unit(
        "cron_last_run_duration",
        "How long each cron's last finished run took",
        Unit::Seconds,
        last_duration,
    );
    Ok(())
}

/// Per tenant only for the canaries, and the rolling tenants without series (from `rolling`, the
/// rolling tenants counted, when that family was read).
fn per_tenant(state: &AppState, r: &mut Registry, rolling: Option<u64>) -> AppResult<()> {
    let store = || state.store.lock();
    // Per tenant only for the canaries: tenants with rollingDb on, at most METRICS_TENANT_SERIES
    // of them. Each is read under the store's lock of its own, so requests go between them.
    let (docs, seq, diffs) =
        (Family::<Tenant, Gauge>::default(), Family::<Tenant, Gauge>::default(), Family::<Tenant, Gauge>::default());
    let cores = crate::rolling::flags::rolling_cores(&store()?, state.settings.metrics_tenant_series)?;
    let listed = cores.len() as u64;
    for listed in cores {
        let tenant = Tenant { tenant: listed.company_id };
        if let Some(diff) = listed.reconciliation_diff {
            diffs.get_or_create(&tenant).set(diff);
        }
        let conn = store()?;
        let info = crate::docdb::info(&state.cluster(&conn), &listed.core)?;
        drop(conn);
        if let Some(info) = info {
            docs.get_or_create(&tenant).set(int(info.doc_count));
            seq.get_or_create(&tenant).set(int(info.update_seq));
        }
    }
    r.register(
        "rolling_core_doc_count",
        "CORE's documents, for each rolling tenant listed (METRICS_TENANT_SERIES)",
        docs,
    );
    r.register(
        "rolling_core_update_seq",
        "CORE's update sequence (it stays low: CORE is written at the warm only)",
        seq,
    );
    r.register(
        "rolling_reconciliation_diff",
        "Documents differing from the archive at the tenant's last archive run (0: reconciled)",
        diffs,
    );

    if let Some(rolling) = rolling {
        gauge(
            r,
            "rolling_tenants_unlisted",
            "Rolling tenants without series of their own (past METRICS_TENANT_SERIES, or no CORE yet)",
            int(rolling.saturating_sub(listed)),
        );
    }
    Ok(())
}

/// This replica's own: its changes hubs, its replicas, its pool and its sockets (nothing read
/// from the store).
fn this_replica(state: &AppState, r: &mut Registry) {
    let started = FloatGauge::default();
    started.set(state.started_at.duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64()));
    r.register("process_start_time_seconds", "When this server process started (Unix seconds)", started);
    let hubs = state.changes_hubs.as_ref().map(|h| h.counts()).unwrap_or_default();
    gauge(
        r,
        "docdb_hub_upstream_feeds",
        "Feeds of the engine the changes hubs hold (one a database devices listen to)",
        int(hubs.upstream_feeds),
    );
    // One server reads every feed from the engine; a replica of a shared store only its tenants'.
    let (engine_feeds, forwarded, fallbacks, alive) = match &state.replicas {
        Some(replicas) => {
            let c = &replicas.counts;
            let read = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
            (read(&c.engine), read(&c.forwarded), read(&c.fallbacks), replicas.members.live().len() as u64)
        }
        None => (hubs.upstream_feeds, 0, 0, 1),
    };
    gauge(
        r,
        "docdb_hub_engine_feeds",
        "Continuous feeds of the engine itself this replica holds (its own tenants' databases)",
        int(engine_feeds),
    );
    gauge(
        r,
        "docdb_hub_forwarded_feeds",
        "Feeds this replica's hubs read from the replica owning the tenant, not from the engine",
        int(forwarded),
    );
    counter(
        r,
        "docdb_hub_owner_fallbacks",
        "Times an owning replica could not be read and the engine was read instead",
        fallbacks,
    );
    gauge(r, "replicas_alive", "Replicas of this store this one hears (itself included)", int(alive));
    gauge(r, "docdb_hub_listening_feeds", "Devices' _changes requests being answered by a hub", int(hubs.listening));
    gauge(
        r,
        "docdb_hub_held_bytes",
        "Bytes of changes the hubs hold for devices behind (bounded by DOCDB_HUB_INDEX_BYTES)",
        int(hubs.held_bytes),
    );
    counter(r, "docdb_hub_slow_closed", "Devices' feeds closed for not reading", hubs.slow_closed);
    counter(r, "docdb_hub_reconnects", "Engine feeds opened again after they dropped", hubs.reconnects);
    counter(
        r,
        "docdb_hub_unreadable_rows",
        "Rows of an engine feed a hub could not read (a document nested too deep, say), skipped",
        hubs.unreadable_rows,
    );
    counter(r, "docdb_hub_answered", "Devices' _changes requests a hub answered", hubs.answered);
    if let Some((in_use, waiting, bound)) = state.store.pool_usage() {
        gauge(r, "store_pool_connections_in_use", "PostgreSQL connections of this replica's pool in use", int(in_use));
        gauge(r, "store_pool_waiting", "Requests waiting for a PostgreSQL connection", int(waiting));
        gauge(r, "store_pool_max_connections", "The pool's bound (DATABASE_POOL_SIZE)", int(bound));
    }
    gauge(r, "realtime_sockets_open", "Realtime sockets open on this replica", int(state.sessions.sockets.total()));
}
