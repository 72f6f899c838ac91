//! The day databases of the rolling machine (`daily_{env}_{co}_{rest}_{yyyymmdd}`): their states
//! `PREWARMED → ACTIVE → DRAINED → ARCHIVED → DROPPED` (the day database lifecycle) and
//! the stamps of the three locks of the drop (drained, archived, reconciled), shared by the
//! rotate, the archive and the drop evaluation.

use crate::store::sql::{params, Connection, OptionalExtension};

use super::RollingResult;

pub use protocol::DayStatus;

pub use protocol::views::DayDatabase;

/// The tenant's day databases, oldest first (dropped ones included).
pub fn day_databases(conn: &Connection, company_id: &str) -> RollingResult<Vec<DayDatabase>> {
    let mut stmt = conn.prepare(
        "SELECT d.name, d.day, d.status, h.name IS NOT NULL FROM day_databases d LEFT JOIN guard_held_days h ON h.name = d.name
         WHERE d.company_id = ?1 ORDER BY d.day",
    )?;
    let rows = stmt.query_map([company_id], |r| {
        Ok(DayDatabase {
            name: r.get(0)?,
            date: r.get(1)?,
            status: read_status(r, 2)?,
            held: r.get(3)?,
            after_drop: None,
        })
    })?;
    Ok(rows.collect::<crate::store::sql::Result<_>>()?)
}

/// Where a CORE-routed device's DYNAMIC writes go on `today` (`yyyymmdd`): the tenant's newest day
/// database up to today that is still PREWARMED or ACTIVE. That is today's once a rotate made it;
/// while it is missing (no rotate since midnight) it is the latest before, yesterday's usually,
/// which takes a cashier's writes (CORE refuses them) and which the archive leaves alone while it
/// is routed to (`archive_tenant`), so what lands there late is still archived. `None`: the tenant
/// has no such day database.
pub fn routed_day(conn: &Connection, company_id: &str, today: &str) -> RollingResult<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT name FROM day_databases WHERE company_id = ?1 AND day <= ?2 AND status IN ('PREWARMED', 'ACTIVE') ORDER BY day DESC LIMIT 1",
            params![company_id, today],
            |r| r.get(0),
        )
        .optional()?)
}

/// Day databases by status, over every tenant.
pub fn counts_by_status(conn: &Connection) -> RollingResult<Vec<(DayStatus, u64)>> {
    let mut stmt = conn.prepare("SELECT status, COUNT(*) FROM day_databases GROUP BY status ORDER BY status")?;
    let rows = stmt.query_map([], |r| Ok((read_status(r, 0)?, r.get::<_, i64>(1)?.max(0) as u64)))?;
    Ok(rows.collect::<crate::store::sql::Result<_>>()?)
}

/// Holds the day database `name` back from every drop evaluation (`reason` says why: a restore)
/// until `release`.
pub fn hold(conn: &Connection, name: &str, reason: &str, now_ms: i64) -> RollingResult<()> {
    conn.execute(
        "INSERT INTO guard_held_days (name, held_at, reason) VALUES (?1, ?2, ?3) ON CONFLICT (name) DO NOTHING",
        params![name, now_ms, reason],
    )?;
    Ok(())
}

/// Whether the day database `name` is held back from the drop.
pub fn is_held(conn: &Connection, name: &str) -> RollingResult<bool> {
    Ok(conn.query_row("SELECT COUNT(*) FROM guard_held_days WHERE name = ?1", [name], |r| r.get::<_, i64>(0))? > 0)
}

/// Releases a held day database to the drop's usual locks; `false` when it was not held.
pub fn release(conn: &Connection, name: &str) -> RollingResult<bool> {
    Ok(conn.execute("DELETE FROM guard_held_days WHERE name = ?1", [name])? == 1)
}

/// A stored status; one this server never writes is a corrupt row, reported.
pub(super) fn read_status(row: &crate::store::sql::Row, column: usize) -> crate::store::sql::Result<DayStatus> {
    row.get_named(column, "day status", DayStatus::parse)
}

pub fn day_status(conn: &Connection, name: &str) -> RollingResult<Option<DayStatus>> {
    Ok(conn.query_row("SELECT status FROM day_databases WHERE name = ?1", [name], |r| read_status(r, 0)).optional()?)
}

pub fn set_day_status(conn: &Connection, name: &str, status: DayStatus, now_ms: i64) -> RollingResult<()> {
    conn.execute_later(
        "UPDATE day_databases SET status = ?2, updated_at = ?3 WHERE name = ?1",
        params![name, status.as_str(), now_ms],
    )?;
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
    conn.execute_later(
        &format!("UPDATE day_databases SET {column} = ?2, updated_at = ?2 WHERE name = ?1"),
        params![name, now_ms],
    )?;
    Ok(())
}
