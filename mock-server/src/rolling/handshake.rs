//! The realtime handshake's decisions (docs/sdk.md, "Realtime: `SyncSession`"): update the registered device's SDK version,
//! whether it must drop its local database first (`invalidate-local`), and where it routes
//! (`core` only for a rolling tenant whose CORE exists and was rotated since `rollingDb` was last
//! turned on, and an SDK with the cutover switch).

use crate::store::sql::Connection;
use protocol::has_cutover_switch;
use protocol::realtime::{InvalidateLocal, Ready, Routing};

use super::invalidation;
use super::{tenants, RollingResult, RollingSettings};
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
        let today = names.day(&day_of(now_ms));
        let dynamic = if docdb::exists(conn, &today)? { today } else { names.core() };
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
