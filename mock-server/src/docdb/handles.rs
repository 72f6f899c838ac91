//! CouchDB's `max_dbs_open` as it means it: a bound on open *handles*, not on databases. Every
//! access opens a database's handle; at the bound the least recently used idle handle is closed
//! (an LRU); `all_dbs_active` only when every open handle is in use. "In use" is a pin: the
//! rotate keeps each rolling tenant's CORE and today's and tomorrow's day databases open, because
//! devices replicate them continuously. A cluster keeps what it has read of the handles for its
//! transaction (`Known`), so a second use of a database costs no read.

use std::collections::HashMap;

use super::{Cluster, DocDbError, DocDbResult};
use crate::store::sql::{in_list, Connection, ToValue};

/// A database's handle, as the catalogue records it (its `open` and `pinned` columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Handle {
    /// Closed: opening it takes room under the bound. A pin it kept holds again once it opens.
    Closed { pinned: bool },
    /// Open and idle: the LRU may close it.
    Idle,
    /// Open and pinned by the prewarm: the LRU never closes it.
    InUse,
}

impl Handle {
    fn from_row(open: bool, pinned: bool) -> Handle {
        match (open, pinned) {
            (true, true) => Handle::InUse,
            (true, false) => Handle::Idle,
            (false, pinned) => Handle::Closed { pinned },
        }
    }

    fn is_open(self) -> bool {
        matches!(self, Handle::Idle | Handle::InUse)
    }

    fn is_pinned(self) -> bool {
        matches!(self, Handle::InUse | Handle::Closed { pinned: true })
    }
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
pub(super) struct Handles {
    open: usize,
    max: usize,
}

/// What a cluster knows of the handles, read once in its transaction (the store's lock held
/// alone, where only it opens or closes handles) and kept up to date as it changes them, so a
/// second use of a database, or a create after a read, needs no read (a round trip each on
/// PostgreSQL). A tenant's failed step is rolled back to its savepoint: its cluster with it.
/// The bound is read with the first handle: `set_max_open` is for the next cluster.
#[derive(Default)]
pub(super) struct Known {
    /// Per database: `None` absent, else `(open, pinned)`.
    dbs: HashMap<String, Option<Handle>>,
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
            known.dbs.insert(name, Some(Handle::from_row(r.get(3)?, r.get(4)?)));
        }
    }
    known.handles = Some(handles);
    Ok(handles)
}

/// A database's handle as known: `None` absent, else `(open, pinned)`.
pub(super) fn handle(c: &Cluster, name: &str) -> DocDbResult<(Option<Handle>, Handles)> {
    let handles = read_handles(c, &[name])?;
    Ok((c.known.borrow().dbs.get(name).copied().flatten(), handles))
}

/// Records `name`'s handle opened, in `state` (the count against the bound one up).
pub(super) fn opened(c: &Cluster, name: &str, state: Handle) {
    record(c, name, state, 1);
}

/// Records `name`'s handle closed by the LRU (the count one down).
fn closed(c: &Cluster, name: &str) {
    record(c, name, Handle::Closed { pinned: false }, -1);
}

/// Forgets `name`, dropped: whether its handle was open is not known here, so the count is read
/// again when needed.
pub(super) fn dropped(c: &Cluster, name: &str) {
    let mut known = c.known.borrow_mut();
    known.touched(name);
    known.dbs.remove(name);
    known.handles = None;
}

fn record(c: &Cluster, name: &str, state: Handle, change: isize) {
    let mut known = c.known.borrow_mut();
    known.touched(name);
    known.dbs.insert(name.to_owned(), Some(state));
    if let Some(h) = known.handles.as_mut() {
        h.open = h.open.saturating_add_signed(change);
    }
}

/// Makes room for one more handle: under the bound nothing to do, at it the least recently used
/// idle handle is closed (over a lowered bound, as many as it takes), and with every handle in
/// use the answer is `all_dbs_active`.
pub(super) fn make_room(c: &Cluster, Handles { mut open, max }: Handles) -> DocDbResult<()> {
    while open >= max {
        let Some(name) = least_recently_used(c)? else { return Err(DocDbError::AllDbsActive { open, max }) };
        c.execute_later("UPDATE docdb_databases SET open = 0 WHERE name = ?1", [&name])?;
        closed(c, &name);
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
pub(super) const NEXT_USE: &str = "(SELECT COALESCE(MAX(last_used), 0) + 1 FROM docdb_databases)";

/// Opens the database's handle (or marks an open one used): every access goes through here.
/// A handle in use is never closed, so its recency is not recorded (reads stay reads).
pub(super) fn use_db(c: &Cluster, name: &str) -> DocDbResult<()> {
    match handle(c, name)? {
        (None, _) => Err(DocDbError::Missing(name.to_owned())),
        (Some(Handle::InUse), _) => Ok(()),
        (Some(Handle::Idle), _) => {
            c.known.borrow_mut().touched(name);
            Ok(c.execute_later(&format!("UPDATE docdb_databases SET last_used = {NEXT_USE} WHERE name = ?1"), [name])?)
        }
        (Some(Handle::Closed { pinned }), handles) => {
            make_room(c, handles)?;
            c.execute_later(
                &format!("UPDATE docdb_databases SET open = 1, last_used = {NEXT_USE} WHERE name = ?1"),
                [name],
            )?;
            opened(c, name, if pinned { Handle::InUse } else { Handle::Idle });
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
    let handles: Vec<(&str, Option<Handle>)> =
        names.iter().map(|n| (*n, c.known.borrow().dbs.get(*n).copied().flatten())).collect();
    if let Some((missing, _)) = handles.iter().find(|(_, h)| h.is_none()) {
        return Err(DocDbError::Missing((*missing).to_owned()));
    }
    c.execute_later("UPDATE docdb_databases SET pinned = 0 WHERE company_id = ?1 AND pinned = 1", [company_id])?;
    // The tenant's other pins are released: what is known of pins is not any more, nor which
    // idle handles are the least recently used.
    {
        let mut known = c.known.borrow_mut();
        known.dbs.retain(|_, h| !h.is_some_and(Handle::is_pinned));
        known.evictable = None;
    }
    let open: Vec<_> =
        handles.iter().filter(|(_, h)| h.is_some_and(Handle::is_open)).map(|(n, _)| n.to_value()).collect();
    if !open.is_empty() {
        c.run_later(
            &format!(
                "UPDATE docdb_databases SET pinned = 1, last_used = {NEXT_USE} WHERE name IN ({})",
                in_list(open.len())
            ),
            &open,
        )?;
        for (name, _) in handles.iter().filter(|(_, h)| h.is_some_and(Handle::is_open)) {
            let mut known = c.known.borrow_mut();
            known.touched(name);
            known.dbs.insert((*name).to_owned(), Some(Handle::InUse));
        }
    }
    for (name, _) in handles.iter().filter(|(_, h)| h.is_some_and(|h| !h.is_open())) {
        c.known.borrow_mut().dbs.insert((*name).to_owned(), Some(Handle::Closed { pinned: false }));
        use_db(c, name)?;
        c.execute_later("UPDATE docdb_databases SET pinned = 1 WHERE name = ?1", [name])?;
        c.known.borrow_mut().dbs.insert((*name).to_owned(), Some(Handle::InUse));
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
