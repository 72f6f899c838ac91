//! The relational store: SQLite (rusqlite, bundled) behind one mutex, and its record modules.

pub mod devices;
pub mod migrate;
pub mod refresh_tokens;
pub mod seed;
pub mod users;

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use rusqlite::Connection;

use crate::error::AppError;

pub const DB_FILE: &str = "mock-server.sqlite";

pub struct Store {
    conn: Mutex<Connection>,
    path: Option<PathBuf>,
}

/// Opens (creating) the SQLite file, in WAL mode so a `kill -9` never leaves a torn write.
pub fn open_connection(path: Option<&PathBuf>) -> rusqlite::Result<Connection> {
    let conn = match path {
        Some(p) => Connection::open(p)?,
        None => Connection::open_in_memory()?,
    };
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

impl Store {
    /// Opens the store under `data_dir` (or in memory), migrates it and seeds an empty one.
    pub fn open(data_dir: Option<&PathBuf>, now_ms: i64) -> Result<Store, String> {
        let path = match data_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| format!("DATA_DIR {}: {e}", dir.display()))?;
                Some(dir.join(DB_FILE))
            }
            None => None,
        };
        let mut conn = open_connection(path.as_ref()).map_err(|e| format!("open store: {e}"))?;
        migrate::run(&mut conn, migrate::Mode::Apply).map_err(|e| e.to_string())?;
        seed::seed_if_empty(&conn, now_ms).map_err(|e| format!("seed: {e}"))?;
        Ok(Store { conn: Mutex::new(conn), path })
    }

    pub fn lock(&self) -> MutexGuard<'_, Connection> {
        // A poisoned lock means a panic mid-request; the connection itself is still sound.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` in one transaction: all of it lands, or none of it.
    pub fn tx<T>(&self, f: impl FnOnce(&rusqlite::Transaction) -> Result<T, AppError>) -> Result<T, AppError> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Back to the demo seed: every table emptied, migrations kept, seed loaded again.
    pub fn reset(&self, now_ms: i64) -> Result<(), AppError> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        seed::clear(&tx)?;
        seed::seed_if_empty(&tx, now_ms)?;
        tx.commit()?;
        Ok(())
    }

    pub fn path(&self) -> Option<&PathBuf> {
        self.path.as_ref()
    }
}
