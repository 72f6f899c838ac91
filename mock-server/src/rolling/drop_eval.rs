//! Drop evaluation: a day database is physically dropped only when it is drained, archived and
//! reconciled (the rollout's three locks), has a verified snapshot taken after its last write
//! (the fourth: backups that exist, not only a setting), is not held by an operator (a restored
//! day stays until released) and is older than the TTL, only for
//! tenants with `rollingDbDrop`, and only while backups are enabled. Its documents stay in the
//! archive, its orders and sales in the relational store, and the snapshot can restore it.

use crate::docdb::Cluster;
use crate::store::sql::params;
use protocol::ops::audit as actions;
use serde::Serialize;

use super::archive::reconcile_diff;
use super::days::{set_day_status, stamp, DayStatus, Stamp};
use super::tenants::Tenant;
use super::{flags, RollingResult, RollingSettings};
use crate::docdb;
use crate::docdb::naming::age_days;
use crate::store::audit::{self, Actor};
use crate::store::relational_archive as relational;

/// Days a day database is kept before it may be dropped.
pub const TTL_DAYS: i64 = 30;

pub use protocol::views::CleanupCandidate as Candidate;

/// Every day database of the tenant still in the cluster, with its locks.
pub fn candidates(
    conn: &Cluster,
    settings: &RollingSettings,
    tenant: &Tenant,
    now_ms: i64,
) -> RollingResult<Vec<Candidate>> {
    let archive_db = tenant.names(&settings.db_prefix).archive();
    let mut stmt = conn.prepare(
        "SELECT d.name, d.day, d.drained_at IS NOT NULL, d.archived_at IS NOT NULL, d.reconciled_at IS NOT NULL, h.name IS NOT NULL
         FROM day_databases d LEFT JOIN guard_held_days h ON h.name = d.name WHERE d.company_id = ?1 AND d.status != 'DROPPED' ORDER BY d.day",
    )?;
    type Row = (String, String, bool, bool, bool, bool);
    let rows: Vec<Row> = stmt
        .query_map(params![tenant.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))?
        .collect::<crate::store::sql::Result<_>>()?;
    let mut out = Vec::new();
    for (name, date, drained, archived, reconciled_once, held) in rows {
        // Reconciled means reconciled now: a write after the archive breaks the lock.
        let reconciled = reconciled_once && reconcile_diff(conn, &name, &archive_db)? == 0;
        let backed_up = super::backup::current_snapshot(conn, &settings.backup_dir, &name)?.is_some();
        let age = age_days(&date, now_ms);
        let eligible = drained && archived && reconciled && backed_up && !held && age > TTL_DAYS;
        out.push(Candidate { eligible, name, date, drained, archived, reconciled, backed_up, held, age_days: age });
    }
    Ok(out)
}

/// The rollout's checks after a drop, as answers: the database is gone from the engine, no
/// replication document of the engine's replicator database names it, and the relational store
/// holds its orders and sales (as many as the day held: its reconciliation was 0).
pub use protocol::views::AfterDrop;

pub fn after_drop(conn: &Cluster, name: &str) -> RollingResult<AfterDrop> {
    let replications = docdb::replications_naming(conn, name)?;
    let (orders, sales) = relational::counts(conn, name)?;
    Ok(AfterDrop {
        name: name.to_owned(),
        gone_from_engine: !docdb::on_documents_side(conn, name)?,
        replicator_clean: replications.is_empty(),
        replications_naming_it: replications,
        relational_orders: orders,
        relational_sales: sales,
    })
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DropReport {
    pub company_id: String,
    pub dropped: Vec<String>,
    /// The checks after each drop (also in the drop's audit entry).
    pub after: Vec<AfterDrop>,
    /// Why nothing was evaluated, when nothing was.
    pub skipped: Option<String>,
}

pub fn evaluate_tenant(
    conn: &Cluster,
    settings: &RollingSettings,
    tenant: &Tenant,
    now_ms: i64,
) -> RollingResult<DropReport> {
    let mut report =
        DropReport { company_id: tenant.id.clone(), dropped: Vec::new(), after: Vec::new(), skipped: None };
    if !flags::get(conn, &tenant.id)?.rolling_db_drop {
        report.skipped = Some("rollingDbDrop is off".into());
        return Ok(report);
    }
    if !settings.backup_enabled {
        report.skipped = Some("BACKUP_ENABLED is false: no physical drop without backups".into());
        return Ok(report);
    }
    for c in candidates(conn, settings, tenant, now_ms)?.into_iter().filter(|c| c.eligible) {
        docdb::drop_database(conn, &c.name)?;
        set_day_status(conn, &c.name, DayStatus::Dropped, now_ms)?;
        stamp(conn, &c.name, Stamp::Dropped, now_ms)?;
        let after = after_drop(conn, &c.name)?;
        let detail = serde_json::json!({ "companyId": tenant.id, "db": c.name, "after": after });
        audit::record(conn, &Actor::system(protocol::ops::CRON_DROP_EVAL), actions::DAY_DROP, detail, now_ms)?;
        report.after.push(after);
        report.dropped.push(c.name);
    }
    Ok(report)
}
