//! The relational store: its port (`sql.rs`: what the record modules ask of a SQL database), the
//! embedded SQLite adapter (rusqlite, bundled) behind one mutex, and the record modules.

pub mod audit;
pub mod backups;
pub mod catalog;
pub mod companies;
pub mod device_losses;
pub mod devices;
pub mod journal;
pub mod login_failures;
pub mod migrate;
pub mod notifications;
pub mod on_postgres;
pub mod postgres;
pub mod refresh_tokens;
pub mod relational_archive;
pub mod schema;
pub mod sql;
pub mod users;

use std::path::{Path, PathBuf};

use parking_lot::{Mutex, MutexGuard};
use rusqlite::Connection as Sqlite;

use crate::bridge::blocking;
use on_postgres::{PgConn, PgPool};
use sql::Connection;

/// A failure of the store itself (either adapter), with its cause. The store knows nothing of HTTP: the
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
    #[error("the PostgreSQL store")]
    Postgres(#[source] sql::Error),
    #[error("the PostgreSQL database is behind the journal: {} not applied; run `mock-server migrate --database-url …` (replicas never migrate it)", .0.join(", "))]
    BehindJournal(Vec<&'static str>),
    #[error("the PostgreSQL database lacks the server's own tables ({}); run `mock-server migrate --database-url …`", .0.join(", "))]
    NoOwnTables(Vec<&'static str>),
}

pub const DB_FILE: &str = "mock-server.sqlite";

/// The relational store: the embedded SQLite file, or PostgreSQL (`DATABASE_URL`).
pub struct Store {
    backend: Backend,
}

enum Backend {
    Sqlite(Mutex<Sqlite>),
    Postgres(PgPool),
}

/// The store's connection while it is held ([`Store::lock`]): any adapter's, as `&Connection`.
/// On PostgreSQL it is a transaction holding the store's lock, committed when dropped (what is
/// done through it is reads, and the few writes that the embedded store's mutex also made one).
pub struct Locked<'a>(Held<'a>);

enum Held<'a> {
    Sqlite(MutexGuard<'a, Sqlite>),
    Postgres(Box<PgConn>),
}

impl<'a> std::ops::Deref for Locked<'a> {
    type Target = Connection<'a>;

    fn deref(&self) -> &Connection<'a> {
        match &self.0 {
            Held::Sqlite(guard) => &**guard,
            Held::Postgres(conn) => &**conn,
        }
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if let Held::Postgres(conn) = &self.0 {
            if let Err(e) = conn.end("COMMIT") {
                tracing::error!("ending a store session: {}", crate::causes::chain(&e));
            }
        }
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
    /// the journal (the crons' and the guards', `schema.rs`).
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
        conn.execute_batch(schema::GUARDS).map_err(OpenError::Schema)?;
        Ok(Store { backend: Backend::Sqlite(Mutex::new(conn)) })
    }

    /// The store on PostgreSQL at `url` with a pool of `pool_size` connections. A replica never
    /// migrates PostgreSQL (`mock-server migrate` does, as the rollout's migrate job): a database
    /// behind the journal, or without the server's own tables, is refused, naming what is missing.
    pub fn open_postgres(url: &str, pool_size: usize) -> Result<Store, OpenError> {
        let pool = PgPool::new(url, pool_size).map_err(OpenError::Postgres)?;
        let session = pool.session().map_err(OpenError::Postgres)?;
        let missing = catalog::missing(&session).map_err(OpenError::Postgres)?;
        if !missing.is_empty() {
            return Err(OpenError::BehindJournal(missing));
        }
        let mut absent = Vec::new();
        for table in schema::OWN_TABLES {
            if !catalog::table_exists(&session, table).map_err(OpenError::Postgres)? {
                absent.push(table);
            }
        }
        if !absent.is_empty() {
            return Err(OpenError::NoOwnTables(absent));
        }
        drop(session);
        Ok(Store { backend: Backend::Postgres(pool) })
    }

    /// The connection. Waiting for it blocks, so on the server's async workers the wait is
    /// announced to tokio (`block_in_place`): other requests move to another worker instead of
    /// stalling behind a cron's transaction.
    /// On PostgreSQL: (connections in use, requests waiting for one, the pool's bound).
    pub fn pool_usage(&self) -> Option<(usize, usize, usize)> {
        match &self.backend {
            Backend::Sqlite(_) => None,
            Backend::Postgres(pool) => Some(pool.usage()),
        }
    }

    pub fn lock(&self) -> sql::Result<Locked<'_>> {
        Ok(Locked(match &self.backend {
            // Free, it is taken at once; only a wait is moved off the async worker (handing the
            // worker away costs two thread switches, the most of a short request's time).
            Backend::Sqlite(conn) => Held::Sqlite(conn.try_lock().unwrap_or_else(|| blocking(|| conn.lock()))),
            Backend::Postgres(pool) => Held::Postgres(Box::new(pool.begin(false)?)),
        }))
    }

    /// Runs `f` in one transaction: all of it lands, or none of it. `E` is the caller's error
    /// type (a store error converts into it); the routes' shorthand is `Store::tx` (error.rs).
    pub fn transaction<T, E: From<sql::Error>>(&self, f: impl FnOnce(&Connection) -> Result<T, E>) -> Result<T, E> {
        self.in_transaction(false, f)
    }

    /// [`Store::transaction`] for the session routes (a login, a refresh, a handshake): on
    /// PostgreSQL it runs beside the others of its kind, each locking by key what it writes
    /// (`sql::lock_key`: a refresh token's family, a device), and alone against every other
    /// transaction. On SQLite it is [`Store::transaction`].
    pub fn shared_transaction<T, E: From<sql::Error>>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        self.in_transaction(true, f)
    }

    fn in_transaction<T, E: From<sql::Error>>(
        &self,
        shared: bool,
        f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        match &self.backend {
            Backend::Sqlite(conn) => blocking(|| {
                let conn = conn.lock();
                let out = (|| {
                    // Rolled back when dropped uncommitted: on an error, and on a panic in `f`
                    // (a cron's is caught), which must not leave the connection mid-transaction.
                    let tx = rusqlite::Transaction::new_unchecked(&conn, rusqlite::TransactionBehavior::Deferred)
                        .map_err(sql::Error::from)?;
                    let out = f(&*tx)?;
                    tx.commit().map_err(sql::Error::from)?;
                    Ok(out)
                })();
                // A fair hand-over: a waiting request gets the connection before this thread (a
                // cron going tenant by tenant) can take it again.
                MutexGuard::unlock_fair(conn);
                out
            }),
            // One announcement to tokio for the whole transaction: each statement's wait then
            // costs no hand-over of the worker.
            Backend::Postgres(pool) => blocking(|| {
                // Dropped uncommitted (a panic in `f`), the connection is closed, not pooled.
                let conn = pool.begin(shared)?;
                match f(&conn) {
                    Ok(out) => {
                        conn.end("COMMIT")?;
                        Ok(out)
                    }
                    Err(e) => {
                        // The caller's error is the story; a failed rollback closes the connection.
                        let _ = conn.end("ROLLBACK");
                        Err(e)
                    }
                }
            }),
        }
    }
}

/// An in-memory connection with `schema` applied, for unit tests of the store's tables.
#[cfg(test)]
pub(crate) fn test_connection(schema: &str) -> Sqlite {
    let c = Sqlite::open_in_memory().expect("an in-memory SQLite");
    c.execute_batch(schema).expect("the schema applies");
    c
}
