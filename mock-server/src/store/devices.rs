//! Devices: what `/auth/connect` registers, with the SDK version the tenants listing shows.

use crate::store::sql::{params, Connection, OptionalExtension};
pub use protocol::records::Device;

const SELECT: &str = "SELECT id, user_id, company_id, sdk_version, is_online, last_seen_at, info FROM devices";

fn from_row(r: &crate::store::sql::Row) -> crate::store::sql::Result<Device> {
    let info: String = r.get(6)?;
    Ok(Device {
        id: r.get(0)?,
        user_id: r.get(1)?,
        company_id: r.get(2)?,
        sdk_version: r.get(3)?,
        is_online: r.get::<_, i64>(4)? != 0,
        last_seen_at: r.get(5)?,
        info: serde_json::from_str(&info)
            .map_err(|e| crate::store::sql::Error::Decode { column: 6, source: Box::new(e) })?,
    })
}

pub fn by_id(conn: &Connection, id: &str) -> crate::store::sql::Result<Option<Device>> {
    conn.query_row(&format!("{SELECT} WHERE id = ?1"), [id], from_row).optional()
}

pub fn for_company(conn: &Connection, company_id: &str) -> crate::store::sql::Result<Vec<Device>> {
    let mut stmt = conn.prepare(&format!("{SELECT} WHERE company_id = ?1 ORDER BY created_at"))?;
    let rows = stmt.query_map([company_id], from_row)?;
    rows.collect()
}

pub fn for_user(conn: &Connection, user_id: &str) -> crate::store::sql::Result<Vec<Device>> {
    let mut stmt = conn.prepare(&format!("{SELECT} WHERE user_id = ?1 ORDER BY created_at"))?;
    let rows = stmt.query_map([user_id], from_row)?;
    rows.collect()
}

/// Creates the device, or refreshes it when `id` is already this user's.
pub fn upsert(conn: &Connection, d: &Device, now_ms: i64) -> crate::store::sql::Result<()> {
    conn.execute_later(
        "INSERT INTO devices (id, user_id, company_id, info, sdk_version, is_online, last_seen_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?6)
         ON CONFLICT(id) DO UPDATE SET user_id = ?2, company_id = ?3, info = ?4, sdk_version = ?5, is_online = 1, last_seen_at = ?6",
        params![d.id, d.user_id, d.company_id, d.info.to_string(), d.sdk_version, now_ms],
    )
}

pub fn set_online(conn: &Connection, id: &str, is_online: bool, now_ms: i64) -> crate::store::sql::Result<usize> {
    conn.execute(
        "UPDATE devices SET is_online = ?2, last_seen_at = ?3 WHERE id = ?1",
        params![id, is_online as i64, now_ms],
    )
}

/// The device this user was last seen on in this company (for `PUT /auth/status`, which names none).
pub fn latest_for(conn: &Connection, user_id: &str, company_id: &str) -> crate::store::sql::Result<Option<String>> {
    conn.query_row("SELECT id FROM devices WHERE user_id = ?1 AND company_id = ?2 ORDER BY last_seen_at DESC, created_at DESC LIMIT 1", params![user_id, company_id], |r| r.get(0))
        .optional()
}

/// The session `family_id` runs on the device `device_id` (it registered it, or signed in naming
/// it): the session ends when that device is deleted.
pub fn link_session(conn: &Connection, device_id: &str, family_id: &str, now_ms: i64) -> crate::store::sql::Result<()> {
    conn.execute(
        "INSERT INTO guard_device_sessions (family_id, device_id, linked_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (family_id, device_id) DO NOTHING",
        params![family_id, device_id, now_ms],
    )
    .map(|_| ())
}

/// The sessions that run on `device_id`.
pub fn sessions_of(conn: &Connection, device_id: &str) -> crate::store::sql::Result<Vec<String>> {
    conn.query_map("SELECT family_id FROM guard_device_sessions WHERE device_id = ?1", [device_id], |r| r.get(0))
}

/// The public key the device registered (`auth::device_keys`), if it did.
pub fn key_of(conn: &Connection, device_id: &str) -> crate::store::sql::Result<Option<String>> {
    conn.query_row("SELECT public_key FROM guard_device_keys WHERE device_id = ?1", [device_id], |r| r.get(0))
        .optional()
}

/// Keeps the device's public key (set once: a device is re-registered under its id only with it).
pub fn set_key(conn: &Connection, device_id: &str, public_key: &str) -> crate::store::sql::Result<()> {
    conn.execute(
        "INSERT INTO guard_device_keys (device_id, public_key) VALUES (?1, ?2) ON CONFLICT (device_id) DO NOTHING",
        params![device_id, public_key],
    )
    .map(|_| ())
}

/// Whether the device has signed in with the proof of its key and the right password: only then
/// does its key spare it the account's sign-in throttle. A key added with an access token alone
/// (a stolen one, say) never has.
pub fn signed_in_with_key(conn: &Connection, device_id: &str) -> crate::store::sql::Result<bool> {
    Ok(conn
        .query_row("SELECT 1 FROM guard_keyed_sign_ins WHERE device_id = ?1", [device_id], |r| r.get::<_, i64>(0))
        .optional()?
        .is_some())
}

pub fn mark_signed_in_with_key(conn: &Connection, device_id: &str, now_ms: i64) -> crate::store::sql::Result<()> {
    conn.execute(
        "INSERT INTO guard_keyed_sign_ins (device_id, signed_in_at) VALUES (?1, ?2)
         ON CONFLICT (device_id) DO UPDATE SET signed_in_at = ?2",
        params![device_id, now_ms],
    )
    .map(|_| ())
}

/// The keys of the devices the session `family_id` runs on: its refresh tokens are bound to them.
pub fn keys_of_session(conn: &Connection, family_id: &str) -> crate::store::sql::Result<Vec<String>> {
    conn.query_map(
        "SELECT k.public_key FROM guard_device_sessions s JOIN guard_device_keys k ON k.device_id = s.device_id
         WHERE s.family_id = ?1",
        [family_id],
        |r| r.get(0),
    )
}

/// Spends a proof's nonce: `true` the first time, `false` for a replay. Kept until `until_ms`
/// (past which the nonce is refused as expired anyway); spent ones past theirs are forgotten.
pub fn spend_nonce(conn: &Connection, nonce: &str, until_ms: i64, now_ms: i64) -> crate::store::sql::Result<bool> {
    conn.execute("DELETE FROM guard_device_nonces WHERE until < ?1", [now_ms])?;
    Ok(conn.execute(
        "INSERT INTO guard_device_nonces (nonce, until) VALUES (?1, ?2) ON CONFLICT (nonce) DO NOTHING",
        params![nonce, until_ms],
    )? == 1)
}

/// Deletes the device, its key and its sessions' links (the caller ends those sessions first).
pub fn delete(conn: &Connection, id: &str) -> crate::store::sql::Result<usize> {
    conn.execute("DELETE FROM guard_device_sessions WHERE device_id = ?1", [id])?;
    conn.execute("DELETE FROM guard_device_keys WHERE device_id = ?1", [id])?;
    conn.execute("DELETE FROM guard_keyed_sign_ins WHERE device_id = ?1", [id])?;
    conn.execute("DELETE FROM devices WHERE id = ?1", [id])
}

/// Forgets devices last seen (or, never seen, created) before `before_ms` that no session still
/// runs on (run after expired refresh tokens are pruned); answers how many. A session kept alive
/// by its refreshes alone keeps its device, and with it its key: forgetting the key would unbind
/// the session's refresh tokens. Links of sessions to devices go with whichever of the two is gone.
pub fn prune_unseen(conn: &Connection, before_ms: i64) -> crate::store::sql::Result<usize> {
    let pruned = conn.execute(
        "DELETE FROM devices WHERE COALESCE(last_seen_at, created_at) < ?1 AND id NOT IN (
           SELECT s.device_id FROM guard_device_sessions s JOIN refresh_tokens r ON r.family_id = s.family_id
           WHERE r.revoked_at IS NULL)",
        params![before_ms],
    )?;
    conn.execute(
        "DELETE FROM guard_device_sessions WHERE device_id NOT IN (SELECT id FROM devices)
         OR family_id NOT IN (SELECT family_id FROM refresh_tokens)",
        [],
    )?;
    conn.execute("DELETE FROM guard_device_keys WHERE device_id NOT IN (SELECT id FROM devices)", [])?;
    conn.execute("DELETE FROM guard_keyed_sign_ins WHERE device_id NOT IN (SELECT id FROM devices)", [])?;
    Ok(pruned)
}
