//! The document-database cluster (CouchDB-like): its catalogue (which database is whose, of
//! which kind) and, behind the `documents::Documents` port, the documents themselves: the
//! embedded model (`embedded`) or a CouchDB-protocol engine (`on_engine`, `DOCDB_URL`).
//! `Cluster` puts the two together. The cluster's `max_dbs_open` is modelled as CouchDB means it:
//! a bound on open *handles*, not on databases. Every access opens a database's handle; at the
//! bound the least recently used idle handle is closed (an LRU); `all_dbs_active` only when every
//! open handle is in use. "In use" here is a pin: the rotate keeps each rolling tenant's CORE and
//! today's and tomorrow's day databases open, because devices replicate them continuously.
//! Its tables share the SQLite file with the relational store (the embedded adapter's documents
//! too, so one transaction covers a tenant's whole rotate there), but they are not part of the
//! drizzle migrations.

pub mod access;
pub mod cors;
pub mod documents;
pub mod embedded;
pub mod engine;
pub mod feeds;
pub mod headroom;
pub mod hub;
pub mod naming;
pub mod on_engine;
pub mod seed;
pub mod strict_json;

/// A percent-encoded URL part (a path segment, a user name) as text.
pub fn percent_decoded(part: &str) -> String {
    percent_encoding::percent_decode_str(part).decode_utf8_lossy().into_owned()
}

use std::cell::RefCell;
use std::collections::HashMap;

use crate::store::sql::{in_list, params, Connection, OptionalExtension, ToValue};
use crate::store::StoreError;
use documents::{Counts, Documents, Write};
use serde::Serialize;
use serde_json::{Map, Value};

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
/// runbook says the value "must not be changed", since every database name carries it. Another
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Core,
    Legacy,
    Day,
    Archive,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Core => "core",
            Kind::Legacy => "legacy",
            Kind::Day => "day",
            Kind::Archive => "archive",
        }
    }

    /// An unknown kind is a corrupt row, reported, never guessed.
    fn parse(s: &str) -> DocDbResult<Kind> {
        match s {
            "core" => Ok(Kind::Core),
            "legacy" => Ok(Kind::Legacy),
            "day" => Ok(Kind::Day),
            "archive" => Ok(Kind::Archive),
            other => Err(DocDbError::Corrupt(format!("unknown database kind {other:?}"))),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DocDbError {
    #[error("illegal_database_name: {0:?} (lowercase letter first, then a-z 0-9 _ $ ( ) + - /)")]
    IllegalName(String),
    #[error("file_exists: database {0} already exists")]
    Exists(String),
    #[error("not_found: no database {0}")]
    Missing(String),
    #[error("conflict: document {0} has a newer revision")]
    Conflict(String),
    /// Opening one more handle would exceed `max_dbs_open` and every open handle is in use.
    #[error("all_dbs_active: {open} databases open and all in use, max_dbs_open is {max}")]
    AllDbsActive { open: usize, max: usize },
    /// A stored row that does not read back (an unknown kind): reported, not guessed.
    #[error("corrupt document-database row: {0}")]
    Corrupt(String),
    /// A stored JSON text that does not parse.
    #[error("corrupt document-database row: {what}")]
    CorruptJson { what: String, source: serde_json::Error },
    /// Another `DB_PREFIX` than the one the store's databases were made with.
    #[error(
        "DB_PREFIX is {configured:?}, but this store's databases were made with DB_PREFIX {recorded:?}: the prefix must not change on existing data (start with DB_PREFIX={recorded}, or give a new DATA_DIR)"
    )]
    PrefixChanged { configured: String, recorded: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The engine answered what the port does not expect (its status and error, described).
    #[error("{0}")]
    Engine(String),
    /// The engine could not be reached, or its answer not read.
    #[error("the document engine did not answer")]
    EngineUnreachable(#[source] reqwest::Error),
    /// The bridge runtime could not run an engine request.
    #[error(transparent)]
    Bridge(#[from] engine::BridgeError),
}

crate::equal_when_told!(DocDbError);

impl From<crate::store::sql::Error> for DocDbError {
    fn from(e: crate::store::sql::Error) -> Self {
        DocDbError::Store(StoreError(e))
    }
}

pub type DocDbResult<T> = Result<T, DocDbError>;

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

fn count(conn: &Connection, sql: &str) -> DocDbResult<usize> {
    Ok(conn.query_row(sql, [], |r| r.get::<_, i64>(0))? as usize)
}

/// Open handles (what `max_dbs_open` bounds).
pub fn open_count(conn: &Connection) -> DocDbResult<usize> {
    count(conn, "SELECT open_handles FROM docdb_cluster WHERE id = 1")
}

/// Open handles in use (pinned): the ones the LRU may not close.
pub fn in_use_count(conn: &Connection) -> DocDbResult<usize> {
    count(conn, "SELECT COUNT(*) FROM docdb_databases WHERE open = 1 AND pinned = 1")
}

/// Databases on the cluster, open or not.
pub fn existing_count(conn: &Connection) -> DocDbResult<usize> {
    count(conn, "SELECT COUNT(*) FROM docdb_databases")
}

/// The open handles against the bound (`max_dbs_open`).
#[derive(Debug, Clone, Copy)]
struct Handles {
    open: usize,
    max: usize,
}

/// What a cluster knows of the handles, read once in its transaction (the store's lock held
/// alone, where only it opens or closes handles) and kept up to date as it changes them, so a
/// second use of a database, or a create after a read, needs no read (a round trip each on
/// PostgreSQL). A tenant's failed step is rolled back to its savepoint: its cluster with it.
/// The bound is read with the first handle: `set_max_open` is for the next cluster.
#[derive(Default)]
struct Known {
    /// Per database: `None` absent, else `(open, pinned)`.
    dbs: HashMap<String, Option<(bool, bool)>>,
    handles: Option<Handles>,
    /// The least recently used idle handles, in that order, read ahead by the first close
    /// ([`EVICTION_READ_AHEAD`] of them) and kept true as this cluster uses, pins or closes
    /// databases; `None` until read, or once a release of pins may have reordered them.
    evictable: Option<std::collections::VecDeque<String>>,
}

/// How many idle handles the first close at the bound reads: at the bound a tenant's rotate opens
/// up to four (its catalogue, CORE, today, tomorrow), each closing one, and on PostgreSQL each read
/// walks the LRU index past every handle closed since it was last vacuumed.
const EVICTION_READ_AHEAD: usize = 8;

impl Known {
    /// `name` was used, pinned or closed by this cluster: it is not the least recently used.
    fn touched(&mut self, name: &str) {
        if let Some(queue) = self.evictable.as_mut() {
            queue.retain(|n| n != name);
        }
    }
}

/// The handles of `names` and the cluster's count against the bound, read in one statement
/// unless all are known.
fn read_handles(c: &Cluster, names: &[&str]) -> DocDbResult<Handles> {
    {
        let known = c.known.borrow();
        if let Some(handles) = known.handles.filter(|_| names.iter().all(|n| known.dbs.contains_key(*n))) {
            return Ok(handles);
        }
    }
    let params: Vec<_> = names.iter().map(|n| n.to_value()).collect();
    let join = if names.is_empty() { "1 = 0".to_owned() } else { format!("d.name IN ({})", in_list(names.len())) };
    let rows =
        c.fetch(&format!("SELECT c.open_handles, c.max_open, d.name, d.open, d.pinned FROM docdb_cluster c LEFT JOIN docdb_databases d ON {join} WHERE c.id = 1"), &params)?;
    let mut known = c.known.borrow_mut();
    for name in names {
        known.dbs.insert((*name).to_owned(), None);
    }
    // A cluster never installed has no room: every open is refused as `all_dbs_active`.
    let mut handles = Handles { open: 0, max: 0 };
    for r in &rows {
        handles = Handles { open: r.get::<_, i64>(0)? as usize, max: r.get::<_, i64>(1)? as usize };
        if let Some(name) = r.get::<_, Option<String>>(2)? {
            known.dbs.insert(name, Some((r.get(3)?, r.get(4)?)));
        }
    }
    known.handles = Some(handles);
    Ok(handles)
}

/// A database's handle as known: `None` absent, else `(open, pinned)`.
fn handle(c: &Cluster, name: &str) -> DocDbResult<(Option<(bool, bool)>, Handles)> {
    let handles = read_handles(c, &[name])?;
    Ok((c.known.borrow().dbs.get(name).copied().flatten(), handles))
}

/// Records a handle opened (`+1`) or closed (`-1`), and the database's new state.
fn opened(c: &Cluster, name: &str, state: Option<(bool, bool)>, change: isize) {
    let mut known = c.known.borrow_mut();
    known.touched(name);
    known.dbs.insert(name.to_owned(), state);
    if let Some(h) = known.handles.as_mut() {
        h.open = h.open.saturating_add_signed(change);
    }
}

/// Makes room for one more handle: under the bound nothing to do, at it the least recently used
/// idle handle is closed (over a lowered bound, as many as it takes), and with every handle in
/// use the answer is `all_dbs_active`.
fn make_room(c: &Cluster, Handles { mut open, max }: Handles) -> DocDbResult<()> {
    while open >= max {
        let Some(name) = least_recently_used(c)? else { return Err(DocDbError::AllDbsActive { open, max }) };
        c.execute_later("UPDATE docdb_databases SET open = 0 WHERE name = ?1", [&name])?;
        opened(c, &name, Some((false, false)), -1);
        open -= 1;
    }
    Ok(())
}

/// The least recently used idle handle, from the cluster's read-ahead (read again once used up).
fn least_recently_used(c: &Cluster) -> DocDbResult<Option<String>> {
    if let Some(name) = c.known.borrow_mut().evictable.as_mut().and_then(|q| q.pop_front()) {
        return Ok(Some(name));
    }
    let mut stmt =
        c.prepare("SELECT name FROM docdb_databases WHERE open = 1 AND pinned = 0 ORDER BY last_used LIMIT ?1")?;
    let mut queue = stmt
        .query_map([EVICTION_READ_AHEAD as i64], |r| r.get(0))?
        .collect::<crate::store::sql::Result<std::collections::VecDeque<String>>>()?;
    let first = queue.pop_front();
    c.known.borrow_mut().evictable = Some(queue);
    Ok(first)
}

/// A use's place in the LRU order: one past the latest (a counter, not a clock: accesses within
/// one millisecond still order), taken inside the statement that records the use.
const NEXT_USE: &str = "(SELECT COALESCE(MAX(last_used), 0) + 1 FROM docdb_databases)";

/// Opens the database's handle (or marks an open one used): every access goes through here.
/// A handle in use is never closed, so its recency is not recorded (reads stay reads).
fn use_db(c: &Cluster, name: &str) -> DocDbResult<()> {
    match handle(c, name)? {
        (None, _) => Err(DocDbError::Missing(name.to_owned())),
        (Some((true, true)), _) => Ok(()),
        (Some((true, false)), _) => {
            c.known.borrow_mut().touched(name);
            Ok(c.execute_later(&format!("UPDATE docdb_databases SET last_used = {NEXT_USE} WHERE name = ?1"), [name])?)
        }
        (Some((false, pinned)), handles) => {
            make_room(c, handles)?;
            c.execute_later(
                &format!("UPDATE docdb_databases SET open = 1, last_used = {NEXT_USE} WHERE name = ?1"),
                [name],
            )?;
            opened(c, name, Some((true, pinned)), 1);
            Ok(())
        }
    }
}

/// Keeps exactly `names` of the tenant's databases in use (opening them), releasing its other
/// pins: the rotate's prewarm (CORE, today, tomorrow).
pub fn pin_only(c: &Cluster, company_id: &str, names: &[&str]) -> DocDbResult<()> {
    // Their handles read together (unless known): the open ones pinned first, as they are (so
    // opening the others cannot close them), then the closed ones opened and pinned.
    read_handles(c, names)?;
    let handles: Vec<(&str, Option<(bool, bool)>)> =
        names.iter().map(|n| (*n, c.known.borrow().dbs.get(*n).copied().flatten())).collect();
    if let Some((missing, _)) = handles.iter().find(|(_, h)| h.is_none()) {
        return Err(DocDbError::Missing((*missing).to_owned()));
    }
    c.execute_later("UPDATE docdb_databases SET pinned = 0 WHERE company_id = ?1 AND pinned = 1", [company_id])?;
    // The tenant's other pins are released: what is known of pins is not any more, nor which
    // idle handles are the least recently used.
    {
        let mut known = c.known.borrow_mut();
        known.dbs.retain(|_, h| !matches!(h, Some((_, true))));
        known.evictable = None;
    }
    let open: Vec<_> =
        handles.iter().filter(|(_, h)| h.is_some_and(|(open, _)| open)).map(|(n, _)| n.to_value()).collect();
    if !open.is_empty() {
        c.run_later(
            &format!(
                "UPDATE docdb_databases SET pinned = 1, last_used = {NEXT_USE} WHERE name IN ({})",
                in_list(open.len())
            ),
            &open,
        )?;
        for (name, _) in handles.iter().filter(|(_, h)| h.is_some_and(|(open, _)| open)) {
            let mut known = c.known.borrow_mut();
            known.touched(name);
            known.dbs.insert((*name).to_owned(), Some((true, true)));
        }
    }
    for (name, _) in handles.iter().filter(|(_, h)| h.is_some_and(|(open, _)| !open)) {
        c.known.borrow_mut().dbs.insert((*name).to_owned(), Some((false, false)));
        use_db(c, name)?;
        c.execute_later("UPDATE docdb_databases SET pinned = 1 WHERE name = ?1", [name])?;
        c.known.borrow_mut().dbs.insert((*name).to_owned(), Some((true, true)));
    }
    Ok(())
}

/// Which of `names` exist, in one statement (none when the cluster knows them all already);
/// what it reads spares the creates and uses that follow their own reads.
pub fn existing(c: &Cluster, names: &[&str]) -> DocDbResult<Vec<String>> {
    read_handles(c, names)?;
    let known = c.known.borrow();
    Ok(names.iter().filter(|n| known.dbs.get(**n).is_some_and(Option::is_some)).map(|n| (*n).to_owned()).collect())
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
    c.docs.create_db(name)?;
    c.execute_later(
        &format!("INSERT INTO docdb_databases (name, company_id, kind, created_at, indexes, open, last_used) VALUES (?1, ?2, ?3, ?4, ?5, 1, {NEXT_USE})"),
        params![name, company_id, kind.as_str(), now_ms, serde_json::to_string(indexes).unwrap_or_default()],
    )?;
    opened(c, name, Some((true, false)), 1);
    Ok(())
}

/// Removes the database and its documents from the cluster: the documents first, so a step
/// killed in between finds the catalogue row and deletes again (a missing one counts as gone).
pub fn drop_database(c: &Cluster, name: &str) -> DocDbResult<()> {
    if !exists(c, name)? {
        return Err(DocDbError::Missing(name.to_owned()));
    }
    c.docs.delete_db(name)?;
    c.execute("DELETE FROM docdb_databases WHERE name = ?1", [name])?;
    // Whether its handle was open is not known here: the count is read again when needed.
    let mut known = c.known.borrow_mut();
    known.touched(name);
    known.dbs.remove(name);
    known.handles = None;
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

const INFO_COLUMNS: &str = "SELECT name, company_id, kind, open, pinned FROM docdb_databases";

type InfoRow = (String, String, String, bool, bool);

fn info_row(r: &crate::store::sql::Row) -> crate::store::sql::Result<InfoRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

/// The document cluster as the rolling machine and the views use it: the catalogue in the
/// relational store (the connection, which a `Cluster` derefs to, so the machine's relational
/// work reads as before) and the documents behind the port.
pub struct Cluster<'a> {
    conn: &'a Connection<'a>,
    docs: Box<dyn Documents + 'a>,
    known: RefCell<Known>,
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

    fn info_from_row(&self, (name, company_id, kind, open, pinned): InfoRow) -> DocDbResult<DbInfo> {
        // A database the engine lost (or has not made yet) reports nothing rather than failing
        // the whole view.
        let counts = self.docs.counts(&name)?.unwrap_or(Counts { doc_count: 0, update_seq: 0 });
        Ok(DbInfo {
            name,
            kind: Kind::parse(&kind)?,
            company_id,
            doc_count: counts.doc_count,
            update_seq: counts.update_seq,
            open,
            in_use: open && pinned,
        })
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

/// A database's description, its counts as the documents' side reports them (no handle is
/// opened: this is the cluster's catalogue).
pub fn info(c: &Cluster, name: &str) -> DocDbResult<Option<DbInfo>> {
    let row = c.query_row(&format!("{INFO_COLUMNS} WHERE name = ?1"), [name], info_row).optional()?;
    row.map(|row| c.info_from_row(row)).transpose()
}

/// The catalogue's entry alone (whose, which kind), without asking the documents' side.
pub fn owner(conn: &Connection, name: &str) -> DocDbResult<Option<(String, Kind)>> {
    conn.query_row("SELECT company_id, kind FROM docdb_databases WHERE name = ?1", [name], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })
    .optional()?
    .map(|(company, kind)| Ok((company, Kind::parse(&kind)?)))
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
    rows.into_iter().map(|row| c.info_from_row(row)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conn_with(max_open: usize) -> rusqlite::Connection {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        install(&c, max_open).unwrap();
        c
    }

    /// Handles the tenant holds in use now.
    fn pinned(conn: &Connection, company_id: &str) -> DocDbResult<Vec<String>> {
        let mut stmt =
            conn.prepare("SELECT name FROM docdb_databases WHERE company_id = ?1 AND pinned = 1 ORDER BY name")?;
        let names = stmt.query_map([company_id], |r| r.get(0))?.collect::<crate::store::sql::Result<_>>()?;
        Ok(names)
    }

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn names_follow_couchdb() {
        assert!(is_legal_name("dev_acme_main_core"));
        assert!(is_legal_name("daily_dev_acme_main_20261121"));
        for bad in ["", "Dev", "1abc", "a b", "a.b", "_users"] {
            assert!(!is_legal_name(bad), "{bad}");
        }
    }

    #[test]
    fn max_dbs_open_bounds_open_handles_and_closes_the_least_recently_used() {
        let conn = conn_with(2);
        let c = Cluster::embedded(&conn);
        create(&c, "a", "acme", Kind::Day, 0).unwrap();
        create(&c, "b", "acme", Kind::Day, 0).unwrap();
        put(&c, "a", "x", body(json!({})), None).unwrap(); // a is now the more recently used
        create(&c, "c", "acme", Kind::Day, 0).unwrap();
        let open: Vec<(String, bool)> = list(&c).unwrap().into_iter().map(|d| (d.name, d.open)).collect();
        assert_eq!(
            open,
            [("a".into(), true), ("b".into(), false), ("c".into(), true)],
            "b was idle longest and closed"
        );
        assert_eq!((open_count(&c).unwrap(), existing_count(&c).unwrap()), (2, 3));
        // Reading a closed database opens it again, closing the next idle one.
        assert_eq!(all_docs(&c, "b").unwrap().len(), 0);
        assert!(info(&c, "b").unwrap().unwrap().open);
        assert_eq!(open_count(&c).unwrap(), 2);
        // all_dbs_active only when every open handle is in use.
        pin_only(&c, "acme", &["a", "b"]).unwrap();
        assert_eq!(in_use_count(&c).unwrap(), 2);
        assert_eq!(create(&c, "d", "acme", Kind::Day, 0), Err(DocDbError::AllDbsActive { open: 2, max: 2 }));
        assert_eq!(
            get(&c, "c", "x"),
            Err(DocDbError::AllDbsActive { open: 2, max: 2 }),
            "c is closed and no handle is free"
        );
        pin_only(&c, "acme", &["a"]).unwrap();
        create(&c, "d", "acme", Kind::Day, 0).unwrap();
        assert_eq!(pinned(&c, "acme").unwrap(), ["a"]);
        // A lowered bound closes idle handles as room is needed.
        set_max_open(&c, 1).unwrap();
        // The bound is read once a cluster (one operation): the next one sees the new bound.
        let c = Cluster::embedded(&conn);
        assert_eq!(
            get(&c, "c", "x"),
            Err(DocDbError::AllDbsActive { open: 1, max: 1 }),
            "a is the one handle and in use"
        );
        pin_only(&c, "acme", &[]).unwrap();
        assert_eq!(get(&c, "c", "x"), Ok(None));
        assert_eq!(open_count(&c).unwrap(), 1);
        drop_database(&c, "c").unwrap();
        c.execute("DELETE FROM docdb_databases WHERE name = 'a'", []).unwrap();
        let counted: i64 =
            c.query_row("SELECT COUNT(*) FROM docdb_databases WHERE open = 1", [], |r| r.get(0)).unwrap();
        assert_eq!(open_count(&c).unwrap(), counted as usize, "the kept count follows every path");
    }

    /// The closes of one cluster, read ahead at the first, close what reading one at a time would.
    #[test]
    fn the_read_ahead_of_idle_handles_follows_every_use_and_pin() {
        let conn = conn_with(3);
        let open_now =
            |c: &Cluster| -> Vec<String> { list(c).unwrap().into_iter().filter(|d| d.open).map(|d| d.name).collect() };
        let c = Cluster::embedded(&conn);
        for name in ["a", "b", "c"] {
            create(&c, name, "acme", Kind::Day, 0).unwrap();
        }
        let c = Cluster::embedded(&conn);
        put(&c, "a", "x", body(json!({})), None).unwrap(); // LRU order now b, c, a
        create(&c, "d", "acme", Kind::Day, 0).unwrap(); // closes b, reads c and a ahead
        assert_eq!(open_now(&c), ["a", "c", "d"]);
        put(&c, "c", "x", body(json!({})), None).unwrap(); // c leaves the read-ahead: a, d, c
        create(&c, "e", "acme", Kind::Day, 0).unwrap();
        assert_eq!(open_now(&c), ["c", "d", "e"], "a, still ahead, was the least recently used");
        create(&c, "f", "acme", Kind::Day, 0).unwrap(); // the read-ahead used up: read again
        assert_eq!(open_now(&c), ["c", "e", "f"], "d, older than c's use");
        // A released pin may be older than anything read ahead.
        let c = Cluster::embedded(&conn);
        pin_only(&c, "acme", &["c"]).unwrap();
        put(&c, "f", "x", body(json!({})), None).unwrap(); // f used after c was pinned
        create(&c, "g", "acme", Kind::Day, 0).unwrap(); // closes e, reads f ahead
        pin_only(&c, "acme", &[]).unwrap(); // c idle again, and older than f
        create(&c, "h", "acme", Kind::Day, 0).unwrap();
        assert_eq!(open_now(&c), ["f", "g", "h"], "c, released, was older than f");
    }

    #[test]
    fn a_data_directory_from_before_the_handle_columns_is_upgraded() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE docdb_databases (name TEXT PRIMARY KEY NOT NULL, company_id TEXT NOT NULL, kind TEXT NOT NULL, update_seq INTEGER NOT NULL DEFAULT 0, indexes TEXT NOT NULL DEFAULT '[]', created_at INTEGER NOT NULL);
            INSERT INTO docdb_databases (name, company_id, kind, created_at) VALUES ('old', 'acme', 'legacy', 0);").unwrap();
        install(&c, 5).unwrap();
        let c = Cluster::embedded(&c);
        let old = info(&c, "old").unwrap().unwrap();
        assert!(!old.open && !old.in_use, "closed until used");
        assert_eq!(max_open(&c).unwrap(), 5);
    }
}
