CREATE TABLE conflict_reviews (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  company_id TEXT NOT NULL REFERENCES companies(id),
  db_name TEXT NOT NULL,
  doc_id TEXT NOT NULL,
  winning_rev TEXT NOT NULL,
  losing_revs TEXT NOT NULL DEFAULT '[]',
  status TEXT NOT NULL DEFAULT 'open',
  created_at INTEGER NOT NULL,
  resolved_at INTEGER
);
