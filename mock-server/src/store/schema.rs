//! The store's tables outside the drizzle journal: they serve the mock server's own machinery
//! (cron runs and their lease, the rollback guard's alarms, the document cluster's catalogue),
//! not the application's schema that the rollout migrates. Owned here, below the modules that use
//! them (`crons/runs.rs`, `rolling/alarms.rs`, `docdb/`). On SQLite `Store::open` (crons, alarms)
//! and `docdb::install` apply them at start; on PostgreSQL `mock-server migrate` applies
//! [`POSTGRES`] after the journal, and a replica only checks they are there.

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

/// The guards' tables (prefix `guard_`): the rollback guard's alarms and device marks, the refresh
/// reuse guard's replays, the sign-in throttle's failures per account, the sessions signing out,
/// the device each session was registered from (its sessions end with the device), the public key
/// each device registered and the nonces its proofs have spent (`auth::device_keys`),
/// the day databases an operator holds back from the drop, each tenant's last reconciliation diff,
/// the devices' reports of local data destroyed unpushed (`store::device_losses`) and the audit
/// line that sums up each device's reports of a day
/// (what the archive cron found, for the metrics). Beside them (prefix `mock_`): the test
/// clock's offset (`mock_clock`), kept with the data so that a restarted server is on the same day
/// as its databases, and the marker of the store's backup directory (`mock_backup_marker`, see
/// `rolling::backup::unshared`). Both prefixes are in `store::migrate::UNTRACKED_TABLE_PREFIXES`.
pub const GUARDS: &str = "
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
);
CREATE TABLE IF NOT EXISTS guard_device_mark_sessions (
  device_id TEXT PRIMARY KEY NOT NULL,
  session_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_refresh_replays (
  token_hash TEXT PRIMARY KEY NOT NULL,
  at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_login_failures (
  username TEXT PRIMARY KEY NOT NULL,
  failures INTEGER NOT NULL,
  locked_until INTEGER NOT NULL,
  last_failure_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_signing_out (
  family_id TEXT PRIMARY KEY NOT NULL,
  until INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_rolling_enables (
  company_id TEXT PRIMARY KEY NOT NULL,
  enabled_at INTEGER NOT NULL,
  rotated_at INTEGER
);
CREATE TABLE IF NOT EXISTS guard_device_sessions (
  family_id TEXT NOT NULL,
  device_id TEXT NOT NULL,
  linked_at INTEGER NOT NULL,
  PRIMARY KEY (family_id, device_id)
);
CREATE INDEX IF NOT EXISTS guard_device_sessions_device ON guard_device_sessions (device_id);
CREATE TABLE IF NOT EXISTS guard_device_keys (
  device_id TEXT PRIMARY KEY NOT NULL,
  public_key TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_device_nonces (
  nonce TEXT PRIMARY KEY NOT NULL,
  until INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_keyed_sign_ins (
  device_id TEXT PRIMARY KEY NOT NULL,
  signed_in_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_held_days (
  name TEXT PRIMARY KEY NOT NULL,
  held_at INTEGER NOT NULL,
  reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_reconciliations (
  company_id TEXT PRIMARY KEY NOT NULL,
  diff INTEGER NOT NULL,
  checked_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_device_losses (
  report_id TEXT PRIMARY KEY NOT NULL,
  company_id TEXT NOT NULL,
  device_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  documents INTEGER NOT NULL,
  lost TEXT NOT NULL,
  reported_at INTEGER NOT NULL,
  resolved_at INTEGER
);
CREATE INDEX IF NOT EXISTS guard_device_losses_tenant ON guard_device_losses (company_id, reason);
CREATE INDEX IF NOT EXISTS guard_device_losses_device ON guard_device_losses (device_id, reported_at);
CREATE TABLE IF NOT EXISTS guard_device_loss_audits (
  company_id TEXT NOT NULL,
  device_id TEXT NOT NULL,
  day TEXT NOT NULL,
  audit_id INTEGER NOT NULL,
  PRIMARY KEY (company_id, device_id, day)
);
CREATE TABLE IF NOT EXISTS mock_clock (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  offset_ms INTEGER NOT NULL,
  version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS mock_backup_marker (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  token TEXT NOT NULL
);";

pub const DOCDB: &str = "
CREATE TABLE IF NOT EXISTS docdb_databases (
  name TEXT PRIMARY KEY NOT NULL,
  company_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  update_seq INTEGER NOT NULL DEFAULT 0,
  indexes TEXT NOT NULL DEFAULT '[]',
  created_at INTEGER NOT NULL,
  open INTEGER NOT NULL DEFAULT 0,
  pinned INTEGER NOT NULL DEFAULT 0,
  last_used INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS docdb_databases_lru ON docdb_databases (open, pinned, last_used);
CREATE INDEX IF NOT EXISTS docdb_databases_company ON docdb_databases (company_id);
-- The latest use, read by every use to place itself after it (docdb::NEXT_USE).
CREATE INDEX IF NOT EXISTS docdb_databases_recency ON docdb_databases (last_used);
CREATE TABLE IF NOT EXISTS docdb_cluster (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  max_open INTEGER NOT NULL,
  open_handles INTEGER NOT NULL DEFAULT 0,
  db_prefix TEXT
);
-- The open-handle count kept by triggers, whatever path opens, closes or deletes a database:
-- counting the rows on every open made a 10,000-tenant rotate quadratic.
CREATE TRIGGER IF NOT EXISTS docdb_handle_opened AFTER INSERT ON docdb_databases WHEN NEW.open = 1
  BEGIN UPDATE docdb_cluster SET open_handles = open_handles + 1; END;
CREATE TRIGGER IF NOT EXISTS docdb_handle_deleted AFTER DELETE ON docdb_databases WHEN OLD.open = 1
  BEGIN UPDATE docdb_cluster SET open_handles = open_handles - 1; END;
CREATE TRIGGER IF NOT EXISTS docdb_handle_changed AFTER UPDATE OF open ON docdb_databases WHEN NEW.open != OLD.open
  BEGIN UPDATE docdb_cluster SET open_handles = open_handles + (CASE WHEN NEW.open = 1 THEN 1 ELSE -1 END); END;
CREATE TABLE IF NOT EXISTS docdb_documents (
  db TEXT NOT NULL REFERENCES docdb_databases(name) ON DELETE CASCADE,
  id TEXT NOT NULL,
  rev TEXT NOT NULL,
  seq INTEGER NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (db, id)
);
CREATE TABLE IF NOT EXISTS docdb_local_documents (
  db TEXT NOT NULL REFERENCES docdb_databases(name) ON DELETE CASCADE,
  id TEXT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (db, id)
);
CREATE TABLE IF NOT EXISTS docdb_archived_rows (
  id TEXT PRIMARY KEY NOT NULL,
  kind TEXT NOT NULL,
  source_db TEXT NOT NULL,
  source_rev TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS docdb_archived_rows_source ON docdb_archived_rows (source_db, kind);";

/// The server's own tables on PostgreSQL (what [`CRONS`], [`GUARDS`] and [`DOCDB`] are on SQLite):
/// every integer a `bigint` (the store keeps milliseconds since the epoch), the handle count kept
/// by one trigger function.
pub const POSTGRES: &str = "
CREATE TABLE IF NOT EXISTS cron_runs (
  run_id TEXT PRIMARY KEY NOT NULL,
  cron TEXT NOT NULL,
  status TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  finished_at BIGINT,
  done BIGINT NOT NULL DEFAULT 0,
  total BIGINT NOT NULL DEFAULT 0,
  log TEXT NOT NULL DEFAULT '[]',
  seq BIGSERIAL
);
CREATE TABLE IF NOT EXISTS cron_run_log (
  run_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  line TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS cron_locks (
  cron TEXT PRIMARY KEY NOT NULL,
  run_id TEXT NOT NULL,
  holder TEXT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_alarms (
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  company_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  subject TEXT NOT NULL,
  detail TEXT NOT NULL,
  raised_at BIGINT NOT NULL,
  cleared_at BIGINT
);
CREATE INDEX IF NOT EXISTS guard_alarms_open ON guard_alarms (company_id, cleared_at);
CREATE TABLE IF NOT EXISTS guard_device_marks (
  device_id TEXT PRIMARY KEY NOT NULL,
  company_id TEXT NOT NULL,
  obeyed BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_device_mark_sessions (
  device_id TEXT PRIMARY KEY NOT NULL,
  session_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_refresh_replays (
  token_hash TEXT PRIMARY KEY NOT NULL,
  at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_login_failures (
  username TEXT PRIMARY KEY NOT NULL,
  failures BIGINT NOT NULL,
  locked_until BIGINT NOT NULL,
  last_failure_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_signing_out (
  family_id TEXT PRIMARY KEY NOT NULL,
  until BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_rolling_enables (
  company_id TEXT PRIMARY KEY NOT NULL,
  enabled_at BIGINT NOT NULL,
  rotated_at BIGINT
);
CREATE TABLE IF NOT EXISTS guard_device_sessions (
  family_id TEXT NOT NULL,
  device_id TEXT NOT NULL,
  linked_at BIGINT NOT NULL,
  PRIMARY KEY (family_id, device_id)
);
CREATE INDEX IF NOT EXISTS guard_device_sessions_device ON guard_device_sessions (device_id);
CREATE TABLE IF NOT EXISTS guard_device_keys (
  device_id TEXT PRIMARY KEY NOT NULL,
  public_key TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_device_nonces (
  nonce TEXT PRIMARY KEY NOT NULL,
  until BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_keyed_sign_ins (
  device_id TEXT PRIMARY KEY NOT NULL,
  signed_in_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_held_days (
  name TEXT PRIMARY KEY NOT NULL,
  held_at BIGINT NOT NULL,
  reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS guard_reconciliations (
  company_id TEXT PRIMARY KEY NOT NULL,
  diff BIGINT NOT NULL,
  checked_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS docdb_databases (
  name TEXT PRIMARY KEY NOT NULL,
  company_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  update_seq BIGINT NOT NULL DEFAULT 0,
  indexes TEXT NOT NULL DEFAULT '[]',
  created_at BIGINT NOT NULL,
  open BIGINT NOT NULL DEFAULT 0,
  pinned BIGINT NOT NULL DEFAULT 0,
  last_used BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS docdb_databases_lru ON docdb_databases (open, pinned, last_used);
CREATE INDEX IF NOT EXISTS docdb_databases_company ON docdb_databases (company_id);
-- The latest use, read by every use to place itself after it (docdb::NEXT_USE).
CREATE INDEX IF NOT EXISTS docdb_databases_recency ON docdb_databases (last_used);
CREATE TABLE IF NOT EXISTS docdb_cluster (
  id BIGINT PRIMARY KEY CHECK (id = 1),
  max_open BIGINT NOT NULL,
  open_handles BIGINT NOT NULL DEFAULT 0,
  db_prefix TEXT
);
CREATE OR REPLACE FUNCTION docdb_handle_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' AND NEW.open = 1 THEN
    UPDATE docdb_cluster SET open_handles = open_handles + 1;
  ELSIF TG_OP = 'DELETE' AND OLD.open = 1 THEN
    UPDATE docdb_cluster SET open_handles = open_handles - 1;
  ELSIF TG_OP = 'UPDATE' AND NEW.open != OLD.open THEN
    UPDATE docdb_cluster SET open_handles = open_handles + (CASE WHEN NEW.open = 1 THEN 1 ELSE -1 END);
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS docdb_handle_count ON docdb_databases;
CREATE TRIGGER docdb_handle_count AFTER INSERT OR DELETE OR UPDATE OF open ON docdb_databases
  FOR EACH ROW EXECUTE FUNCTION docdb_handle_count();
CREATE TABLE IF NOT EXISTS docdb_documents (
  db TEXT NOT NULL REFERENCES docdb_databases(name) ON DELETE CASCADE,
  id TEXT NOT NULL,
  rev TEXT NOT NULL,
  seq BIGINT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (db, id)
);
CREATE TABLE IF NOT EXISTS docdb_local_documents (
  db TEXT NOT NULL REFERENCES docdb_databases(name) ON DELETE CASCADE,
  id TEXT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (db, id)
);
CREATE TABLE IF NOT EXISTS docdb_archived_rows (
  id TEXT PRIMARY KEY NOT NULL,
  kind TEXT NOT NULL,
  source_db TEXT NOT NULL,
  source_rev TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS docdb_archived_rows_source ON docdb_archived_rows (source_db, kind);
CREATE TABLE IF NOT EXISTS guard_device_losses (
  report_id TEXT PRIMARY KEY NOT NULL,
  company_id TEXT NOT NULL,
  device_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  documents BIGINT NOT NULL,
  lost TEXT NOT NULL,
  reported_at BIGINT NOT NULL,
  resolved_at BIGINT
);
CREATE INDEX IF NOT EXISTS guard_device_losses_tenant ON guard_device_losses (company_id, reason);
CREATE INDEX IF NOT EXISTS guard_device_losses_device ON guard_device_losses (device_id, reported_at);
CREATE TABLE IF NOT EXISTS guard_device_loss_audits (
  company_id TEXT NOT NULL,
  device_id TEXT NOT NULL,
  day TEXT NOT NULL,
  audit_id BIGINT NOT NULL,
  PRIMARY KEY (company_id, device_id, day)
);
CREATE TABLE IF NOT EXISTS mock_clock (
  id BIGINT PRIMARY KEY CHECK (id = 1),
  offset_ms BIGINT NOT NULL,
  version BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS mock_backup_marker (
  id BIGINT PRIMARY KEY CHECK (id = 1),
  token TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS mock_replicas (
  id TEXT PRIMARY KEY NOT NULL,
  url TEXT NOT NULL,
  seen_at TIMESTAMPTZ NOT NULL
);";

/// The server's own tables a PostgreSQL replica checks for at start.
pub const OWN_TABLES: [&str; 27] = [
    "mock_replicas",
    "guard_device_losses",
    "guard_device_loss_audits",
    "guard_device_sessions",
    "guard_device_keys",
    "guard_keyed_sign_ins",
    "guard_device_nonces",
    "mock_backup_marker",
    "guard_reconciliations",
    "docdb_archived_rows",
    "guard_refresh_replays",
    "guard_held_days",
    "guard_login_failures",
    "guard_signing_out",
    "guard_rolling_enables",
    "cron_runs",
    "cron_run_log",
    "cron_locks",
    "guard_alarms",
    "guard_device_marks",
    "guard_device_mark_sessions",
    "docdb_databases",
    "docdb_cluster",
    "docdb_documents",
    "docdb_local_documents",
    "mock_clock",
    "company_feature_flags",
];
