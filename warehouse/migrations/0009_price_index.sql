-- 0009: price_index, the daily price series per part: one row per snapshot_date x gpu x provider x price_kind
-- (provider 'all' over every provider) with the day's price distribution, its change against 1, 7 and 30 days
-- before (NULL when that day has no row: never interpolated) and when the part was first seen. Like the other
-- derived tables it carries no index; its key is checked before every replacement (warehouse/derived.py).
CREATE TABLE price_index (
    snapshot_date         DATE NOT NULL,
    gpu                   VARCHAR NOT NULL,
    provider              VARCHAR NOT NULL,  -- vastai | runpod | verda | all
    price_kind            VARCHAR NOT NULL,
    listings              INTEGER NOT NULL,
    min_usd_per_gpu_hr    DOUBLE NOT NULL,
    p10_usd_per_gpu_hr    DOUBLE NOT NULL,
    median_usd_per_gpu_hr DOUBLE NOT NULL,
    max_usd_per_gpu_hr    DOUBLE NOT NULL,
    min_change_1d         DOUBLE,            -- (min / min N days before) - 1: 0.05 = 5% dearer
    min_change_7d         DOUBLE,
    min_change_30d        DOUBLE,
    median_change_1d      DOUBLE,
    median_change_7d      DOUBLE,
    median_change_30d     DOUBLE,
    first_seen_date       DATE NOT NULL,     -- the first day this gpu x provider x price_kind has a row
    days_since_first_seen INTEGER NOT NULL,
    quality               VARCHAR
);
