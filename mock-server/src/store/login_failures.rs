//! Failed sign-ins per username (`auth::throttle` decides what they cost): kept in the store, so
//! every replica counts the same failures.

use crate::store::sql::{params, Connection, OptionalExtension};

/// Failures older than this no longer count: the next one starts again from one.
pub const FORGOTTEN_AFTER_MS: i64 = 24 * 3600 * 1000;

/// `(failures in a row, locked until)` for `username`, if it has failed lately.
pub fn get(conn: &Connection, username: &str) -> crate::store::sql::Result<Option<(u32, i64)>> {
    conn.query_row("SELECT failures, locked_until FROM guard_login_failures WHERE username = ?1", [username], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
    })
    .optional()
    .map(|row| row.map(|(n, until)| (u32::try_from(n).unwrap_or(u32::MAX), until)))
}

/// Counts one more failure of `username` at `now_ms`; answers the failures in a row.
pub fn failed(conn: &Connection, username: &str, now_ms: i64) -> crate::store::sql::Result<u32> {
    conn.query_row(
        "INSERT INTO guard_login_failures (username, failures, locked_until, last_failure_at) VALUES (?1, 1, 0, ?2)
         ON CONFLICT (username) DO UPDATE SET
           failures = CASE WHEN guard_login_failures.last_failure_at < ?3 THEN 1 ELSE guard_login_failures.failures + 1 END,
           last_failure_at = ?2
         RETURNING failures",
        params![username, now_ms, now_ms.saturating_sub(FORGOTTEN_AFTER_MS)],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

pub fn lock(conn: &Connection, username: &str, until_ms: i64) -> crate::store::sql::Result<()> {
    conn.execute("UPDATE guard_login_failures SET locked_until = ?2 WHERE username = ?1", params![username, until_ms])
        .map(|_| ())
}

/// A successful sign-in forgets the failures.
pub fn clear(conn: &Connection, username: &str) -> crate::store::sql::Result<()> {
    conn.execute("DELETE FROM guard_login_failures WHERE username = ?1", [username]).map(|_| ())
}

/// Forgets failures that no longer count and whose lock has passed; answers how many.
pub fn prune(conn: &Connection, now_ms: i64) -> crate::store::sql::Result<usize> {
    conn.execute(
        "DELETE FROM guard_login_failures WHERE last_failure_at < ?1 AND locked_until <= ?2",
        params![now_ms.saturating_sub(FORGOTTEN_AFTER_MS), now_ms],
    )
}
