//! The one-time warm of CORE: created with its indexes and seeded with the legacy database's
//! STATIC catalogue under fresh revisions (`1-…`, no `_rev` or update sequence inherited), so
//! CORE's `update_seq` equals its document count. A CORE that exists is left alone.

use std::collections::HashMap;

use crate::docdb::Cluster;
use protocol::views::CoreWrites;
use serde::Serialize;

use super::RollingResult;
use crate::docdb::documents::Write;
use crate::docdb::naming::TenantNames;
use crate::docdb::{self, DocDbError, Kind};

/// Indexes the devices' catalogue queries use.
pub const CORE_INDEXES: [&str; 2] = ["type", "type,name"];

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum WarmOutcome {
    Created {
        docs: u64,
    },
    AlreadyExists,
    /// CORE existed from before the latest enable of `rollingDb` (a rollback left it): brought up
    /// to the legacy catalogue, `docs` STATIC documents written.
    CaughtUp {
        docs: u64,
    },
    NoLegacy,
}

/// A document of the tenant's catalogue (as opposed to per-day DYNAMIC data).
pub fn is_static(body: &serde_json::Map<String, serde_json::Value>) -> bool {
    body.get("class").and_then(|c| c.as_str()) == Some("STATIC")
}

pub fn warm_core(conn: &Cluster, names: &TenantNames, company_id: &str, now_ms: i64) -> RollingResult<WarmOutcome> {
    let (core, legacy) = (names.core(), names.legacy());
    let found = docdb::existing(conn, &[&core, &legacy])?;
    let exists = |name: &str| found.iter().any(|n| n == name);
    if exists(&core) {
        return Ok(WarmOutcome::AlreadyExists);
    }
    if !exists(&legacy) {
        return Ok(WarmOutcome::NoLegacy);
    }
    docdb::create_indexed(conn, &core, company_id, Kind::Core, &CORE_INDEXES, now_ms)?;
    let writes: Vec<Write> = docdb::all_docs(conn, &legacy)?
        .into_iter()
        .filter(|d| is_static(&d.body))
        // A fresh document: no expected revision, so it starts at generation 1.
        .map(|d| Write { id: d.id, body: d.body, rev: None })
        .collect();
    let copied = writes.len() as u64;
    let mut writes = writes.into_iter().peekable();
    while writes.peek().is_some() {
        for answer in docdb::bulk_put(conn, &core, writes.by_ref().take(WARM_BATCH).collect())? {
            match answer {
                // Already there: a warm killed after the engine's write and before the store's
                // commit, resumed. Its revision is the `1-` one written then.
                Ok(_) | Err(DocDbError::Conflict(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(WarmOutcome::Created { docs: copied })
}

/// Brings a CORE left from before a rollback up to the legacy catalogue, which kept the devices'
/// catalogue meanwhile: each STATIC document of legacy that CORE lacks, or holds with another
/// body, is written to CORE (legacy's body on CORE's revision); a document only CORE holds stays.
/// Answers how many were written.
pub fn catch_up_core(conn: &Cluster, names: &TenantNames) -> RollingResult<u64> {
    let (core, legacy) = (names.core(), names.legacy());
    let held: std::collections::HashMap<String, (String, serde_json::Map<String, serde_json::Value>)> =
        docdb::all_docs(conn, &core)?.into_iter().map(|d| (d.id, (d.rev, d.body))).collect();
    let writes: Vec<Write> = docdb::all_docs(conn, &legacy)?
        .into_iter()
        .filter(|d| is_static(&d.body))
        .filter_map(|d| match held.get(&d.id) {
            None => Some(Write { id: d.id, body: d.body, rev: None }),
            Some((_, body)) if *body == d.body => None,
            Some((rev, _)) => Some(Write { id: d.id, body: d.body, rev: Some(rev.clone()) }),
        })
        .collect();
    let written = writes.len() as u64;
    let mut writes = writes.into_iter().peekable();
    while writes.peek().is_some() {
        for answer in docdb::bulk_put(conn, &core, writes.by_ref().take(WARM_BATCH).collect())? {
            answer?;
        }
    }
    Ok(written)
}

/// Ids of the documents written since the warm that a refusal or an answer names.
pub const IDS_NAMED: usize = 5;

/// Documents of CORE (`core_docs`) written since its warm that the legacy catalogue lacks: edited
/// (a revision past the warm's first) to a body legacy's STATIC document does not hold, or not
/// among legacy's STATIC documents at all. What a rebuild from legacy (the re-warm) would lose,
/// and what the devices stop seeing at a rollback. Ids in CORE's order.
pub fn written_since_warm(conn: &Cluster, core_docs: &[docdb::Doc], legacy: &str) -> RollingResult<Vec<String>> {
    let mut legacy_static = HashMap::new();
    if docdb::exists(conn, legacy)? {
        legacy_static
            .extend(docdb::all_docs(conn, legacy)?.into_iter().filter(|d| is_static(&d.body)).map(|d| (d.id, d.body)));
    }
    Ok(core_docs
        .iter()
        .filter(|d| match legacy_static.get(&d.id) {
            None => true,
            // A catch-up after a rollback writes legacy's body on CORE's revision: no loss.
            Some(body) => !d.rev.starts_with("1-") && *body != d.body,
        })
        .map(|d| d.id.clone())
        .collect())
}

/// `written_since_warm` of the tenant's CORE as an answer carries it: the count and the first ids
/// (nothing without CORE).
pub fn core_writes(conn: &Cluster, names: &TenantNames) -> RollingResult<CoreWrites> {
    let core = names.core();
    if !docdb::exists(conn, &core)? {
        return Ok(CoreWrites::default());
    }
    let written = written_since_warm(conn, &docdb::all_docs(conn, &core)?, &names.legacy())?;
    Ok(CoreWrites { count: written.len() as u64, ids: written.into_iter().take(IDS_NAMED).collect() })
}

/// Documents a `_bulk_docs` request of the warm carries.
const WARM_BATCH: usize = 1_000;
