//! The catalogue: which database is whose and of which kind, its indexes and its handle, in the
//! relational store (its tables share the store, but they are not part of the drizzle
//! migrations); creating and dropping a database; the recorded `DB_PREFIX` and `max_dbs_open`.

use serde::Serialize;

use super::documents::Counts;
use super::handles::{dropped, handle, make_room, opened, Handle, NEXT_USE};
use super::{Cluster, DocDbError, DocDbResult};
use crate::store::sql::{params, Connection, OptionalExtension};

/// Creates the tables, adds the handle columns to a data directory written before they existed,
/// and sets the cluster's `max_dbs_open`.
/// On PostgreSQL the tables are the migrate job's (`store::schema::POSTGRES`): only the bound is set.
pub fn install(conn: &Connection, max_open: usize) -> DocDbResult<()> {
    if conn.dialect() == crate::store::sql::Dialect::Postgres {
        return set_max_open(conn, max_open);
    }
    let columns = crate::store::catalog::columns(conn, "docdb_databases")?;
    if !columns.is_empty() && !columns.iter().any(|c| c == "open") {
        conn.execute_batch(
            "ALTER TABLE docdb_databases ADD COLUMN open INTEGER NOT NULL DEFAULT 0;
             ALTER TABLE docdb_databases ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
             ALTER TABLE docdb_databases ADD COLUMN last_used INTEGER NOT NULL DEFAULT 0;",
        )?;
    }
    conn.execute_batch(crate::store::schema::DOCDB)?;
    if !crate::store::catalog::columns(conn, "docdb_cluster")?.iter().any(|c| c == "db_prefix") {
        conn.execute_batch("ALTER TABLE docdb_cluster ADD COLUMN db_prefix TEXT")?;
    }
    set_max_open(conn, max_open)
}

/// The `DB_PREFIX` the store's databases were named with, recorded at the first start: the
/// prefix must not change on existing data, since every database name carries it. Another
/// prefix on the same data would orphan them all (the next rotate failing tenant by tenant), so
/// it is refused, naming both.
pub fn check_prefix(conn: &Connection, prefix: &str) -> DocDbResult<()> {
    let recorded: Option<String> =
        conn.query_row("SELECT db_prefix FROM docdb_cluster WHERE id = 1", [], |r| r.get(0)).optional()?.flatten();
    match recorded {
        Some(made_with) if made_with != prefix => {
            Err(DocDbError::PrefixChanged { configured: prefix.to_owned(), recorded: made_with })
        }
        Some(_) => Ok(()),
        None => Ok(conn.execute("UPDATE docdb_cluster SET db_prefix = ?1 WHERE id = 1", [prefix]).map(drop)?),
    }
}

/// Sets the cluster's `max_dbs_open`; handles over a lowered bound close as they are needed.
/// The open-handle count is taken afresh here (at start-up), the triggers keep it after.
pub fn set_max_open(conn: &Connection, max_open: usize) -> DocDbResult<()> {
    conn.execute(
        "INSERT INTO docdb_cluster (id, max_open, open_handles) VALUES (1, ?1, (SELECT COUNT(*) FROM docdb_databases WHERE open = 1))
         ON CONFLICT(id) DO UPDATE SET max_open = ?1, open_handles = excluded.open_handles",
        [max_open as i64],
    )?;
    Ok(())
}

/// The cluster's `max_dbs_open`.
pub fn max_open(conn: &Connection) -> DocDbResult<usize> {
    Ok(conn
        .query_row("SELECT max_open FROM docdb_cluster WHERE id = 1", [], |r| r.get::<_, i64>(0))
        .optional()?
        .unwrap_or(0) as usize)
}

/// A database's kind (`core`, `legacy`, `day`, `archive`), as the protocol names it.
pub use protocol::DatabaseKind as Kind;

/// An unknown kind is a corrupt row, reported, never guessed.
fn parse_kind(s: &str) -> DocDbResult<Kind> {
    Kind::parse(s).ok_or_else(|| DocDbError::Corrupt(format!("unknown database kind {s:?}")))
}

/// CouchDB's rule for database names.
pub fn is_legal_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_$()+-/".contains(c))
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DbInfo {
    pub name: String,
    pub kind: Kind,
    pub company_id: String,
    pub doc_count: u64,
    pub update_seq: u64,
    /// Its handle is open (counts towards `max_dbs_open`).
    pub open: bool,
    /// Its handle is in use (pinned by the prewarm): the LRU does not close it.
    pub in_use: bool,
}

pub fn exists(conn: &Connection, name: &str) -> DocDbResult<bool> {
    Ok(conn.query_row("SELECT COUNT(*) FROM docdb_databases WHERE name = ?1", [name], |r| r.get::<_, i64>(0))? > 0)
}

/// Creates a database (its handle open), refusing an illegal name, an existing one, or one no
/// handle can be found for (`all_dbs_active`). The engine's database is made first: a step
/// killed before its catalogue row lands finds it there and goes on.
pub fn create(c: &Cluster, name: &str, company_id: &str, kind: Kind, now_ms: i64) -> DocDbResult<()> {
    create_indexed(c, name, company_id, kind, &[], now_ms)
}

/// [`create`] with its indexes (the warm's CORE): one write, not a create and an update.
pub fn create_indexed(
    c: &Cluster,
    name: &str,
    company_id: &str,
    kind: Kind,
    indexes: &[&str],
    now_ms: i64,
) -> DocDbResult<()> {
    if !is_legal_name(name) {
        return Err(DocDbError::IllegalName(name.to_owned()));
    }
    let (handle, handles) = handle(c, name)?;
    if handle.is_some() {
        return Err(DocDbError::Exists(name.to_owned()));
    }
    make_room(c, handles)?;
    c.docs().create_db(name)?;
    c.execute_later(
        &format!("INSERT INTO docdb_databases (name, company_id, kind, created_at, indexes, open, last_used) VALUES (?1, ?2, ?3, ?4, ?5, 1, {NEXT_USE})"),
        params![name, company_id, kind.as_str(), now_ms, serde_json::to_string(indexes).unwrap_or_default()],
    )?;
    opened(c, name, Handle::Idle);
    Ok(())
}

/// Removes the database and its documents from the cluster: the documents first, so a step
/// killed in between finds the catalogue row and deletes again (a missing one counts as gone).
pub fn drop_database(c: &Cluster, name: &str) -> DocDbResult<()> {
    if !exists(c, name)? {
        return Err(DocDbError::Missing(name.to_owned()));
    }
    c.docs().delete_db(name)?;
    c.execute("DELETE FROM docdb_databases WHERE name = ?1", [name])?;
    dropped(c, name);
    Ok(())
}

pub fn indexes(conn: &Connection, db: &str) -> DocDbResult<Vec<String>> {
    let raw: String = conn
        .query_row("SELECT indexes FROM docdb_databases WHERE name = ?1", [db], |r| r.get(0))
        .optional()?
        .ok_or_else(|| DocDbError::Missing(db.to_owned()))?;
    parse_indexes(db, &raw)
}

fn parse_indexes(db: &str, raw: &str) -> DocDbResult<Vec<String>> {
    serde_json::from_str(raw).map_err(|e| DocDbError::CorruptJson { what: format!("indexes of {db}"), source: e })
}

/// A catalogue row with its counts from the documents' side.
fn info_from_row(c: &Cluster, (name, company_id, kind, open, pinned): InfoRow) -> DocDbResult<DbInfo> {
    // A database the engine lost (or has not made yet) reports nothing rather than failing
    // the whole view.
    let counts = c.docs().counts(&name)?.unwrap_or(Counts { doc_count: 0, update_seq: 0 });
    Ok(DbInfo {
        name,
        kind: parse_kind(&kind)?,
        company_id,
        doc_count: counts.doc_count,
        update_seq: counts.update_seq,
        open,
        in_use: open && pinned,
    })
}

const INFO_COLUMNS: &str = "SELECT name, company_id, kind, open, pinned FROM docdb_databases";

type InfoRow = (String, String, String, bool, bool);

fn info_row(r: &crate::store::sql::Row) -> crate::store::sql::Result<InfoRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

/// A database's description, its counts as the documents' side reports them (no handle is
/// opened: this is the cluster's catalogue).
pub fn info(c: &Cluster, name: &str) -> DocDbResult<Option<DbInfo>> {
    let row = c.query_row(&format!("{INFO_COLUMNS} WHERE name = ?1"), [name], info_row).optional()?;
    row.map(|row| info_from_row(c, row)).transpose()
}

/// The catalogue's entry alone (whose, which kind), without asking the documents' side.
pub fn owner(conn: &Connection, name: &str) -> DocDbResult<Option<(String, Kind)>> {
    conn.query_row("SELECT company_id, kind FROM docdb_databases WHERE name = ?1", [name], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })
    .optional()?
    .map(|(company, kind)| Ok((company, parse_kind(&kind)?)))
    .transpose()
}

/// The catalogue's database names.
pub fn names(conn: &Connection) -> DocDbResult<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM docdb_databases ORDER BY name")?;
    let names = stmt.query_map([], |r| r.get(0))?.collect::<crate::store::sql::Result<_>>()?;
    Ok(names)
}

/// Every database of the cluster, open or not, by name.
pub fn list(c: &Cluster) -> DocDbResult<Vec<DbInfo>> {
    let mut stmt = c.prepare(&format!("{INFO_COLUMNS} ORDER BY name"))?;
    let rows: Vec<InfoRow> = stmt.query_map([], info_row)?.collect::<crate::store::sql::Result<_>>()?;
    rows.into_iter().map(|row| info_from_row(c, row)).collect()
}
