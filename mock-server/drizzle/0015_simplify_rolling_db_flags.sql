-- Collapses the four flag columns of 0013 into rolling_db and rolling_db_drop. Idempotent: on a
-- store already in the two-flag shape (or run twice) every statement is a no-op.
ALTER TABLE company_feature_flags ADD COLUMN IF NOT EXISTS rolling_db INTEGER NOT NULL DEFAULT 0;
--> statement-breakpoint
ALTER TABLE company_feature_flags ADD COLUMN IF NOT EXISTS rolling_db_drop INTEGER NOT NULL DEFAULT 0;
--> statement-breakpoint
-- only-if-column: company_feature_flags.rolling_db_enabled
UPDATE company_feature_flags SET rolling_db = rolling_db_enabled;
--> statement-breakpoint
-- only-if-column: company_feature_flags.rolling_db_drop_enabled
UPDATE company_feature_flags SET rolling_db_drop = CASE WHEN rolling_db = 1 THEN rolling_db_drop_enabled ELSE 0 END;
--> statement-breakpoint
ALTER TABLE company_feature_flags DROP COLUMN IF EXISTS rolling_db_enabled;
--> statement-breakpoint
ALTER TABLE company_feature_flags DROP COLUMN IF EXISTS rolling_db_prewarm;
--> statement-breakpoint
ALTER TABLE company_feature_flags DROP COLUMN IF EXISTS rolling_db_cutover;
--> statement-breakpoint
ALTER TABLE company_feature_flags DROP COLUMN IF EXISTS rolling_db_drop_enabled;
