//! The per-tenant flags (`company_feature_flags`): both default off; `rollingDbDrop` needs
//! `rollingDb`; turning `rollingDb` off clears `rollingDbDrop`; enabling `rollingDb` is refused
//! while a device of the tenant reports an SDK older than the cutover switch, unless forced.
//! A flag change does nothing else: the rotate cron acts on it.

use crate::docdb::Cluster;
use crate::store::exec;
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use super::{tenants, RollingError, RollingResult, RollingSettings};
use crate::store::devices;

/// The first SDK with the catalogue cutover switch.
pub use session_broker::protocol::{has_cutover_switch, parse_version, CUTOVER_SDK_VERSION};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Flags {
    pub company_id: String,
    pub rolling_db: bool,
    pub rolling_db_drop: bool,
    pub updated_at: Option<i64>,
    pub updated_by: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlagPatch {
    pub rolling_db: Option<bool>,
    pub rolling_db_drop: Option<bool>,
}

pub fn get(conn: &Connection, company_id: &str) -> RollingResult<Flags> {
    tenants::get(conn, company_id)?;
    let row = conn
        .query_row("SELECT rolling_db, rolling_db_drop, updated_at, updated_by FROM company_feature_flags WHERE company_id = ?1", [company_id], |r| {
            Ok((r.get::<_, i64>(0)? != 0, r.get::<_, i64>(1)? != 0, r.get(2)?, r.get(3)?))
        })
        .optional()?;
    let (rolling_db, rolling_db_drop, updated_at, updated_by) = row.unwrap_or((false, false, None, None));
    Ok(Flags { company_id: company_id.to_owned(), rolling_db, rolling_db_drop, updated_at, updated_by })
}

/// Tenants with `rollingDb` on.
pub fn rolling_tenants(conn: &Connection) -> RollingResult<Vec<String>> {
    let mut stmt = conn.prepare("SELECT company_id FROM company_feature_flags WHERE rolling_db = 1 ORDER BY company_id")?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Devices reporting a readable SDK version older than the cutover switch.
pub fn devices_too_old(conn: &Connection, company_id: &str) -> RollingResult<Vec<(String, String)>> {
    Ok(devices::for_company(conn, company_id)?
        .into_iter()
        .filter_map(|d| {
            let v = d.sdk_version?;
            (parse_version(&v).is_some() && !has_cutover_switch(Some(&v))).then_some((d.id, v))
        })
        .collect())
}

/// What a flag change came to: the new record, and the failing checks a forced change overrode.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub flags: Flags,
    pub overridden: Vec<super::preflight::Check>,
}

/// Applies `patch` by the rules above: `rollingDbDrop` never without `rollingDb`, and a flag
/// turned on only when its preflight passes, unless `force` (the caller checks who may force).
/// Turning `rollingDb` off is the rollback: it clears the tenant's rollback alarms.
pub fn apply(conn: &Cluster, settings: &RollingSettings, company_id: &str, patch: FlagPatch, actor: &str, force: bool, now_ms: i64) -> RollingResult<Applied> {
    if patch == FlagPatch::default() {
        return Err(RollingError::NothingToChange);
    }
    let current = get(conn, company_id)?;
    let rolling_db = patch.rolling_db.unwrap_or(current.rolling_db);
    if patch.rolling_db_drop == Some(true) && !rolling_db {
        return Err(RollingError::DropRequiresRollingDb);
    }
    // Turning rollingDb off clears the drop flag with it.
    let rolling_db_drop = rolling_db && patch.rolling_db_drop.unwrap_or(current.rolling_db_drop);
    let failing = super::preflight::failing_for(conn, settings, &current, patch, now_ms)?;
    if !failing.is_empty() && !force {
        return Err(RollingError::PreflightFailed(failing));
    }
    exec(
        conn,
        "INSERT INTO company_feature_flags (company_id, rolling_db, rolling_db_drop, updated_at, updated_by) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(company_id) DO UPDATE SET rolling_db = ?2, rolling_db_drop = ?3, updated_at = ?4, updated_by = ?5",
        params![company_id, rolling_db as i64, rolling_db_drop as i64, now_ms, actor],
    )?;
    if current.rolling_db && !rolling_db {
        super::alarms::clear(conn, company_id, now_ms)?;
    }
    Ok(Applied { flags: get(conn, company_id)?, overridden: failing })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_version("1.4.17"), Some((1, 4, 17)));
        assert_eq!(parse_version("v1.5.0-beta.1"), Some((1, 5, 0)));
        assert_eq!(parse_version("2"), Some((2, 0, 0)));
        assert_eq!(parse_version("web"), None);
        assert!(!has_cutover_switch(Some("1.4.16")));
        assert!(has_cutover_switch(Some("1.10.0")) && has_cutover_switch(Some(CUTOVER_SDK_VERSION)));
    }
}
