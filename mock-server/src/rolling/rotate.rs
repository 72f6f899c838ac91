//! One tenant's rotate: warm CORE if needed, day databases for today (ACTIVE) and tomorrow
//! (PREWARMED), the day manifest in CORE, and the cutover invalidation the first time the tenant
//! routes to CORE. Run inside one transaction, so a failure (or a kill) leaves nothing half-done;
//! a second run the same day creates nothing.

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use serde_json::json;

use super::invalidation::{self, Routing, REASON_CUTOVER};
use super::naming::{day_of, next_day};
use super::tenants::Tenant;
use super::warm::{warm_core, WarmOutcome};
use super::{RollingError, RollingResult, RollingSettings};
use crate::docdb::{self, Kind};

pub const MANIFEST_ID: &str = "_local/day-manifest";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum DayStatus {
    Prewarmed,
    Active,
    Drained,
    Archived,
    Dropped,
}

impl DayStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DayStatus::Prewarmed => "PREWARMED",
            DayStatus::Active => "ACTIVE",
            DayStatus::Drained => "DRAINED",
            DayStatus::Archived => "ARCHIVED",
            DayStatus::Dropped => "DROPPED",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantRotation {
    pub company_id: String,
    pub warm: WarmOutcome,
    pub created_days: Vec<String>,
    pub invalidated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DayDatabase {
    pub name: String,
    pub date: String,
    pub status: String,
}

/// The tenant's day databases, oldest first (dropped ones included).
pub fn day_databases(conn: &Connection, company_id: &str) -> RollingResult<Vec<DayDatabase>> {
    let mut stmt = conn.prepare("SELECT name, day, status FROM day_databases WHERE company_id = ?1 ORDER BY day")?;
    let rows = stmt.query_map([company_id], |r| Ok(DayDatabase { name: r.get(0)?, date: r.get(1)?, status: r.get(2)? }))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn day_status(conn: &Connection, name: &str) -> RollingResult<Option<String>> {
    Ok(conn.query_row("SELECT status FROM day_databases WHERE name = ?1", [name], |r| r.get(0)).optional()?)
}

pub fn set_day_status(conn: &Connection, name: &str, status: DayStatus, now_ms: i64) -> RollingResult<()> {
    conn.execute("UPDATE day_databases SET status = ?2, updated_at = ?3 WHERE name = ?1", params![name, status.as_str(), now_ms])?;
    Ok(())
}

/// The three locks of the drop, and the drop itself, each with the time it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    Drained,
    Archived,
    Reconciled,
    Dropped,
}

pub fn stamp(conn: &Connection, name: &str, what: Stamp, now_ms: i64) -> RollingResult<()> {
    let column = match what {
        Stamp::Drained => "drained_at",
        Stamp::Archived => "archived_at",
        Stamp::Reconciled => "reconciled_at",
        Stamp::Dropped => "dropped_at",
    };
    conn.execute(&format!("UPDATE day_databases SET {column} = ?2, updated_at = ?2 WHERE name = ?1"), params![name, now_ms])?;
    Ok(())
}

pub fn rotate_tenant(conn: &Connection, settings: &RollingSettings, tenant: &Tenant, now_ms: i64) -> RollingResult<TenantRotation> {
    let names = tenant.names(&settings.db_prefix);
    let warm = warm_core(conn, &names, &tenant.id, settings.max_open, now_ms)?;
    if warm == WarmOutcome::NoLegacy {
        return Err(RollingError::NoCatalogue(tenant.id.clone()));
    }
    let today = day_of(now_ms);
    let tomorrow = next_day(&today);
    let mut created_days = Vec::new();
    for (day, status) in [(&today, DayStatus::Active), (&tomorrow, DayStatus::Prewarmed)] {
        let name = names.day(day);
        match day_status(conn, &name)? {
            None => {
                docdb::create(conn, &name, &tenant.id, Kind::Day, settings.max_open, now_ms)?;
                conn.execute(
                    "INSERT INTO day_databases (name, company_id, day, status, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                    params![name, tenant.id, day, status.as_str(), now_ms],
                )?;
                created_days.push(name);
            }
            // Yesterday's prewarmed database becomes today's active one.
            Some(s) if s == DayStatus::Prewarmed.as_str() && status == DayStatus::Active => set_day_status(conn, &name, DayStatus::Active, now_ms)?,
            Some(_) => {}
        }
    }
    let live: Vec<String> =
        day_databases(conn, &tenant.id)?.into_iter().filter(|d| d.status != DayStatus::Dropped.as_str()).map(|d| d.name).collect();
    let manifest = json!({ "today": names.day(&today), "tomorrow": names.day(&tomorrow), "days": live, "updatedAt": now_ms });
    let previous = docdb::get_local(conn, &names.core(), MANIFEST_ID)?;
    let changed = previous.as_ref().is_none_or(|p| p["today"] != manifest["today"] || p["days"] != manifest["days"]);
    if changed {
        docdb::put_local(conn, &names.core(), MANIFEST_ID, &manifest)?;
    }
    let routed_to_core = invalidation::last(conn, &tenant.id)?.is_some_and(|i| i.routing == Routing::Core.as_str());
    let invalidated = !routed_to_core;
    if invalidated {
        invalidation::invalidate(conn, &tenant.id, REASON_CUTOVER, Routing::Core, now_ms)?;
    }
    Ok(TenantRotation { company_id: tenant.id.clone(), warm, created_days, invalidated })
}
