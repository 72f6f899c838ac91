//! What the running server reads of the schema itself, through the port in either dialect: a
//! table's columns, whether a table exists, which migrations the tracking table records. (The
//! migration runners, `migrate.rs` and `postgres.rs`, speak their own database directly.)

use super::journal::{journal, Migration};
use super::sql::{Connection, Dialect, Result};

/// The columns of `table`, in order.
pub fn columns(conn: &Connection, table: &str) -> Result<Vec<String>> {
    let sql = match conn.dialect() {
        Dialect::Sqlite => "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
        Dialect::Postgres => "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?1 ORDER BY ordinal_position",
    };
    conn.query_map(sql, [table], |r| r.get(0))
}

/// Whether `table` exists (in the application's schema).
pub fn table_exists(conn: &Connection, table: &str) -> Result<bool> {
    let sql = match conn.dialect() {
        Dialect::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        Dialect::Postgres => {
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?1"
        }
    };
    conn.query_row(sql, [table], |r| r.get::<_, i64>(0)).map(|n| n > 0)
}

/// The journal `when`s the tracking table records (drizzle's `created_at`), oldest first; none
/// when there is no tracking table.
pub fn applied_whens(conn: &Connection) -> Result<Vec<i64>> {
    let (exists, table) = match conn.dialect() {
        Dialect::Sqlite => (
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'",
            "__drizzle_migrations",
        ),
        Dialect::Postgres => (
            "SELECT COUNT(*) FROM (SELECT to_regclass('drizzle.__drizzle_migrations') AS t) r WHERE t IS NOT NULL",
            "drizzle.__drizzle_migrations",
        ),
    };
    if conn.query_row(exists, [], |r| r.get::<_, i64>(0))? == 0 {
        return Ok(Vec::new());
    }
    conn.query_map(&format!("SELECT created_at FROM {table} ORDER BY created_at"), [], |r| {
        Ok(r.get::<_, Option<i64>>(0)?.unwrap_or(0))
    })
}

/// The newest journal entry the tracking table records as applied.
pub fn last_applied(conn: &Connection) -> Result<Option<&'static str>> {
    let applied = applied_whens(conn)?;
    Ok(journal().into_iter().filter(|m| applied.contains(&m.when)).max_by_key(Migration::number).map(|m| m.tag))
}

/// The journal's entries newer than the newest the tracking table records, oldest first: what a
/// migration run would apply (older ones missing are the rollout's tables made by hand).
pub fn missing(conn: &Connection) -> Result<Vec<&'static str>> {
    let newest = applied_whens(conn)?.into_iter().max();
    Ok(journal().into_iter().filter(|m| newest.is_none_or(|n| m.when > n)).map(|m| m.tag).collect())
}

/// Whether `company_feature_flags` has exactly the two flag columns of 0015.
pub fn two_flag_schema(conn: &Connection) -> Result<bool> {
    let columns = columns(conn, "company_feature_flags")?;
    let flags = columns.iter().filter(|c| c.starts_with("rolling_db")).count();
    Ok(flags == 2 && columns.iter().any(|c| c == "rolling_db") && columns.iter().any(|c| c == "rolling_db_drop"))
}
