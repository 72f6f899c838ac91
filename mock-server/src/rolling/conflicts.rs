//! Conflict reviews (`CONFLICTS_ENABLED`): a write based on a superseded revision is kept (the
//! last write wins, as a replication merge would) and the revision it replaced is recorded for an
//! operator to review, instead of the write being refused. No write is lost either way.

use crate::docdb::Cluster;
use crate::store::sql::{params, Connection};
use serde_json::{Map, Value};

use super::RollingResult;
use crate::docdb::{self, DocDbError};

#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub rev: String,
    /// Set when the write replaced a revision it was not based on.
    pub conflict_with: Option<String>,
}

/// Which document of which tenant.
#[derive(Debug, Clone, Copy)]
pub struct DocRef<'a> {
    pub company_id: &'a str,
    pub db: &'a str,
    pub id: &'a str,
}

/// Writes `body`; on a revision conflict, with `conflicts_enabled`, keeps the write and records
/// the review, otherwise returns the conflict.
pub fn write(
    conn: &Cluster,
    doc: DocRef,
    body: Map<String, Value>,
    rev: Option<&str>,
    conflicts_enabled: bool,
    now_ms: i64,
) -> RollingResult<Written> {
    let DocRef { company_id, db, id } = doc;
    match docdb::put(conn, db, id, body.clone(), rev) {
        Ok(rev) => Ok(Written { rev, conflict_with: None }),
        Err(DocDbError::Conflict(_)) if conflicts_enabled => {
            let current = docdb::get(conn, db, id)?.map(|d| d.rev);
            let new_rev = docdb::put(conn, db, id, body, current.as_deref())?;
            let losing = current.clone().map(|r| vec![r]).unwrap_or_default();
            conn.execute(
                "INSERT INTO conflict_reviews (company_id, db_name, doc_id, winning_rev, losing_revs, status, created_at) VALUES (?1, ?2, ?3, ?4, ?5, 'open', ?6)",
                params![company_id, db, id, new_rev, serde_json::to_string(&losing).unwrap_or_default(), now_ms],
            )?;
            Ok(Written { rev: new_rev, conflict_with: current })
        }
        Err(e) => Err(e.into()),
    }
}

pub fn open_count(conn: &Connection, company_id: &str) -> RollingResult<u64> {
    Ok(conn.query_row(
        "SELECT COUNT(*) FROM conflict_reviews WHERE company_id = ?1 AND status = 'open'",
        [company_id],
        |r| r.get::<_, i64>(0),
    )? as u64)
}
