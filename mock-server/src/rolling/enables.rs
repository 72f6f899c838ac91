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

/// What a rotate, and every reading of where the tenant's devices go, reads of its tenant, in one
/// statement (a round trip each was a quarter of a PostgreSQL rotate's and of a handshake's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    /// `rollingDb` is on now.
    pub rolling_db: bool,
    /// No rotate has run since `rollingDb` was last turned on: the next is the first, and until
    /// it has run devices stay on the legacy catalogue. A tenant without a record was enabled
    /// before enables were recorded; its CORE came from a rotate, so it counts as rotated.
    pub first_since_enable: bool,
}

const TURN: &str =
    "SELECT COALESCE(f.rolling_db, 0), CASE WHEN e.company_id IS NOT NULL AND e.rotated_at IS NULL THEN 1 ELSE 0 END";
const TURN_FROM: &str = "FROM companies c LEFT JOIN company_feature_flags f ON f.company_id = c.id
             LEFT JOIN guard_rolling_enables e ON e.company_id = c.id WHERE c.id = ?1";

fn read_turn(r: &crate::store::sql::Row) -> crate::store::sql::Result<Turn> {
    Ok(Turn { rolling_db: r.get::<_, i64>(0)? != 0, first_since_enable: r.get::<_, i64>(1)? != 0 })
}

/// The tenant's [`Turn`]; read under its flag lock (`flags::lock`), which enabling takes too.
pub fn turn(conn: &Connection, company_id: &str) -> RollingResult<Turn> {
    let row = conn.query_row(&format!("{TURN} {TURN_FROM}"), [company_id], read_turn).optional()?;
    row.ok_or_else(|| super::RollingError::UnknownTenant(company_id.to_owned()))
}

/// The tenant's [`Turn`] and whether the catalogue holds its CORE `core`, in one statement (where
/// its devices go is decided from both: a handshake's round trip fewer on PostgreSQL).
pub fn turn_and_core(conn: &Connection, company_id: &str, core: &str) -> RollingResult<(Turn, bool)> {
    let row = conn
        .query_row(
            &format!("{TURN}, (SELECT COUNT(*) FROM docdb_databases WHERE name = ?2) {TURN_FROM}"),
            [company_id, core],
            |r| Ok((read_turn(r)?, r.get::<_, i64>(2)? > 0)),
        )
        .optional()?;
    row.ok_or_else(|| super::RollingError::UnknownTenant(company_id.to_owned()))
}

/// A rotate of the (rolling) tenant ran: the enable before it is now followed by a rotate.
pub fn rotated(conn: &Connection, company_id: &str, now_ms: i64) -> RollingResult<()> {
    conn.execute_later(
        "INSERT INTO guard_rolling_enables (company_id, enabled_at, rotated_at) VALUES (?1, ?2, ?2)
         ON CONFLICT (company_id) DO UPDATE SET rotated_at = ?2",
        params![company_id, now_ms],
    )?;
    Ok(())
}
