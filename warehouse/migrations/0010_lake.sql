-- 0010: the lake and the raw mirror. Where each date's exports were published (a folder or an object store),
-- so a date the store refused is published again by the next run; each run says whether its day reached the
-- lake and whether its raw responses reached the mirror.
CREATE TABLE publications (
    snapshot_date DATE NOT NULL,
    location      VARCHAR NOT NULL,   -- $GPULEDGER_EXPORTS: a folder or s3://bucket/prefix
    format        VARCHAR NOT NULL,   -- parquet | csv
    tables        VARCHAR NOT NULL,   -- comma separated
    status        VARCHAR NOT NULL,   -- published | unpublished
    run_id        VARCHAR,            -- the run (or export) that made the last attempt
    error         VARCHAR,            -- why the last attempt failed
    attempted_at  TIMESTAMP NOT NULL,
    published_at  TIMESTAMP,          -- the last attempt that succeeded
    PRIMARY KEY (snapshot_date, location)
);
ALTER TABLE runs ADD COLUMN publication VARCHAR;  -- published | unpublished | NULL (nothing exported)
ALTER TABLE runs ADD COLUMN mirror VARCHAR;       -- mirrored | pending | NULL (no mirror configured)
