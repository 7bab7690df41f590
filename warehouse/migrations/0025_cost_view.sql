-- 0025: cost_per_mtok is computed when asked instead of stored. Its rows are each estimate of a grid priced by each
-- replica price of the night with the estimate's GPU and TP: a night's ~250k rows (~12 MB) repeated what ~800
-- replica prices (~0.1 MB) and an estimate grid that is the same every night already determine (docs/performance.md).
-- The warehouse now keeps the night's replica prices, each naming the grid it was derived with, and the view joins
-- them to it; the same SQL reads the same columns, and the lake keeps materialised partitions.
--
-- For an old day to read the same forever, the grid it names never changes: estimates are stored under grid_sha256
-- (the estimator's version, the catalogue rows and the plan's settings it was computed from, warehouse/estimates.py)
-- and a grid once stored is never replaced. The grids stored before carry no such key and back no day (the days
-- derived before keep their rows whole, below): they are dropped, and the next derive stores its grid under its key.
DELETE FROM estimates;
ALTER TABLE estimates ADD COLUMN grid_sha256 VARCHAR;
ALTER TABLE estimates ALTER COLUMN grid_sha256 SET NOT NULL;

-- Per day, GPU, provider, price kind, TP and how the replica is priced: the cheapest $/hr of one replica
-- (transforms/costs.replica_prices), the listings and FX it came from, whether someone could deploy it.
CREATE TABLE replica_prices (
    snapshot_date         DATE NOT NULL,
    gpu                   VARCHAR NOT NULL,
    provider              VARCHAR NOT NULL,
    price_kind            VARCHAR NOT NULL,
    tp                    INTEGER NOT NULL,
    replica_pricing       VARCHAR NOT NULL,
    replica_usd_per_hr    DOUBLE NOT NULL,
    offer_ids             VARCHAR NOT NULL,
    price_observed_at     TIMESTAMP NOT NULL,
    native_currency       VARCHAR NOT NULL,
    fx_rate               DOUBLE,
    fx_date               DATE,
    fx_source             VARCHAR,
    deployable            BOOLEAN NOT NULL,
    not_deployable_reason VARCHAR,
    grid_sha256           VARCHAR NOT NULL,  -- the estimates the day was priced with
    quality               VARCHAR
);

-- The days derived before keep their rows as they were stored (they were priced with grids no longer kept); the view
-- reads them beside the computed ones, and deriving such a day again moves it to replica prices (warehouse/derived.py).
ALTER TABLE cost_per_mtok RENAME TO cost_per_mtok_stored;

-- The columns of the table it replaces, in its order and types; $/M as transforms.estimator.usd_per_mtok computes
-- it (the same operations in the same order, so the same doubles), the band from the estimate's band.
CREATE VIEW cost_per_mtok AS
SELECT p.snapshot_date, e.model, e.gpu, e.precision, e.context_tokens, e.streams, p.provider, p.price_kind,
       p.replica_pricing, e.method, e.estimator_version, e.tp, e.agg_tok_s, p.replica_usd_per_hr,
       p.replica_usd_per_hr * 1e6 / (e.agg_tok_s * 3600.0::DOUBLE) AS usd_per_mtok,
       p.offer_ids, p.price_observed_at, p.native_currency, p.fx_rate, p.fx_date, p.fx_source, p.quality,
       p.replica_usd_per_hr * 1e6 / (e.agg_tok_s_high * 3600.0::DOUBLE) AS usd_per_mtok_low,
       p.replica_usd_per_hr * 1e6 / (e.agg_tok_s_low * 3600.0::DOUBLE) AS usd_per_mtok_high,
       e.input_tokens, e.output_tokens, p.deployable, p.not_deployable_reason, e.engine
FROM replica_prices p JOIN estimates e ON e.grid_sha256 = p.grid_sha256 AND e.gpu = p.gpu AND e.tp = p.tp
WHERE e.agg_tok_s > 0
UNION ALL
SELECT snapshot_date, model, gpu, precision, context_tokens, streams, provider, price_kind, replica_pricing, method,
       estimator_version, tp, agg_tok_s, replica_usd_per_hr, usd_per_mtok, offer_ids, price_observed_at,
       native_currency, fx_rate, fx_date, fx_source, quality, usd_per_mtok_low, usd_per_mtok_high, input_tokens,
       output_tokens, deployable, not_deployable_reason, engine
FROM cost_per_mtok_stored;
