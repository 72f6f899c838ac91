//! The TypeScript the protocol's types declare (written by ts-rs from the types themselves), for
//! the package's `.d.ts`: the mock server's tests check the package's declarations against it.

use ts_rs::TS;

use super::realtime::Routing;
use super::views::*;
use super::{errors, DatabaseKind, DayStatus};

/// The union of string literals `name` (one per line).
pub fn union(name: &str, members: &[&str]) -> String {
    let lines: Vec<String> = members.iter().map(|m| format!("  | \"{m}\"")).collect();
    format!("export type {name} =\n{};", lines.join("\n"))
}

/// `T`'s declaration, exported, after its doc comment.
fn exported<T: TS>() -> String {
    format!("{}export {}", T::docs().unwrap_or_default(), T::decl())
}

/// Every declaration the protocol owns, each exported.
pub fn declarations() -> Vec<String> {
    vec![
        exported::<DatabaseKind>(),
        exported::<DayStatus>(),
        exported::<AlarmKind>(),
        exported::<RollbackAlarm>(),
        exported::<Attention>(),
        exported::<TenantAttention>(),
        exported::<ClusterDatabase>(),
        exported::<ClusterView>(),
        exported::<TenantDevice>(),
        exported::<TenantSummary>(),
        exported::<TenantsView>(),
        exported::<RunStatus>(),
        exported::<CronInfo>(),
        exported::<CronsView>(),
        exported::<CronRunStarted>(),
        exported::<Progress>(),
        exported::<CronRun>(),
        exported::<HealthState>(),
        exported::<HealthStatus>(),
        exported::<InvalidationResult>(),
        exported::<TypeCheck>(),
        exported::<LegacyArchive>(),
        exported::<ReconciliationDay>(),
        exported::<Reconciliation>(),
        exported::<CleanupCandidate>(),
        exported::<CleanupCandidates>(),
        exported::<Routing>(),
        exported::<DatabaseSummary>(),
        exported::<AfterDrop>(),
        exported::<DayDatabase>(),
        exported::<DayManifest>(),
        exported::<TenantInvalidation>(),
        exported::<Topology>(),
        exported::<PreflightCheck>(),
        exported::<FlagPreflight>(),
        exported::<Preflight>(),
        exported::<FlagRecord>(),
        format!(
            "/** The server's codes, passed through as it sent them. */\n{}",
            union("ServerErrorCode", errors::ALL)
        ),
    ]
}
