-- Times are milliseconds since the epoch, which outgrow PostgreSQL's 32-bit INTEGER (2^31 ms is
-- 25 days after 1970). Widened to BIGINT; on SQLite every INTEGER is 64-bit already and a
-- declared type constrains nothing, so the embedded runner has nothing to change.
ALTER TABLE companies ALTER COLUMN created_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE users ALTER COLUMN created_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE devices ALTER COLUMN created_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE devices ALTER COLUMN last_seen_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE refresh_tokens ALTER COLUMN expires_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE refresh_tokens ALTER COLUMN used_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE refresh_tokens ALTER COLUMN revoked_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE refresh_tokens ALTER COLUMN created_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE orders ALTER COLUMN created_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE sales ALTER COLUMN created_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE audit_log ALTER COLUMN at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE client_invalidations ALTER COLUMN invalidated_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE day_databases ALTER COLUMN created_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE day_databases ALTER COLUMN updated_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE day_databases ALTER COLUMN drained_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE day_databases ALTER COLUMN archived_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE day_databases ALTER COLUMN reconciled_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE day_databases ALTER COLUMN dropped_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE company_feature_flags ALTER COLUMN updated_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE conflict_reviews ALTER COLUMN created_at TYPE BIGINT;
--> statement-breakpoint
ALTER TABLE conflict_reviews ALTER COLUMN resolved_at TYPE BIGINT;
