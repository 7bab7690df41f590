-- 0002: what the roofline estimator needs from the catalogues.

-- FLOPs one generated token spends on attention per token of context (QK and AV over the full-attention layers).
ALTER TABLE models ADD COLUMN attn_flops_per_ctx_token DOUBLE;

-- An overlay may say a page has no value for a field (page 001 shows no power for some parts): NULL is unknown.
ALTER TABLE gpu_overlays ALTER COLUMN value DROP NOT NULL;
