//! The document side's port: where a database's documents live and how they are read and
//! written. Two adapters serve it, the embedded model (`embedded`, SQLite) and a CouchDB-protocol
//! engine (`on_engine`, `DOCDB_URL`); one conformance suite holds both to the same answers
//! (mock-server/tests/integration/docdb_conformance.rs). The catalogue (which database is whose, its kind,
//! its modelled handle) stays in the relational store whichever adapter holds the documents.
//!
//! No transaction spans the relational store and an engine, so creating and deleting are
//! idempotent: a step resumed after a crash finds its own half-done work and goes on.

use serde_json::{Map, Value};

use super::{DocDbError, DocDbResult};

/// What a database reports of itself (CouchDB's `GET /{db}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub doc_count: u64,
    pub update_seq: u64,
}

/// One write of a `bulk_put`: a document, and the revision it replaces (`None`: a new document).
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    pub id: String,
    pub body: Map<String, Value>,
    pub rev: Option<String>,
}

pub trait Documents {
    /// Creates the database; one that exists already counts as created (a resumed step).
    fn create_db(&self, name: &str) -> DocDbResult<()>;
    /// Deletes the database and its documents; a missing one counts as deleted.
    fn delete_db(&self, name: &str) -> DocDbResult<()>;
    /// `None` when the database does not exist.
    fn counts(&self, name: &str) -> DocDbResult<Option<Counts>>;
    /// Writes a document; `expected_rev` must name its current revision (`None` for a new one),
    /// otherwise `Conflict`. Returns the new revision.
    fn put(&self, db: &str, id: &str, body: Map<String, Value>, expected_rev: Option<&str>) -> DocDbResult<String>;
    /// Many writes at once (CouchDB's `_bulk_docs`): each answers its revision or its own error.
    fn bulk_put(&self, db: &str, writes: Vec<Write>) -> DocDbResult<Vec<DocDbResult<String>>>;
    /// `None` when the database has no such (live) document.
    fn get(&self, db: &str, id: &str) -> DocDbResult<Option<super::Doc>>;
    /// Every live document by id, design documents left out, bodies as JSON text.
    fn all_docs(&self, db: &str) -> DocDbResult<Vec<RawDoc>>;
    /// A `_local/` document (replicated by nobody, counted by nothing): written whole.
    fn put_local(&self, db: &str, id: &str, body: &Value) -> DocDbResult<()>;
    fn get_local(&self, db: &str, id: &str) -> DocDbResult<Option<Value>>;
    /// Writes documents as they were, each with its own `_rev` (CouchDB's `_bulk_docs` with
    /// `new_edits: false`): a restore from a snapshot gives back the same revisions.
    fn restore(&self, db: &str, docs: Vec<Value>) -> DocDbResult<()>;
    /// The ids of the replication documents in the engine's `_replicator` database whose source
    /// or target is `db` (after a drop, the replicator database must be clean of it).
    fn replications_naming(&self, db: &str) -> DocDbResult<Vec<String>>;
}

/// Whether a replication endpoint (a URL, a bare name, or CouchDB's `{url}` object) is `db`.
pub fn endpoint_names(endpoint: &Value, db: &str) -> bool {
    let url = endpoint.get("url").unwrap_or(endpoint).as_str().unwrap_or("");
    let last = url.split('?').next().unwrap_or("").trim_end_matches('/').rsplit('/').next().unwrap_or("");
    super::percent_decoded(last) == db
}

#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub id: String,
    pub rev: String,
    pub body: Map<String, Value>,
}

impl Doc {
    /// The document as CouchDB returns it: the body with `_id` and `_rev`.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("_id".into(), Value::String(self.id.clone()));
        out.insert("_rev".into(), Value::String(self.rev.clone()));
        for (k, v) in &self.body {
            out.insert(k.clone(), v.clone());
        }
        Value::Object(out)
    }
}

/// The body without CouchDB's reserved fields.
pub(crate) fn strip_reserved(mut body: Map<String, Value>) -> Map<String, Value> {
    body.remove("_id");
    body.remove("_rev");
    body
}

fn parse_body(db: &str, id: &str, body: &str) -> DocDbResult<Map<String, Value>> {
    serde_json::from_str(body)
        .map_err(|e| DocDbError::CorruptJson { what: format!("document {id} of {db}"), source: e })
}

/// A document as stored: its body still JSON text. Reading rows is all a caller holding the
/// store lock needs to do; parsing them (`RawDoc::parse`) can wait until the lock is released.
#[derive(Debug, Clone, PartialEq)]
pub struct RawDoc {
    pub db: String,
    pub id: String,
    pub rev: String,
    pub body: String,
}

impl RawDoc {
    /// The document, or `Corrupt` when its body is not a JSON object.
    pub fn parse(self) -> DocDbResult<Doc> {
        Ok(Doc { body: parse_body(&self.db, &self.id, &self.body)?, id: self.id, rev: self.rev })
    }
}
