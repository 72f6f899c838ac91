//! Re-warm ("drop CORE and let the next rotate recreate it"): CORE goes, and the
//! next rotate warms it again from the legacy catalogue with fresh revisions and cuts the devices
//! over with its invalidation. While devices are routed to CORE, dropping it under them would
//! leave them replicating a database that is gone, so the re-warm then needs an invalidation of
//! its own (they return to the legacy catalogue until the rotate); without one it is refused,
//! saying so. It keeps a way back: CORE is snapshotted first (verified, the day backups' format,
//! named in the answer and the audit; `mock-server restore` brings it back), and documents
//! written in CORE since its warm, which the rebuild from the legacy catalogue would lose, are
//! counted and must be confirmed.

use std::path::Path;

use protocol::ops::REASON_REWARM;
use protocol::views::{Rewarm, Snapshot};

use super::invalidation::{self, Routing};
use super::warm::{written_since_warm, IDS_NAMED};
use super::{RollingError, RollingResult};
use crate::docdb::{self, Cluster};
use crate::store::backups;

/// `confirm`: the count of documents written since the warm the operator accepts to leave to the
/// snapshot (refused when it is not the count now).
pub fn rewarm(
    conn: &Cluster,
    db_prefix: &str,
    backup_dir: &Path,
    company_id: &str,
    invalidate: bool,
    confirm: Option<usize>,
    now_ms: i64,
) -> RollingResult<Rewarm> {
    let tenant = super::tenants::get(conn, company_id)?;
    let names = tenant.names(db_prefix);
    let core = names.core();
    if !docdb::exists(conn, &core)? {
        return Err(RollingError::NoCore(tenant.id));
    }
    let routed_to_core = invalidation::current_routing(conn, &names, &tenant.id)? == Routing::Core;
    if routed_to_core && !invalidate {
        return Err(RollingError::RewarmNeedsInvalidation(tenant.id));
    }
    let core_docs = docdb::all_docs(conn, &core)?;
    let edited = written_since_warm(conn, &core_docs, &names.legacy())?;
    if !edited.is_empty() && confirm != Some(edited.len()) {
        return Err(RollingError::CoreEdited {
            company_id: tenant.id,
            count: edited.len(),
            ids: edited.into_iter().take(IDS_NAMED).collect(),
        });
    }
    // The way back, verified before anything is dropped.
    let info = docdb::info(conn, &core)?.ok_or_else(|| RollingError::NoCore(tenant.id.clone()))?;
    let docs: Vec<serde_json::Value> = core_docs.iter().map(docdb::Doc::to_json).collect();
    let manifest = backups::write(backup_dir, &core, now_ms, info.update_seq, &docs)?;
    backups::read_verified(backup_dir, &manifest)?;
    docdb::drop_database(conn, &core)?;
    let invalidated_at = match invalidate {
        // CORE is gone now, so the invalidation routes the devices to the legacy catalogue.
        true => Some(invalidation::invalidate(conn, &tenant.id, REASON_REWARM, Routing::Legacy, now_ms)?),
        false => None,
    };
    let snapshot = Snapshot {
        snapshot_id: manifest.snapshot_id,
        doc_count: manifest.doc_count,
        dir: backup_dir.display().to_string(),
    };
    Ok(Rewarm { company_id: tenant.id, dropped: core, invalidated_at, snapshot, edited_since_warm: edited.len() })
}
