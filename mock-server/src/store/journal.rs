//! The drizzle journal (`mock-server/drizzle/`, embedded at build time): each migration's tag,
//! its `when` (drizzle's `created_at`) and its SQL. Both runners (`migrate.rs` for SQLite,
//! `postgres.rs`) apply it, and the running server reads it (`catalog.rs`) to know the schema it
//! needs.

use sha2::{Digest, Sha256};

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

pub const BREAKPOINT: &str = "--> statement-breakpoint";

/// One journal entry and the SQL it runs.
#[derive(Debug, Clone)]
pub struct Migration {
    pub tag: &'static str,
    pub when: i64,
    pub sql: &'static str,
}

impl Migration {
    pub fn number(&self) -> u32 {
        self.tag.get(..4).and_then(|n| n.parse().ok()).unwrap_or(u32::MAX)
    }

    pub fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.sql.as_bytes()))
    }

    pub fn statements(&self) -> impl Iterator<Item = &'static str> {
        self.sql.split(BREAKPOINT).map(str::trim).filter(|s| !s.is_empty())
    }
}

pub fn journal() -> Vec<Migration> {
    EMBEDDED.iter().map(|&(tag, when, sql)| Migration { tag, when, sql }).collect()
}

/// The journal's last migration (the schema the rollout needs: `0015_…`).
pub fn last_migration() -> &'static str {
    EMBEDDED.last().map_or("", |&(tag, _, _)| tag)
}
