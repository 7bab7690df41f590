-- 0018: models beside the curated catalogue. A row is curated (warehouse/reference/models.csv), derived (from a
-- config.json the Hugging Face source fetched) or user (`gpuledger models add`, kept in $GPULEDGER_HOME/models);
-- curated rows win over user rows, user rows over derived ones, where two name one model or one repository.
ALTER TABLE models ADD COLUMN origin VARCHAR DEFAULT 'curated';  -- curated | derived | user
ALTER TABLE models ADD COLUMN config_sha256 VARCHAR;  -- sha256 of the config.json a derived or user row was read from
ALTER TABLE models ADD COLUMN derived_on DATE;  -- the day that config was fetched (derived) or added (user)

-- Every Hugging Face id a model serves (hf_repo and hf_ids), lower-cased: what listings and configs map through.
CREATE VIEW model_repos AS
SELECT model_id, origin, lower(repo) AS repo
FROM (SELECT model_id, origin, unnest(string_split(concat_ws(' ', hf_repo, hf_ids), ' ')) AS repo FROM models)
WHERE repo <> '';

-- Per repository the Hugging Face source follows, its config.json's latest check: state, not per-run facts (an
-- unchanged config is answered 304 and keeps what it gave). Replayed from the raw archive by `rebuild`.
CREATE TABLE model_configs (
    repo          VARCHAR PRIMARY KEY,  -- owner/name, as first asked for
    http_status   SMALLINT NOT NULL,    -- the last answer: 200, 304 (unchanged since etag), 401, 404, ...
    etag          VARCHAR,              -- of the config held, sent back as If-None-Match; NULL: fetch it whole
    config_sha256 VARCHAR,              -- of the config held
    model         VARCHAR,              -- the model its config derived (derived rows: models.model_id)
    reason        VARCHAR,              -- why no row could be derived (HTTP 404, the reader's error); NULL if one was
    checked_on    DATE NOT NULL,        -- the snapshot date of the last check
    changed_on    DATE,                 -- the snapshot date the config held was fetched
    run_id        VARCHAR NOT NULL,     -- the run of the last check (fetches.archive_dir holds its answers)
    config_run_id VARCHAR               -- the run that fetched the config held
);

-- Repositories no model serves and whose config gave no row, with the reason.
CREATE VIEW unmapped_models AS
SELECT c.repo, c.http_status, c.reason, c.checked_on, c.run_id
FROM model_configs c
WHERE c.reason IS NOT NULL AND lower(c.repo) NOT IN (SELECT repo FROM model_repos);
