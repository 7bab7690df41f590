-- 0024: what a million tokens costs at the speed each user is promised. Per day, model, GPU, provider, price kind,
-- precision and speed tier (decode tokens/s per user, first token within max_ttft_s; 'batch': no promise, max load):
-- the measured method's answer on the replica (up to a node) that makes it cheapest, at that replica's cheapest
-- deployable listing. A part that cannot reach a tier has no row there (transforms/speed.py). The serving engine
-- is named on every row; the nightly publishes the default engine's answers only, so it is not part of the key.
CREATE TABLE cost_at_speed (
    snapshot_date         DATE NOT NULL,
    model                 VARCHAR NOT NULL,
    gpu                   VARCHAR NOT NULL,
    provider              VARCHAR NOT NULL,
    price_kind            VARCHAR NOT NULL,
    precision             VARCHAR NOT NULL,
    speed_tier            VARCHAR NOT NULL,  -- '10' ... '200' tokens/s per user, or 'batch'
    min_user_tok_s        DOUBLE,            -- the tier's promise; NULL: batch
    max_ttft_s            DOUBLE,            -- mean seconds to the first token at most; NULL: batch
    input_tokens          INTEGER NOT NULL,  -- the request priced: prompt in, answer out
    output_tokens         INTEGER NOT NULL,
    tp                    INTEGER NOT NULL,  -- GPUs of the replica
    streams               INTEGER NOT NULL,  -- the most that keep the promise
    stopped_by            VARCHAR NOT NULL,  -- target | memory | batch limit
    user_tok_s            DOUBLE NOT NULL,   -- mean decode tokens/s each user sees
    ttft_s                DOUBLE NOT NULL,   -- mean seconds to the first token
    agg_tok_s             DOUBLE NOT NULL,   -- output tokens/s of the replica
    replica_pricing       VARCHAR NOT NULL,
    replica_usd_per_hr    DOUBLE NOT NULL,
    usd_per_mtok          DOUBLE NOT NULL,   -- per million output tokens, the prompts' prefill paid for
    usd_per_mtok_low      DOUBLE,            -- the method's band (p10-p90 of held-out estimate/measured)
    usd_per_mtok_high     DOUBLE,
    offer_ids             VARCHAR,
    deployable            BOOLEAN NOT NULL,  -- always: only replicas someone could deploy answer (docs/deployability.md)
    method                VARCHAR NOT NULL,
    engine                VARCHAR NOT NULL,  -- the serving engine modelled (transforms/engines.py): the default, trtllm
    estimator_version     VARCHAR NOT NULL,
    quality               VARCHAR
);

-- own_rent_api also compares at a speed tier (the plan's, default the chat tier: 35 tokens/s per user, first token
-- within 2 s): those rows name it and leave `streams` empty (each part runs the most streams that keep the promise);
-- the rows at a fixed number of streams leave the tier empty.
ALTER TABLE own_rent_api ADD COLUMN speed_tier VARCHAR;
ALTER TABLE own_rent_api ADD COLUMN min_user_tok_s DOUBLE;
ALTER TABLE own_rent_api ADD COLUMN max_ttft_s DOUBLE;
ALTER TABLE own_rent_api ALTER COLUMN streams DROP NOT NULL;
