//! The document-database cluster (CouchDB-like), in pieces:
//!
//! - `catalogue`: which database is whose and of which kind (in the relational store, beside the
//!   application's tables but outside the drizzle migrations), creating and dropping;
//! - `handles`: `max_dbs_open` as CouchDB means it, a bound on open handles with an LRU, and the
//!   pins that keep a rolling tenant's databases open;
//! - `documents`: the documents' port, served by the embedded model (`embedded`, whose tables
//!   share the SQLite file, so one transaction covers a tenant's whole rotate) or a
//!   CouchDB-protocol engine (`on_engine`, `DOCDB_URL`);
//! - `cluster`: the two put together, every document call opening its database's handle first;
//! - `error`: what the cluster answers when it cannot.
//!
//! The document proxy's rule (`access`, the query's spellings in `query`), its CORS (`cors`),
//! feeds (`feeds`, `changes_hub`) and the engine's client (`engine`) live beside them.

pub mod access;
mod catalogue;
pub mod changes_hub;
mod cluster;
pub mod cors;
pub mod documents;
pub mod embedded;
pub mod engine;
mod error;
pub mod feeds;
mod handles;
pub mod headroom;
pub mod naming;
pub mod on_engine;
pub mod query;
pub mod seed;
pub mod strict_json;

pub use catalogue::{
    check_prefix, create, create_indexed, drop_database, exists, indexes, info, install, is_legal_name, list, max_open,
    names, owner, set_max_open, DbInfo, Kind,
};
pub use cluster::{
    all_docs, all_docs_raw, bulk_put, get, get_local, on_documents_side, put, put_local, replications_naming,
    restore_docs, Cluster,
};
pub(crate) use documents::strip_reserved;
pub use documents::{Doc, RawDoc};
pub use error::{DocDbError, DocDbResult};
pub use handles::{existing, existing_count, in_use_count, open_count, pin_only};

/// A percent-encoded URL part (a path segment, a user name) as text.
pub fn percent_decoded(part: &str) -> String {
    percent_encoding::percent_decode_str(part).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests;
