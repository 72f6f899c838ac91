ALTER TABLE sales ADD COLUMN payment_reference TEXT;
