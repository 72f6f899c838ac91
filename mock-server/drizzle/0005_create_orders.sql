CREATE TABLE orders (
  id TEXT PRIMARY KEY NOT NULL,
  company_id TEXT NOT NULL REFERENCES companies(id),
  status TEXT NOT NULL DEFAULT 'open',
  total_cents INTEGER NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL
);
