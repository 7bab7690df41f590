-- 0005: data-quality gates. Price-sanity quarantine rows are the derive step's (replaced with the date's
-- derived rows); published rows say whether their day passed the gates.
ALTER TABLE quarantine ADD COLUMN stage VARCHAR DEFAULT 'parse';  -- parse | quality
ALTER TABLE daily_prices ADD COLUMN quality VARCHAR;               -- ok | suspect (reasons in runs)
ALTER TABLE rental_ranges ADD COLUMN quality VARCHAR;
ALTER TABLE cost_per_mtok ADD COLUMN quality VARCHAR;
ALTER TABLE own_vs_rent ADD COLUMN quality VARCHAR;
