//! Backups ("daily, about 30 snapshots per day database"): the backup cron takes a
//! snapshot of every day database that changed since its last one (`store::backups`), keeps the
//! newest 30 per database and says what it pruned. A verified snapshot taken after a database's
//! last write is the drop's fourth lock, and `mock-server restore` brings a dropped day database
//! back from one: the same documents, the same revisions.

use std::path::Path;

use serde::Serialize;

use super::days::{set_day_status, DayStatus};
use super::tenants::Tenant;
use super::{RollingError, RollingResult};
use crate::docdb::{self, Cluster, Kind};
use crate::store::backups::{self, BackupError, Manifest};

/// Snapshots kept per database.
pub const KEEP: usize = 30;

/// The file in `BACKUP_DIR` that names the store its snapshots belong to.
pub const MARKER: &str = ".session-broker-store";

/// Why this server does not see its store's snapshots, if it does not. Every server of one store
/// (the replicas on PostgreSQL) must back up into, drop against and restore from the same
/// snapshots, so they must share one `BACKUP_DIR`: the first server of a store writes a marker
/// into its directory and records it in the store; every server after it finds that marker in
/// its own `BACKUP_DIR`, or takes no backup and drops nothing, saying why.
pub fn unshared(conn: &crate::store::sql::Connection, dir: &Path) -> RollingResult<Option<String>> {
    use crate::store::sql::OptionalExtension;
    let recorded: Option<String> =
        conn.query_row("SELECT token FROM mock_backup_marker WHERE id = 1", [], |r| r.get(0)).optional()?;
    let Some(token) = recorded else {
        let token = crate::auth::secrets::random_id("backups");
        // The marker is written only by the server whose record won, so two servers starting
        // together never leave a marker that the store does not name.
        if conn.execute(
            "INSERT INTO mock_backup_marker (id, token) VALUES (1, ?1) ON CONFLICT (id) DO NOTHING",
            [&token],
        )? == 1
        {
            std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(dir.join(MARKER), &token))
                .map_err(|e| BackupError::Io { path: dir.join(MARKER), source: e })?;
            return Ok(None);
        }
        return unshared(conn, dir);
    };
    let found = std::fs::read_to_string(dir.join(MARKER)).ok();
    Ok((found.as_deref().map(str::trim) != Some(token.as_str())).then(|| {
        format!(
            "BACKUP_DIR {} does not hold this store's marker ({MARKER}): it is not the directory the store's other servers back up into; give every replica the same, shared BACKUP_DIR (no backup is taken and nothing is dropped here)",
            dir.display()
        )
    }))
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupReport {
    pub company_id: String,
    /// `db@snapshotId` of each snapshot taken.
    pub taken: Vec<String>,
    /// Databases whose newest snapshot is still current.
    pub unchanged: Vec<String>,
    /// `db@snapshotId` of each snapshot removed past the newest 30.
    pub pruned: Vec<String>,
}

/// The newest complete snapshot of `db`, if it holds what the database holds now (the same
/// documents at the same revisions) and its data checks against its manifest.
pub fn current_snapshot(conn: &Cluster, dir: &Path, db: &str) -> RollingResult<Option<Manifest>> {
    if !docdb::exists(conn, db)? {
        return Ok(None);
    }
    let Some(last) = backups::list(dir, db)?.pop() else { return Ok(None) };
    let now = backups::revs_fingerprint(docdb::all_docs(conn, db)?.into_iter().map(|d| (d.id, d.rev)).collect());
    Ok((last.revs == now && backups::read_verified(dir, &last).is_ok()).then_some(last))
}

/// Snapshots the tenant's day databases that changed since their newest snapshot.
pub fn backup_tenant(conn: &Cluster, dir: &Path, tenant: &Tenant, now_ms: i64) -> RollingResult<BackupReport> {
    let mut report = BackupReport { company_id: tenant.id.clone(), ..Default::default() };
    for day in super::days::day_databases(conn, &tenant.id)?.into_iter().filter(|d| d.status != DayStatus::Dropped) {
        let Some(info) = docdb::info(conn, &day.name)? else { continue };
        if current_snapshot(conn, dir, &day.name)?.is_some() {
            report.unchanged.push(day.name);
            continue;
        }
        let docs: Vec<serde_json::Value> = docdb::all_docs(conn, &day.name)?.iter().map(docdb::Doc::to_json).collect();
        let m = backups::write(dir, &day.name, now_ms, info.update_seq, &docs)?;
        report.taken.push(format!("{}@{}", day.name, m.snapshot_id));
        for id in backups::prune(dir, &day.name, KEEP)? {
            report.pruned.push(format!("{}@{id}", day.name));
        }
    }
    Ok(report)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Restored {
    pub db: String,
    pub company_id: String,
    pub snapshot_id: String,
    pub doc_count: u64,
    /// A restored day is held back from the drop until released (CORE never is a candidate).
    pub held: bool,
}

/// The operator's restore (`mock-server restore`): refused unless this server sees its store's
/// snapshots (`unshared`), then `restore`, audited as `day.restore`.
pub fn restore_audited(
    conn: &Cluster,
    dir: &Path,
    db_prefix: &str,
    db: &str,
    snapshot: Option<&str>,
    now_ms: i64,
) -> RollingResult<Restored> {
    if let Some(why) = unshared(conn, dir)? {
        return Err(RollingError::BackupsUnshared(why));
    }
    let r = restore(conn, dir, db_prefix, db, snapshot, now_ms)?;
    let detail = serde_json::json!({"companyId": r.company_id, "db": r.db, "snapshotId": r.snapshot_id});
    crate::store::audit::record(
        conn,
        &crate::store::audit::Actor::system("restore"),
        protocol::ops::audit::DAY_RESTORE,
        detail,
        now_ms,
    )?;
    Ok(r)
}

/// Brings a dropped day database, or a tenant's CORE dropped by a re-warm, back from a snapshot
/// (`snapshot`: its id; default the newest that verifies); or puts back into an archived day that
/// lost what its archive took, once its tenant is rolled back (an open `archived-day-lost`
/// alarm), what the snapshot holds. Refused for any other database that exists (a restore never
/// mixes into live data) or one that is none of these.
pub fn restore(
    conn: &Cluster,
    dir: &Path,
    db_prefix: &str,
    db: &str,
    snapshot: Option<&str>,
    now_ms: i64,
) -> RollingResult<Restored> {
    if docdb::exists(conn, db)? {
        return recover_lost_day(conn, dir, db_prefix, db, snapshot, now_ms);
    }
    use crate::store::sql::OptionalExtension;
    let day: Option<String> =
        conn.query_row("SELECT company_id FROM day_databases WHERE name = ?1", [db], |r| r.get(0)).optional()?;
    let core_of = match &day {
        Some(_) => None,
        None => super::tenants::all(conn)?.into_iter().find(|t| t.names(db_prefix).core() == db).map(|t| t.id),
    };
    let company_id = day.clone().or(core_of).ok_or_else(|| RollingError::UnknownDayDatabase(db.to_owned()))?;
    let chosen = chosen_snapshot(dir, db, snapshot)?;
    let docs = backups::read_verified(dir, &chosen)?;
    if day.is_none() {
        // CORE, from the snapshot a re-warm took: the devices go back to it at the tenant's next
        // invalidation (or the next rotate's cutover).
        docdb::create_indexed(conn, db, &company_id, Kind::Core, &super::warm::CORE_INDEXES, now_ms)?;
        docdb::restore_docs(conn, db, docs)?;
        return Ok(Restored {
            db: db.to_owned(),
            company_id,
            snapshot_id: chosen.snapshot_id.clone(),
            doc_count: chosen.doc_count,
            held: false,
        });
    }
    docdb::create(conn, db, &company_id, Kind::Day, now_ms)?;
    docdb::restore_docs(conn, db, docs)?;
    // Back to what it was before the drop: archived and reconciled (the drop needed both).
    set_day_status(conn, db, DayStatus::Archived, now_ms)?;
    conn.execute("UPDATE day_databases SET dropped_at = NULL WHERE name = ?1", [db])?;
    // Restored to be looked at or recovered from: no drop evaluation takes it again until an
    // operator releases it.
    super::days::hold(conn, db, "restored", now_ms)?;
    Ok(Restored {
        db: db.to_owned(),
        company_id,
        snapshot_id: chosen.snapshot_id.clone(),
        doc_count: chosen.doc_count,
        held: true,
    })
}

/// The archived day `db` of a rolled-back tenant whose archive run found it lost (an open
/// `archived-day-lost` alarm): the snapshot's documents the day lacks, or holds at an older
/// revision, are put back with their revisions, then the day is taken again into its archive
/// database and the relational store. The next archive run finds it whole and clears the alarm.
fn recover_lost_day(
    conn: &Cluster,
    dir: &Path,
    db_prefix: &str,
    db: &str,
    snapshot: Option<&str>,
    now_ms: i64,
) -> RollingResult<Restored> {
    let exists = || RollingError::DocDb(docdb::DocDbError::Exists(db.to_owned()));
    let lost = super::alarms::open_about(conn, super::alarms::Kind::ArchivedDayLost, db)?;
    let Some(company_id) = lost else { return Err(exists()) };
    let tenant = super::tenants::all(conn)?.into_iter().find(|t| t.id == company_id).ok_or_else(exists)?;
    let chosen = chosen_snapshot(dir, db, snapshot)?;
    let held: std::collections::HashMap<String, String> =
        docdb::all_docs(conn, db)?.into_iter().map(|d| (d.id, d.rev)).collect();
    let generation = |rev: &str| rev.split('-').next().and_then(|g| g.parse::<u64>().ok()).unwrap_or(0);
    let missing: Vec<serde_json::Value> = backups::read_verified(dir, &chosen)?
        .into_iter()
        .filter(|d| {
            let (id, rev) = (d["_id"].as_str().unwrap_or_default(), d["_rev"].as_str().unwrap_or_default());
            held.get(id).is_none_or(|now| generation(now) < generation(rev))
        })
        .collect();
    if !missing.is_empty() {
        docdb::restore_docs(conn, db, missing)?;
    }
    super::archive::take_again(conn, &company_id, db, &tenant.names(db_prefix).archive(), now_ms)?;
    Ok(Restored {
        db: db.to_owned(),
        company_id,
        snapshot_id: chosen.snapshot_id.clone(),
        doc_count: chosen.doc_count,
        held: super::days::is_held(conn, db)?,
    })
}

/// The snapshot of `db` named, or its newest that verifies.
fn chosen_snapshot(dir: &Path, db: &str, snapshot: Option<&str>) -> RollingResult<backups::Manifest> {
    let snapshots = backups::list(dir, db)?;
    let chosen = match snapshot {
        Some(id) => snapshots
            .iter()
            .find(|m| m.snapshot_id == id)
            .ok_or_else(|| BackupError::NoSnapshot { db: db.to_owned(), id: id.to_owned() })?,
        None => snapshots
            .iter()
            .rev()
            .find(|m| backups::read_verified(dir, m).is_ok())
            .ok_or_else(|| BackupError::NoVerifiedSnapshot { db: db.to_owned(), dir: dir.to_owned() })?,
    };
    Ok(chosen.clone())
}
