//! The per-tenant rolling database machine: the rules of the seed's "Rolling database flags and
//! rotate" table, over the relational store and the document cluster. Nothing here knows HTTP.

pub mod alarms;
pub mod archive;
pub mod backup;
pub mod conflicts;
pub mod days;
pub mod drop_eval;
pub mod flags;
pub mod handshake;
pub mod invalidation;
pub mod naming;
pub mod preflight;
pub mod rewarm;
pub mod rotate;
pub mod tenants;
pub mod views;
pub mod warm;

use crate::docdb::DocDbError;

/// Why a rolling operation was refused or failed.
#[derive(Debug, Clone, PartialEq)]
pub enum RollingError {
    UnknownTenant(String),
    /// `rollingDbDrop` needs `rollingDb`.
    DropRequiresRollingDb,
    /// The preflight of a flag failed: the failing checks, the first one's code leads.
    PreflightFailed(Vec<preflight::Check>),
    NothingToChange,
    /// Neither CORE nor the legacy catalogue exists: nothing to route the catalogue to.
    NoCatalogue(String),
    /// A snapshot could not be written, read or verified.
    Backup(String),
    /// A restore of a database that is no tenant's day database.
    UnknownDayDatabase(String),
    /// A re-warm of a tenant without CORE.
    NoCore(String),
    /// A re-warm while devices are routed to CORE, without invalidating them.
    RewarmNeedsInvalidation(String),
    DocDb(DocDbError),
    Store(String),
}

impl std::fmt::Display for RollingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RollingError::UnknownTenant(id) => write!(f, "no tenant {id:?}"),
            RollingError::DropRequiresRollingDb => f.write_str("rollingDbDrop requires rollingDb"),
            RollingError::PreflightFailed(checks) => {
                let list: Vec<String> = checks.iter().map(|c| format!("{} ({})", c.check, c.detail)).collect();
                write!(f, "the runbook's prerequisites are not met: {}; a sys_admin may retry with ?force=true (audited)", list.join("; "))
            }
            RollingError::NothingToChange => f.write_str("send rollingDb and/or rollingDbDrop"),
            RollingError::NoCatalogue(co) => write!(f, "tenant {co} has neither a CORE nor a legacy catalogue database"),
            RollingError::Backup(e) => write!(f, "backup: {e}"),
            RollingError::UnknownDayDatabase(db) => write!(f, "{db} is no day database of a tenant"),
            RollingError::NoCore(co) => write!(f, "tenant {co} has no CORE database to re-warm (the next rotate creates it)"),
            RollingError::RewarmNeedsInvalidation(co) => write!(
                f,
                "devices of {co} are routed to CORE: dropping it under them would leave them replicating a database that is gone; re-warm with invalidate: true (they return to the legacy catalogue until the next rotate recreates CORE and cuts them over)"
            ),
            RollingError::DocDb(e) => write!(f, "{e}"),
            RollingError::Store(e) => write!(f, "store: {e}"),
        }
    }
}

impl From<DocDbError> for RollingError {
    fn from(e: DocDbError) -> Self {
        RollingError::DocDb(e)
    }
}

impl From<rusqlite::Error> for RollingError {
    fn from(e: rusqlite::Error) -> Self {
        RollingError::Store(e.to_string())
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
