ALTER TABLE companies ADD COLUMN store_code TEXT NOT NULL DEFAULT 'main';
