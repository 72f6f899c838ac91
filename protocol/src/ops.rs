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
    CronSpec {
        name: CRON_ROTATE,
        hour: 5,
        minute: 0,
        description: "Rotate: warm CORE, prewarm day databases, cut over",
    },
    CronSpec {
        name: CRON_DROP_EVAL,
        hour: 4,
        minute: 0,
        description: "Drop evaluation: drop what passed the four locks and the TTL",
    },
    CronSpec { name: CRON_ARCHIVE, hour: 3, minute: 0, description: "Archive: drain, copy to *_archive, reconcile" },
    CronSpec {
        name: CRON_BACKUP,
        hour: 3,
        minute: 30,
        description: "Backup: a snapshot of every day database that changed, 30 kept",
    },
    CronSpec {
        name: CRON_PRUNE,
        hour: 2,
        minute: 0,
        description: "Housekeeping: expired sessions, old runs, long-unseen devices",
    },
];

/// `invalidate-local.reason` of the rotate's cutover.
pub const REASON_CUTOVER: &str = "rolling-db-cutover";
/// `invalidate-local.reason` of an operator's invalidation.
pub const REASON_OPERATOR: &str = "operator";
/// `invalidate-local.reason` of the legacy daily invalidation (tenants without `rollingDb`).
pub const REASON_DAILY: &str = "invalidate_daily";
/// `invalidate-local.reason` of a re-warm's invalidation (CORE dropped, the legacy catalogue until the next rotate).
pub const REASON_REWARM: &str = "rewarm";

/// The audit log's `action` names (`GET /admin/audit`), each written by one place of the server.
pub mod audit {
    /// A flag change through its preflight.
    pub const FLAGS_CHANGE: &str = "flags.change";
    /// A flag change that overrode a failing preflight (`?force=true`).
    pub const FLAGS_FORCE: &str = "flags.force";
    /// A tenant's devices told to drop their local data (an operator, or the rotate's cutover).
    pub const CLIENTS_INVALIDATE: &str = "clients.invalidate";
    /// CORE dropped for the next rotate to warm again.
    pub const CORE_REWARM: &str = "core.rewarm";
    /// A cron run started (by a user or the scheduler).
    pub const CRON_RUN: &str = "cron.run";
    /// A day database dropped by the drop evaluation.
    pub const DAY_DROP: &str = "day.drop";
    /// A dropped day database restored from its snapshot.
    pub const DAY_RESTORE: &str = "day.restore";
    /// A held (restored) day database released to the drop's usual locks.
    pub const DAY_RELEASE: &str = "day.release";
    /// A user created by a manager or sys_admin.
    pub const USER_CREATE: &str = "user.create";
    /// A user's roles changed.
    pub const USER_ROLES: &str = "user.roles";
    /// A user's password changed.
    pub const USER_PASSWORD: &str = "user.password";
    /// A user deleted.
    pub const USER_DELETE: &str = "user.delete";
    /// An account locked for a while after failed sign-ins (the username, the failures, how long).
    pub const ACCOUNT_THROTTLED: &str = "account.throttled";
    /// A public sign-up made a company and its manager.
    pub const COMPANY_SIGN_UP: &str = "company.sign_up";
    /// A device's reports of local data it destroyed unpushed, summed up: one entry a device a day
    /// in each tenant, written again with each report (reports, documents, by reason, the first ids).
    pub const DEVICE_LOSS: &str = "device.loss";
    /// An operator acknowledged the loss reports it names (recovered outside the rollback).
    pub const DEVICE_LOSS_ACKNOWLEDGED: &str = "device.loss_acknowledged";
}
