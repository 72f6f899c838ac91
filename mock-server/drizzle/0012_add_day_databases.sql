CREATE TABLE day_databases (
  name TEXT PRIMARY KEY NOT NULL,
  company_id TEXT NOT NULL REFERENCES companies(id),
  day TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'PREWARMED',
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  drained_at BIGINT,
  archived_at BIGINT,
  reconciled_at BIGINT,
  dropped_at BIGINT
);
--> statement-breakpoint
CREATE INDEX day_databases_company_day ON day_databases(company_id, day);
