//! The per-tenant rolling database machine: the rules of "Rolling database flags and
//! rotate" table, over the relational store and the document cluster. Nothing here knows HTTP.

pub mod alarms;
pub mod archive;
pub mod backup;
pub mod checkpoints;
pub mod conflicts;
pub mod days;
pub mod drop_eval;
pub mod enables;
pub mod flag_change;
pub mod flags;
pub mod handshake;
pub mod invalidation;
pub mod losses;
pub mod preflight;
pub mod rewarm;
pub mod rotate;
pub mod tenants;
pub mod views;
pub mod warm;

use crate::docdb::DocDbError;
use crate::store::backups::BackupError;
use crate::store::StoreError;

/// Why a rolling operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum RollingError {
    #[error("no tenant {0:?}")]
    UnknownTenant(String),
    /// `rollingDbDrop` needs `rollingDb`.
    #[error("rollingDbDrop requires rollingDb")]
    DropRequiresRollingDb,
    /// The preflight of a flag failed: the failing checks, the first one's code leads.
    #[error("the flag's prerequisites are not met: {}; a sys_admin may retry with ?force=true (audited)", preflight::describe(.0))]
    PreflightFailed(Vec<preflight::Check>),
    #[error("send rollingDb and/or rollingDbDrop")]
    NothingToChange,
    /// Neither CORE nor the legacy catalogue exists: nothing to route the catalogue to.
    #[error("tenant {0} has neither a CORE nor a legacy catalogue database")]
    NoCatalogue(String),
    /// A snapshot could not be written, read or verified.
    #[error("backup")]
    Backup(#[from] BackupError),
    /// This server's `BACKUP_DIR` is not the one its store's snapshots are in (`backup::unshared`).
    #[error("{0}")]
    BackupsUnshared(String),
    /// A restore of a database that is no tenant's day database or CORE.
    #[error("{0} is no day database or CORE of a tenant")]
    UnknownDayDatabase(String),
    /// A re-warm of a tenant without CORE.
    #[error("tenant {0} has no CORE database to re-warm (the next rotate creates it)")]
    NoCore(String),
    /// A re-warm while devices are routed to CORE, without invalidating them.
    #[error(
        "devices of {0} are routed to CORE: dropping it under them would leave them replicating a database that is gone; re-warm with invalidate: true (they return to the legacy catalogue until the next rotate recreates CORE and cuts them over)"
    )]
    RewarmNeedsInvalidation(String),
    /// A re-warm would throw away documents written in CORE since its warm: refused unless the
    /// operator confirms their count.
    #[error(
        "CORE of {company_id} holds {count} document(s) written since its warm ({}{}): a re-warm rebuilds CORE from the legacy catalogue and would throw them away; it keeps them in its snapshot. Confirm with ?confirm={count}",
        ids.join(", "), if *count > ids.len() { ", …" } else { "" }
    )]
    CoreEdited { company_id: String, count: usize, ids: Vec<String> },
    /// A device losses' acknowledgement on a tenant on the rolling database.
    #[error("tenant {0} is on the rolling database: its device losses are answered by the rollback (docs/operations.md, device losses), not acknowledged")]
    RollbackAnswersLosses(String),
    /// A device losses' acknowledgement that does not name the tenant's reports.
    #[error("{0}")]
    BadAcknowledgement(String),
    #[error(transparent)]
    DocDb(#[from] DocDbError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::equal_when_told!(RollingError);

impl From<crate::store::sql::Error> for RollingError {
    fn from(e: crate::store::sql::Error) -> Self {
        RollingError::Store(StoreError(e))
    }
}

pub type RollingResult<T> = Result<T, RollingError>;

/// The settings the machine reads.
#[derive(Debug, Clone)]
pub struct RollingSettings {
    pub db_prefix: String,
    pub backup_enabled: bool,
    /// Where the snapshots are (`BACKUP_DIR`, resolved by `AppState::new`).
    pub backup_dir: std::path::PathBuf,
    pub conflicts_enabled: bool,
    /// Days of green reconciliation the drop needs (`DROP_GREEN_DAYS`).
    pub drop_green_days: u32,
    /// The window of "devices seen lately" for SDK adoption (`SDK_ADOPTION_DAYS`).
    pub adoption_days: u32,
}

impl From<&crate::settings::Settings> for RollingSettings {
    fn from(s: &crate::settings::Settings) -> Self {
        RollingSettings {
            db_prefix: s.db_prefix.clone(),
            backup_enabled: s.backup_enabled,
            backup_dir: s.backup_dir.clone().unwrap_or_else(|| std::env::temp_dir().join("mock-backups")),
            conflicts_enabled: s.conflicts_enabled,
            drop_green_days: s.drop_green_days,
            adoption_days: s.sdk_adoption_days,
        }
    }
}
