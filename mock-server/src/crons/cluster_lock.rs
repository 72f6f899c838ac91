//! The cluster lock (the rotate "runs in the background; protected by a cluster lock";
//! "cluster lock prevents double rotation"). One lock per cron in `cron_locks`, held by one run
//! with a lease the running job renews at every step: a second trigger joins the running run
//! instead of starting another, even from a second server process on the same data file, and a
//! process killed mid-run leaves a lock that expires, after which the next trigger takes over.

use crate::store::sql::{params, Connection, OptionalExtension};

/// How long the lock stays held without a renewal.
pub const LEASE_MS: i64 = 30_000;

/// What asking for the lock came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// A live run holds it: join that one.
    Held(String),
    /// Taken for the new run; `expired_run` held it before and let its lease expire.
    Taken { expired_run: Option<String> },
}

/// The run holding the cron's lock now, if the lock is live.
pub fn holding(conn: &Connection, cron: &str, now_ms: i64) -> crate::store::sql::Result<Option<String>> {
    conn.query_row("SELECT run_id FROM cron_locks WHERE cron = ?1 AND expires_at > ?2", params![cron, now_ms], |r| {
        r.get(0)
    })
    .optional()
}

/// Takes the lock for `run_id`, unless a live run holds it.
pub fn acquire(
    conn: &Connection,
    cron: &str,
    run_id: &str,
    holder: &str,
    now_ms: i64,
) -> crate::store::sql::Result<Acquired> {
    if let Some(live) = holding(conn, cron, now_ms)? {
        return Ok(Acquired::Held(live));
    }
    let expired_run: Option<String> =
        conn.query_row("SELECT run_id FROM cron_locks WHERE cron = ?1", [cron], |r| r.get(0)).optional()?;
    conn.execute("DELETE FROM cron_locks WHERE cron = ?1", [cron])?;
    conn.execute(
        "INSERT INTO cron_locks (cron, run_id, holder, expires_at) VALUES (?1, ?2, ?3, ?4)",
        params![cron, run_id, holder, now_ms + LEASE_MS],
    )?;
    Ok(Acquired::Taken { expired_run })
}

/// Extends the lease of the run's lock (every progress step).
pub fn renew(conn: &Connection, run_id: &str, now_ms: i64) -> crate::store::sql::Result<()> {
    conn.execute("UPDATE cron_locks SET expires_at = ?2 WHERE run_id = ?1", params![run_id, now_ms + LEASE_MS])
        .map(|_| ())
}

pub fn release(conn: &Connection, run_id: &str) -> crate::store::sql::Result<()> {
    conn.execute("DELETE FROM cron_locks WHERE run_id = ?1", [run_id]).map(|_| ())
}
