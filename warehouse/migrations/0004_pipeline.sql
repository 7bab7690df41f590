-- 0004: the nightly pipeline's derived tables. cost_per_mtok is derived (rebuildable), so it is recreated
-- with replica_pricing in its key: both ways of pricing a replica are published, each labelled.

CREATE TABLE rental_ranges (
    snapshot_date      DATE NOT NULL,
    gpu                VARCHAR NOT NULL,
    n_gpus             INTEGER NOT NULL,
    provider           VARCHAR NOT NULL,
    price_kind         VARCHAR NOT NULL,
    min_usd_per_hr     DOUBLE NOT NULL,   -- cheapest way to rent n_gpus GPUs
    max_usd_per_hr     DOUBLE NOT NULL,   -- dearest
    listings           INTEGER NOT NULL,  -- listings that could take part
    listings_per_group INTEGER NOT NULL,  -- listings one group of n_gpus needs (above 8 GPUs: several hosts)
    composition        VARCHAR NOT NULL,  -- fixed_listings | per_gpu | both joined by '+'
    observed_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (snapshot_date, gpu, n_gpus, provider, price_kind)
);

DROP TABLE cost_per_mtok;
CREATE TABLE cost_per_mtok (
    snapshot_date      DATE NOT NULL,
    model              VARCHAR NOT NULL,
    gpu                VARCHAR NOT NULL,
    precision          VARCHAR NOT NULL,
    context_tokens     INTEGER NOT NULL,
    streams            INTEGER NOT NULL,
    provider           VARCHAR NOT NULL,
    price_kind         VARCHAR NOT NULL,
    replica_pricing    VARCHAR NOT NULL,  -- one_listing | multi_listing | tp_single_gpu_listings
    method             VARCHAR NOT NULL,
    estimator_version  VARCHAR NOT NULL,
    tp                 INTEGER NOT NULL,
    agg_tok_s          DOUBLE NOT NULL,
    replica_usd_per_hr DOUBLE NOT NULL,   -- one replica of tp GPUs
    usd_per_mtok       DOUBLE NOT NULL,   -- $ per million output tokens
    offer_ids          VARCHAR NOT NULL,  -- the listings the price came from, comma separated
    price_observed_at  TIMESTAMP NOT NULL,
    native_currency    VARCHAR NOT NULL,
    fx_rate            DOUBLE,            -- units of native_currency per USD, where a conversion happened
    fx_date            DATE,
    fx_source          VARCHAR,
    PRIMARY KEY (snapshot_date, model, gpu, precision, context_tokens, streams, provider, price_kind,
                 replica_pricing, method)
);

CREATE TABLE own_vs_rent (
    snapshot_date             DATE NOT NULL,
    model                     VARCHAR NOT NULL,
    gpu                       VARCHAR NOT NULL,
    precision                 VARCHAR NOT NULL,
    context_tokens            INTEGER NOT NULL,
    streams                   INTEGER NOT NULL,
    method                    VARCHAR NOT NULL,
    price_kind                VARCHAR NOT NULL,  -- hardware price: list | market
    gpu_count                 INTEGER NOT NULL,  -- GPUs the hardware price buys
    tp                        INTEGER NOT NULL,
    replicas                  INTEGER NOT NULL,
    hardware_usd              DOUBLE NOT NULL,   -- midpoint of the quoted range, converted at fx_rate
    quoted_on                 DATE NOT NULL,
    fx_rate                   DOUBLE,            -- units of the quoted currency per USD
    fx_date                   DATE,
    fx_source                 VARCHAR,
    years                     DOUBLE NOT NULL,
    usd_per_kwh               DOUBLE NOT NULL,
    maintenance_usd_per_month DOUBLE NOT NULL,
    utilisation               DOUBLE NOT NULL,
    own_usd_per_hr            DOUBLE NOT NULL,
    own_usd_per_mtok          DOUBLE,
    capacity_mtok_per_month   DOUBLE,
    power_unknown             BOOLEAN NOT NULL,  -- no TDP: power left out of own_usd_per_hr
    rent_usd_per_mtok         DOUBLE,
    rent_provider             VARCHAR,
    rent_price_kind           VARCHAR,
    rent_replica_pricing      VARCHAR,
    breakeven_mtok_per_month  DOUBLE,            -- NULL: owning never breaks even within its capacity
    estimator_version         VARCHAR NOT NULL,
    PRIMARY KEY (snapshot_date, model, gpu, precision, context_tokens, streams, method, price_kind)
);
