-- 0013: a measured $/M is the price of whole requests (prompt prefill included), so every cost row names the
-- request it prices: prompt and answer tokens (NULL for the reference methods, which price steady decode).
ALTER TABLE cost_per_mtok ADD COLUMN input_tokens INTEGER;
ALTER TABLE cost_per_mtok ADD COLUMN output_tokens INTEGER;
