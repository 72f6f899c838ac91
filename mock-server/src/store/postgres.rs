//! The migration runner against PostgreSQL (`mock-server migrate --database-url postgres://…`, or
//! `MIGRATION_DATABASE_URL`): the same drizzle journal as the embedded store, its SQL run as
//! written. The rules are drizzle's and the rollout's:
//!
//! - the tracking table is drizzle's, `drizzle.__drizzle_migrations(id, hash, created_at)`, read
//!   ordered by `created_at`; a migration runs only when it is newer than the newest one recorded
//!   (so the rollout's alternative path, the final tables made by hand and 0012–0015 registered,
//!   is accepted as it is: nothing older runs);
//! - an empty tracking table beside existing tables is refused ("never run the complete migration
//!   blindly"), naming `--baseline-through`;
//! - each migration runs in its own transaction: a failure leaves neither its tables nor its row;
//! - `--dry-run` prints the plan and the statements, `--validate` checks the rollout's list.

use postgres::{Client, NoTls, Transaction};

use super::migrate::{journal, plan, MigrateError, Migration, Plan, Report};

/// The tables 0012–0014 create (the rollout's "tables created").
pub const ROLLOUT_TABLES: [&str; 3] = ["day_databases", "company_feature_flags", "conflict_reviews"];
/// The last migration of the journal that the baseline covers.
pub const BASELINE_LAST: u32 = 11;

/// What `migrate --database-url` is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Apply,
    DryRun,
    BaselineThrough(u32),
    Status,
    Validate,
}

/// A connection to the database to migrate.
pub fn connect(url: &str) -> Result<Client, MigrateError> {
    Client::connect(url, NoTls).map_err(|e| MigrateError::Connect { url: redact(url), source: e })
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            let user = credentials.split(':').next().unwrap_or("");
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

fn ensure_tracking_table(client: &mut Client) -> Result<(), MigrateError> {
    client.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS drizzle;
         CREATE TABLE IF NOT EXISTS drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)",
    )?;
    Ok(())
}

/// The recorded `created_at`s, oldest first (the rollout's "inspect it ordered by created_at").
pub fn recorded(client: &mut Client) -> Result<Vec<i64>, MigrateError> {
    let exists: bool = client.query_one("SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL", &[])?.get(0);
    if !exists {
        return Ok(Vec::new());
    }
    let rows = client.query("SELECT created_at FROM drizzle.__drizzle_migrations ORDER BY created_at", &[])?;
    Ok(rows.iter().map(|r| r.get::<_, Option<i64>>(0).unwrap_or(0)).collect())
}

/// The application's tables (the `public` schema).
pub fn existing_tables(client: &mut Client) -> Result<Vec<String>, MigrateError> {
    let rows = client.query("SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1", &[])?;
    Ok(rows
        .iter()
        .map(|r| r.get::<_, String>(0))
        .filter(|t| !super::migrate::UNTRACKED_TABLE_PREFIXES.iter().any(|p| t.starts_with(p)))
        .collect())
}

fn column_exists(tx: &mut Transaction, table: &str, column: &str) -> Result<bool, postgres::Error> {
    let row = tx.query_one("SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2", &[&table, &column])?;
    Ok(row.get::<_, i64>(0) > 0)
}

/// Runs one statement as written; a statement under `-- only-if-column: t.c` runs only while
/// that column exists (the data copy of 0015 out of a column a later statement drops).
fn execute(tx: &mut Transaction, statement: &str) -> Result<(), postgres::Error> {
    match plan(statement) {
        Plan::OnlyIfColumn { table, column, sql } => {
            if column_exists(tx, &table, &column)? {
                tx.batch_execute(&sql)?;
            }
            Ok(())
        }
        _ => tx.batch_execute(statement),
    }
}

fn record(tx: &mut Transaction, m: &Migration) -> Result<(), postgres::Error> {
    tx.execute("INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ($1, $2)", &[&m.hash(), &m.when])?;
    Ok(())
}

/// The migrations that would run: those newer than the newest recorded one.
pub fn pending(recorded: &[i64]) -> Vec<Migration> {
    let newest = recorded.iter().copied().max();
    journal().into_iter().filter(|m| newest.is_none_or(|n| m.when > n)).collect()
}

/// Applies (or, `dry_run`, prints) what is pending. Refuses an unbaselined store.
pub fn apply(client: &mut Client, dry_run: bool, out: &mut dyn FnMut(String)) -> Result<Report, MigrateError> {
    let recorded = if dry_run {
        recorded(client)?
    } else {
        ensure_tracking_table(client)?;
        recorded(client)?
    };
    if recorded.is_empty() {
        let tables = existing_tables(client)?;
        if !tables.is_empty() {
            return Err(MigrateError::Unbaselined { tables });
        }
    }
    let journal = journal();
    // Older entries missing from the record while newer ones are there: the rollout's
    // alternative path (tables made by hand, 0012–0015 registered). Accepted, never run.
    let newest = recorded.iter().copied().max();
    let older_missing: Vec<&str> = journal
        .iter()
        .filter(|m| newest.is_some_and(|n| m.when < n) && !recorded.contains(&m.when))
        .map(|m| m.tag)
        .collect();
    if !older_missing.is_empty() {
        out(format!("alternative path detected: {} not recorded but older than the newest recorded migration; accepted as made by hand, not run", older_missing.join(", ")));
    }
    let mut report = Report::default();
    let todo = pending(&recorded);
    report.skipped =
        journal.iter().filter(|m| !todo.iter().any(|t| t.when == m.when)).map(|m| m.tag.to_owned()).collect();
    for m in &todo {
        if dry_run {
            out(format!("would apply {} in one transaction:", m.tag));
            for statement in m.statements() {
                out(format!("  {};", statement.trim_end_matches(';').replace('\n', "\n  ")));
            }
            report.applied.push(m.tag.to_owned());
            continue;
        }
        let mut tx = client.transaction()?;
        for statement in m.statements() {
            execute(&mut tx, statement)
                .map_err(|e| MigrateError::Failed { tag: m.tag.to_owned(), source: e.into() })?;
        }
        record(&mut tx, m).map_err(|e| MigrateError::Failed { tag: m.tag.to_owned(), source: e.into() })?;
        tx.commit().map_err(|e| MigrateError::Failed { tag: m.tag.to_owned(), source: e.into() })?;
        out(format!("applied {}", m.tag));
        report.applied.push(m.tag.to_owned());
    }
    if !dry_run {
        // The server's own tables (cron runs and leases, alarms, the document catalogue, the
        // shared test clock): made here, by the migrate job, as the journal's tables are.
        client.batch_execute(super::schema::POSTGRES)?;
        out("the server's own tables: in place".to_owned());
    }
    Ok(report)
}

/// Records every migration up to `last` as applied without running its SQL (the rollout's
/// "seed entries 0000 to 0011 as already applied").
pub fn baseline(client: &mut Client, last: u32) -> Result<Report, MigrateError> {
    let journal = journal();
    if !journal.iter().any(|m| m.number() == last) {
        return Err(MigrateError::UnknownBaseline(last));
    }
    ensure_tracking_table(client)?;
    let recorded = recorded(client)?;
    let mut report = Report::default();
    let mut tx = client.transaction()?;
    for m in journal.iter().filter(|m| m.number() <= last) {
        if recorded.contains(&m.when) {
            report.skipped.push(m.tag.to_owned());
        } else {
            record(&mut tx, m)?;
            report.baselined.push(m.tag.to_owned());
        }
    }
    tx.commit()?;
    Ok(report)
}

/// Each journal entry with whether it is recorded.
pub fn status(client: &mut Client) -> Result<Vec<(String, bool)>, MigrateError> {
    let recorded = recorded(client)?;
    Ok(journal().into_iter().map(|m| (m.tag.to_owned(), recorded.contains(&m.when))).collect())
}

/// What a table is made of, one line each, sorted: every column (name, type, nullability,
/// default) and every index (its definition, the schema's name taken out).
fn shape(tx: &mut Transaction) -> Result<Vec<(String, String)>, postgres::Error> {
    let columns = tx.query(
        "SELECT table_name::text, concat_ws(' ', 'column', column_name, data_type, is_nullable, column_default) FROM information_schema.columns
         WHERE table_schema = current_schema()",
        &[],
    )?;
    let indexes = tx.query("SELECT tablename::text, 'index ' || replace(indexdef, schemaname || '.', '') FROM pg_indexes WHERE schemaname = current_schema()", &[])?;
    let mut lines: Vec<(String, String)> = columns.iter().chain(indexes.iter()).map(|r| (r.get(0), r.get(1))).collect();
    lines.sort();
    Ok(lines)
}

/// The rollout's validation, one line a check; `Ok(false)` when one fails.
pub fn validate(client: &mut Client, out: &mut dyn FnMut(String)) -> Result<bool, MigrateError> {
    let mut ok = true;
    let mut check = |pass: bool, line: String| {
        ok &= pass;
        out(format!("{} {line}", if pass { "ok  " } else { "FAIL" }));
    };
    let tables = existing_tables(client)?;
    for table in ROLLOUT_TABLES {
        check(tables.iter().any(|t| t == table), format!("table {table} exists"));
    }
    let flags: Vec<String> = client
        .query(
            "SELECT column_name::text FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'company_feature_flags' AND column_name LIKE 'rolling_db%' ORDER BY 1",
            &[],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    check(
        flags == ["rolling_db", "rolling_db_drop"],
        format!(
            "company_feature_flags flag columns are exactly rolling_db, rolling_db_drop (found: {})",
            flags.join(", ")
        ),
    );
    let recorded = recorded(client)?;
    let journal = journal();
    let last = journal.last().map(|m| (m.when, m.tag)).unwrap_or((0, ""));
    check(recorded.last() == Some(&last.0), format!("{} is the last entry of the tracking table", last.1));

    // "No existing table changed": the tables of 0000–0011 exactly as those migrations make them
    // (columns, types, nullability, defaults, indexes), built in a scratch schema of a
    // transaction that is rolled back. Nothing after 0011 may alter them.
    let mut tx = client.transaction()?;
    tx.batch_execute("CREATE SCHEMA migrate_reference; SET LOCAL search_path TO migrate_reference")?;
    for m in journal.iter().filter(|m| m.number() <= BASELINE_LAST) {
        for statement in m.statements() {
            execute(&mut tx, statement)?;
        }
    }
    let reference = shape(&mut tx)?;
    tx.batch_execute("SET LOCAL search_path TO public")?;
    let actual = shape(&mut tx)?;
    tx.rollback()?;
    let baseline_tables: std::collections::BTreeSet<&String> = reference.iter().map(|(t, _)| t).collect();
    let mut changed = Vec::new();
    for table in baseline_tables {
        let want: Vec<_> = reference.iter().filter(|c| &c.0 == table).collect();
        let have: Vec<_> = actual.iter().filter(|c| &c.0 == table).collect();
        if want != have {
            changed.push(table.clone());
        }
    }
    check(
        changed.is_empty(),
        format!(
            "the tables of 0000–0011 are exactly as those migrations made them (columns, types, indexes){}",
            if changed.is_empty() { String::new() } else { format!(" (changed: {})", changed.join(", ")) }
        ),
    );
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_redacted_and_pending_follows_the_newest_record() {
        assert_eq!(redact("postgres://ops:secret@db:5432/app"), "postgres://ops:***@db:5432/app");
        assert_eq!(redact("postgres:///app"), "postgres:///app");
        let journal = journal();
        assert_eq!(pending(&[]).len(), journal.len());
        let through_11: Vec<i64> = journal.iter().filter(|m| m.number() <= 11).map(|m| m.when).collect();
        assert_eq!(
            pending(&through_11).iter().map(|m| m.number()).collect::<Vec<_>>(),
            [12, 13, 14, 15],
            "the production migration's four, nothing else"
        );
        // Only 0012–0015 registered (the hand-made path): nothing older runs.
        let hand: Vec<i64> = journal.iter().filter(|m| m.number() >= 12).map(|m| m.when).collect();
        assert!(pending(&hand).is_empty());
    }
}
