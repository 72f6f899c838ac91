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

fn flag_columns(conn: &rusqlite::Connection) -> Vec<String> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('company_feature_flags') ORDER BY cid").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
}

fn migration(tag_prefix: &str) -> migrate::Migration {
    migrate::journal().into_iter().find(|m| m.tag.starts_with(tag_prefix)).unwrap()
}

fn run_statements(conn: &rusqlite::Connection, m: &migrate::Migration) {
    for s in m.statements() {
        migrate::execute(conn, s).unwrap();
    }
}

#[test]
fn migration_0015_collapses_the_four_flags_and_keeps_their_values() {
    let mut conn = open_connection(None).unwrap();
    migrate::run(&mut conn, Mode::BaselineThrough(11)).unwrap();
    // Apply up to 0014 by hand-running the SQL, as a pre-0015 store would be.
    for m in migrate::journal().into_iter().filter(|m| m.number() <= 14) {
        run_statements(&conn, &m);
    }
    conn.execute_batch(
        "INSERT INTO companies (id, name, created_at) VALUES ('acme', 'Acme', 0), ('globex', 'Globex', 0);
         INSERT INTO company_feature_flags (company_id, rolling_db_enabled, rolling_db_drop_enabled) VALUES ('acme', 1, 1), ('globex', 0, 1);",
    )
    .unwrap();
    assert!(flag_columns(&conn).contains(&"rolling_db_prewarm".to_string()));
    let m15 = migration("0015");
    run_statements(&conn, &m15);
    let columns = flag_columns(&conn);
    assert_eq!(columns, vec!["company_id", "updated_at", "updated_by", "rolling_db", "rolling_db_drop"]);
    let flags: Vec<(String, i64, i64)> = conn
        .prepare("SELECT company_id, rolling_db, rolling_db_drop FROM company_feature_flags ORDER BY company_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // globex had drop without rolling_db: the drop flag requires rolling_db, so it is cleared.
    assert_eq!(flags, vec![("acme".into(), 1, 1), ("globex".into(), 0, 0)]);
    // Running 0015 again changes nothing.
    run_statements(&conn, &m15);
    assert_eq!(flag_columns(&conn), columns);
}

#[test]
fn migration_0015_on_a_store_already_in_the_two_flag_shape_is_a_no_op() {
    // The runbook's alternative: the final table created by hand.
    let conn = open_connection(None).unwrap();
    conn.execute_batch(
        "CREATE TABLE companies (id TEXT PRIMARY KEY);
         CREATE TABLE company_feature_flags (company_id TEXT PRIMARY KEY, rolling_db INTEGER NOT NULL DEFAULT 0,
           rolling_db_drop INTEGER NOT NULL DEFAULT 0, updated_at INTEGER, updated_by TEXT);
         INSERT INTO company_feature_flags (company_id, rolling_db, rolling_db_drop) VALUES ('acme', 1, 1);",
    )
    .unwrap();
    let before = flag_columns(&conn);
    run_statements(&conn, &migration("0015"));
    assert_eq!(flag_columns(&conn), before);
    let (a, b): (i64, i64) = conn
        .query_row("SELECT rolling_db, rolling_db_drop FROM company_feature_flags", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    assert_eq!((a, b), (1, 1));
}

#[test]
fn baseline_on_a_pre_0012_store_applies_only_the_new_migrations() {
    let mut conn = open_connection(None).unwrap();
    for m in migrate::journal().into_iter().filter(|m| m.number() <= 11) {
        run_statements(&conn, &m);
    }
    conn.execute_batch("INSERT INTO companies (id, name, created_at) VALUES ('acme', 'Acme', 0)").unwrap();
    assert!(migrate::run(&mut conn, Mode::Apply).unwrap_err().to_string().contains("--baseline-through 0011"));
    let b = migrate::run(&mut conn, Mode::BaselineThrough(11)).unwrap();
    assert_eq!(b.baselined.len(), 12);
    let r = migrate::run(&mut conn, Mode::Apply).unwrap();
    assert_eq!(
        r.applied,
        vec![
            "0012_add_day_databases",
            "0013_add_company_feature_flags",
            "0014_add_conflict_reviews",
            "0015_simplify_rolling_db_flags",
        ]
    );
    assert_eq!(flag_columns(&conn), vec!["company_id", "updated_at", "updated_by", "rolling_db", "rolling_db_drop"]);
    let companies: i64 = conn.query_row("SELECT COUNT(*) FROM companies", [], |r| r.get(0)).unwrap();
    assert_eq!(companies, 1, "existing data untouched");
    let last: i64 = conn.query_row("SELECT MAX(created_at) FROM __drizzle_migrations", [], |r| r.get(0)).unwrap();
    assert_eq!(last, migration("0015").when, "0015 is the last recorded");
    assert!(mock_server::store::catalog::two_flag_schema(&conn).unwrap());
}
