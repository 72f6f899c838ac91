//! The migration runner against a real PostgreSQL (Debian's `postgresql`, installed by
//! `make setup`): a cluster initialised in a temp dir, started on a free port and stopped by
//! these tests. `initdb` refuses root, so as root it runs as the `postgres` user.

use common::pg::Cluster;
use mock_server::store::migrate::journal;
use mock_server::store::postgres as pg;
use postgres::{Client, NoTls};
use std::process::Command;

use crate::common;

/// Runs the SQL of migrations `from..=to` as written, outside the runner (what production has).
fn run_sql(client: &mut Client, from: u32, to: u32) {
    for m in journal().iter().filter(|m| (from..=to).contains(&m.number())) {
        for statement in m.statements() {
            client.batch_execute(statement).unwrap_or_else(|e| panic!("{}: {e}", m.tag));
        }
    }
}

fn register(client: &mut Client, from: u32, to: u32) {
    client
        .batch_execute(
            "CREATE SCHEMA IF NOT EXISTS drizzle; CREATE TABLE IF NOT EXISTS drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)",
        )
        .unwrap();
    for m in journal().iter().filter(|m| (from..=to).contains(&m.number())) {
        client
            .execute(
                "INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ($1, $2)",
                &[&m.hash(), &m.when],
            )
            .unwrap();
    }
}

fn cli(url: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mock-server"))
        .arg("migrate")
        .args(["--database-url", url])
        .args(args)
        .env_remove("MIGRATION_DATABASE_URL")
        .output()
        .unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn count(client: &mut Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).unwrap().get(0)
}

/// Every pre-feature table (those 0000–0011 create): its columns with their types, nullability
/// and defaults, its indexes, and a checksum of its rows.
fn pre_feature(client: &mut Client) -> Vec<String> {
    let tables = [
        "companies",
        "users",
        "user_companies",
        "devices",
        "refresh_tokens",
        "orders",
        "sales",
        "audit_log",
        "client_invalidations",
    ];
    let mut out = Vec::new();
    for table in tables {
        for r in client
            .query(
                "SELECT concat_ws(' ', column_name, data_type, is_nullable, column_default) FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY 1",
                &[&table],
            )
            .unwrap()
        {
            out.push(format!("{table} column {}", r.get::<_, String>(0)));
        }
        for r in client
            .query(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1 ORDER BY 1",
                &[&table],
            )
            .unwrap()
        {
            out.push(format!("{table} index {}", r.get::<_, String>(0)));
        }
        let sum: String = client
            .query_one(
                &format!("SELECT coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '') FROM {table} t"),
                &[],
            )
            .unwrap()
            .get(0);
        out.push(format!("{table} rows {sum}"));
    }
    out
}

fn table_exists(client: &mut Client, table: &str) -> bool {
    client.query_one("SELECT to_regclass($1) IS NOT NULL", &[&format!("public.{table}")]).unwrap().get(0)
}

#[test]
fn the_production_scenario_with_the_release_commands() {
    let cluster = Cluster::start();
    let url = cluster.database("production");
    let mut client = Client::connect(&url, NoTls).unwrap();
    // Production: the tables of 0000–0011 exist, the tracking table is empty.
    run_sql(&mut client, 0, 11);
    client
        .batch_execute(
            "INSERT INTO companies (id, name, created_at) VALUES ('acme', 'Acme', 1764000000000);
             INSERT INTO users (id, username, password_hash, company_id, roles, created_at) VALUES ('u1', 'ann', 'x', 'acme', '[]', 1764000000000);
             INSERT INTO orders (id, company_id, status, total_cents, created_at) VALUES ('o1', 'acme', 'paid', 500, 1764000000000);",
        )
        .unwrap();

    let (ok, out) = cli(&url, &[]);
    assert!(!ok && out.contains("refusing to migrate") && out.contains("--baseline-through 0011"), "{out}");
    assert!(!table_exists(&mut client, "day_databases"), "nothing ran");

    let (ok, out) = cli(&url, &["--status"]);
    assert!(ok && out.lines().filter(|l| l.starts_with("pending")).count() == journal().len(), "{out}");
    let (ok, out) = cli(&url, &["--baseline-through", "0011"]);
    assert!(ok && out.contains("baseline: 12 recorded as applied, 0 already recorded"), "{out}");

    let (ok, out) = cli(&url, &["--dry-run"]);
    assert!(
        ok && out.contains("would apply 0012_add_day_databases")
            && out.contains("CREATE TABLE day_databases")
            && out.contains(&format!("migrations: {} would be applied, 12 skipped", journal().len() - 12)),
        "{out}"
    );
    assert!(!table_exists(&mut client, "day_databases"), "a dry run changes nothing");
    assert_eq!(count(&mut client, "SELECT count(*) FROM drizzle.__drizzle_migrations"), 12);

    let before = pre_feature(&mut client);
    let (ok, out) = cli(&url, &[]);
    assert!(ok && out.contains("migrations: 4 applied, 12 skipped"), "{out}");
    for tag in [
        "0012_add_day_databases",
        "0013_add_company_feature_flags",
        "0014_add_conflict_reviews",
        "0015_simplify_rolling_db_flags",
    ] {
        assert!(out.contains(&format!("applied {tag}")), "{out}");
    }
    assert_eq!(count(&mut client, "SELECT count(*) FROM drizzle.__drizzle_migrations"), 16, "0000–0015, nothing else");
    assert_eq!(pre_feature(&mut client), before, "no pre-feature table's columns, types, indexes or rows changed");
    let (ok, out) = cli(&url, &["--validate"]);
    assert!(ok && out.contains("validation: every check holds") && !out.contains("FAIL"), "{out}");
    let (ok, out) = cli(&url, &[]);
    assert!(
        ok && out.contains(&format!("migrations: 0 applied, {} skipped", journal().len())),
        "a re-run is a no-op: {out}"
    );
    assert_eq!(count(&mut client, "SELECT count(*) FROM companies"), 1, "existing data untouched");
    // The entries read ordered by created_at end with the journal's last.
    let last: i64 = client
        .query_one("SELECT created_at FROM drizzle.__drizzle_migrations ORDER BY created_at DESC LIMIT 1", &[])
        .unwrap()
        .get(0);
    assert_eq!(Some(last), journal().last().map(|m| m.when));
    // A pre-existing table changed by someone is what validation exists to catch.
    client.batch_execute("ALTER TABLE companies ADD COLUMN extra integer").unwrap();
    let (ok, out) = cli(&url, &["--validate"]);
    assert!(!ok && out.contains("FAIL the tables of 0000–0011 are exactly as those migrations made them (columns, types, indexes) (changed: companies)"), "{out}");
    client
        .batch_execute("ALTER TABLE companies DROP COLUMN extra; CREATE INDEX companies_name ON companies (name)")
        .unwrap();
    let (ok, out) = cli(&url, &["--validate"]);
    assert!(!ok && out.contains("(changed: companies)"), "an index added is a change too: {out}");
}

#[test]
fn a_fresh_database_gets_every_migration_and_validates() {
    let cluster = Cluster::start();
    let url = cluster.database("fresh");
    let mut client = Client::connect(&url, NoTls).unwrap();
    let mut lines = Vec::new();
    let report = pg::apply(&mut client, false, &mut |l| lines.push(l)).unwrap();
    assert_eq!((report.applied.len(), report.skipped.len()), (journal().len(), 0));
    assert!(pg::validate(&mut client, &mut |l| lines.push(l)).unwrap(), "{lines:#?}");
}

#[test]
fn the_hand_made_alternative_is_detected_and_accepted() {
    let cluster = Cluster::start();
    let url = cluster.database("by_hand");
    let mut client = Client::connect(&url, NoTls).unwrap();
    // The runbook's alternative: the final tables created by hand, then 0012–0015 registered.
    run_sql(&mut client, 0, 11);
    client
        .batch_execute(
            "CREATE TABLE day_databases (name TEXT PRIMARY KEY NOT NULL, company_id TEXT NOT NULL REFERENCES companies(id), day TEXT NOT NULL,
               status TEXT NOT NULL DEFAULT 'PREWARMED', created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, drained_at INTEGER,
               archived_at INTEGER, reconciled_at INTEGER, dropped_at INTEGER);
             CREATE TABLE company_feature_flags (company_id TEXT PRIMARY KEY NOT NULL REFERENCES companies(id),
               rolling_db INTEGER NOT NULL DEFAULT 0, rolling_db_drop INTEGER NOT NULL DEFAULT 0, updated_at INTEGER, updated_by TEXT);
             CREATE TABLE conflict_reviews (id INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, company_id TEXT NOT NULL REFERENCES companies(id),
               db_name TEXT NOT NULL, doc_id TEXT NOT NULL, winning_rev TEXT NOT NULL, losing_revs TEXT NOT NULL DEFAULT '[]',
               status TEXT NOT NULL DEFAULT 'open', created_at INTEGER NOT NULL, resolved_at INTEGER);",
        )
        .unwrap();
    register(&mut client, 12, 15);
    let mut lines = Vec::new();
    let report = pg::apply(&mut client, false, &mut |l| lines.push(l)).unwrap();
    // Nothing of the rollout runs again, and nothing else is in the journal.
    assert!(report.applied.is_empty(), "{report:?}");
    assert!(
        lines.iter().any(|l| l.starts_with("alternative path detected") && l.contains("0011_create_audit_log")),
        "{lines:#?}"
    );
    assert!(pg::validate(&mut client, &mut |l| lines.push(l)).unwrap(), "{lines:#?}");
}

#[test]
fn a_failing_migration_is_rolled_back_whole() {
    let cluster = Cluster::start();
    let url = cluster.database("failing");
    let mut client = Client::connect(&url, NoTls).unwrap();
    run_sql(&mut client, 0, 11);
    pg::baseline(&mut client, 11).unwrap();
    // 0012's second statement (its index) will collide: its first (the table) must not survive.
    client
        .batch_execute("CREATE TABLE squatter (id int); CREATE INDEX day_databases_company_day ON squatter (id);")
        .unwrap();
    let err = pg::apply(&mut client, false, &mut |_| {}).unwrap_err().to_string();
    assert!(err.contains("migration 0012_add_day_databases failed and was rolled back"), "{err}");
    assert!(!table_exists(&mut client, "day_databases"), "the table of the failed migration is gone with it");
    assert_eq!(
        count(&mut client, "SELECT count(*) FROM drizzle.__drizzle_migrations"),
        12,
        "no row for the failed migration"
    );
    client.batch_execute("DROP TABLE squatter").unwrap();
    let report = pg::apply(&mut client, false, &mut |_| {}).unwrap();
    assert_eq!(report.applied.len(), journal().len() - 12, "the next run applies it");
}

#[test]
fn the_four_column_shape_of_0013_is_collapsed_by_0015_with_its_data() {
    let cluster = Cluster::start();
    let url = cluster.database("four_columns");
    let mut client = Client::connect(&url, NoTls).unwrap();
    // A database that ran 0012–0014 earlier (the four flag columns) and holds flags.
    run_sql(&mut client, 0, 14);
    register(&mut client, 0, 14);
    client
        .batch_execute(
            "INSERT INTO companies (id, name, created_at) VALUES ('a', 'A', 1), ('b', 'B', 1), ('c', 'C', 1);
             INSERT INTO company_feature_flags (company_id, rolling_db_enabled, rolling_db_prewarm, rolling_db_cutover, rolling_db_drop_enabled)
               VALUES ('a', 1, 1, 1, 1), ('b', 0, 0, 0, 1), ('c', 1, 0, 0, 0);",
        )
        .unwrap();
    let report = pg::apply(&mut client, false, &mut |_| {}).unwrap();
    assert_eq!(report.applied, ["0015_simplify_rolling_db_flags"]);
    let rows: Vec<(String, i32, i32)> = client
        .query("SELECT company_id, rolling_db, rolling_db_drop FROM company_feature_flags ORDER BY company_id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    // The drop flag survives only where rollingDb was on (rollingDbDrop needs rollingDb).
    assert_eq!(rows, [("a".into(), 1, 1), ("b".into(), 0, 0), ("c".into(), 1, 0)]);
    let mut lines = Vec::new();
    assert!(pg::validate(&mut client, &mut |l| lines.push(l)).unwrap(), "{lines:#?}");
}
