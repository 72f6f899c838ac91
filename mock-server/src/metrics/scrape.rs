//! The series read at each scrape: what the console shows now, as numbers a Prometheus keeps.
//! One visit to the store (aggregates, so a scrape costs the same at 10 or 10,000 tenants, plus
//! one catalogue read per rolling tenant), then this replica's hubs and sockets.

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

/// Every series of this scrape, in a registry of its own.
pub fn read(state: &AppState) -> AppResult<Registry> {
    use crate::crons::{runs, CRONS};
    use crate::rolling::{alarms, days, flags, tenants};
    let mut r = Registry::default();
    let conn = state.store.lock()?;

    let tenants_by_state = Family::<State, Gauge>::default();
    for state in ["off", "rolling", "rolling_with_drop"] {
        tenants_by_state.get_or_create(&State { state }).set(0);
    }
    for (rolling, drop, n) in flags::counts(&conn)? {
        tenants_by_state.get_or_create(&State { state: flag_state(rolling, drop) }).set(int(n));
    }
    r.register("rolling_tenants", "Tenants by flag state (off, rolling, rolling_with_drop)", tenants_by_state);

    let days_by_status = Family::<Status, Gauge>::default();
    for (status, n) in days::counts_by_status(&conn)? {
        days_by_status.get_or_create(&Status { status: status.as_str() }).set(int(n));
    }
    r.register("rolling_day_databases", "Day databases by status, every tenant", days_by_status);

    gauge(&mut r, "docdb_open_handles", "Database handles open (CouchDB's max_dbs_open counts these)", int(crate::docdb::open_count(&conn)?));
    gauge(&mut r, "docdb_max_open_handles", "The bound on open handles (ROLLING_DB_MAX_OPEN)", int(crate::docdb::max_open(&conn)?));

    let (raised, open) = (Family::<AlarmKind, Counter>::default(), Family::<AlarmKind, Gauge>::default());
    for kind in ["destructive-reset", "reconciliation-regressed"] {
        raised.get_or_create(&AlarmKind { kind: kind.into() }).inc_by(0);
        open.get_or_create(&AlarmKind { kind: kind.into() }).set(0);
    }
    for (kind, ever, now) in alarms::counts(&conn)? {
        raised.get_or_create(&AlarmKind { kind: kind.clone() }).inc_by(ever);
        open.get_or_create(&AlarmKind { kind }).set(int(now));
    }
    r.register("rolling_alarms_raised", "Rollback alarms raised, by kind (a destructive reset, a regressed reconciliation)", raised);
    r.register("rolling_alarms_open", "Rollback alarms raised and not cleared by a rollback, by kind", open);

    let (last_success, last_ok, last_duration) = (Family::<Cron, FloatGauge>::default(), Family::<Cron, Gauge>::default(), Family::<Cron, FloatGauge>::default());
    for cron in &CRONS {
        let label = Cron { cron: cron.name };
        if let Some(at) = runs::last_success(&conn, cron.name)? {
            last_success.get_or_create(&label).set(at as f64 / 1000.0);
        }
        if let Some(run) = runs::last_finished(&conn, cron.name)? {
            last_ok.get_or_create(&label).set(i64::from(run.status == "succeeded"));
            if let Some(finished) = run.finished_at {
                last_duration.get_or_create(&label).set(finished.saturating_sub(run.started_at) as f64 / 1000.0);
            }
        }
    }
    r.register("cron_last_success_timestamp_seconds", "When each cron last finished a run that succeeded (server clock, Unix seconds)", last_success);
    r.register("cron_last_run_succeeded", "Whether each cron's last finished run succeeded (1) or failed (0)", last_ok);
    r.register_with_unit("cron_last_run_duration", "How long each cron's last finished run took", Unit::Seconds, last_duration);

    // Per tenant only for the canaries: the tenants with rollingDb on.
    let (docs, seq) = (Family::<Tenant, Gauge>::default(), Family::<Tenant, Gauge>::default());
    {
        let cluster = state.cluster(&conn);
        for id in flags::rolling(&conn)? {
            let core = tenants::get(&conn, &id)?.names(&state.settings.db_prefix).core();
            if let Some(info) = crate::docdb::info(&cluster, &core)? {
                docs.get_or_create(&Tenant { tenant: id.clone() }).set(int(info.doc_count));
                seq.get_or_create(&Tenant { tenant: id }).set(int(info.update_seq));
            }
        }
    }
    r.register("rolling_core_doc_count", "CORE's documents, for each tenant with rollingDb on", docs);
    r.register("rolling_core_update_seq", "CORE's update sequence (it stays low: CORE is written at the warm only)", seq);
    drop(conn);

    let hubs = state.hubs.as_ref().map(|h| h.counts()).unwrap_or_default();
    gauge(&mut r, "docdb_hub_upstream_feeds", "Feeds of the engine the changes hubs hold (one a database devices listen to)", int(hubs.upstream_feeds));
    gauge(&mut r, "docdb_hub_listening_feeds", "Devices' _changes requests being answered by a hub", int(hubs.listening));
    counter(&mut r, "docdb_hub_slow_closed", "Devices' feeds closed for not reading", hubs.slow_closed);
    counter(&mut r, "docdb_hub_reconnects", "Engine feeds opened again after they dropped", hubs.reconnects);
    counter(&mut r, "docdb_hub_answered", "Devices' _changes requests a hub answered", hubs.answered);
    gauge(&mut r, "realtime_sockets_open", "Realtime sockets open on this replica", int(state.sessions.sockets.total()));
    Ok(r)
}
