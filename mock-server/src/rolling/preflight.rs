//! The preflight: the rollout's prerequisites for turning each flag on, checked by the server
//! instead of remembered at 5 AM. `PATCH /admin/rolling-db/flags/:id` refuses a flag whose
//! preflight fails (the code of the first failing check); `?force=true` (sys_admin only)
//! overrides and is audited with the checks it overrode.

use crate::docdb::Cluster;
use crate::store::sql::Connection;
use protocol::errors as code;
use protocol::{has_cutover_switch, CUTOVER_SDK_VERSION};
use serde::Serialize;

use super::archive::reconcile_diff;
use super::days::{day_databases, DayStatus};
use super::flags::{self, devices_too_old};
use protocol::views::{FlagPreflight, Preflight, PreflightCheck};

use super::{RollingResult, RollingSettings};
use crate::clock::DAY_MS;
use crate::docdb::headroom::{headroom, PREWARMED_HANDLES};
use crate::docdb::naming::day_of;
use crate::store::{catalog, devices, migrate};

/// One prerequisite: `{check, ok, detail, runbookStep}` (and, failing, the code a refusal carries).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub check: &'static str,
    pub ok: bool,
    pub detail: String,
    pub runbook_step: &'static str,
    /// The refusal's error code when this check fails.
    pub code: &'static str,
}

/// The failing checks in one line: `check (detail); …`.
pub fn describe(checks: &[Check]) -> String {
    checks.iter().map(|c| format!("{} ({})", c.check, c.detail)).collect::<Vec<_>>().join("; ")
}

fn check(name: &'static str, ok: bool, detail: String, runbook_step: &'static str, code: &'static str) -> Check {
    Check { check: name, ok, detail, runbook_step, code }
}

/// The checks for `rollingDb` on: schema, cluster headroom for the prewarm, SDK adoption.
pub fn rolling_db(
    conn: &Connection,
    settings: &RollingSettings,
    company_id: &str,
    now_ms: i64,
) -> RollingResult<Vec<Check>> {
    let schema = catalog::two_flag_schema(conn)?;
    let last = catalog::last_applied(conn)?;
    let schema_ok = schema && last == Some(migrate::last_migration());
    let schema_detail = format!(
        "last migration applied: {}; company_feature_flags {} the two flag columns (rolling_db, rolling_db_drop)",
        last.unwrap_or("none"),
        if schema { "has" } else { "does not have" }
    );

    // Every rolling tenant keeps CORE, today and tomorrow open and in use; so will this one.
    let mut rolling = flags::rolling_tenants(conn)?;
    if !rolling.iter().any(|t| t == company_id) {
        rolling.push(company_id.to_owned());
    }
    let room = headroom(conn, &rolling)?;
    let headroom_detail = format!(
        "{} handles in use once on ({PREWARMED_HANDLES} for each of {} rolling tenant(s): CORE, today, tomorrow; {} held by others) of ROLLING_DB_MAX_OPEN={}",
        room.needed + room.in_use_elsewhere,
        rolling.len(),
        room.in_use_elsewhere,
        room.max
    );

    let old = devices_too_old(conn, company_id)?;
    let since = now_ms.saturating_sub(settings.adoption_days as i64 * DAY_MS);
    let recent: Vec<devices::Device> = devices::for_company(conn, company_id)?
        .into_iter()
        .filter(|d| d.last_seen_at.is_some_and(|t| t >= since))
        .collect();
    let adopted = recent.iter().filter(|d| has_cutover_switch(d.sdk_version.as_deref())).count();
    let share =
        if recent.is_empty() { "no device seen".to_owned() } else { format!("{}%", adopted * 100 / recent.len()) };
    let mut sdk_detail = format!(
        "{adopted} of {} device(s) seen in the last {} day(s) report SDK ≥ {CUTOVER_SDK_VERSION} ({share})",
        recent.len(),
        settings.adoption_days
    );
    if !old.is_empty() {
        let list: Vec<String> = old.iter().map(|(d, v)| format!("{d} on {v}")).collect();
        sdk_detail.push_str(&format!("; older SDKs still registered: {}", list.join(", ")));
    }
    Ok(vec![
        check(
            "schema",
            schema_ok,
            schema_detail,
            "Production › Deploy order 3: apply only 0012–0015; validate the two-flag schema",
            code::SCHEMA_BEHIND,
        ),
        check(
            "headroom",
            room.enough(),
            headroom_detail,
            "Production › Blocking prerequisites 2: max_dbs_open of 5000 applied on the cluster",
            code::NO_HEADROOM,
        ),
        check(
            "sdk_adoption",
            old.is_empty(),
            sdk_detail,
            "Production › Blocking prerequisites 4: SDK 1.4.17 or later published and live",
            code::SDK_TOO_OLD,
        ),
    ])
}

/// The checks for `rollingDbDrop` on: `rollingDb` on (or turned on with it), conflicts and
/// backups on, and green reconciliation for the last `DROP_GREEN_DAYS` days.
pub fn rolling_db_drop(
    conn: &Cluster,
    settings: &RollingSettings,
    company_id: &str,
    rolling_db_after: bool,
    now_ms: i64,
) -> RollingResult<Vec<Check>> {
    let today = day_of(now_ms);
    let first = day_of(now_ms.saturating_sub(settings.drop_green_days as i64 * DAY_MS));
    let archive_db = super::tenants::get(conn, company_id)?.names(&settings.db_prefix).archive();
    let days: Vec<_> =
        day_databases(conn, company_id)?.into_iter().filter(|d| d.date >= first && d.date < today).collect();
    let mut not_green = Vec::new();
    for day in &days {
        let green = match day.status {
            // Dropped days were drained, archived and reconciled before they went.
            DayStatus::Dropped => true,
            DayStatus::Archived => reconcile_diff(conn, &day.name, &archive_db)? == 0,
            _ => false,
        };
        if !green {
            not_green.push(format!("{} ({})", day.date, day.status.as_str()));
        }
    }
    let missing = settings.drop_green_days as usize - days.len().min(settings.drop_green_days as usize);
    let green = not_green.is_empty() && missing == 0;
    let mut detail = format!(
        "{} of the last {} day(s) archived with reconciliation diff 0",
        days.len() - not_green.len(),
        settings.drop_green_days
    );
    if missing > 0 {
        detail.push_str(&format!("; {missing} day(s) have no day database yet"));
    }
    if !not_green.is_empty() {
        detail.push_str(&format!("; not green: {}", not_green.join(", ")));
    }
    Ok(vec![
        check(
            "rolling_db_on",
            rolling_db_after,
            format!("rollingDb is {}", if rolling_db_after { "on" } else { "off" }),
            "States: canary active → drop enabled",
            code::DROP_REQUIRES_ROLLING_DB,
        ),
        check(
            "conflicts_enabled",
            settings.conflicts_enabled,
            format!("CONFLICTS_ENABLED is {}", settings.conflicts_enabled),
            "Staging › Canary activation 4: CONFLICTS_ENABLED=true before the drop",
            code::CONFLICTS_DISABLED,
        ),
        check(
            "backups_enabled",
            settings.backup_enabled,
            format!("BACKUP_ENABLED is {}", settings.backup_enabled),
            "Production › Blocking prerequisites 5: backups enabled",
            code::BACKUPS_DISABLED,
        ),
        check(
            "reconciliation_green",
            green,
            detail,
            "Staging › Canary activation 4: several weeks of green reconciliation",
            code::RECONCILIATION_NOT_GREEN,
        ),
    ])
}

/// The preflight of both flags, as `GET …/preflight` answers it.
pub fn both(conn: &Cluster, settings: &RollingSettings, company_id: &str, now_ms: i64) -> RollingResult<Preflight> {
    let current = flags::get(conn, company_id)?;
    let on = rolling_db(conn, settings, company_id, now_ms)?;
    let drop = rolling_db_drop(conn, settings, company_id, current.rolling_db, now_ms)?;
    let flag = |on: bool, checks: Vec<Check>| FlagPreflight {
        on,
        ready: checks.iter().all(|c| c.ok),
        checks: checks
            .into_iter()
            .map(|c| PreflightCheck {
                check: c.check.to_owned(),
                ok: c.ok,
                detail: c.detail,
                runbook_step: c.runbook_step.to_owned(),
                code: c.code.to_owned(),
            })
            .collect(),
    };
    Ok(Preflight {
        company_id: company_id.to_owned(),
        rolling_db: flag(current.rolling_db, on),
        rolling_db_drop: flag(current.rolling_db_drop, drop),
    })
}

/// The failing checks for what `patch` turns on (a flag already on is not checked again).
pub fn failing_for(
    conn: &Cluster,
    settings: &RollingSettings,
    current: &flags::Flags,
    patch: flags::FlagPatch,
    now_ms: i64,
) -> RollingResult<Vec<Check>> {
    let rolling_db_after = patch.rolling_db.unwrap_or(current.rolling_db);
    let mut failing = Vec::new();
    if patch.rolling_db == Some(true) && !current.rolling_db {
        failing.extend(rolling_db(conn, settings, &current.company_id, now_ms)?.into_iter().filter(|c| !c.ok));
    }
    if patch.rolling_db_drop == Some(true) && !current.rolling_db_drop {
        failing.extend(
            rolling_db_drop(conn, settings, &current.company_id, rolling_db_after, now_ms)?
                .into_iter()
                .filter(|c| !c.ok),
        );
    }
    Ok(failing)
}
