-- 0022: offers from a catalog of many clouds (scrapers/skypilot.py). `provider` is who runs the machine, which a
-- catalog names per row, so the source that fetched an offer is a column of its own (the load replaces a run's
-- rows by it); a reseller's offers keep the reseller; a cloud's list price is told from a market's live listing;
-- the version of the file a price was read from is kept. Rows before it came from their provider's own feed.
ALTER TABLE offers ADD COLUMN source VARCHAR;          -- the source that fetched it (scrapers/sources.py)
ALTER TABLE offers ADD COLUMN reseller VARCHAR;        -- who sold it when not the provider (shadeform, primeintellect)
ALTER TABLE offers ADD COLUMN price_basis VARCHAR;     -- listing (a market's live listing) | catalog (a list price)
ALTER TABLE offers ADD COLUMN source_version VARCHAR;  -- the catalog file's ETag (else sha256 prefix) it came from
UPDATE offers SET source = provider, price_basis = 'listing';
ALTER TABLE unmapped_gpus ADD COLUMN source VARCHAR;   -- provider is the cloud (or reseller) that named the GPU
UPDATE unmapped_gpus SET source = provider;

-- Per run, each file of a catalog source as it was read: its version and whether it changed since the last run,
-- so a cloud's failure stands on its own and a file left unchanged for days is seen (quality gate, status).
CREATE TABLE catalog_files (
    run_id        VARCHAR NOT NULL,
    source        VARCHAR NOT NULL,
    cloud         VARCHAR NOT NULL,
    snapshot_date DATE NOT NULL,
    fetched_at    TIMESTAMP NOT NULL,
    http_status   INTEGER NOT NULL,
    status        VARCHAR NOT NULL,  -- changed | unchanged (answered 304, the held copy read) | failed
    version       VARCHAR,           -- ETag, else the first 16 hex digits of the body's sha256
    sha256        VARCHAR,
    changed_on    DATE,              -- the first day this version was read
    rows          INTEGER,
    listings      INTEGER,
    error         VARCHAR,
    PRIMARY KEY (run_id, source, cloud)
);
