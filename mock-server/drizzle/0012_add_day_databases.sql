CREATE TABLE day_databases (
  name TEXT PRIMARY KEY NOT NULL,
  company_id TEXT NOT NULL REFERENCES companies(id),
  day TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'PREWARMED',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  drained_at INTEGER,
  archived_at INTEGER,
  reconciled_at INTEGER,
  dropped_at INTEGER
);
--> statement-breakpoint
CREATE INDEX day_databases_company_day ON day_databases(company_id, day);
