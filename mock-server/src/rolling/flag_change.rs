//! A flag change, by the flags' rules: `rollingDbDrop` needs `rollingDb`; turning `rollingDb` off
//! clears `rollingDbDrop` (and is the rollback: the tenant's alarms clear, and the change says
//! what the devices leave behind in CORE, written there since its warm); a flag is
//! turned on only when its preflight passes (enabling `rollingDb` is refused while a device of the
//! tenant reports an SDK older than the cutover switch), unless a sys_admin forces it. A change
//! does nothing else: the rotate cron acts on it (turning `rollingDb` on records when, so no
//! device routes to a CORE left from before until a rotate has run since: `enables.rs`).

use super::flags::{self, FlagPatch, Flags};
use super::{alarms, enables, preflight, tenants, warm, RollingError, RollingResult, RollingSettings};
use crate::docdb::Cluster;
use protocol::views::CoreWrites;

/// What a flag change came to: the new record, and the failing checks a forced change overrode.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The record before the change (read once: the audit entry shows it beside the new one).
    pub before: Flags,
    pub flags: Flags,
    pub overridden: Vec<preflight::Check>,
    /// When this change turned `rollingDb` off: CORE's documents written since its warm that the
    /// legacy catalogue lacks (the devices return to legacy and no longer see them).
    pub core_written_since_warm: Option<CoreWrites>,
}

/// Applies `patch` by the rules above: `rollingDbDrop` never without `rollingDb`, and a flag
/// turned on only when its preflight passes, unless `force` (the caller checks who may force).
/// Turning `rollingDb` off is the rollback: it clears the tenant's rollback alarms.
pub fn apply(
    conn: &Cluster,
    settings: &RollingSettings,
    company_id: &str,
    patch: FlagPatch,
    actor: &str,
    force: bool,
    now_ms: i64,
) -> RollingResult<Applied> {
    if patch == FlagPatch::default() {
        return Err(RollingError::NothingToChange);
    }
    flags::lock(conn, company_id)?;
    let current = flags::get(conn, company_id)?;
    let rolling_db = patch.rolling_db.unwrap_or(current.rolling_db);
    if patch.rolling_db_drop == Some(true) && !rolling_db {
        return Err(RollingError::DropRequiresRollingDb);
    }
    // Turning rollingDb off clears the drop flag with it.
    let rolling_db_drop = rolling_db && patch.rolling_db_drop.unwrap_or(current.rolling_db_drop);
    let failing = preflight::failing_for(conn, settings, &current, patch, now_ms)?;
    if !failing.is_empty() && !force {
        return Err(RollingError::PreflightFailed(failing));
    }
    flags::record(conn, company_id, rolling_db, rolling_db_drop, actor, now_ms)?;
    let rollback = current.rolling_db && !rolling_db;
    if rollback {
        alarms::clear(conn, company_id, now_ms)?;
    }
    let core_written_since_warm = match rollback {
        true => Some(warm::core_writes(conn, &tenants::get(conn, company_id)?.names(&settings.db_prefix))?),
        false => None,
    };
    if !current.rolling_db && rolling_db {
        enables::enabled(conn, company_id, now_ms)?;
    }
    let flags = Flags {
        company_id: current.company_id.clone(),
        rolling_db,
        rolling_db_drop,
        updated_at: Some(now_ms),
        updated_by: Some(actor.to_owned()),
    };
    Ok(Applied { before: current, flags, overridden: failing, core_written_since_warm })
}
