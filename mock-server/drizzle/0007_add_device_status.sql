ALTER TABLE devices ADD COLUMN sdk_version TEXT;
--> statement-breakpoint
ALTER TABLE devices ADD COLUMN is_online INTEGER NOT NULL DEFAULT 0;
--> statement-breakpoint
ALTER TABLE devices ADD COLUMN last_seen_at BIGINT;
