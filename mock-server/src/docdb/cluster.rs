//! `Cluster`: the catalogue and the documents put together, as the rolling machine and the views
//! use them. Every document call opens its database's handle first (`handles::use_db`), then goes
//! to the documents' side: the embedded model or the engine.

use std::cell::RefCell;

use serde_json::{Map, Value};

use super::documents::{Documents, Write};
use super::handles::{use_db, Known};
use super::{embedded, engine, on_engine, Doc, DocDbResult, RawDoc};
use crate::store::sql::Connection;

/// The document cluster as the rolling machine and the views use it: the catalogue in the
/// relational store (the connection, which a `Cluster` derefs to, so the machine's relational
/// work reads as before) and the documents behind the port.
pub struct Cluster<'a> {
    conn: &'a Connection<'a>,
    docs: Box<dyn Documents + 'a>,
    pub(super) known: RefCell<Known>,
}

impl<'a> Cluster<'a> {
    /// The engine's documents when there is one (`DOCDB_URL`), the embedded model's otherwise.
    pub fn new(conn: &'a Connection<'a>, engine: Option<&'a engine::Engine>) -> Cluster<'a> {
        let docs: Box<dyn Documents + 'a> = match engine {
            Some(engine) => Box::new(on_engine::OnEngine { engine }),
            None => Box::new(embedded::Embedded { conn }),
        };
        Cluster { conn, docs, known: RefCell::default() }
    }

    pub fn embedded(conn: &'a Connection<'a>) -> Cluster<'a> {
        Cluster::new(conn, None)
    }

    pub fn docs(&self) -> &dyn Documents {
        &*self.docs
    }
}

impl<'a> std::ops::Deref for Cluster<'a> {
    type Target = Connection<'a>;

    fn deref(&self) -> &Connection<'a> {
        self.conn
    }
}

crate::holds_a_connection!(Cluster<'_>);

/// Writes a document; `expected_rev` must name the current revision of an existing document
/// (CouchDB's optimistic concurrency). Returns the new revision.
pub fn put(
    c: &Cluster,
    db: &str,
    id: &str,
    body: Map<String, Value>,
    expected_rev: Option<&str>,
) -> DocDbResult<String> {
    use_db(c, db)?;
    c.docs.put(db, id, body, expected_rev)
}

/// Many writes in one request (`_bulk_docs`), each answered on its own.
pub fn bulk_put(c: &Cluster, db: &str, writes: Vec<Write>) -> DocDbResult<Vec<DocDbResult<String>>> {
    use_db(c, db)?;
    c.docs.bulk_put(db, writes)
}

/// One document (`None` when the database has no such document).
pub fn get(c: &Cluster, db: &str, id: &str) -> DocDbResult<Option<Doc>> {
    use_db(c, db)?;
    c.docs.get(db, id)
}

/// Every document, by id, as stored (parsing can wait until the store lock is released).
pub fn all_docs_raw(c: &Cluster, db: &str) -> DocDbResult<Vec<RawDoc>> {
    use_db(c, db)?;
    c.docs.all_docs(db)
}

/// Every document, by id.
pub fn all_docs(c: &Cluster, db: &str) -> DocDbResult<Vec<Doc>> {
    all_docs_raw(c, db)?.into_iter().map(RawDoc::parse).collect()
}

pub fn put_local(c: &Cluster, db: &str, id: &str, body: &Value) -> DocDbResult<()> {
    use_db(c, db)?;
    c.docs.put_local(db, id, body)
}

/// Writes `docs` into `db` with their own revisions (a restore).
pub fn restore_docs(c: &Cluster, db: &str, docs: Vec<Value>) -> DocDbResult<()> {
    use_db(c, db)?;
    c.docs.restore(db, docs)
}

/// The engine's replication documents naming `db` (a dropped database too: no handle needed).
pub fn replications_naming(c: &Cluster, db: &str) -> DocDbResult<Vec<String>> {
    c.docs.replications_naming(db)
}

/// Whether the documents' side still holds `db` (asked of the engine, not the catalogue).
pub fn on_documents_side(c: &Cluster, db: &str) -> DocDbResult<bool> {
    Ok(c.docs.counts(db)?.is_some())
}

pub fn get_local(c: &Cluster, db: &str, id: &str) -> DocDbResult<Option<Value>> {
    use_db(c, db)?;
    c.docs.get_local(db, id)
}
