//! The operations vocabulary: the crons (names and schedules, UTC on the server clock) and the
//! reasons an invalidation carries.

/// One cron of the operations console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CronSpec {
    /// The cron's name (one of the `CRON_*` constants).
    pub name: &'static str,
    /// Hour of the daily run (UTC).
    pub hour: u32,
    /// Minute of the daily run.
    pub minute: u32,
    /// What it does, in a line (the console shows it).
    pub description: &'static str,
}

/// The rotate (seed: "rolling-db-rotate at 05:00"): warm CORE, prewarm day databases, cut over.
pub const CRON_ROTATE: &str = "rolling-db-rotate";
/// The drop evaluation (seed: 04:00): drop day databases past the three locks and the TTL.
pub const CRON_DROP_EVAL: &str = "rolling-db-drop-eval";
/// The archive: drain, copy to `*_archive`, reconcile (03:00, before the drop evaluation).
pub const CRON_ARCHIVE: &str = "rolling-db-archive";
/// The backup (03:30, after the archive, before the drop evaluation): a snapshot of every day
/// database that changed, the newest 30 kept.
pub const CRON_BACKUP: &str = "rolling-db-backup";
/// The mock server's housekeeping: expired sessions, old runs, long-unseen devices.
pub const CRON_PRUNE: &str = "session-prune";

/// Every cron, in the order `/admin/crons` lists them.
pub const CRONS: [CronSpec; 5] = [
    CronSpec { name: CRON_ROTATE, hour: 5, minute: 0, description: "Rotate: warm CORE, prewarm day databases, cut over" },
    CronSpec { name: CRON_DROP_EVAL, hour: 4, minute: 0, description: "Drop evaluation: drop what passed the three locks and the TTL" },
    CronSpec { name: CRON_ARCHIVE, hour: 3, minute: 0, description: "Archive: drain, copy to *_archive, reconcile" },
    CronSpec { name: CRON_BACKUP, hour: 3, minute: 30, description: "Backup: a snapshot of every day database that changed, 30 kept" },
    CronSpec { name: CRON_PRUNE, hour: 2, minute: 0, description: "Housekeeping: expired sessions, old runs, long-unseen devices" },
];

/// `invalidate-local.reason` of the rotate's cutover.
pub const REASON_CUTOVER: &str = "rolling-db-cutover";
/// `invalidate-local.reason` of an operator's invalidation.
pub const REASON_OPERATOR: &str = "operator";
/// `invalidate-local.reason` of the legacy daily invalidation (tenants without `rollingDb`).
pub const REASON_DAILY: &str = "invalidate_daily";
