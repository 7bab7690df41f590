-- 0023: the measured serving model models a serving engine (trtllm, sglang or vllm; transforms/engines.py): every
-- estimate and every cost row names the engine it models, NULL for the reference methods (which model none) and for
-- rows computed before the engine was modelled (the estimator's version tells them apart; a re-derive replaces them).
ALTER TABLE estimates ADD COLUMN engine VARCHAR;
ALTER TABLE cost_per_mtok ADD COLUMN engine VARCHAR;
