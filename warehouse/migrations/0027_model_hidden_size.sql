-- 0027: a model's hidden size, the width of the vector each layer reads and writes: what a tensor-parallel group
-- all-reduces after each layer's attention and MLP. The measured serving model estimated it from the active
-- parameters per layer (12 d^2), which a mixture of experts' active parameters do not follow (gpt-oss, Qwen3-30B:
-- 18-32% high). Curated rows state it from their config.json; derived and user rows read it from theirs. Rows derived
-- before this migration hold NULL (the estimator falls back to the estimate) until their config is read again
-- (`gpuledger rebuild --from D`, or the next changed config).
ALTER TABLE models ADD COLUMN hidden_size INTEGER;  -- config.json's hidden_size (d_model, n_embd, dim); NULL: unknown
