CREATE TABLE company_feature_flags (
  company_id TEXT PRIMARY KEY NOT NULL REFERENCES companies(id),
  rolling_db_enabled INTEGER NOT NULL DEFAULT 0,
  rolling_db_prewarm INTEGER NOT NULL DEFAULT 0,
  rolling_db_cutover INTEGER NOT NULL DEFAULT 0,
  rolling_db_drop_enabled INTEGER NOT NULL DEFAULT 0,
  updated_at BIGINT,
  updated_by TEXT
);
