//! The relational store: its port (`sql.rs`: what the record modules ask of a SQL database), the
//! embedded SQLite adapter (rusqlite, bundled) behind one mutex, and the record modules.

pub mod audit;
pub mod backups;
pub mod catalog;
pub mod companies;
pub mod devices;
pub mod journal;
pub mod migrate;
pub mod postgres;
pub mod refresh_tokens;
pub mod relational_archive;
pub mod schema;
pub mod sql;
pub mod users;

use std::path::{Path, PathBuf};

use parking_lot::{Mutex, MutexGuard};
use rusqlite::Connection as Sqlite;

use sql::Connection;

/// A failure of the store itself (SQLite), with its cause. The store knows nothing of HTTP: the
/// routes turn this into their error type. Its text names the store and leaves the cause to the
/// source chain, so a log prints the cause once.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("the relational store failed")]
pub struct StoreError(#[from] pub sql::Error);

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError(sql::Error::Sqlite(e))
    }
}

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("DATA_DIR {}", .0.display())]
    DataDir(PathBuf, #[source] std::io::Error),
    #[error("opening the store")]
    Open(#[source] rusqlite::Error),
    #[error("migrating the store")]
    Migrate(#[from] migrate::MigrateError),
    #[error("the store's own tables")]
    Schema(#[source] rusqlite::Error),
}

pub const DB_FILE: &str = "mock-server.sqlite";

/// Runs blocking store work; on a multi-threaded tokio runtime it tells tokio first.
pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

pub struct Store {
    conn: Mutex<Sqlite>,
}

/// The store's connection while it is held ([`Store::lock`]): any adapter's, as `&Connection`.
pub struct Locked<'a>(MutexGuard<'a, Sqlite>);

impl<'a> std::ops::Deref for Locked<'a> {
    type Target = Connection<'a>;

    fn deref(&self) -> &Connection<'a> {
        &*self.0
    }
}

crate::holds_a_connection!(Locked<'_>);

/// Opens (creating) the SQLite file, in WAL mode so a `kill -9` never leaves a torn write, with
/// `synchronous=NORMAL`: in WAL mode a commit is durable against a process crash (the WAL is
/// written before the commit returns) and only the last commits may be lost on a power loss or
/// an OS crash, never corrupted. For a mock server on developers' machines that trade (no fsync
/// per commit, several times the write throughput) is the right one.
pub fn open_connection(path: Option<&PathBuf>) -> rusqlite::Result<Sqlite> {
    let conn = match path {
        Some(p) => Sqlite::open(p)?,
        None => Sqlite::open_in_memory()?,
    };
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.set_prepared_statement_cache_capacity(256);
    Ok(conn)
}

impl Store {
    /// Opens the store under `data_dir` (or in memory), migrates it and adds the tables outside
    /// the journal (the crons' and the alarms', `schema.rs`).
    pub fn open(data_dir: Option<&Path>) -> Result<Store, OpenError> {
        let path = match data_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| OpenError::DataDir(dir.to_owned(), e))?;
                Some(dir.join(DB_FILE))
            }
            None => None,
        };
        let mut conn = open_connection(path.as_ref()).map_err(OpenError::Open)?;
        migrate::run(&mut conn, migrate::Mode::Apply)?;
        conn.execute_batch(schema::CRONS).map_err(OpenError::Schema)?;
        conn.execute_batch(schema::ALARMS).map_err(OpenError::Schema)?;
        Ok(Store { conn: Mutex::new(conn) })
    }

    /// The connection. Waiting for it blocks, so on the server's async workers the wait is
    /// announced to tokio (`block_in_place`): other requests move to another worker instead of
    /// stalling behind a cron's transaction.
    pub fn lock(&self) -> Locked<'_> {
        Locked(blocking(|| self.conn.lock()))
    }

    /// Runs `f` in one transaction: all of it lands, or none of it. `E` is the caller's error
    /// type (a store error converts into it); the routes' shorthand is `Store::tx` (error.rs).
    pub fn transaction<T, E: From<sql::Error>>(&self, f: impl FnOnce(&Connection) -> Result<T, E>) -> Result<T, E> {
        blocking(|| {
            let conn = self.conn.lock();
            let out = (|| {
                let c: &Connection = &*conn;
                c.execute_batch("BEGIN")?;
                match f(c) {
                    Ok(out) => {
                        c.execute_batch("COMMIT")?;
                        Ok(out)
                    }
                    Err(e) => {
                        // The caller's error is the story; a failed rollback leaves SQLite's
                        // transaction to end with the connection's next BEGIN (refused, so seen).
                        let _ = c.execute_batch("ROLLBACK");
                        Err(e)
                    }
                }
            })();
            // A fair hand-over: a waiting request gets the connection before this thread (a
            // cron going tenant by tenant) can take it again.
            MutexGuard::unlock_fair(conn);
            out
        })
    }
}

/// An in-memory connection with `schema` applied, for unit tests of the store's tables.
#[cfg(test)]
pub(crate) fn test_connection(schema: &str) -> Sqlite {
    let c = Sqlite::open_in_memory().expect("an in-memory SQLite");
    c.execute_batch(schema).expect("the schema applies");
    c
}
