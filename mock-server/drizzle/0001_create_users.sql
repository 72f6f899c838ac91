CREATE TABLE users (
  id TEXT PRIMARY KEY NOT NULL,
  username TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  roles TEXT NOT NULL DEFAULT '[]',
  company_id TEXT NOT NULL REFERENCES companies(id),
  created_at BIGINT NOT NULL
);
