CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '{}'
);
--> statement-breakpoint
CREATE TABLE client_invalidations (
  company_id TEXT PRIMARY KEY NOT NULL REFERENCES companies(id),
  invalidated_at INTEGER NOT NULL,
  reason TEXT NOT NULL,
  routing TEXT NOT NULL DEFAULT 'legacy'
);
