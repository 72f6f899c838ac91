//! The catalogue and the handle bound on the embedded store.

use super::*;
use crate::store::sql::Connection;
use serde_json::json;
use serde_json::{Map, Value};

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
    assert_eq!(open, [("a".into(), true), ("b".into(), false), ("c".into(), true)], "b was idle longest and closed");
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
    assert_eq!(get(&c, "c", "x"), Err(DocDbError::AllDbsActive { open: 1, max: 1 }), "a is the one handle and in use");
    pin_only(&c, "acme", &[]).unwrap();
    assert_eq!(get(&c, "c", "x"), Ok(None));
    assert_eq!(open_count(&c).unwrap(), 1);
    drop_database(&c, "c").unwrap();
    c.execute("DELETE FROM docdb_databases WHERE name = 'a'", []).unwrap();
    let counted: i64 = c.query_row("SELECT COUNT(*) FROM docdb_databases WHERE open = 1", [], |r| r.get(0)).unwrap();
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
