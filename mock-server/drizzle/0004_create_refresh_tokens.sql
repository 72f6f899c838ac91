CREATE TABLE refresh_tokens (
  token_hash TEXT PRIMARY KEY NOT NULL,
  family_id TEXT NOT NULL,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  expires_at BIGINT NOT NULL,
  used_at BIGINT,
  revoked_at BIGINT,
  created_at BIGINT NOT NULL
);
--> statement-breakpoint
CREATE INDEX refresh_tokens_family ON refresh_tokens(family_id);
