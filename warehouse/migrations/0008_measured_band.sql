-- 0008: the measured method (a serving model fitted to benchmarks) publishes a range, not a point: its estimates
-- carry the request they describe (prompt and answer tokens) and the calibrated band of tokens/s, and the cost
-- table the matching band of $/M (low $/M from high tokens/s). Reference methods leave them NULL.
ALTER TABLE estimates ADD COLUMN input_tokens INTEGER;
ALTER TABLE estimates ADD COLUMN output_tokens INTEGER;
ALTER TABLE estimates ADD COLUMN agg_tok_s_low DOUBLE;
ALTER TABLE estimates ADD COLUMN agg_tok_s_high DOUBLE;
ALTER TABLE cost_per_mtok ADD COLUMN usd_per_mtok_low DOUBLE;
ALTER TABLE cost_per_mtok ADD COLUMN usd_per_mtok_high DOUBLE;
