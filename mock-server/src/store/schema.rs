//! The store's tables outside the drizzle journal: they serve the mock server's own machinery
//! (cron runs and their lease, the rollback guard's alarms), not the application's schema that
//! the runbook migrates. Owned here, below the modules that use them (`crons/runs.rs`,
//! `rolling/alarms.rs`), and applied by `Store::open` after the migrations.

pub const CRONS: &str = "
CREATE TABLE IF NOT EXISTS cron_runs (
  run_id TEXT PRIMARY KEY NOT NULL,
  cron TEXT NOT NULL,
  status TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  done INTEGER NOT NULL DEFAULT 0,
  total INTEGER NOT NULL DEFAULT 0,
  log TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS cron_run_log (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  line TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS cron_locks (
  cron TEXT PRIMARY KEY NOT NULL,
  run_id TEXT NOT NULL,
  holder TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);";

/// Tables of their own beside the drizzle ones (prefix in `store::migrate::UNTRACKED_TABLE_PREFIXES`).
pub const ALARMS: &str = "
CREATE TABLE IF NOT EXISTS guard_alarms (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  company_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  subject TEXT NOT NULL,
  detail TEXT NOT NULL,
  raised_at INTEGER NOT NULL,
  cleared_at INTEGER
);
CREATE INDEX IF NOT EXISTS guard_alarms_open ON guard_alarms (company_id, cleared_at);
CREATE TABLE IF NOT EXISTS guard_device_marks (
  device_id TEXT PRIMARY KEY NOT NULL,
  company_id TEXT NOT NULL,
  obeyed INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);";
