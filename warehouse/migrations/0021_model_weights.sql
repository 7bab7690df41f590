-- 0021: the weights' own parameter count beside the one a config.json derives. The Hugging Face source asks the
-- model API (/api/models/{repo}) beside each config.json; its safetensors field counts the parameters of the
-- repository's safetensors files per dtype and in all. A derived total more than 3% away from it is flagged.
ALTER TABLE model_configs ADD COLUMN safetensors VARCHAR;  -- the model API's safetensors field (JSON), NULL: none
ALTER TABLE models ADD COLUMN weights_params_b DOUBLE;  -- the weights' parameters (the model API's total), billions
ALTER TABLE models ADD COLUMN weights_check VARCHAR;  -- how total_params_b compares with it (FLAGGED beyond 3%)
