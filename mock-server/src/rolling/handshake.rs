//! The realtime handshake's decisions (docs/sdk.md, "Realtime: `SyncSession`"): update the registered device's SDK version,
//! whether it must drop its local database first (`invalidate-local`), and where it routes
//! (`core` only for a rolling tenant whose CORE exists and was rotated since `rollingDb` was last
//! turned on, and an SDK with the cutover switch), and where its DYNAMIC writes go (today's day
//! database, or while a missing rotate left none, the latest before it, with an alarm).

use crate::store::sql::Connection;
use protocol::has_cutover_switch;
use protocol::sync_frames::{InvalidateLocal, Ready, Routing};

use super::invalidation;
use super::{alarms, days, tenants, RollingResult, RollingSettings};
use crate::docdb;
use crate::docdb::naming::day_of;
use crate::store::devices;

#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    pub user_id: String,
    /// The session the token names (a login starts a new one).
    pub session_id: Option<String>,
    pub company_id: String,
    pub device_id: Option<String>,
    pub sdk_version: Option<String>,
    pub last_invalidation: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The `invalidate-local` payload, when the device has not obeyed the latest invalidation.
    pub invalidate: Option<InvalidateLocal>,
    /// The `ready` payload.
    pub ready: Ready,
}

/// Runs in a shared transaction (`Store::shared_transaction`): what it writes is the device's own
/// (its row, its guard mark), locked by key first.
pub fn answer(conn: &Connection, settings: &RollingSettings, hello: &Hello, now_ms: i64) -> RollingResult<Answer> {
    if let Some(id) = &hello.device_id {
        crate::store::sql::lock_key(conn, &format!("device:{id}"))?;
    }
    let tenant = tenants::get(conn, &hello.company_id)?;
    // Devices are registered by /auth/connect only; the handshake refreshes what the user's own
    // device reports (its SDK version, last sight) and never creates one, so nobody can block a
    // tenant's rollout with an invented old device.
    let registered = match &hello.device_id {
        Some(id) => devices::by_id(conn, id)?.filter(|d| d.user_id == hello.user_id),
        None => None,
    };
    if let Some(mut device) = registered.clone() {
        device.sdk_version = hello.sdk_version.clone();
        device.company_id = tenant.id.clone();
        device.is_online = true;
        device.last_seen_at = Some(now_ms);
        devices::upsert(conn, &device, now_ms)?;
    }
    let names = tenant.names(&settings.db_prefix);
    let last = invalidation::last(conn, &tenant.id)?;
    let invalidate =
        last.as_ref().filter(|i| hello.last_invalidation.is_none_or(|seen| i.invalidated_at > seen)).map(|i| {
            InvalidateLocal {
                company_id: tenant.id.clone(),
                invalidated_at: i.invalidated_at,
                reason: i.reason.clone(),
            }
        });
    // A registered device coming back with less than it obeyed is a destructive reset.
    if let Some(device) = &registered {
        super::alarms::device_handshake(
            conn,
            &tenant.id,
            &device.id,
            hello.session_id.as_deref(),
            hello.last_invalidation,
            invalidate.as_ref().map(|i| i.invalidated_at),
            now_ms,
        )?;
    }
    let core = has_cutover_switch(hello.sdk_version.as_deref())
        && invalidation::current_routing(conn, &names, &tenant.id)? == Routing::Core;
    let (database, static_db, dynamic_db) = if core {
        let today = day_of(now_ms);
        let routed = days::routed_day(conn, &tenant.id, &today)?;
        let today_db = names.day(&today);
        let dynamic = match routed {
            Some(day) => day,
            // No day database at all to write to: the legacy database takes a cashier's writes
            // (and is archived in part); CORE, which refuses them, only when there is none.
            None if docdb::exists(conn, &names.legacy())? => names.legacy(),
            None => names.core(),
        };
        if dynamic != today_db {
            day_missing(conn, &tenant.id, &today_db, &dynamic, now_ms)?;
        }
        (Routing::Core, names.core(), dynamic)
    } else {
        (Routing::Legacy, names.legacy(), names.legacy())
    };
    let ready = Ready {
        company_id: tenant.id,
        database,
        static_db,
        dynamic_db,
        invalidated_at: last.map(|i| i.invalidated_at),
    };
    Ok(Answer { invalidate, ready })
}

/// Today's day database is missing (no rotate since midnight): the operators are told, once until
/// the rotate creates it (`rotate_tenant` clears the alarm).
fn day_missing(conn: &Connection, company_id: &str, today_db: &str, routed: &str, now_ms: i64) -> RollingResult<()> {
    // Handshakes run side by side (shared transactions): one of them raises it.
    crate::store::sql::lock_key(conn, &["alarm:day-missing:", company_id].concat())?;
    let detail = format!(
        "{today_db} does not exist (no rotate since midnight): devices routed to CORE write to {routed} until a rotate creates it"
    );
    alarms::raise(conn, company_id, alarms::Kind::DayDatabaseMissing, today_db, &detail, now_ms)?;
    Ok(())
}
