//! One tenant's rotate: warm CORE if needed (or, first after `rollingDb` was turned on again,
//! catch a CORE kept from before up with the legacy catalogue), day databases for today (ACTIVE) and tomorrow
//! (PREWARMED), the day manifest in CORE, and the cutover invalidation the first time the tenant
//! routes to CORE; an alarm that today's day database was missing clears. Run inside one transaction, so a failure (or a kill) leaves nothing half-done;
//! a second run the same day creates nothing. The tenant's flag is read again in that
//! transaction: a tenant switched off after the run listed it is left untouched.

use std::collections::BTreeSet;

use crate::docdb::Cluster;
use crate::store::sql::{params, Connection};
use protocol::views::DayManifest;
use serde::Serialize;

use super::days::{day_databases, set_day_status, DayDatabase, DayStatus};
use super::invalidation::{self, Routing, REASON_CUTOVER};
use super::tenants::Tenant;
use super::warm::{catch_up_core, warm_core, WarmOutcome};
use super::{alarms, enables, flags};
use super::{RollingError, RollingResult, RollingSettings};
use crate::docdb::naming::{day_of, next_day};
use crate::docdb::{self, Kind};

pub use crate::docdb::naming::MANIFEST_ID;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantRotation {
    pub company_id: String,
    pub warm: WarmOutcome,
    pub created_days: Vec<String>,
    pub invalidated: bool,
    /// Why nothing was done, when nothing was (`rollingDb` turned off before its turn).
    pub skipped: Option<String>,
}

/// The tenants a rotate run gives the day's invalidation (`invalidate_daily`): every tenant it did
/// not rotate at its turn, `turned` being those with `rollingDb` on then. A tenant's turn decides
/// once: one turned on after the run listed the rolling tenants was legacy when listed and gets
/// it (it was given neither); one rotated and turned off since had its rotate and does not (it
/// was given both); one turned off before its turn was skipped and gets it.
pub fn daily_tenants(conn: &Connection, turned: &BTreeSet<String>) -> RollingResult<Vec<String>> {
    Ok(super::tenants::ids(conn)?.into_iter().filter(|id| !turned.contains(id)).collect())
}

pub fn rotate_tenant(
    conn: &Cluster,
    settings: &RollingSettings,
    tenant: &Tenant,
    now_ms: i64,
) -> RollingResult<TenantRotation> {
    // Under the tenant's flag lock, so a flag change waits for this rotation or this one sees it.
    flags::lock(conn, &tenant.id)?;
    let turn = enables::turn(conn, &tenant.id)?;
    if !turn.rolling_db {
        return Ok(TenantRotation {
            company_id: tenant.id.clone(),
            warm: WarmOutcome::AlreadyExists,
            created_days: Vec::new(),
            invalidated: false,
            skipped: Some("rollingDb was turned off before its turn: nothing done".into()),
        });
    }
    let names = tenant.names(&settings.db_prefix);
    let today = day_of(now_ms);
    let tomorrow = next_day(&today);
    // Every handle the rotate touches, read together: the warm, the creates and the pins below
    // then read none.
    docdb::existing(conn, &[&names.core(), &names.legacy(), &names.day(&today), &names.day(&tomorrow)])?;
    let mut warm = warm_core(conn, &names, &tenant.id, now_ms)?;
    if warm == WarmOutcome::NoLegacy {
        return Err(RollingError::NoCatalogue(tenant.id.clone()));
    }
    // The first rotate since `rollingDb` was turned on again: a CORE kept from before the
    // rollback lacks what the legacy catalogue received since; devices route to it only now.
    enables::rotated(conn, &tenant.id, now_ms)?;
    if turn.first_since_enable && warm == WarmOutcome::AlreadyExists {
        let docs = catch_up_core(conn, &names)?;
        warm = WarmOutcome::CaughtUp { docs };
    }
    // The tenant's days read once: the statuses decided here, the manifest's list after.
    let mut days = day_databases(conn, &tenant.id)?;
    let mut created_days = Vec::new();
    for (day, status) in [(&today, DayStatus::Active), (&tomorrow, DayStatus::Prewarmed)] {
        let name = names.day(day);
        match days.iter_mut().find(|d| d.name == name) {
            None => {
                docdb::create(conn, &name, &tenant.id, Kind::Day, now_ms)?;
                conn.execute_later(
                    "INSERT INTO day_databases (name, company_id, day, status, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                    params![name, tenant.id, day, status.as_str(), now_ms],
                )?;
                days.push(DayDatabase { name: name.clone(), date: day.clone(), status, held: false, after_drop: None });
                created_days.push(name);
            }
            // Yesterday's prewarmed database becomes today's active one.
            Some(d) if d.status == DayStatus::Prewarmed && status == DayStatus::Active => {
                set_day_status(conn, &name, DayStatus::Active, now_ms)?;
                d.status = DayStatus::Active;
            }
            Some(_) => {}
        }
    }
    // Today's day database exists now: devices write to it again, the alarm of its absence is over.
    alarms::clear_kind(conn, &tenant.id, alarms::Kind::DayDatabaseMissing, now_ms)?;
    // The prewarm: these three stay open (devices replicate them); older days may close.
    docdb::pin_only(conn, &tenant.id, &[&names.core(), &names.day(&today), &names.day(&tomorrow)])?;
    days.sort_by(|a, b| a.date.cmp(&b.date));
    let live: Vec<String> = days.into_iter().filter(|d| d.status != DayStatus::Dropped).map(|d| d.name).collect();
    let manifest =
        DayManifest { today: names.day(&today), tomorrow: names.day(&tomorrow), days: live, updated_at: now_ms };
    // Rewritten when its days changed, or when what is stored does not read as a manifest. A day
    // created here, or a CORE made here, changes them for certain: nothing stored is read then
    // (a rotate on a day it creates tomorrow's database: one read a tenant fewer every day).
    let changed = !created_days.is_empty() || matches!(warm, WarmOutcome::Created { .. }) || {
        let previous = docdb::get_local(conn, &names.core(), MANIFEST_ID)?
            .and_then(|p| serde_json::from_value::<DayManifest>(p).ok());
        previous.is_none_or(|p| p.today != manifest.today || p.days != manifest.days)
    };
    if changed {
        let body = serde_json::to_value(&manifest)
            .map_err(|source| docdb::DocDbError::CorruptJson { what: MANIFEST_ID.into(), source })?;
        docdb::put_local(conn, &names.core(), MANIFEST_ID, &body)?;
    }
    let invalidated =
        invalidation::invalidate_unless_routed(conn, &tenant.id, REASON_CUTOVER, Routing::Core, now_ms)?.is_some();
    Ok(TenantRotation { company_id: tenant.id.clone(), warm, created_days, invalidated, skipped: None })
}
