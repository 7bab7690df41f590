-- 0011: per-token API prices beside self-hosting. Models gain the keys API listings map through; OpenRouter's
-- prices, aliases and unmapped models are facts per run (like offers); own_rent_api is derived per date.
ALTER TABLE models ADD COLUMN hf_repo VARCHAR;  -- Hugging Face repository (owner/name): the stable key
ALTER TABLE models ADD COLUMN api_ids VARCHAR;  -- extra API model ids that are this model, space-separated

CREATE TABLE api_prices (
    snapshot_date           DATE NOT NULL,
    run_id                  VARCHAR NOT NULL,
    api_provider            VARCHAR NOT NULL,  -- the source: openrouter
    api_model_id            VARCHAR NOT NULL,  -- as listed, with its variant suffix
    price_kind              VARCHAR NOT NULL,  -- standard | free | batch | another variant's name
    tier                    VARCHAR NOT NULL,  -- base | prompt>=N | utc HHMM-HHMM
    model                   VARCHAR,           -- models.model_id; NULL when unmapped
    hugging_face_id         VARCHAR,
    name                    VARCHAR,
    usd_per_mtok_input      DOUBLE NOT NULL,
    usd_per_mtok_output     DOUBLE NOT NULL,
    usd_per_mtok_cache_read DOUBLE,
    context_length          INTEGER,
    min_prompt_tokens       INTEGER,           -- tier condition: prompts of at least this many tokens
    utc_start               SMALLINT,          -- tier condition: HHMM UTC, from
    utc_end                 SMALLINT,          -- HHMM UTC, until (before utc_start: the window wraps midnight)
    fetched_at              TIMESTAMP NOT NULL,
    response_sha256         VARCHAR NOT NULL,  -- the archived response (fetches.archive_dir, NNNN.meta.json sha256)
    PRIMARY KEY (run_id, api_provider, api_model_id, price_kind, tier)
);

CREATE TABLE api_aliases (
    snapshot_date   DATE NOT NULL,
    run_id          VARCHAR NOT NULL,
    api_provider    VARCHAR NOT NULL,
    alias_id        VARCHAR NOT NULL,  -- ~deepseek/deepseek-v4-flash-latest
    target_id       VARCHAR,           -- the listed id it stands for
    fetched_at      TIMESTAMP NOT NULL,
    response_sha256 VARCHAR NOT NULL,
    PRIMARY KEY (run_id, api_provider, alias_id)
);

CREATE TABLE unmapped_api_models (
    snapshot_date   DATE NOT NULL,
    run_id          VARCHAR NOT NULL,
    api_provider    VARCHAR NOT NULL,
    api_model_id    VARCHAR NOT NULL,
    hugging_face_id VARCHAR,
    PRIMARY KEY (run_id, api_provider, api_model_id)
);

CREATE TABLE own_rent_api (
    snapshot_date                DATE NOT NULL,
    model                        VARCHAR NOT NULL,
    precision                    VARCHAR NOT NULL,
    context_tokens               INTEGER NOT NULL,
    streams                      INTEGER NOT NULL,
    method                       VARCHAR NOT NULL,
    input_per_output             DOUBLE NOT NULL,  -- the blend: input tokens per output token
    rent_gpu                     VARCHAR,
    rent_tp                      INTEGER,
    rent_provider                VARCHAR,
    rent_price_kind              VARCHAR,
    rent_replica_pricing         VARCHAR,
    rent_replica_usd_per_hr      DOUBLE,
    rent_usd_per_mtok            DOUBLE,  -- per million output tokens
    rent_usd_per_mtok_blended    DOUBLE,  -- per million tokens, input and output at the blend
    rent_capacity_mtok_per_month DOUBLE,  -- one replica, all month, at the blend
    own_gpu                      VARCHAR,
    own_price_kind               VARCHAR,
    own_gpu_count                INTEGER,
    own_usd_per_month            DOUBLE,
    utilisation                  DOUBLE,
    own_usd_per_mtok             DOUBLE,  -- per million output tokens at the utilisation
    own_usd_per_mtok_blended     DOUBLE,
    own_capacity_mtok_per_month  DOUBLE,
    api_provider                 VARCHAR,
    api_model_id                 VARCHAR,
    api_price_kind               VARCHAR,
    api_usd_per_mtok_input       DOUBLE,
    api_usd_per_mtok_output      DOUBLE,
    api_usd_per_mtok_blended     DOUBLE,
    api_fetched_at               TIMESTAMP,
    api_run_id                   VARCHAR,
    rent_beats_api_mtok_per_month DOUBLE,  -- monthly tokens from which one rented replica costs less; NULL: never
    own_beats_api_mtok_per_month  DOUBLE,  -- the same for owning; NULL: never within its capacity
    quality                      VARCHAR
);
