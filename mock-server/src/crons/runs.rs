//! Run records (`cron_runs`): status, progress and log of each run. Which run may go is the
//! cluster lock's decision (`cluster_lock.rs`).

use crate::store::sql::{params, Connection, Dialect, OptionalExtension};

use super::cluster_lock::{self, Acquired};

pub use protocol::views::{CronRun as Run, Progress, RunStatus};

pub fn get(conn: &Connection, run_id: &str) -> crate::store::sql::Result<Option<Run>> {
    Ok(page(conn, run_id, 0, u64::MAX)?.map(|(run, _)| run))
}

/// A run with the page of its log from line `from` (0-based), at most `limit` lines, and how
/// many lines the log has: a poll of a 10,000-tenant rotate reads its page, not the whole log.
/// Older stores kept the lines as a JSON array in `cron_runs.log`, which comes first.
pub fn page(conn: &Connection, run_id: &str, from: u64, limit: u64) -> crate::store::sql::Result<Option<(Run, u64)>> {
    let found = conn
        .query_row(
            "SELECT run_id, cron, status, started_at, finished_at, done, total, log, (SELECT COUNT(*) FROM cron_run_log l WHERE l.run_id = cron_runs.run_id)
             FROM cron_runs WHERE run_id = ?1",
            [run_id],
            |r| {
                let run = Run {
                    run_id: r.get(0)?,
                    cron: r.get(1)?,
                    status: r.get_named(2, "run status", RunStatus::parse)?,
                    started_at: r.get(3)?,
                    finished_at: r.get(4)?,
                    progress: Progress { done: r.get::<_, i64>(5)? as u64, total: r.get::<_, i64>(6)? as u64 },
                    log: Vec::new(),
                    log_total: 0,
                };
                let legacy: Vec<String> = serde_json::from_str(&r.get::<_, Option<String>>(7)?.unwrap_or_default()).unwrap_or_default();
                Ok((run, legacy, r.get::<_, i64>(8)?.max(0) as u64))
            },
        )
        .optional()?;
    let Some((mut run, legacy, stored)) = found else { return Ok(None) };
    let total = legacy.len() as u64 + stored;
    run.log_total = total;
    let (from, limit) = (usize::try_from(from).unwrap_or(usize::MAX), usize::try_from(limit).unwrap_or(usize::MAX));
    run.log = legacy.iter().skip(from).take(limit).cloned().collect();
    let rest = limit - run.log.len();
    if rest > 0 {
        let offset = from.saturating_sub(legacy.len());
        let (rest, offset) = (i64::try_from(rest).unwrap_or(i64::MAX), i64::try_from(offset).unwrap_or(i64::MAX));
        let mut stmt =
            conn.prepare("SELECT line FROM cron_run_log WHERE run_id = ?1 ORDER BY seq LIMIT ?2 OFFSET ?3")?;
        for line in stmt.query_map(params![run_id, rest, offset], |r| r.get::<_, String>(0))? {
            run.log.push(line?);
        }
    }
    Ok(Some((run, total)))
}

pub fn last_finished(conn: &Connection, cron: &str) -> crate::store::sql::Result<Option<Run>> {
    // Runs started in the same millisecond come out in the order they were written.
    let written = match conn.dialect() {
        Dialect::Sqlite => "rowid",
        Dialect::Postgres => "seq",
    };
    let sql = format!("SELECT run_id FROM cron_runs WHERE cron = ?1 AND status != 'running' ORDER BY started_at DESC, {written} DESC LIMIT 1");
    let id: Option<String> = conn.query_row(&sql, [cron], |r| r.get(0)).optional()?;
    match id {
        Some(id) => get(conn, &id),
        None => Ok(None),
    }
}

/// `cron`'s last finished run: (whether it succeeded, started, finished), without its log.
pub fn last_outcome(conn: &Connection, cron: &str) -> crate::store::sql::Result<Option<(bool, i64, i64)>> {
    conn.query_row(
        "SELECT status, started_at, finished_at FROM cron_runs WHERE cron = ?1 AND status != 'running' AND finished_at IS NOT NULL ORDER BY finished_at DESC LIMIT 1",
        [cron],
        |r| Ok((r.get::<_, String>(0)? == "succeeded", r.get(1)?, r.get(2)?)),
    )
    .optional()
}

/// When `cron` last finished a run that succeeded (ms), if it ever did in the kept history.
pub fn last_success(conn: &Connection, cron: &str) -> crate::store::sql::Result<Option<i64>> {
    conn.query_row("SELECT MAX(finished_at) FROM cron_runs WHERE cron = ?1 AND status = 'succeeded'", [cron], |r| {
        r.get::<_, Option<i64>>(0)
    })
}

/// Appends one line: a row of its own, so a run's log grows in constant time per line (the
/// whole log is never read back and rewritten).
pub fn append_log(conn: &Connection, run_id: &str, line: &str) -> crate::store::sql::Result<()> {
    conn.execute_later(
        "INSERT INTO cron_run_log (run_id, seq, line) VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM cron_run_log WHERE run_id = ?1), ?2)",
        params![run_id, line],
    )
}

/// Joins the live run of `cron`, or starts a new one (marking an expired holder interrupted).
/// Returns the run id and whether it was already running.
pub fn start_or_join(
    conn: &Connection,
    cron: &str,
    new_run_id: &str,
    holder: &str,
    now_ms: i64,
) -> crate::store::sql::Result<(String, bool)> {
    match cluster_lock::acquire(conn, cron, new_run_id, holder, now_ms)? {
        Acquired::Held(run_id) => Ok((run_id, true)),
        Acquired::Taken { expired_run } => {
            if let Some(stale) = expired_run {
                if get(conn, &stale)?.is_some_and(|r| r.status == RunStatus::Running) {
                    append_log(conn, &stale, "interrupted: the process running it stopped (its lock lease expired)")?;
                    conn.execute(
                        "UPDATE cron_runs SET status = 'failed', finished_at = ?2 WHERE run_id = ?1",
                        params![stale, now_ms],
                    )?;
                }
            }
            conn.execute(
                "INSERT INTO cron_runs (run_id, cron, status, started_at) VALUES (?1, ?2, 'running', ?3)",
                params![new_run_id, cron, now_ms],
            )?;
            Ok((new_run_id.to_owned(), false))
        }
    }
}

/// Records progress and a log line, and renews the lease.
pub fn progress(
    conn: &Connection,
    run_id: &str,
    done: u64,
    total: u64,
    line: Option<&str>,
    now_ms: i64,
) -> crate::store::sql::Result<()> {
    conn.execute_later(
        "UPDATE cron_runs SET done = ?2, total = ?3 WHERE run_id = ?1",
        params![run_id, done as i64, total as i64],
    )?;
    if let Some(line) = line {
        append_log(conn, run_id, line)?;
    }
    cluster_lock::renew(conn, run_id, now_ms)
}

pub fn finish(conn: &Connection, run_id: &str, succeeded: bool, now_ms: i64) -> crate::store::sql::Result<()> {
    let status = if succeeded { "succeeded" } else { "failed" };
    conn.execute(
        "UPDATE cron_runs SET status = ?2, finished_at = ?3 WHERE run_id = ?1",
        params![run_id, status, now_ms],
    )?;
    cluster_lock::release(conn, run_id)
}

/// Keeps the newest `keep` finished runs of each cron; a running one is never touched.
pub fn prune(conn: &Connection, keep: u32) -> crate::store::sql::Result<usize> {
    let removed = conn.execute(
        "DELETE FROM cron_runs WHERE status != 'running' AND run_id NOT IN (
           SELECT run_id FROM (
             SELECT run_id, ROW_NUMBER() OVER (PARTITION BY cron ORDER BY started_at DESC, run_id DESC) AS n
             FROM cron_runs WHERE status != 'running'
           ) ranked WHERE n <= ?1)",
        params![keep],
    )?;
    conn.execute("DELETE FROM cron_run_log WHERE run_id NOT IN (SELECT run_id FROM cron_runs)", [])?;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> rusqlite::Connection {
        crate::store::test_connection(crate::store::schema::CRONS)
    }

    #[test]
    fn a_live_lock_is_joined_and_an_expired_one_taken_over() {
        let c = conn();
        assert_eq!(start_or_join(&c, "rotate", "r1", "p1", 0).unwrap(), ("r1".into(), false));
        assert_eq!(start_or_join(&c, "rotate", "r2", "p2", 1_000).unwrap(), ("r1".into(), true), "never doubled");
        progress(&c, "r1", 1, 3, Some("acme done"), 20_000).unwrap();
        assert_eq!(
            start_or_join(&c, "rotate", "r2", "p2", 40_000).unwrap(),
            ("r1".into(), true),
            "the lease was renewed"
        );
        // The holder dies; its lease runs out.
        let (id, joined) = start_or_join(&c, "rotate", "r3", "p2", 20_000 + cluster_lock::LEASE_MS + 1).unwrap();
        assert_eq!((id.as_str(), joined), ("r3", false));
        let old = get(&c, "r1").unwrap().unwrap();
        assert_eq!(old.status, RunStatus::Failed);
        assert!(old.log.last().unwrap().contains("interrupted"));
        finish(&c, "r3", true, 99_000).unwrap();
        assert_eq!(cluster_lock::holding(&c, "rotate", 99_000).unwrap(), None);
        assert_eq!(last_finished(&c, "rotate").unwrap().unwrap().run_id, "r3");
    }
}
