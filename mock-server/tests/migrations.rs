//! The migration runner: fresh store, re-run, baseline, refusal.

use mock_server::store::migrate::{self, Mode};
use mock_server::store::open_connection;

#[test]
fn fresh_store_applies_everything_then_rerun_is_a_no_op() {
    let mut conn = open_connection(None).unwrap();
    let first = migrate::run(&mut conn, Mode::Apply).unwrap();
    assert_eq!(first.applied.len(), migrate::journal().len());
    assert!(first.skipped.is_empty());
    let second = migrate::run(&mut conn, Mode::Apply).unwrap();
    assert!(second.applied.is_empty());
    assert_eq!(second.skipped.len(), migrate::journal().len());
    assert!(migrate::status(&conn).unwrap().iter().all(|(_, applied)| *applied));
}

#[test]
fn tables_without_history_are_refused_until_baselined() {
    let mut conn = open_connection(None).unwrap();
    conn.execute_batch("CREATE TABLE companies (id TEXT PRIMARY KEY, name TEXT, created_at INTEGER)").unwrap();
    let err = migrate::run(&mut conn, Mode::Apply).unwrap_err().to_string();
    assert!(err.contains("--baseline-through"), "{err}");
    assert!(err.contains("companies"), "{err}");
    let b = migrate::run(&mut conn, Mode::BaselineThrough(0)).unwrap();
    assert_eq!(b.baselined, vec!["0000_create_companies"]);
    assert!(migrate::run(&mut conn, Mode::BaselineThrough(9999)).is_err());
    let r = migrate::run(&mut conn, Mode::Apply).unwrap();
    assert_eq!(r.skipped, vec!["0000_create_companies"]);
    assert!(r.applied.contains(&"0001_create_users".to_string()));
}

#[test]
fn every_journal_entry_has_statements_and_a_stable_hash() {
    for m in migrate::journal() {
        assert!(m.statements().count() >= 1, "{}", m.tag);
        assert_eq!(m.hash().len(), 64);
    }
}
