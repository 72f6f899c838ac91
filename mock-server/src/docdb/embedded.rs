//! The embedded adapter: documents as SQLite rows beside the catalogue, in the relational
//! store's file, so a whole rotate is one transaction. It keeps what CouchDB reports: a `_rev`
//! of `N-<md5 hex>`, an integer `update_seq`, `_local/` documents that count towards neither.
//! A database's row in the catalogue (written by `Cluster`) is its existence here; its
//! `update_seq` is a column of that row.

use crate::store::sql::{params, Connection, OptionalExtension};
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

impl Embedded<'_> {
    /// Writes a document at `rev`, as the database's next change: a write and a restore alike.
    fn store(&self, db: &str, id: &str, rev: &str, body: Map<String, Value>) -> DocDbResult<()> {
        let seq = self.bump_seq(db)?;
        self.conn.execute(
            "INSERT INTO docdb_documents (db, id, rev, seq, body) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(db, id) DO UPDATE SET rev = ?3, seq = ?4, body = ?5",
            params![db, id, rev, seq as i64, Value::Object(body).to_string()],
        )?;
        Ok(())
    }

    fn bump_seq(&self, db: &str) -> DocDbResult<u64> {
        Ok(self
            .conn
            .query_row("UPDATE docdb_databases SET update_seq = update_seq + 1 WHERE name = ?1 RETURNING update_seq", [db], |r| r.get::<_, i64>(0))
            .optional()?
            .ok_or_else(|| DocDbError::Missing(db.to_owned()))? as u64)
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
        let seq: Option<i64> = self.conn.query_row("SELECT update_seq FROM docdb_databases WHERE name = ?1", [name], |r| r.get(0)).optional()?;
        let Some(update_seq) = seq else { return Ok(None) };
        let doc_count: i64 = self.conn.query_row("SELECT COUNT(*) FROM docdb_documents WHERE db = ?1", [name], |r| r.get(0))?;
        Ok(Some(Counts { doc_count: doc_count as u64, update_seq: update_seq as u64 }))
    }

    fn put(&self, db: &str, id: &str, body: Map<String, Value>, expected_rev: Option<&str>) -> DocDbResult<String> {
        let body = strip_reserved(body);
        let current = self.get(db, id)?;
        if current.as_ref().map(|d| d.rev.as_str()) != expected_rev {
            return Err(DocDbError::Conflict(id.to_owned()));
        }
        let rev = next_rev(expected_rev, &body);
        self.store(db, id, &rev, body)?;
        Ok(rev)
    }

    fn bulk_put(&self, db: &str, writes: Vec<Write>) -> DocDbResult<Vec<DocDbResult<String>>> {
        let mut out = Vec::with_capacity(writes.len());
        for w in writes {
            out.push(match self.put(db, &w.id, w.body, w.rev.as_deref()) {
                Err(e @ (DocDbError::Store(_) | DocDbError::Missing(_))) => return Err(e),
                answer => answer,
            });
        }
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
        let rows = stmt.query_map([db], |r| Ok(RawDoc { db: db.to_owned(), id: r.get(0)?, rev: r.get(1)?, body: r.get(2)? }))?;
        Ok(rows.collect::<crate::store::sql::Result<_>>()?)
    }

    fn put_local(&self, db: &str, id: &str, body: &Value) -> DocDbResult<()> {
        self.conn.execute("INSERT INTO docdb_local_documents (db, id, body) VALUES (?1, ?2, ?3) ON CONFLICT(db, id) DO UPDATE SET body = ?3", params![db, id, body.to_string()])?;
        Ok(())
    }

    fn restore(&self, db: &str, docs: Vec<Value>) -> DocDbResult<()> {
        for doc in docs {
            let Value::Object(mut body) = doc else { return Err(DocDbError::Corrupt(format!("a document to restore into {db} is not an object"))) };
            let (Some(Value::String(id)), Some(Value::String(rev))) = (body.remove("_id"), body.remove("_rev")) else {
                return Err(DocDbError::Corrupt(format!("a document to restore into {db} lacks _id or _rev")));
            };
            self.store(db, &id, &rev, body)?;
        }
        Ok(())
    }

    /// The embedded model runs no replications: it has no replicator database.
    fn replications_naming(&self, _db: &str) -> DocDbResult<Vec<String>> {
        Ok(Vec::new())
    }

    fn get_local(&self, db: &str, id: &str) -> DocDbResult<Option<Value>> {
        self.conn
            .query_row("SELECT body FROM docdb_local_documents WHERE db = ?1 AND id = ?2", params![db, id], |r| r.get::<_, String>(0))
            .optional()?
            .map(|b| serde_json::from_str(&b).map_err(|e| DocDbError::CorruptJson { what: format!("local document {id} of {db}"), source: e }))
            .transpose()
    }
}
