CREATE TABLE sales (
  id TEXT PRIMARY KEY NOT NULL,
  company_id TEXT NOT NULL REFERENCES companies(id),
  order_id TEXT REFERENCES orders(id),
  amount_cents INTEGER NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL
);
