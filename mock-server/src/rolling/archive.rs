//! The archive of past day databases (`AUTO_ARCHIVE_ENABLED`): a day database older than today
//! with no open order left is drained; its documents are copied into the tenant's `*_archive`
//! database with `source_db` naming it, and its orders and sales into the relational store
//! (`store::relational_archive`); reconciliation compares the day database with both (diff 0 =
//! reconciled), after which the day database is ARCHIVED. An open order keeps its day ACTIVE
//! (still payable), and so does being the day devices still write to while today's is missing
//! (`days::routed_day`). Every copy is an upsert keyed by the source, so a re-run or a run resumed
//! after a crash ends as one clean run. The legacy database (every tenant's before its cutover,
//! and the rollback's target after) is archived the same way, in part: its closed orders and its
//! sales older than a day, with `source_db` naming it, reconciled over those documents; it is
//! never drained nor dropped. An archived day that receives writes later (a device offline since
//! before the archive, pushing its orders) has them taken at the next run; only a loss of what the
//! archive took regresses its reconciliation.

use std::collections::HashMap;

use crate::docdb::Cluster;
use crate::store::sql::params;
use serde::Serialize;
use serde_json::Value;

use super::alarms;
use super::days::{self, set_day_status, stamp, DayStatus, Stamp};
use super::invalidation::{self, Routing};
use super::tenants::Tenant;
use super::{RollingResult, RollingSettings};
use crate::docdb::naming::{day_of, TenantNames};
use crate::docdb::{self, Doc, Kind};
use crate::store::backups::revs_fingerprint;
use crate::store::relational_archive::{self as relational, OrderRow, SaleRow, Table};

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveReport {
    pub company_id: String,
    pub drained: Vec<String>,
    pub archived: Vec<String>,
    /// Days that still hold open orders.
    pub still_open: Vec<String>,
    /// A past day that devices routed to CORE still write to, today's being missing (no rotate
    /// since midnight): left ACTIVE, so what they write late is archived after the rotate.
    pub still_routed: Option<String>,
    /// Days copied but not matching their archive.
    pub unreconciled: Vec<String>,
    /// Days reconciled earlier that no longer match their archive (an alarm is raised).
    pub regressed: Vec<String>,
    /// Archived days that received writes after their archive (a device that was offline
    /// pushing late): what they received is now in the archive too.
    pub late: Vec<String>,
    /// The legacy database's closed orders and sales older than a day, now in the archive and
    /// the relational store, and how many of them differ there (0: reconciled).
    pub legacy: Option<LegacyArchive>,
    /// Documents that differ from the archive over every day checked and the legacy part (the
    /// rollout's "reconciliation diff"; 0 when all is reconciled).
    pub diff: u64,
}

pub use protocol::views::{LegacyArchive, TypeCheck};

/// Milliseconds a legacy order or sale is kept out of the archive (it may still change).
const LEGACY_AGE_MS: i64 = 24 * 3600 * 1000;

/// A legacy document the archive takes: a closed (not open) order or a sale, created more than a
/// day before `now_ms` (one without `createdAt` is never taken: its age is unknown).
fn legacy_archivable(doc: &Doc, now_ms: i64) -> bool {
    let kind = doc.body.get("type").and_then(Value::as_str);
    let created = doc.body.get("createdAt").and_then(Value::as_i64);
    matches!(kind, Some("order" | "sale"))
        && !is_open_order(doc)
        && created.is_some_and(|at| at < now_ms.saturating_sub(LEGACY_AGE_MS))
}

pub fn is_open_order(doc: &Doc) -> bool {
    doc.body.get("type").and_then(Value::as_str) == Some("order")
        && doc.body.get("status").and_then(Value::as_str) == Some("open")
}

fn archive_id(day_db: &str, doc_id: &str) -> String {
    format!("{day_db}:{doc_id}")
}

fn of_type<'a>(docs: &'a [Doc], doc_type: &str) -> impl Iterator<Item = &'a Doc> {
    let doc_type = doc_type.to_owned();
    docs.iter().filter(move |d| d.body.get("type").and_then(Value::as_str) == Some(doc_type.as_str()))
}

/// The source's orders and sales (a day's, or the legacy database's archived part) against the
/// relational store, type by type.
fn relational_checks(conn: &Cluster, day_db: &str, day_docs: &[Doc]) -> RollingResult<Vec<TypeCheck>> {
    let mut out = Vec::new();
    for table in Table::ALL {
        let mut day: Vec<(String, String)> =
            of_type(day_docs, table.doc_type()).map(|d| (d.id.clone(), d.rev.clone())).collect();
        day.sort();
        let rows = relational::revisions(conn, table, day_db)?;
        let diff = day.iter().filter(|e| !rows.contains(e)).count() + rows.iter().filter(|e| !day.contains(e)).count();
        out.push(TypeCheck {
            doc_type: table.doc_type().to_owned(),
            day_count: day.len() as u64,
            row_count: rows.len() as u64,
            day_checksum: revs_fingerprint(day.clone()),
            row_checksum: revs_fingerprint(rows.clone()),
            diff: diff as u64,
        });
    }
    Ok(out)
}

/// Documents of `day_db` missing from (or different in) the archive database or the relational
/// store, plus archived copies and rows whose source is gone: 0 means both hold exactly the day's
/// data.
pub fn reconcile_diff(conn: &Cluster, day_db: &str, archive_db: &str) -> RollingResult<u64> {
    Ok(reconcile(conn, day_db, archive_db)?.map_or(0, |(diff, _)| diff))
}

/// The diff of `reconcile_diff` and the relational checks it is made of, from one read of the
/// day's documents; `None` when the day database is gone (nothing left to differ).
pub fn reconcile(conn: &Cluster, day_db: &str, archive_db: &str) -> RollingResult<Option<(u64, Vec<TypeCheck>)>> {
    if !docdb::exists(conn, day_db)? {
        return Ok(None);
    }
    let day_docs = docdb::all_docs(conn, day_db)?;
    let checks = relational_checks(conn, day_db, &day_docs)?;
    let relational: u64 = checks.iter().map(|c| c.diff).sum();
    Ok(Some((archive_diff(conn, day_db, archive_db, &day_docs)? + relational, checks)))
}

fn archive_diff(conn: &Cluster, day_db: &str, archive_db: &str, day_docs: &[Doc]) -> RollingResult<u64> {
    let archived: Vec<Doc> = if docdb::exists(conn, archive_db)? {
        docdb::all_docs(conn, archive_db)?
            .into_iter()
            .filter(|d| d.body.get("source_db").and_then(Value::as_str) == Some(day_db))
            .collect()
    } else {
        Vec::new()
    };
    let mut diff = 0;
    for doc in day_docs {
        let copy = archived.iter().find(|a| a.id == archive_id(day_db, &doc.id));
        if copy.is_none_or(|a| a.body.get("source_rev").and_then(Value::as_str) != Some(doc.rev.as_str())) {
            diff += 1;
        }
    }
    diff += archived.iter().filter(|a| !day_docs.iter().any(|d| a.id == archive_id(day_db, &d.id))).count() as u64;
    Ok(diff)
}

/// `docs` of `day_db` (a day's, or the legacy database's archived part) into the archive database.
fn copy_into_archive(conn: &Cluster, day_db: &str, archive_db: &str, docs: &[Doc]) -> RollingResult<()> {
    for doc in docs {
        let id = archive_id(day_db, &doc.id);
        let existing = docdb::get(conn, archive_db, &id)?;
        if existing.as_ref().is_some_and(|e| e.body.get("source_rev").and_then(Value::as_str) == Some(doc.rev.as_str()))
        {
            continue;
        }
        let mut body = doc.body.clone();
        body.insert("source_db".into(), Value::String(day_db.to_owned()));
        body.insert("source_id".into(), Value::String(doc.id.clone()));
        body.insert("source_rev".into(), Value::String(doc.rev.clone()));
        docdb::put(conn, archive_db, &id, body, existing.as_ref().map(|e| e.rev.as_str()))?;
    }
    Ok(())
}

fn number(doc: &Doc, field: &str) -> i64 {
    doc.body.get(field).and_then(Value::as_i64).unwrap_or(0)
}

/// The orders of `docs`, then its sales (a sale names its order's row), into the relational store
/// with `day_db` as their source.
fn copy_into_relational(
    conn: &Cluster,
    company_id: &str,
    day_db: &str,
    docs: &[Doc],
    now_ms: i64,
) -> RollingResult<()> {
    let created = |d: &Doc| d.body.get("createdAt").and_then(Value::as_i64).unwrap_or(now_ms);
    for d in of_type(docs, Table::Orders.doc_type()) {
        let status = d.body.get("status").and_then(Value::as_str).unwrap_or("");
        let row = OrderRow {
            doc_id: &d.id,
            rev: &d.rev,
            status,
            total_cents: number(d, "totalCents"),
            created_at: created(d),
        };
        relational::put_order(conn, company_id, day_db, &row)?;
    }
    for d in of_type(docs, Table::Sales.doc_type()) {
        let order = d.body.get("orderId").and_then(Value::as_str);
        let row = SaleRow {
            doc_id: &d.id,
            rev: &d.rev,
            order_doc_id: order,
            amount_cents: number(d, "amountCents"),
            created_at: created(d),
        };
        relational::put_sale(conn, company_id, day_db, &row)?;
    }
    Ok(())
}

/// Archives every past day database of the tenant that can be archived now.
pub fn archive_tenant(
    conn: &Cluster,
    settings: &RollingSettings,
    tenant: &Tenant,
    now_ms: i64,
) -> RollingResult<ArchiveReport> {
    let names: TenantNames = tenant.names(&settings.db_prefix);
    let archive_db = names.archive();
    let today = day_of(now_ms);
    let mut report = ArchiveReport { company_id: tenant.id.clone(), ..Default::default() };
    // The day the handshake routes writes to while today's is missing, if devices are on CORE.
    let routed = days::routed_day(conn, &tenant.id, &today)?.filter(|d| *d != names.day(&today));
    report.still_routed = match routed {
        Some(day) if invalidation::current_routing(conn, &names, &tenant.id)? == Routing::Core => Some(day),
        _ => None,
    };
    let mut stmt = conn.prepare("SELECT name FROM day_databases WHERE company_id = ?1 AND day < ?2 AND status IN ('PREWARMED', 'ACTIVE', 'DRAINED') ORDER BY day")?;
    let days: Vec<String> =
        stmt.query_map(params![tenant.id, today], |r| r.get(0))?.collect::<crate::store::sql::Result<_>>()?;
    for day_db in days {
        if report.still_routed.as_ref() == Some(&day_db) {
            continue;
        }
        if docdb::all_docs(conn, &day_db)?.iter().any(is_open_order) {
            report.still_open.push(day_db);
            continue;
        }
        set_day_status(conn, &day_db, DayStatus::Drained, now_ms)?;
        stamp(conn, &day_db, Stamp::Drained, now_ms)?;
        report.drained.push(day_db.clone());
        if !docdb::exists(conn, &archive_db)? {
            docdb::create(conn, &archive_db, &tenant.id, Kind::Archive, now_ms)?;
        }
        let docs = docdb::all_docs(conn, &day_db)?;
        copy_into_archive(conn, &day_db, &archive_db, &docs)?;
        copy_into_relational(conn, &tenant.id, &day_db, &docs, now_ms)?;
        stamp(conn, &day_db, Stamp::Archived, now_ms)?;
        let diff = reconcile_diff(conn, &day_db, &archive_db)?;
        report.diff += diff;
        if diff == 0 {
            stamp(conn, &day_db, Stamp::Reconciled, now_ms)?;
            set_day_status(conn, &day_db, DayStatus::Archived, now_ms)?;
            report.archived.push(day_db);
        } else {
            report.unreconciled.push(day_db);
        }
    }
    // Days reconciled before must stay so: what the archive took must still be held by the archive
    // and by its day (the rollout's "loss of orders or payments": roll back). What a day received
    // after its archive (late writes) is no loss: it is taken now.
    let mut stmt =
        conn.prepare("SELECT name FROM day_databases WHERE company_id = ?1 AND status = 'ARCHIVED' ORDER BY day")?;
    let archived: Vec<String> =
        stmt.query_map([&tenant.id], |r| r.get(0))?.collect::<crate::store::sql::Result<_>>()?;
    // A rollback committing meanwhile would clear the alarm this run raises for it: flag changes
    // wait for the run.
    super::flags::lock(conn, &tenant.id)?;
    let loss_kind = alarms::day_loss_kind(super::flags::get(conn, &tenant.id)?.rolling_db);
    for day_db in archived {
        // A day archived before the relational archive existed (no row of it ever recorded, and
        // still matching its archive database) gets its rows now rather than an alarm. Rows
        // recorded and gone since are a loss, however many.
        if relational::recorded(conn, &day_db)?.is_empty() && docdb::exists(conn, &day_db)? {
            let docs = docdb::all_docs(conn, &day_db)?;
            if archive_diff(conn, &day_db, &archive_db, &docs)? == 0 {
                copy_into_relational(conn, &tenant.id, &day_db, &docs, now_ms)?;
            }
        }
        let lost = take_late_writes(conn, &tenant.id, &day_db, &archive_db, now_ms, &mut report)?;
        let diff = reconcile_diff(conn, &day_db, &archive_db)?;
        report.diff += diff;
        if lost != 0 || diff != 0 {
            let detail = format!("{day_db} was archived with reconciliation diff 0 and now differs from its archive in {diff} document(s); {lost} of what the archive took is lost");
            alarms::raise(conn, &tenant.id, loss_kind, &day_db, &detail, now_ms)?;
            report.regressed.push(day_db);
        } else {
            // Whole again (restored from its snapshot): the restore it asked for is done.
            alarms::clear_one(conn, &tenant.id, alarms::Kind::ArchivedDayLost, &day_db, now_ms)?;
        }
    }
    report.legacy = archive_legacy(conn, &names, &tenant.id, now_ms)?;
    report.diff += report.legacy.as_ref().map_or(0, |l| l.diff);
    record_diff(conn, &tenant.id, report.diff, now_ms)?;
    Ok(report)
}

/// `day_db`, as it holds now, taken again into `archive_db` and the relational store (a day put
/// back from its snapshot after a loss).
pub(super) fn take_again(
    conn: &Cluster,
    company_id: &str,
    day_db: &str,
    archive_db: &str,
    now_ms: i64,
) -> RollingResult<()> {
    let docs = docdb::all_docs(conn, day_db)?;
    if !docdb::exists(conn, archive_db)? {
        docdb::create(conn, archive_db, company_id, Kind::Archive, now_ms)?;
    }
    copy_into_archive(conn, day_db, archive_db, &docs)?;
    copy_into_relational(conn, company_id, day_db, &docs, now_ms)
}

/// A revision's generation (`3-…` is 3): a later write of a document has a higher one.
fn generation(rev: &str) -> u64 {
    rev.split('-').next().and_then(|g| g.parse().ok()).unwrap_or(0)
}

/// An archived day against what its archive took: documents written to the day after its archive
/// (a device offline since then, pushing late; never a loss) are copied into the archive and the
/// relational store now, and the report lists the day in `late`. Answers how much of what the
/// archive took is lost: an archived copy whose document the day no longer holds (or holds at an
/// older revision), a row taken into the relational store and gone from it, or one whose copy is
/// gone from the archive database.
fn take_late_writes(
    conn: &Cluster,
    company_id: &str,
    day_db: &str,
    archive_db: &str,
    now_ms: i64,
    report: &mut ArchiveReport,
) -> RollingResult<u64> {
    if !docdb::exists(conn, day_db)? {
        return Ok(0);
    }
    let day_docs = docdb::all_docs(conn, day_db)?;
    let copies: HashMap<String, String> = if docdb::exists(conn, archive_db)? {
        docdb::all_docs(conn, archive_db)?
            .into_iter()
            .filter(|d| d.body.get("source_db").and_then(Value::as_str) == Some(day_db))
            .filter_map(|d| {
                let id = d.body.get("source_id").and_then(Value::as_str)?.to_owned();
                Some((id, d.body.get("source_rev").and_then(Value::as_str).unwrap_or_default().to_owned()))
            })
            .collect()
    } else {
        Default::default()
    };
    let rows: HashMap<String, (String, bool)> =
        relational::recorded(conn, day_db)?.into_iter().map(|(id, rev, present)| (id, (rev, present))).collect();
    let held: HashMap<&str, &str> = day_docs.iter().map(|d| (d.id.as_str(), d.rev.as_str())).collect();
    let mut lost = copies
        .iter()
        .filter(|(id, rev)| held.get(id.as_str()).is_none_or(|now| generation(now) < generation(rev)))
        .count() as u64;
    lost += rows.iter().filter(|(id, (_, present))| !present || !copies.contains_key(*id)).count() as u64;
    // Taken again: a document the archive lacks or holds at an older revision than the day's.
    let behind = |taken: Option<&String>, rev: &str| taken.is_none_or(|t| t != rev && generation(t) <= generation(rev));
    let late: Vec<Doc> = day_docs
        .into_iter()
        .filter(|d| {
            let row = rows.get(&d.id).map(|(rev, _)| rev);
            let relational =
                Table::ALL.iter().any(|t| d.body.get("type").and_then(Value::as_str) == Some(t.doc_type()));
            behind(copies.get(&d.id), &d.rev) || (relational && behind(row, &d.rev))
        })
        .collect();
    if !late.is_empty() {
        if !docdb::exists(conn, archive_db)? {
            docdb::create(conn, archive_db, company_id, Kind::Archive, now_ms)?;
        }
        copy_into_archive(conn, day_db, archive_db, &late)?;
        copy_into_relational(conn, company_id, day_db, &late, now_ms)?;
        report.late.push(day_db.to_owned());
    }
    Ok(lost)
}

/// Keeps the tenant's reconciliation diff as this run found it (what `/metrics` reports).
fn record_diff(conn: &Cluster, company_id: &str, diff: u64, now_ms: i64) -> RollingResult<()> {
    conn.execute(
        "INSERT INTO guard_reconciliations (company_id, diff, checked_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (company_id) DO UPDATE SET diff = excluded.diff, checked_at = excluded.checked_at",
        params![company_id, i64::try_from(diff).unwrap_or(i64::MAX), now_ms],
    )?;
    Ok(())
}

/// The legacy database's part the archive takes (`legacy_archivable`), copied, then reconciled;
/// `None` when the tenant has no legacy database.
fn archive_legacy(
    conn: &Cluster,
    names: &TenantNames,
    company_id: &str,
    now_ms: i64,
) -> RollingResult<Option<LegacyArchive>> {
    let (legacy, archive_db) = (names.legacy(), names.archive());
    let Some(docs) = legacy_archivable_docs(conn, &legacy, now_ms)? else { return Ok(None) };
    if !docs.is_empty() {
        if !docdb::exists(conn, &archive_db)? {
            docdb::create(conn, &archive_db, company_id, Kind::Archive, now_ms)?;
        }
        copy_into_archive(conn, &legacy, &archive_db, &docs)?;
        copy_into_relational(conn, company_id, &legacy, &docs, now_ms)?;
    }
    // The copies wrote the archive and the relational store, not the legacy database: the same
    // documents are measured against them.
    legacy_against_archive(conn, names, docs).map(Some)
}

fn legacy_archivable_docs(conn: &Cluster, legacy: &str, now_ms: i64) -> RollingResult<Option<Vec<Doc>>> {
    if !docdb::exists(conn, legacy)? {
        return Ok(None);
    }
    Ok(Some(docdb::all_docs(conn, legacy)?.into_iter().filter(|d| legacy_archivable(d, now_ms)).collect()))
}

/// How the legacy database's archivable part stands against the archive and the relational
/// store (a document closed since the last archive run counts until the next one copies it).
pub fn legacy_status(conn: &Cluster, names: &TenantNames, now_ms: i64) -> RollingResult<Option<LegacyArchive>> {
    let Some(docs) = legacy_archivable_docs(conn, &names.legacy(), now_ms)? else { return Ok(None) };
    legacy_against_archive(conn, names, docs).map(Some)
}

/// `docs`, the legacy database's archivable part, against the archive and the relational store.
fn legacy_against_archive(conn: &Cluster, names: &TenantNames, docs: Vec<Doc>) -> RollingResult<LegacyArchive> {
    let (legacy, archive_db) = (names.legacy(), names.archive());
    let relational: u64 = relational_checks(conn, &legacy, &docs)?.iter().map(|c| c.diff).sum();
    let archived = archive_diff(conn, &legacy, &archive_db, &docs)?;
    Ok(LegacyArchive { db: legacy, documents: docs.len() as u64, diff: archived + relational })
}
