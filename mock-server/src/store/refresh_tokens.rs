//! Refresh tokens, stored by hash and grouped in families (one family per login session).

use crate::store::sql::{params, Connection, ToValue};
use crate::store::users::{self, User};

#[derive(Debug, Clone, PartialEq)]
pub struct RefreshToken {
    pub family_id: String,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    pub revoked_at: Option<i64>,
    /// The user it was issued to, read with it (`None` once the user is gone).
    pub holder: Option<User>,
    /// The public keys of the devices its session runs on (the token is bound to them), read
    /// with it.
    pub session_keys: Vec<String>,
}

pub fn insert(
    conn: &Connection,
    hash: &str,
    family_id: &str,
    user_id: &str,
    expires_at: i64,
    now_ms: i64,
) -> crate::store::sql::Result<()> {
    conn.execute_later(
        "INSERT INTO refresh_tokens (token_hash, family_id, user_id, expires_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![hash, family_id, user_id, expires_at, now_ms],
    )
}

/// Locks the family of the token `hash` names (`sql::lock_key`, key `family:<id>`) until the
/// transaction ends: refreshes of one family run one after the other on every replica.
pub fn lock_family_of(conn: &Connection, hash: &str) -> crate::store::sql::Result<()> {
    crate::store::sql::lock_keys_where(
        conn,
        "'family:' || family_id",
        "FROM refresh_tokens WHERE token_hash = ?1",
        [hash],
    )
}

/// The token `hash` names, read with its holder and its session's device keys in one statement
/// (on PostgreSQL a refresh's round trips fewer). A row per company of the holder and key of the
/// session: each is taken once.
pub fn find(conn: &Connection, hash: &str) -> crate::store::sql::Result<Option<RefreshToken>> {
    let rows = conn.fetch(
        &format!(
            "SELECT t.family_id, t.expires_at, t.used_at, t.revoked_at, k.public_key, {}
             FROM refresh_tokens t LEFT JOIN users u ON u.id = t.user_id {}
             LEFT JOIN guard_device_sessions s ON s.family_id = t.family_id
             LEFT JOIN guard_device_keys k ON k.device_id = s.device_id
             WHERE t.token_hash = ?1 ORDER BY c.company_id, k.public_key",
            users::COLUMNS,
            users::COMPANIES
        ),
        &[hash.to_value()],
    )?;
    let Some(r) = rows.first() else { return Ok(None) };
    let mut session_keys = Vec::new();
    for row in &rows {
        if let Some(key) = row.get::<_, Option<String>>(4)? {
            if !session_keys.contains(&key) {
                session_keys.push(key);
            }
        }
    }
    session_keys.sort();
    Ok(Some(RefreshToken {
        family_id: r.get(0)?,
        expires_at: r.get(1)?,
        used_at: r.get(2)?,
        revoked_at: r.get(3)?,
        holder: users::from_rows(&rows, 5)?.pop(),
        session_keys,
    }))
}

pub fn mark_used(conn: &Connection, hash: &str, now_ms: i64) -> crate::store::sql::Result<()> {
    conn.execute_later(
        "UPDATE refresh_tokens SET used_at = ?2 WHERE token_hash = ?1 AND used_at IS NULL",
        params![hash, now_ms],
    )
}

/// Ends the session `family_id` (every replica is told when the caller commits).
pub fn revoke_family(conn: &Connection, family_id: &str, now_ms: i64) -> crate::store::sql::Result<usize> {
    crate::store::notifications::sessions_ended(conn, now_ms, &[family_id.to_owned()])?;
    conn.execute(
        "UPDATE refresh_tokens SET revoked_at = ?2 WHERE family_id = ?1 AND revoked_at IS NULL",
        params![family_id, now_ms],
    )
}

/// Forgets tokens past their expiry, and tokens revoked over a day ago (kept that long so a
/// replay still reads as revoked); answers how many.
pub fn prune(conn: &Connection, now_ms: i64) -> crate::store::sql::Result<usize> {
    conn.execute(
        "DELETE FROM refresh_tokens WHERE expires_at <= ?1 OR (revoked_at IS NOT NULL AND revoked_at <= ?1 - 86400000)",
        params![now_ms],
    )
}

/// Ends every session of a user (a password or role change, the user deleted); answers the
/// sessions it ended (every replica is told when the caller commits).
pub fn revoke_user(conn: &Connection, user_id: &str, now_ms: i64) -> crate::store::sql::Result<Vec<String>> {
    // A session of the user that is signing out ends now too.
    conn.execute(
        "DELETE FROM guard_signing_out WHERE family_id IN (SELECT family_id FROM refresh_tokens WHERE user_id = ?1)",
        [user_id],
    )?;
    let mut families = conn.query_map(
        "UPDATE refresh_tokens SET revoked_at = ?2 WHERE user_id = ?1 AND revoked_at IS NULL RETURNING family_id",
        params![user_id, now_ms],
        |r| r.get::<_, String>(0),
    )?;
    families.sort_unstable();
    families.dedup();
    crate::store::notifications::sessions_ended(conn, now_ms, &families)?;
    Ok(families)
}

/// Every session that has ended, with when (revoked tokens are kept a day, `prune`): what a
/// server or a replica that was not listening learns at its start.
pub fn ended(conn: &Connection) -> crate::store::sql::Result<Vec<(String, i64)>> {
    conn.query_map(crate::store::notifications::ENDED_SESSIONS, [], |r| Ok((r.get(0)?, r.get(1)?)))
}

/// What a session's document headers may still do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Its family holds an unrevoked, unexpired refresh token.
    Live,
    /// Logged out, its sign-out handlers still running (a final replication): its refresh is
    /// revoked, its access token and document headers work until the sign-out completes or its
    /// window closes.
    SigningOut,
    Ended,
}

pub fn session_state(conn: &Connection, family_id: &str, now_ms: i64) -> crate::store::sql::Result<SessionState> {
    conn.query_row(
        "SELECT (SELECT COUNT(*) FROM refresh_tokens WHERE family_id = ?1 AND revoked_at IS NULL AND expires_at > ?2),
                (SELECT COUNT(*) FROM guard_signing_out WHERE family_id = ?1 AND until > ?2)",
        params![family_id, now_ms],
        |r| {
            Ok(match (r.get::<_, i64>(0)?, r.get::<_, i64>(1)?) {
                (0, 0) => SessionState::Ended,
                (0, _) => SessionState::SigningOut,
                _ => SessionState::Live,
            })
        },
    )
}

/// When the session `family_id` stops being live by itself: its newest unrevoked refresh token's
/// expiry (`None`: it is not live now).
pub fn live_until(conn: &Connection, family_id: &str, now_ms: i64) -> crate::store::sql::Result<Option<i64>> {
    conn.query_row(
        "SELECT MAX(expires_at) FROM refresh_tokens WHERE family_id = ?1 AND revoked_at IS NULL AND expires_at > ?2",
        params![family_id, now_ms],
        |r| r.get::<_, Option<i64>>(0),
    )
}

/// Logs the session `family_id` out: its refresh ends now, its access token and document headers at `until_ms`
/// at the latest (`signed_out` ends them sooner). Only a live session gets the window: a logout
/// with the token of a session that has already ended reopens nothing.
pub fn signing_out(conn: &Connection, family_id: &str, now_ms: i64, until_ms: i64) -> crate::store::sql::Result<()> {
    conn.execute("DELETE FROM guard_signing_out WHERE until <= ?1", [now_ms])?;
    if session_state(conn, family_id, now_ms)? == SessionState::Live {
        conn.execute("INSERT INTO guard_signing_out (family_id, until) VALUES (?1, ?2)", params![family_id, until_ms])?;
    }
    revoke_family(conn, family_id, now_ms).map(|_| ())
}

/// The sign-out of `family_id` is complete: nothing of the session works any more.
pub fn signed_out(conn: &Connection, family_id: &str, now_ms: i64) -> crate::store::sql::Result<()> {
    revoke_family(conn, family_id, now_ms)?;
    conn.execute("DELETE FROM guard_signing_out WHERE family_id = ?1", [family_id]).map(|_| ())
}

/// Ends the sessions at once, with no sign-out window: their refresh tokens, access tokens and
/// document headers (a deleted device's, or a user's others at a logout of wider scope). The
/// caller hands them to `AppState::sessions_ended` once committed (feeds and sockets are cut).
pub fn end_now(conn: &Connection, families: &[String], now_ms: i64) -> crate::store::sql::Result<()> {
    for family in families {
        signed_out(conn, family, now_ms)?;
    }
    Ok(())
}

/// The user's sessions that are live or inside their sign-out window.
pub fn sessions_of_user(conn: &Connection, user_id: &str, now_ms: i64) -> crate::store::sql::Result<Vec<String>> {
    conn.query_map(
        "SELECT DISTINCT family_id FROM refresh_tokens WHERE user_id = ?1 AND (
           (revoked_at IS NULL AND expires_at > ?2)
           OR family_id IN (SELECT family_id FROM guard_signing_out WHERE until > ?2))
         ORDER BY family_id",
        params![user_id, now_ms],
        |r| r.get(0),
    )
}

/// True the first time a spent token is replayed inside the grace window (the racing tab's one
/// successor); replays older than the window are forgotten. Kept in the store, so the grace is
/// one per token whichever replica the replays reach.
pub fn first_replay(conn: &Connection, hash: &str, now_ms: i64, window_ms: i64) -> crate::store::sql::Result<bool> {
    conn.execute("DELETE FROM guard_refresh_replays WHERE at < ?1", [now_ms.saturating_sub(window_ms)])?;
    Ok(conn.execute(
        "INSERT INTO guard_refresh_replays (token_hash, at) VALUES (?1, ?2) ON CONFLICT (token_hash) DO NOTHING",
        params![hash, now_ms],
    )? == 1)
}
