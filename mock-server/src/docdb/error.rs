//! What the document cluster answers when it cannot: CouchDB's errors by their names
//! (`file_exists`, `not_found`, `conflict`, `all_dbs_active`), a row that does not read back, a
//! changed `DB_PREFIX`, and the store's and the engine's failures.

use super::engine;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum DocDbError {
    #[error("illegal_database_name: {0:?} (lowercase letter first, then a-z 0-9 _ $ ( ) + - /)")]
    IllegalName(String),
    #[error("file_exists: database {0} already exists")]
    Exists(String),
    #[error("not_found: no database {0}")]
    Missing(String),
    #[error("conflict: document {0} has a newer revision")]
    Conflict(String),
    /// Opening one more handle would exceed `max_dbs_open` and every open handle is in use.
    #[error("all_dbs_active: {open} databases open and all in use, max_dbs_open is {max}")]
    AllDbsActive { open: usize, max: usize },
    /// A stored row that does not read back (an unknown kind): reported, not guessed.
    #[error("corrupt document-database row: {0}")]
    Corrupt(String),
    /// A stored JSON text that does not parse.
    #[error("corrupt document-database row: {what}")]
    CorruptJson { what: String, source: serde_json::Error },
    /// Another `DB_PREFIX` than the one the store's databases were made with.
    #[error(
        "DB_PREFIX is {configured:?}, but this store's databases were made with DB_PREFIX {recorded:?}: the prefix must not change on existing data (start with DB_PREFIX={recorded}, or give a new DATA_DIR)"
    )]
    PrefixChanged { configured: String, recorded: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The engine answered what the port does not expect (its status and error, described).
    #[error("{0}")]
    Engine(String),
    /// The engine could not be reached, or its answer not read.
    #[error("the document engine did not answer")]
    EngineUnreachable(#[source] reqwest::Error),
    /// The bridge runtime could not run an engine request.
    #[error(transparent)]
    Bridge(#[from] engine::BridgeError),
}

crate::equal_when_told!(DocDbError);

impl From<crate::store::sql::Error> for DocDbError {
    fn from(e: crate::store::sql::Error) -> Self {
        DocDbError::Store(StoreError(e))
    }
}

pub type DocDbResult<T> = Result<T, DocDbError>;
