//! What operators and devices read: the cluster, the fleet, and per tenant its reconciliation,
//! cleanup candidates, topology and bootstrap. Shapes are those of docs/server.md (operations).

use crate::docdb::Cluster;
use crate::store::sql::{params, Connection};

use super::archive::reconcile;
use super::days::{day_databases, day_status, DayStatus};
use super::drop_eval::candidates;
use super::invalidation::{self, current_routing, Routing};
use super::rotate::MANIFEST_ID;
use super::tenants::{self, Tenant};
use super::warm::is_static;
use protocol::sync_frames::Bootstrap;
use protocol::views::{
    CleanupCandidates, ClusterDatabase, ClusterView, DatabaseSummary, DayDatabase, Reconciliation, ReconciliationDay,
    TenantAttention, TenantDevice, TenantSummary, TenantsView, Topology,
};

use super::{flags, RollingResult, RollingSettings};
use crate::docdb::naming::day_of;
use crate::docdb::{self, Kind};
use crate::store::devices;

pub fn cluster(conn: &Cluster) -> RollingResult<ClusterView> {
    let mut attention = Vec::new();
    for company_id in super::alarms::tenants_needing_attention(conn)? {
        if let Some(a) = super::alarms::attention(conn, &company_id)? {
            attention.push(TenantAttention { company_id, attention: a });
        }
    }
    let mut databases = Vec::new();
    for db in docdb::list(conn)? {
        let status = if db.kind == Kind::Day {
            day_status(conn, &db.name)?.unwrap_or(DayStatus::Active).as_str()
        } else {
            "open"
        };
        databases.push(ClusterDatabase {
            name: db.name,
            kind: db.kind,
            company_id: db.company_id,
            doc_count: db.doc_count,
            update_seq: db.update_seq,
            status: status.to_owned(),
            open: db.open,
            in_use: db.in_use,
        });
    }
    Ok(ClusterView {
        max_dbs_open: docdb::max_open(conn)? as u64,
        open_dbs: docdb::open_count(conn)? as u64,
        in_use_dbs: docdb::in_use_count(conn)? as u64,
        existing_dbs: databases.len() as u64,
        databases,
        attention,
    })
}

pub fn tenants(conn: &Connection, settings: &RollingSettings) -> RollingResult<TenantsView> {
    let mut out = Vec::new();
    for t in tenants::all(conn)? {
        let f = flags::get(conn, &t.id)?;
        let days = day_databases(conn, &t.id)?.into_iter().filter(|d| d.status != DayStatus::Dropped).count();
        let devices = devices::for_company(conn, &t.id)?
            .into_iter()
            .map(|d| TenantDevice {
                before_cutover: protocol::predates_cutover(d.sdk_version.as_deref()),
                device_id: d.id,
                sdk_version: d.sdk_version,
                last_seen_at: d.last_seen_at,
            })
            .collect();
        out.push(TenantSummary {
            core_exists: docdb::exists(conn, &t.names(&settings.db_prefix).core())?,
            attention: super::alarms::attention(conn, &t.id)?,
            device_losses: crate::store::device_losses::of_tenant(conn, &t.id)?.into_iter().collect(),
            company_id: t.id,
            name: t.name,
            rolling_db: f.rolling_db,
            rolling_db_drop: f.rolling_db_drop,
            updated_at: f.updated_at,
            updated_by: f.updated_by,
            day_databases: days as u64,
            devices,
        });
    }
    // The console compares device versions with this instead of a constant of its own.
    Ok(TenantsView { tenants: out, cutover_sdk_version: protocol::CUTOVER_SDK_VERSION.to_owned() })
}

/// Past day databases against the archive database and the relational store; `diff` totals the
/// archived ones (a day not archived yet is listed with `diff: null`, `relational: null`).
pub fn reconciliation(
    conn: &Cluster,
    settings: &RollingSettings,
    tenant: &Tenant,
    now_ms: i64,
) -> RollingResult<Reconciliation> {
    let archive_db = tenant.names(&settings.db_prefix).archive();
    let today = day_of(now_ms);
    let mut stmt = conn.prepare("SELECT name, day, status, archived_at IS NOT NULL FROM day_databases WHERE company_id = ?1 AND day < ?2 AND status != 'DROPPED' ORDER BY day")?;
    let rows: Vec<(String, String, DayStatus, bool)> = stmt
        .query_map(params![tenant.id, today], |r| {
            Ok((r.get(0)?, r.get(1)?, super::days::read_status(r, 2)?, r.get(3)?))
        })?
        .collect::<crate::store::sql::Result<_>>()?;
    let mut total = 0;
    let mut days = Vec::new();
    for (name, date, status, archived) in rows {
        let doc_count = docdb::info(conn, &name)?.map(|i| i.doc_count).unwrap_or(0);
        // Orders and sales against the relational store, type by type (counts and checksums).
        let (diff, relational) = match archived {
            true => match reconcile(conn, &name, &archive_db)? {
                Some((diff, checks)) => (Some(diff), Some(checks)),
                None => (Some(0), None),
            },
            false => (None, None),
        };
        total += diff.unwrap_or(0);
        days.push(ReconciliationDay { name, date, status, doc_count, archived, diff, relational });
    }
    // The legacy database's closed orders and sales older than a day, archived apart from `diff`
    // (which is the rolling days' own).
    let legacy = super::archive::legacy_status(conn, &tenant.names(&settings.db_prefix), now_ms)?;
    Ok(Reconciliation { company_id: tenant.id.clone(), diff: total, days, legacy })
}

pub fn cleanup_candidates(
    conn: &Cluster,
    settings: &RollingSettings,
    tenant: &Tenant,
    now_ms: i64,
) -> RollingResult<CleanupCandidates> {
    Ok(CleanupCandidates { company_id: tenant.id.clone(), candidates: candidates(conn, settings, tenant, now_ms)? })
}

fn db_summary(conn: &Cluster, name: &str) -> RollingResult<DatabaseSummary> {
    let info = docdb::info(conn, name)?;
    let indexes = match info {
        Some(_) => Some(docdb::indexes(conn, name)?),
        None => None,
    };
    Ok(DatabaseSummary {
        name: name.to_owned(),
        exists: info.is_some(),
        doc_count: info.as_ref().map(|i| i.doc_count),
        update_seq: info.as_ref().map(|i| i.update_seq),
        indexes,
    })
}

/// The tenant's day databases; a dropped one carries the rollout's checks after a drop.
fn days_with_checks(conn: &Cluster, company_id: &str) -> RollingResult<Vec<DayDatabase>> {
    let mut out = day_databases(conn, company_id)?;
    for day in &mut out {
        if day.status == DayStatus::Dropped {
            day.after_drop = Some(super::drop_eval::after_drop(conn, &day.name)?);
        }
    }
    Ok(out)
}

pub fn topology(conn: &Cluster, settings: &RollingSettings, tenant: &Tenant) -> RollingResult<Topology> {
    let names = tenant.names(&settings.db_prefix);
    let routing = current_routing(conn, &names, &tenant.id)?;
    let stored =
        if docdb::exists(conn, &names.core())? { docdb::get_local(conn, &names.core(), MANIFEST_ID)? } else { None };
    let manifest = stored.and_then(|m| match serde_json::from_value(m) {
        Ok(manifest) => Some(manifest),
        Err(e) => {
            tracing::warn!(tenant = %tenant.id, error = %e, "CORE's day manifest does not read; the next rotate rewrites it");
            None
        }
    });
    Ok(Topology {
        company_id: tenant.id.clone(),
        database: routing,
        core: db_summary(conn, &names.core())?,
        legacy: db_summary(conn, &names.legacy())?,
        archive: db_summary(conn, &names.archive())?,
        days: days_with_checks(conn, &tenant.id)?,
        manifest,
        invalidation: invalidation::last(conn, &tenant.id)?,
        open_conflicts: super::conflicts::open_count(conn, &tenant.id)?,
    })
}

#[derive(Debug, PartialEq)]
pub enum BootstrapError {
    /// `database=core` for a tenant whose CORE does not exist.
    CoreMissing(String),
    Rolling(super::RollingError),
}

impl From<super::RollingError> for BootstrapError {
    fn from(e: super::RollingError) -> Self {
        BootstrapError::Rolling(e)
    }
}

impl From<docdb::DocDbError> for BootstrapError {
    fn from(e: docdb::DocDbError) -> Self {
        BootstrapError::Rolling(e.into())
    }
}

/// A device's fresh copy of its catalogue: CORE's documents, or the legacy database's STATIC ones.
/// What a bootstrap reads under the store lock: the rows, not yet parsed.
pub struct BootstrapRows {
    database: Routing,
    db: String,
    update_seq: u64,
    rows: Vec<docdb::RawDoc>,
}

pub fn bootstrap(
    conn: &Cluster,
    settings: &RollingSettings,
    tenant: &Tenant,
    database: Routing,
) -> Result<BootstrapRows, BootstrapError> {
    let names = tenant.names(&settings.db_prefix);
    let db = match database {
        Routing::Core => names.core(),
        Routing::Legacy => names.legacy(),
    };
    let Some(info) = docdb::info(conn, &db)? else {
        return Err(match database {
            Routing::Core => BootstrapError::CoreMissing(db),
            Routing::Legacy => BootstrapError::Rolling(super::RollingError::NoCatalogue(tenant.id.clone())),
        });
    };
    let rows = docdb::all_docs_raw(conn, &db)?;
    Ok(BootstrapRows { database, db, update_seq: info.update_seq, rows })
}

impl BootstrapRows {
    /// The answer: the STATIC documents with their revisions. Done after the lock is released.
    pub fn into_answer(self) -> Result<Bootstrap, BootstrapError> {
        let mut docs = Vec::with_capacity(self.rows.len());
        for row in self.rows {
            let doc = row.parse().map_err(super::RollingError::from)?;
            if is_static(&doc.body) {
                docs.push(doc.to_json());
            }
        }
        Ok(Bootstrap { database: self.database, db: self.db, update_seq: self.update_seq, docs })
    }
}
