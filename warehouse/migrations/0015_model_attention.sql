-- 0015: a model's attention, explicit. Windowed layers (sliding-window, chunked-local) hold min(context, window) tokens
-- of KV, so they leave state_bytes_per_stream (now the recurrent states alone) for columns of their own; the attention
-- kind and the KV heads of the growing cache tell how tensor parallelism splits (or replicates) it.
ALTER TABLE models ADD COLUMN window_tokens INTEGER;  -- tokens a windowed layer attends to at most (one per model)
ALTER TABLE models ADD COLUMN window_kv_bytes_per_token DOUBLE;  -- KV of all windowed layers per token, at 16 bits
ALTER TABLE models ADD COLUMN attention VARCHAR;  -- gqa | mla
ALTER TABLE models ADD COLUMN kv_heads INTEGER;  -- KV heads of the layers whose cache grows with the context (MLA: 1)
