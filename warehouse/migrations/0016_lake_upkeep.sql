-- 0016: the lake as Delta tables. When each table's upkeep (compaction, vacuum, checkpoint) is due: the nightly run
-- does it once $GPULEDGER_LAKE_UPKEEP_DAYS have passed since the last one, or since this warehouse first published
-- the table. The versions themselves live in each table's Delta log.
CREATE TABLE lake_upkeep (
    location        VARCHAR NOT NULL,   -- $GPULEDGER_EXPORTS: a folder or s3://bucket/prefix
    table_name      VARCHAR NOT NULL,
    since           TIMESTAMP NOT NULL, -- the last upkeep, or the first publication seen
    done_at         TIMESTAMP,          -- the last upkeep; NULL: none yet
    version         BIGINT,             -- the table's version after it
    compacted_files INTEGER,            -- small files rewritten into fewer
    vacuumed_files  INTEGER,            -- replaced files older than the retention, removed
    retention_days  INTEGER,            -- $GPULEDGER_LAKE_RETENTION_DAYS then
    PRIMARY KEY (location, table_name)
);
