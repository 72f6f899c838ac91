//! When a tenant's devices may be routed to CORE: only after a rotate that followed the latest
//! enable of `rollingDb` (`guard_rolling_enables`). A CORE left from before a rollback lacks what
//! the legacy catalogue received since, so enabling again routes nobody until the rotate has
//! caught CORE up (`warm::catch_up_core`) and cut the devices over with its invalidation.

use crate::store::sql::{params, Connection, OptionalExtension};

use super::RollingResult;

/// `rollingDb` was turned on: any rotate recorded before no longer counts.
pub fn enabled(conn: &Connection, company_id: &str, now_ms: i64) -> RollingResult<()> {
    conn.execute(
        "INSERT INTO guard_rolling_enables (company_id, enabled_at, rotated_at) VALUES (?1, ?2, NULL)
         ON CONFLICT (company_id) DO UPDATE SET enabled_at = ?2, rotated_at = NULL",
        params![company_id, now_ms],
    )?;
    Ok(())
}

/// A rotate of the (rolling) tenant ran; answers whether it is the first since the latest enable.
pub fn rotated(conn: &Connection, company_id: &str, now_ms: i64) -> RollingResult<bool> {
    let before = conn
        .query_row("SELECT rotated_at FROM guard_rolling_enables WHERE company_id = ?1", [company_id], |r| {
            r.get::<_, Option<i64>>(0)
        })
        .optional()?;
    conn.execute(
        "INSERT INTO guard_rolling_enables (company_id, enabled_at, rotated_at) VALUES (?1, ?2, ?2)
         ON CONFLICT (company_id) DO UPDATE SET rotated_at = ?2",
        params![company_id, now_ms],
    )?;
    Ok(matches!(before, Some(None)))
}

/// Whether a rotate has run since `rollingDb` was last turned on. A tenant without a record was
/// enabled before enables were recorded; its CORE came from a rotate, so it counts as rotated.
pub fn rotated_since_enable(conn: &Connection, company_id: &str) -> RollingResult<bool> {
    let rotated_at = conn
        .query_row("SELECT rotated_at FROM guard_rolling_enables WHERE company_id = ?1", [company_id], |r| {
            r.get::<_, Option<i64>>(0)
        })
        .optional()?;
    Ok(!matches!(rotated_at, Some(None)))
}
