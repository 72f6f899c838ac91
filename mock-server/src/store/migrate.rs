//! The migration runner: applies the drizzle journal's migrations that the tracking table
//! `__drizzle_migrations(id, hash, created_at)` does not hold, each in its own transaction.
//! A migration is identified by its journal `when` (drizzle's `created_at`).
//!
//! The SQL files are PostgreSQL (`store::postgres` runs them as they are). SQLite lacks
//! `ALTER TABLE … ADD COLUMN IF NOT EXISTS` / `DROP COLUMN IF EXISTS`, which migration 0015
//! relies on for idempotency, and identity columns; here the runner checks the column and runs
//! the plain form only when needed, and writes an identity key as SQLite's `AUTOINCREMENT`. A statement preceded by `-- only-if-column: table.column` runs only when
//! that column exists (a data copy out of a column a later statement drops).

use rusqlite::{params, Connection};

pub use super::journal::{journal, last_migration, Migration, BREAKPOINT};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Apply what is missing.
    Apply,
    /// Record every migration up to this tag prefix ("0011") as applied without running it.
    BaselineThrough(u32),
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    pub applied: Vec<String>,
    pub skipped: Vec<String>,
    pub baselined: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The store has tables but no history: running everything would hit existing tables.
    #[error(
        "refusing to migrate: the tracking table __drizzle_migrations is empty but the store already has tables ({}). \
         Never run the full migration blindly: inspect the schema, then record what it already has with \
         `mock-server migrate --baseline-through 0011` (or the last migration it reflects) and run `mock-server migrate` again.",
        tables.join(", ")
    )]
    Unbaselined { tables: Vec<String> },
    #[error("--baseline-through {0:04}: no migration has that number")]
    UnknownBaseline(u32),
    #[error("migration {tag} failed and was rolled back")]
    Failed { tag: String, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("the store")]
    Store(#[from] rusqlite::Error),
    #[error("the store")]
    Port(#[from] super::sql::Error),
    /// The PostgreSQL database (`--database-url`): a query failed.
    #[error("postgres")]
    Postgres(#[from] postgres::Error),
    #[error("connecting to {url}")]
    Connect { url: String, source: postgres::Error },
}

fn ensure_tracking_table(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("CREATE TABLE IF NOT EXISTS __drizzle_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, hash TEXT NOT NULL, created_at NUMERIC)")
}

/// Prefixes of the tables the migrations do not own: the document cluster's (`docdb::SCHEMA`) and
/// the crons' (`crons::runs::SCHEMA`), created beside them in the same file.
pub const UNTRACKED_TABLE_PREFIXES: [&str; 4] = ["docdb_", "cron_", "guard_", "mock_"];

/// Relational tables other than the tracking table and the untracked ones.
pub fn existing_tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != '__drizzle_migrations' ORDER BY name")?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    let all: Vec<String> = rows.collect::<rusqlite::Result<_>>()?;
    Ok(all.into_iter().filter(|t| !UNTRACKED_TABLE_PREFIXES.iter().any(|p| t.starts_with(p))).collect())
}

fn record(conn: &Connection, m: &Migration) -> rusqlite::Result<()> {
    conn.execute("INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?1, ?2)", params![m.hash(), m.when])
        .map(|_| ())
}

pub fn run(conn: &mut Connection, mode: Mode) -> Result<Report, MigrateError> {
    ensure_tracking_table(conn)?;
    let applied = super::catalog::applied_whens(conn)?;
    let migrations = journal();
    let mut report = Report::default();

    if let Mode::BaselineThrough(last) = mode {
        if !migrations.iter().any(|m| m.number() == last) {
            return Err(MigrateError::UnknownBaseline(last));
        }
        let tx = conn.transaction()?;
        for m in migrations.iter().filter(|m| m.number() <= last) {
            if applied.contains(&m.when) {
                report.skipped.push(m.tag.to_owned());
            } else {
                record(&tx, m)?;
                report.baselined.push(m.tag.to_owned());
            }
        }
        tx.commit()?;
        return Ok(report);
    }

    if applied.is_empty() {
        let tables = existing_tables(conn)?;
        if !tables.is_empty() {
            return Err(MigrateError::Unbaselined { tables });
        }
    }
    for m in &migrations {
        if applied.contains(&m.when) {
            report.skipped.push(m.tag.to_owned());
            continue;
        }
        let tx = conn.transaction()?;
        for statement in m.statements() {
            execute(&tx, statement).map_err(|e| MigrateError::Failed { tag: m.tag.to_owned(), source: e.into() })?;
        }
        record(&tx, m)?;
        tx.commit()?;
        report.applied.push(m.tag.to_owned());
    }
    Ok(report)
}

pub fn column_exists(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare("SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2")?;
    stmt.query_row(params![table, column], |r| r.get::<_, i64>(0)).map(|n| n > 0)
}

/// What one statement asks for, once its directive and conditional `ALTER` are read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    Run(String),
    /// Run the plain `ALTER` unless `column` of `table` already is as wanted.
    AddColumn {
        table: String,
        column: String,
        sql: String,
    },
    DropColumn {
        table: String,
        column: String,
        sql: String,
    },
    OnlyIfColumn {
        table: String,
        column: String,
        sql: String,
    },
    /// `ALTER COLUMN … TYPE`: nothing to do on SQLite, where a declared type constrains no value
    /// and every INTEGER is 64-bit.
    ColumnType,
}

pub(crate) fn plan(statement: &str) -> Plan {
    let mut directive = None;
    let mut body = Vec::new();
    for line in statement.lines() {
        let trimmed = line.trim();
        if let Some(target) = trimmed.strip_prefix("-- only-if-column:") {
            directive = target.trim().split_once('.').map(|(t, c)| (t.to_owned(), c.to_owned()));
        } else if !trimmed.starts_with("--") {
            body.push(line);
        }
    }
    let sql = body.join("\n").trim().to_owned();
    if let Some((table, column)) = directive {
        return Plan::OnlyIfColumn { table, column, sql };
    }
    let words: Vec<&str> = sql.split_whitespace().collect();
    let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let is = |i: usize, w: &str| upper.get(i).is_some_and(|u| u == w);
    if is(0, "ALTER") && is(1, "TABLE") && words.len() > 3 {
        let table = words[2].to_owned();
        if is(3, "ADD") && is(4, "COLUMN") && is(5, "IF") && is(6, "NOT") && is(7, "EXISTS") && words.len() > 8 {
            let column = words[8].to_owned();
            let rest = words[9..].join(" ");
            return Plan::AddColumn {
                sql: format!("ALTER TABLE {table} ADD COLUMN {column} {rest}").trim().to_owned(),
                table,
                column,
            };
        }
        if is(3, "ALTER") && is(4, "COLUMN") && is(6, "TYPE") {
            return Plan::ColumnType;
        }
        if is(3, "DROP") && is(4, "COLUMN") && is(5, "IF") && is(6, "EXISTS") && words.len() > 7 {
            let column = words[7].trim_end_matches(';').to_owned();
            return Plan::DropColumn { sql: format!("ALTER TABLE {table} DROP COLUMN {column}"), table, column };
        }
    }
    Plan::Run(sql)
}

/// PostgreSQL's identity key, and SQLite's.
const IDENTITY_KEY: (&str, &str) =
    ("INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "INTEGER PRIMARY KEY AUTOINCREMENT");

/// Runs one statement of a migration, honouring the conditional forms.
pub fn execute(conn: &Connection, statement: &str) -> rusqlite::Result<()> {
    let statement = statement.replace(IDENTITY_KEY.0, IDENTITY_KEY.1);
    match plan(&statement) {
        Plan::Run(sql) => conn.execute_batch(&sql),
        Plan::ColumnType => Ok(()),
        Plan::AddColumn { table, column, sql } => {
            if column_exists(conn, &table, &column)? {
                Ok(())
            } else {
                conn.execute_batch(&sql)
            }
        }
        Plan::DropColumn { table, column, sql } | Plan::OnlyIfColumn { table, column, sql } => {
            if column_exists(conn, &table, &column)? {
                conn.execute_batch(&sql)
            } else {
                Ok(())
            }
        }
    }
}

/// Each journal entry with whether the tracking table holds it.
pub fn status(conn: &Connection) -> Result<Vec<(String, bool)>, MigrateError> {
    let applied = super::catalog::applied_whens(conn)?;
    Ok(journal().into_iter().map(|m| (m.tag.to_owned(), applied.contains(&m.when))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_conditional_alters_and_directives() {
        assert_eq!(
            plan("ALTER TABLE t ADD COLUMN IF NOT EXISTS c INTEGER NOT NULL DEFAULT 0;"),
            Plan::AddColumn {
                table: "t".into(),
                column: "c".into(),
                sql: "ALTER TABLE t ADD COLUMN c INTEGER NOT NULL DEFAULT 0;".into()
            }
        );
        assert_eq!(
            plan("alter table t drop column if exists c;"),
            Plan::DropColumn { table: "t".into(), column: "c".into(), sql: "ALTER TABLE t DROP COLUMN c".into() }
        );
        assert_eq!(
            plan("-- only-if-column: t.old\nUPDATE t SET c = old;"),
            Plan::OnlyIfColumn { table: "t".into(), column: "old".into(), sql: "UPDATE t SET c = old;".into() }
        );
        assert_eq!(plan("-- a comment\nCREATE TABLE x (a INT);"), Plan::Run("CREATE TABLE x (a INT);".into()));
    }
}
