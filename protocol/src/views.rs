//! The operators' views as the server answers them (`GET /admin/rolling-db/…`), typed once: the
//! server writes these, the package's TypeScript declares them from here.

use serde::{Deserialize, Serialize};

use super::DatabaseKind;

named! {
    /// Why a tenant needs attention: what calls for an immediate rollback, for a rotate, or (once
    /// rolled back) for a restore.
    pub enum AlarmKind {
        /// A registered device came back with less than it had obeyed: it re-bootstraps though no
        /// invalidation asked it to.
        DestructiveReset = "destructive-reset",
        /// An archived day no longer matches its archive.
        ReconciliationRegressed = "reconciliation-regressed",
        /// A device routed to CORE found no day database for today (no rotate since midnight):
        /// its DYNAMIC writes go to the tenant's latest day database until a rotate creates
        /// today's, which clears it. Run the rotate; no rollback.
        DayDatabaseMissing = "day-database-missing",
        /// A rolled-back tenant's archived day still lacks what its archive took: no rollback
        /// is left to do; the day is restored from its snapshot, and the archive run that finds
        /// it whole clears it.
        ArchivedDayLost = "archived-day-lost",
        /// A device destroyed local data it could not push (its report, `POST /devices/losses`):
        /// orders lost on the device. On a rolling tenant the rollback; otherwise the orders to
        /// recover and the alarm to acknowledge.
        DeviceDataLost = "device-data-lost",
    }
}

/// An alarm raised on a tenant: roll back now, or (`day-database-missing`) run the rotate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RollbackAlarm {
    /// What was seen.
    pub kind: AlarmKind,
    /// The device or day database it is about.
    pub subject: String,
    /// What was seen, in a sentence.
    pub detail: String,
    /// When (server clock, ms since the epoch).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub raised_at: i64,
}

named! {
    /// A step the server tells a tenant's operators to take: one name for the views, the console
    /// and the alert rules (each alert carries the step it asks for as its `step` label).
    pub enum OperatorStep {
        /// Roll the tenant back: `rollingDb` off, its clients invalidated.
        RollBack = "roll-back",
        /// Restore a rolled-back tenant's lost day from its snapshot.
        RestoreDay = "restore-day",
        /// Run the rotate, which creates today's day database.
        RunRotate = "run-rotate",
        /// Recover a device's lost orders with the store, then acknowledge its reports (a tenant
        /// the rollback does not apply to).
        RecoverOrders = "recover-orders",
    }
}

/// One step of what a tenant's operators are told to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AttentionStep {
    /// Which step.
    pub step: OperatorStep,
    /// The step in a few words (the console's badge); `text` begins with them.
    pub headline: String,
    /// The step in full, with where the runbook says more.
    pub text: String,
}

/// A tenant needing attention: its alarms and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Attention {
    /// The alarms raised and not cleared, oldest first.
    pub alarms: Vec<RollbackAlarm>,
    /// What to do: the steps' texts, in their order.
    pub instruction: String,
    /// The same, step by step, most urgent first.
    pub steps: Vec<AttentionStep>,
}

/// A tenant's attention, with the tenant it is about (the cluster view lists every tenant's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TenantAttention {
    /// The tenant.
    pub company_id: String,
    /// Its alarms and what to do.
    #[serde(flatten)]
    #[cfg_attr(feature = "ts", ts(flatten))]
    pub attention: Attention,
}

/// One database of the cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ClusterDatabase {
    /// The database's name.
    pub name: String,
    /// What it holds.
    pub kind: DatabaseKind,
    /// Its tenant.
    pub company_id: String,
    /// Its documents.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub doc_count: u64,
    /// Its update sequence.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub update_seq: u64,
    /// A day database's DayStatus; "open" for the others.
    pub status: String,
    /// Its handle is open (counts towards maxDbsOpen).
    pub open: bool,
    /// Its handle is in use (the prewarm keeps it open).
    pub in_use: bool,
}

/// `GET /admin/rolling-db/cluster`: the cluster's handles against their bound, every database,
/// and the tenants needing attention.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ClusterView {
    /// The bound on open handles (`ROLLING_DB_MAX_OPEN`).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub max_dbs_open: u64,
    /// Open handles (what maxDbsOpen bounds).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub open_dbs: u64,
    /// Open handles in use.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub in_use_dbs: u64,
    /// Every database, open or not.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub existing_dbs: u64,
    /// Every database, by name.
    pub databases: Vec<ClusterDatabase>,
    /// The tenants with raised alarms.
    pub attention: Vec<TenantAttention>,
}

/// A registered device, as the tenants view lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TenantDevice {
    /// The device's id.
    pub device_id: String,
    /// A readable SDK version older than the cutover switch (the server's rule, one definition).
    pub before_cutover: bool,
    /// The SDK version it last reported.
    pub sdk_version: Option<String>,
    /// When it was last seen (ms since the epoch).
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub last_seen_at: Option<i64>,
}

/// One tenant of the fleet: its flags, its cluster, its devices, its alarms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TenantSummary {
    /// The tenant.
    pub company_id: String,
    /// Its display name.
    pub name: String,
    /// The `rollingDb` flag.
    pub rolling_db: bool,
    /// The `rollingDbDrop` flag.
    pub rolling_db_drop: bool,
    /// When the flags last changed (ms since the epoch).
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub updated_at: Option<i64>,
    /// Who changed them.
    pub updated_by: Option<String>,
    /// Its CORE exists.
    pub core_exists: bool,
    /// How many day databases the cluster holds for the tenant.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub day_databases: u64,
    /// Its registered devices.
    pub devices: Vec<TenantDevice>,
    /// Rollback alarms raised and not yet cleared by a rollback, or null.
    pub attention: Option<Attention>,
    /// Documents its devices destroyed without pushing them, ever, by reason (their reports).
    #[cfg_attr(feature = "ts", ts(type = "Record<string, number>"))]
    pub device_losses: std::collections::BTreeMap<String, u64>,
}

/// `GET /admin/rolling-db/tenants`: every tenant of the fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TenantsView {
    /// The tenants, by id.
    pub tenants: Vec<TenantSummary>,
    /// The first SDK version with the catalogue cutover switch.
    pub cutover_sdk_version: String,
}

named! {
    /// Where a cron run is.
    pub enum RunStatus {
        /// Still going (or its server died holding the lease, until the lease expires).
        Running = "running",
        /// Ended with every tenant done.
        Succeeded = "succeeded",
        /// Ended with a tenant, or the run, failed.
        Failed = "failed",
    }
}

/// One cron, as `GET /admin/crons` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CronInfo {
    /// Its name (`rolling-db-rotate`, …).
    pub name: String,
    /// What it does, in a line.
    pub description: String,
    /// Its schedule. This and the rest of the state are null for a caller who may only start
    /// crons (key_manager).
    pub schedule: Option<String>,
    /// Whether this server runs it on its schedule.
    pub scheduled: Option<bool>,
    /// Whether a run holds its lease now.
    pub running: Option<bool>,
    /// That run.
    pub run_id: Option<String>,
    /// When its last finished run started (ms since the epoch).
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub last_run_at: Option<i64>,
    /// How that run ended.
    pub last_result: Option<RunStatus>,
    /// When it runs next, if scheduled (ms since the epoch).
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub next_run_at: Option<i64>,
}

/// `GET /admin/crons`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CronsView {
    /// Every cron.
    pub crons: Vec<CronInfo>,
}

/// `POST /admin/crons/{name}/run` (202): the run started, or the one already going.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CronRunStarted {
    /// The run to follow.
    pub run_id: String,
    /// `running`.
    pub status: RunStatus,
    /// The run was already going: this request joined it.
    pub already_running: bool,
}

/// A run's progress: tenants done of all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Progress {
    /// Tenants done.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub done: u64,
    /// Tenants in all.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub total: u64,
}

/// `GET /admin/crons/runs/{runId}`: a run with a page of its log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CronRun {
    /// The run.
    pub run_id: String,
    /// Its cron.
    pub cron: String,
    /// Where it is.
    pub status: RunStatus,
    /// When it started (ms since the epoch).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub started_at: i64,
    /// When it ended.
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub finished_at: Option<i64>,
    /// Tenants done of all.
    pub progress: Progress,
    /// The page of its log asked for (`?logFrom=&logLimit=`; all of it by default).
    pub log: Vec<String>,
    /// How many lines the whole log has.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub log_total: u64,
}

/// What `GET /health` says of the server: up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum HealthState {
    /// Answering.
    Ok,
}

/// `GET /health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HealthStatus {
    /// `ok`.
    pub status: HealthState,
    /// True only on the two-flag company_feature_flags schema.
    pub db: bool,
    /// Present, saying why, when this server does not see its store's snapshots (its
    /// `BACKUP_DIR` is not the one the store's other servers share): it then takes no backup and
    /// drops nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub backups: Option<String>,
}

/// `POST /admin/invalidate-clients/{id}`: the tenant's devices re-bootstrap at their next
/// handshake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct InvalidationResult {
    /// The tenant.
    pub company_id: String,
    /// The invalidation's time (ms since the epoch): what devices report as `lastInvalidation`.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub invalidated_at: i64,
}

/// One document type of a day database against its rows in the relational store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TypeCheck {
    /// `order` or `sale`.
    #[serde(rename = "type")]
    #[cfg_attr(feature = "ts", ts(rename = "type"))]
    pub doc_type: String,
    /// The day's documents of the type.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub day_count: u64,
    /// Their rows.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub row_count: u64,
    /// SHA-256 (hex) of the day's sorted `id@rev`.
    pub day_checksum: String,
    /// The same of the rows.
    pub row_checksum: String,
    /// How many entries differ.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub diff: u64,
}

/// The legacy database's archived part: its closed orders and its sales older than a day.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LegacyArchive {
    /// The legacy database.
    pub db: String,
    /// The legacy documents that belong in the archive.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub documents: u64,
    /// How many of them the archive or the relational store lacks or holds at another revision.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub diff: u64,
}

/// One past day database against its archive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ReconciliationDay {
    /// The day database.
    pub name: String,
    /// Its day, `yyyymmdd`.
    pub date: String,
    /// Where it is in its lifecycle.
    pub status: super::DayStatus,
    /// Its documents.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub doc_count: u64,
    /// Copied into the archive.
    pub archived: bool,
    /// Documents differing from the archive; null until the day is archived.
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub diff: Option<u64>,
    /// Its orders and sales against the relational store, once archived.
    pub relational: Option<Vec<TypeCheck>>,
}

/// `GET /admin/rolling-db/tenants/{id}/reconciliation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Reconciliation {
    /// The tenant.
    pub company_id: String,
    /// The days' differing documents in all (0: reconciled).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub diff: u64,
    /// Its past day databases, oldest first.
    pub days: Vec<ReconciliationDay>,
    /// The legacy database's archived part, apart from `diff`; null without a legacy database.
    pub legacy: Option<LegacyArchive>,
}

/// A day database and the locks of its drop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CleanupCandidate {
    /// The day database.
    pub name: String,
    /// Its day, `yyyymmdd`.
    pub date: String,
    /// No open order left, nothing writes it.
    pub drained: bool,
    /// Copied into the archive and the relational store.
    pub archived: bool,
    /// Matching its archive now.
    pub reconciled: bool,
    /// A verified snapshot taken after the database's last write (`rolling-db-backup`).
    pub backed_up: bool,
    /// Held back by an operator (a restored day): never eligible until released.
    pub held: bool,
    /// Days since its day.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub age_days: i64,
    /// Every lock open and past the TTL: the drop evaluation may drop it.
    pub eligible: bool,
}

/// `GET /admin/rolling-db/tenants/{id}/cleanup-candidates`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CleanupCandidates {
    /// The tenant.
    pub company_id: String,
    /// Its day databases still in the cluster.
    pub candidates: Vec<CleanupCandidate>,
}

/// One of a tenant's databases in its topology: absent, or its counts and indexes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DatabaseSummary {
    /// The database.
    pub name: String,
    /// Whether the cluster holds it.
    pub exists: bool,
    /// Its documents, when it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
    pub doc_count: Option<u64>,
    /// Its update sequence, when it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
    pub update_seq: Option<u64>,
    /// Its indexes, when it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub indexes: Option<Vec<String>>,
}

/// What a drop left behind, checked: the rollout's checks after a drop, as answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AfterDrop {
    /// The dropped day database.
    pub name: String,
    /// The engine no longer holds it.
    pub gone_from_engine: bool,
    /// The engine's replication documents that still name it as source or target.
    pub replications_naming_it: Vec<String>,
    /// None does.
    pub replicator_clean: bool,
    /// Its orders in the relational store.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub relational_orders: u64,
    /// Its sales in the relational store.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub relational_sales: u64,
}

/// One of a tenant's day databases in its topology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DayDatabase {
    /// The day database.
    pub name: String,
    /// Its day, `yyyymmdd`.
    pub date: String,
    /// Where it is in its lifecycle.
    pub status: super::DayStatus,
    /// Held back from the drop (a restored day) until an operator releases it.
    pub held: bool,
    /// For a dropped day: what the drop left, checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub after_drop: Option<AfterDrop>,
}

/// The day databases a tenant's devices see, kept in CORE (`_local/day-manifest`) by the rotate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DayManifest {
    /// Today's day database.
    pub today: String,
    /// Tomorrow's, prewarmed.
    pub tomorrow: String,
    /// Every day database still in the cluster, oldest first.
    pub days: Vec<String>,
    /// When the rotate wrote it (ms since the epoch).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub updated_at: i64,
}

/// A tenant's last invalidation: what devices meet at their next handshake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TenantInvalidation {
    /// When (ms since the epoch).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub invalidated_at: i64,
    /// Why (`cutover`, `rollback`, `daily`, an operator's).
    pub reason: String,
    /// The catalogue devices read after it.
    pub routing: super::sync_frames::Routing,
}

/// `GET /admin/rolling-db/tenants/{id}/topology`: where a tenant's devices read and write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Topology {
    /// The tenant.
    pub company_id: String,
    /// The catalogue its devices read now.
    pub database: super::sync_frames::Routing,
    /// Its CORE.
    pub core: DatabaseSummary,
    /// Its legacy database.
    pub legacy: DatabaseSummary,
    /// Its archive.
    pub archive: DatabaseSummary,
    /// Its day databases, oldest first (dropped ones included).
    pub days: Vec<DayDatabase>,
    /// The manifest CORE holds; null without CORE, before the first rotate, or when what CORE
    /// holds does not read as one (the next rotate writes it again).
    pub manifest: Option<DayManifest>,
    /// Its last invalidation, if any.
    pub invalidation: Option<TenantInvalidation>,
    /// Conflicts waiting for a review.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub open_conflicts: u64,
}

/// One of the rollout's prerequisites for a flag, checked by the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PreflightCheck {
    /// Its name (`schema`, `headroom`, `sdk_adoption`, …).
    pub check: String,
    /// It passes.
    pub ok: bool,
    /// What was found, in a sentence.
    pub detail: String,
    /// The rollout step it comes from.
    pub runbook_step: String,
    /// The error code a refusal carries when this check fails.
    pub code: String,
}

/// One flag's prerequisites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FlagPreflight {
    /// The flag is on now.
    pub on: bool,
    /// Every check passes: the flag may be switched on without force.
    pub ready: bool,
    /// Each check.
    pub checks: Vec<PreflightCheck>,
}

/// `GET /admin/rolling-db/tenants/{id}/preflight`: both flags' prerequisites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Preflight {
    /// The tenant.
    pub company_id: String,
    /// `rollingDb`'s.
    pub rolling_db: FlagPreflight,
    /// `rollingDbDrop`'s.
    pub rolling_db_drop: FlagPreflight,
}

/// `PATCH /admin/rolling-db/flags/{id}`: the flags to change, each optional (absent: unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FlagChanges {
    /// The `rollingDb` flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub rolling_db: Option<bool>,
    /// The `rollingDbDrop` flag (on only with `rollingDb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub rolling_db_drop: Option<bool>,
}

/// A tenant's flags as recorded (`PATCH /admin/rolling-db/flags/{id}` answers them in `FlagsChanged`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FlagRecord {
    /// The tenant.
    pub company_id: String,
    /// The `rollingDb` flag.
    pub rolling_db: bool,
    /// The `rollingDbDrop` flag.
    pub rolling_db_drop: bool,
    /// When they last changed (ms since the epoch); null for a tenant never flagged.
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub updated_at: Option<i64>,
    /// Who changed them.
    pub updated_by: Option<String>,
}

/// Documents written in CORE since its warm that the legacy catalogue lacks (a document edited
/// past its first revision whose body legacy does not hold, or one legacy's STATIC documents do
/// not have): what a rollback leaves behind in CORE and a re-warm throws away.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CoreWrites {
    /// How many (0 without CORE).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub count: u64,
    /// The first few of their ids, in id order.
    pub ids: Vec<String>,
}

/// `GET /admin/rolling-db/tenants/{id}/core-writes`: what a rollback would leave behind in CORE now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TenantCoreWrites {
    /// The tenant.
    pub company_id: String,
    /// Its `rollingDb` flag now.
    pub rolling_db: bool,
    /// CORE's documents written since its warm that the legacy catalogue lacks.
    pub core_written_since_warm: CoreWrites,
}

/// `PATCH /admin/rolling-db/flags/{id}`: the flags as recorded, and what the change left behind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FlagsChanged {
    /// The flags.
    #[serde(flatten)]
    #[cfg_attr(feature = "ts", ts(flatten))]
    pub flags: FlagRecord,
    /// When this change turned `rollingDb` off (the rollback): CORE's documents written since its
    /// warm that the legacy catalogue lacks, which the devices no longer see; null otherwise.
    pub core_written_since_warm: Option<CoreWrites>,
}

/// `POST /admin/rolling-db/tenants/{id}/rewarm`'s body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RewarmRequest {
    /// Invalidate the tenant's devices with the drop (default false): needed while they are
    /// routed to CORE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub invalidate: Option<bool>,
}

/// `POST /admin/rolling-db/tenants/{id}/rewarm`: CORE dropped, with the snapshot that keeps a way back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Rewarm {
    /// The tenant.
    pub company_id: String,
    /// The CORE database dropped.
    pub dropped: String,
    /// When the tenant's devices were invalidated (they go to the legacy catalogue until the
    /// next rotate recreates CORE).
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub invalidated_at: Option<i64>,
    /// The verified snapshot of CORE taken before the drop (`mock-server restore` takes it back).
    pub snapshot: Snapshot,
    /// Documents written in CORE since its warm, which the rebuild does not carry (confirmed).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub edited_since_warm: usize,
}

/// A verified snapshot of a database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Snapshot {
    /// Its id, which `mock-server restore` takes.
    pub snapshot_id: String,
    /// The documents it holds.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub doc_count: u64,
    /// The directory it was written to.
    pub dir: String,
}

/// `POST /admin/rolling-db/tenants/{id}/days/{db}/release`: the day database no longer held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DayReleased {
    /// The tenant.
    pub company_id: String,
    /// The day database released.
    pub db: String,
    /// Always `false`: the drop's usual locks apply to it again.
    pub held: bool,
}
