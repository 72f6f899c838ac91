ALTER TABLE orders ADD COLUMN source_db TEXT;
--> statement-breakpoint
ALTER TABLE orders ADD COLUMN source_rev TEXT;
--> statement-breakpoint
ALTER TABLE sales ADD COLUMN source_db TEXT;
--> statement-breakpoint
ALTER TABLE sales ADD COLUMN source_rev TEXT;
--> statement-breakpoint
CREATE INDEX orders_source_db ON orders (source_db);
--> statement-breakpoint
CREATE INDEX sales_source_db ON sales (source_db);
