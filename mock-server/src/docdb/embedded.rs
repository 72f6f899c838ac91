//! The embedded adapter: documents as SQLite rows beside the catalogue, in the relational
//! store's file, so a whole rotate is one transaction. It keeps what CouchDB reports: a `_rev`
//! of `N-<md5 hex>`, an integer `update_seq`, `_local/` documents that count towards neither.
//! A database's row in the catalogue (written by `Cluster`) is its existence here; its
//! `update_seq` is a column of that row.

use std::collections::HashMap;

use crate::store::sql::{params, Connection, OptionalExtension, Value as SqlValue};
use md5::{Digest, Md5};
use serde_json::{Map, Value};

use super::documents::{Counts, Documents, Write};
use super::{strip_reserved, Doc, DocDbError, DocDbResult, RawDoc};

pub struct Embedded<'c> {
    pub conn: &'c Connection<'c>,
}

/// `N-<md5 hex>` of the body and the previous revision.
pub fn next_rev(previous: Option<&str>, body: &Map<String, Value>) -> String {
    let generation = previous.and_then(|r| r.split('-').next()?.parse::<u64>().ok()).unwrap_or(0) + 1;
    let mut hasher = Md5::new();
    hasher.update(previous.unwrap_or("").as_bytes());
    hasher.update(Value::Object(body.clone()).to_string().as_bytes());
    format!("{generation}-{}", hex::encode(hasher.finalize()))
}

/// Rows a multi-row statement carries at most; a batch goes as chunks of powers of two up to
/// it, so each statement's text is one of a few (the adapters cache them prepared).
const CHUNK: usize = 128;

/// `n` split into powers of two of at most [`CHUNK`], largest first.
fn chunks(mut n: usize) -> Vec<usize> {
    let mut out = Vec::new();
    while n > 0 {
        let size = if n >= CHUNK { CHUNK } else { 1 << (usize::BITS - 1 - n.leading_zeros()) };
        out.push(size);
        n -= size;
    }
    out
}

impl Embedded<'_> {
    /// The current revisions of `ids` in `db`, in one statement per [`CHUNK`] ids (the last
    /// chunk padded to a power of two with its last id).
    fn revisions(&self, db: &str, ids: &[&str]) -> DocDbResult<HashMap<String, String>> {
        let mut out = HashMap::new();
        for part in ids.chunks(CHUNK) {
            let size = part.len().next_power_of_two();
            let list = (2..size + 2).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
            let mut params = vec![SqlValue::Text(db.to_owned())];
            params.extend((0..size).map(|i| SqlValue::Text(part[i.min(part.len() - 1)].to_owned())));
            for row in self
                .conn
                .fetch(&format!("SELECT id, rev FROM docdb_documents WHERE db = ?1 AND id IN ({list})"), &params)?
            {
                out.insert(row.get(0)?, row.get(1)?);
            }
        }
        Ok(out)
    }

    /// Writes documents at their revisions, each as the database's next change (a write and a
    /// restore alike): the update sequence moved once for all of them, the rows written in
    /// chunks, sent with the transaction's next statement.
    fn store(&self, db: &str, docs: Vec<(String, String, Map<String, Value>)>) -> DocDbResult<()> {
        if docs.is_empty() {
            return Ok(());
        }
        // Every write is sent with the transaction's next statement: the sequence moved by the
        // count, each row's sequence its place below the new one (the database exists: every
        // access has opened its handle first).
        let count = docs.len() as i64;
        self.conn.run_later(
            "UPDATE docdb_databases SET update_seq = update_seq + ?2 WHERE name = ?1",
            &[SqlValue::Text(db.to_owned()), SqlValue::Int(count)],
        )?;
        // A document written twice keeps its last write (one statement may not touch a row twice).
        let mut latest: HashMap<String, (i64, String, Map<String, Value>)> = HashMap::new();
        for (place, (id, rev, body)) in (1 - count..).zip(docs) {
            latest.insert(id, (place, rev, body));
        }
        let mut rows: Vec<_> = latest.into_iter().collect();
        rows.sort_by_key(|(_, (place, _, _))| *place);
        let mut rows = rows.into_iter();
        for size in chunks(rows.len()) {
            let mut params = Vec::with_capacity(size * 4 + 1);
            params.push(SqlValue::Text(db.to_owned()));
            for (id, (place, rev, body)) in rows.by_ref().take(size) {
                params.extend([
                    SqlValue::Text(id),
                    SqlValue::Text(rev),
                    SqlValue::Int(place),
                    SqlValue::Text(Value::Object(body).to_string()),
                ]);
            }
            let values = (0..size)
                .map(|r| {
                    let p = |c: usize| r * 4 + c + 1;
                    format!(
                        "(?1, ?{}, ?{}, (SELECT update_seq FROM docdb_databases WHERE name = ?1) + ?{}, ?{})",
                        p(1),
                        p(2),
                        p(3),
                        p(4)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            self.conn.run_later(
                &format!(
                    "INSERT INTO docdb_documents (db, id, rev, seq, body) VALUES {values} ON CONFLICT(db, id) DO UPDATE SET rev = excluded.rev, seq = excluded.seq, body = excluded.body"
                ),
                &params,
            )?;
        }
        Ok(())
    }
}

impl Documents for Embedded<'_> {
    fn create_db(&self, _name: &str) -> DocDbResult<()> {
        Ok(())
    }

    fn delete_db(&self, name: &str) -> DocDbResult<()> {
        self.conn.execute("DELETE FROM docdb_documents WHERE db = ?1", [name])?;
        self.conn.execute("DELETE FROM docdb_local_documents WHERE db = ?1", [name])?;
        Ok(())
    }

    fn counts(&self, name: &str) -> DocDbResult<Option<Counts>> {
        let seq: Option<i64> = self
            .conn
            .query_row("SELECT update_seq FROM docdb_databases WHERE name = ?1", [name], |r| r.get(0))
            .optional()?;
        let Some(update_seq) = seq else { return Ok(None) };
        let doc_count: i64 =
            self.conn.query_row("SELECT COUNT(*) FROM docdb_documents WHERE db = ?1", [name], |r| r.get(0))?;
        Ok(Some(Counts { doc_count: doc_count as u64, update_seq: update_seq as u64 }))
    }

    fn put(&self, db: &str, id: &str, body: Map<String, Value>, expected_rev: Option<&str>) -> DocDbResult<String> {
        let write = Write { id: id.to_owned(), body, rev: expected_rev.map(str::to_owned) };
        self.bulk_put(db, vec![write])?.pop().unwrap_or_else(|| Err(DocDbError::Conflict(id.to_owned())))
    }

    /// Each write checked against the revision before it (an earlier write of the same batch
    /// included, as CouchDB's `_bulk_docs` does), then all stored at once.
    fn bulk_put(&self, db: &str, writes: Vec<Write>) -> DocDbResult<Vec<DocDbResult<String>>> {
        let ids: Vec<&str> = writes.iter().map(|w| w.id.as_str()).collect();
        let mut current = self.revisions(db, &ids)?;
        let mut out = Vec::with_capacity(writes.len());
        let mut docs = Vec::with_capacity(writes.len());
        for w in writes {
            if current.get(&w.id).map(String::as_str) != w.rev.as_deref() {
                out.push(Err(DocDbError::Conflict(w.id)));
                continue;
            }
            let body = strip_reserved(w.body);
            let rev = next_rev(w.rev.as_deref(), &body);
            current.insert(w.id.clone(), rev.clone());
            out.push(Ok(rev.clone()));
            docs.push((w.id, rev, body));
        }
        self.store(db, docs)?;
        Ok(out)
    }

    fn get(&self, db: &str, id: &str) -> DocDbResult<Option<Doc>> {
        self.conn
            .query_row("SELECT id, rev, body FROM docdb_documents WHERE db = ?1 AND id = ?2", params![db, id], |r| {
                Ok(RawDoc { db: db.to_owned(), id: r.get(0)?, rev: r.get(1)?, body: r.get(2)? })
            })
            .optional()?
            .map(RawDoc::parse)
            .transpose()
    }

    fn all_docs(&self, db: &str) -> DocDbResult<Vec<RawDoc>> {
        let mut stmt = self.conn.prepare("SELECT id, rev, body FROM docdb_documents WHERE db = ?1 ORDER BY id")?;
        let rows =
            stmt.query_map([db], |r| Ok(RawDoc { db: db.to_owned(), id: r.get(0)?, rev: r.get(1)?, body: r.get(2)? }))?;
        Ok(rows.collect::<crate::store::sql::Result<_>>()?)
    }

    fn put_local(&self, db: &str, id: &str, body: &Value) -> DocDbResult<()> {
        self.conn
            .execute_later("INSERT INTO docdb_local_documents (db, id, body) VALUES (?1, ?2, ?3) ON CONFLICT(db, id) DO UPDATE SET body = ?3", params![db, id, body.to_string()])?;
        Ok(())
    }

    fn restore(&self, db: &str, docs: Vec<Value>) -> DocDbResult<()> {
        let mut rows = Vec::with_capacity(docs.len());
        for doc in docs {
            let Value::Object(mut body) = doc else {
                return Err(DocDbError::Corrupt(format!("a document to restore into {db} is not an object")));
            };
            let (Some(Value::String(id)), Some(Value::String(rev))) = (body.remove("_id"), body.remove("_rev")) else {
                return Err(DocDbError::Corrupt(format!("a document to restore into {db} lacks _id or _rev")));
            };
            rows.push((id, rev, body));
        }
        self.store(db, rows)
    }

    /// The embedded model runs no replications: it has no replicator database.
    fn replications_naming(&self, _db: &str) -> DocDbResult<Vec<String>> {
        Ok(Vec::new())
    }

    fn get_local(&self, db: &str, id: &str) -> DocDbResult<Option<Value>> {
        self.conn
            .query_row("SELECT body FROM docdb_local_documents WHERE db = ?1 AND id = ?2", params![db, id], |r| {
                r.get::<_, String>(0)
            })
            .optional()?
            .map(|b| {
                serde_json::from_str(&b)
                    .map_err(|e| DocDbError::CorruptJson { what: format!("local document {id} of {db}"), source: e })
            })
            .transpose()
    }
}
