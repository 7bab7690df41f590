-- 0015: the lake as Delta tables. When each table was last compacted, vacuumed and checkpointed, so the nightly run
-- does it only when due ($GPULEDGER_LAKE_UPKEEP_DAYS); the versions themselves live in each table's Delta log.
CREATE TABLE lake_upkeep (
    location        VARCHAR NOT NULL,   -- $GPULEDGER_EXPORTS: a folder or s3://bucket/prefix
    table_name      VARCHAR NOT NULL,
    version         BIGINT NOT NULL,    -- the table's version after the upkeep
    compacted_files INTEGER NOT NULL,   -- small files rewritten into fewer
    vacuumed_files  INTEGER NOT NULL,   -- replaced files older than the retention, removed
    retention_days  INTEGER NOT NULL,   -- $GPULEDGER_LAKE_RETENTION_DAYS then
    done_at         TIMESTAMP NOT NULL,
    PRIMARY KEY (location, table_name)
);
