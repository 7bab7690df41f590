-- 0014: models derived from their config.json. Hybrid and windowed models hold per stream a state that does not
-- grow with the context (sliding-window and chunked layers' KV at the full window, linear-attention and Mamba
-- recurrent states); a model names every Hugging Face checkpoint it serves, so API listings of any of them map.
ALTER TABLE models ADD COLUMN state_bytes_per_stream DOUBLE;  -- bytes per stream at 16 bits, like the KV cache
ALTER TABLE models ADD COLUMN hf_ids VARCHAR;  -- other Hugging Face ids of the model (variants, FP8/FP4), space-separated
