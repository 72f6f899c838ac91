ALTER TABLE users ADD COLUMN active_company_id TEXT REFERENCES companies(id);
