-- 0026: cost_at_speed and own_vs_rent are computed when asked instead of stored, as cost_per_mtok is (0025). A night's
-- rows (~29k and ~45k at today's breadth, ~2.2 MB of blocks a night each) repeated what the night's replica prices,
-- the hardware prices at the night's FX and an estimator that is the same every night already determine
-- (docs/performance.md). The same SQL reads the same columns, in the same order and types, the same doubles.
--
-- cost_at_speed: the speed answers (per model, GPU, precision, tier and TP: the most streams that keep the tier's
-- promise and the speed, first token and tokens/s there) depend on the estimator, the catalogues and the tiers, not on
-- the night. They are stored under the key of what made them (speed_sha256, warehouse/estimates.py), a GPU's the first
-- night it is listed under that key, and never replaced; a night's replica prices name the key they were priced
-- with, and the view keeps, per model, GPU, provider, price kind, precision and tier, the cheapest deployable replica.
CREATE TABLE speed_answers (
    speed_sha256          VARCHAR NOT NULL,  -- the estimator, catalogues, method and tiers the answers were made with
    model                 VARCHAR NOT NULL,
    gpu                   VARCHAR NOT NULL,
    precision             VARCHAR NOT NULL,
    speed_tier            VARCHAR NOT NULL,
    min_user_tok_s        DOUBLE,
    max_ttft_s            DOUBLE,
    input_tokens          INTEGER NOT NULL,
    output_tokens         INTEGER NOT NULL,
    tp                    INTEGER NOT NULL,
    streams               INTEGER NOT NULL,
    stopped_by            VARCHAR NOT NULL,
    user_tok_s            DOUBLE NOT NULL,
    ttft_s                DOUBLE NOT NULL,
    agg_tok_s             DOUBLE NOT NULL,
    agg_tok_s_low         DOUBLE,
    agg_tok_s_high        DOUBLE,
    method                VARCHAR NOT NULL,
    engine                VARCHAR NOT NULL,
    estimator_version     VARCHAR NOT NULL
);
-- NULL: the day's cost_at_speed rows are in cost_at_speed_stored (derived before this migration)
ALTER TABLE replica_prices ADD COLUMN speed_sha256 VARCHAR;

-- own_vs_rent: per night, the hardware prices in USD at the night's FX (transforms/costs.own_vs_rent's hardware_usd),
-- the ownership settings the night was derived with, whether each part may span hosts, and the estimate grid it
-- owns; the view joins them to the grid and to the night's cheapest deployable rental of each estimate.
CREATE TABLE own_hardware (
    snapshot_date             DATE NOT NULL,
    gpu                       VARCHAR NOT NULL,
    price_kind                VARCHAR NOT NULL,
    gpu_count                 INTEGER NOT NULL,  -- GPUs of the configuration the price is for
    usd_low                   DOUBLE NOT NULL,
    usd_high                  DOUBLE NOT NULL,
    quoted_on                 DATE NOT NULL,
    fx_rate                   DOUBLE,
    fx_date                   DATE,
    fx_source                 VARCHAR,
    years                     DOUBLE NOT NULL,
    usd_per_kwh               DOUBLE NOT NULL,
    maintenance_usd_per_month DOUBLE NOT NULL,
    utilisation               DOUBLE NOT NULL,
    spans_hosts               BOOLEAN,           -- the catalogue's answer (transforms/deployability.part_classes)
    grid_sha256               VARCHAR NOT NULL,
    quality                   VARCHAR
);

-- The days derived before keep their rows as they were stored; the views read them beside the computed ones, and
-- deriving such a day again moves it to the facts above (warehouse/derived.py).
ALTER TABLE cost_at_speed RENAME TO cost_at_speed_stored;
ALTER TABLE own_vs_rent RENAME TO own_vs_rent_stored;

-- $/M as transforms.estimator.usd_per_mtok computes it (the same operations in the same order: the same doubles);
-- transforms/speed.cost_at_speed's pick of the cheapest (ties: the narrower replica, then the pricing's name).
CREATE VIEW cost_at_speed AS
WITH priced AS (
    SELECT p.snapshot_date, a.model, a.gpu, p.provider, p.price_kind, a.precision, a.speed_tier, a.min_user_tok_s,
           a.max_ttft_s, a.input_tokens, a.output_tokens, a.tp, a.streams, a.stopped_by, a.user_tok_s, a.ttft_s,
           a.agg_tok_s, p.replica_pricing, p.replica_usd_per_hr,
           p.replica_usd_per_hr * 1e6 / (a.agg_tok_s * 3600.0::DOUBLE) AS usd_per_mtok,
           p.replica_usd_per_hr * 1e6 / (a.agg_tok_s_high * 3600.0::DOUBLE) AS usd_per_mtok_low,
           p.replica_usd_per_hr * 1e6 / (a.agg_tok_s_low * 3600.0::DOUBLE) AS usd_per_mtok_high,
           p.offer_ids, p.deployable, a.method, a.engine, a.estimator_version, p.quality
    FROM replica_prices p JOIN speed_answers a ON a.speed_sha256 = p.speed_sha256 AND a.gpu = p.gpu AND a.tp = p.tp
    WHERE p.deployable
)
SELECT * FROM priced
QUALIFY row_number() OVER (PARTITION BY snapshot_date, model, gpu, provider, price_kind, precision, speed_tier
                           ORDER BY usd_per_mtok, tp, replica_pricing) = 1
UNION ALL
SELECT * FROM cost_at_speed_stored;

-- transforms/costs.own_vs_rent: as many configurations as one replica needs, servers running gpu_count // tp replicas,
-- amortised, powered at TDP and maintained, against the night's cheapest deployable $/M of the same estimate (ties:
-- provider, price kind, pricing by name); the same operations in the same order, as polars runs them: a column divided
-- by a constant is multiplied by the constant's reciprocal (1 / 1e6), which can differ in the last bit.
CREATE VIEW own_vs_rent AS
WITH rent AS (
    -- per estimate, its cheapest deployable rental: the least (rent $/M, provider, price kind, pricing) as one
    -- arg_min (a hash aggregate: a row_number() window sorted every pair, 1.03 s at 10x, docs/performance.md)
    SELECT p.snapshot_date, e.grid_sha256, e.model, e.gpu, e.precision, e.context_tokens, e.streams, e.method,
           arg_min({'usd_per_mtok': p.replica_usd_per_hr * 1e6 / (e.agg_tok_s * 3600.0::DOUBLE),
                    'provider': p.provider, 'price_kind': p.price_kind, 'replica_pricing': p.replica_pricing},
                   (p.replica_usd_per_hr * 1e6 / (e.agg_tok_s * 3600.0::DOUBLE), p.provider, p.price_kind,
                    p.replica_pricing)) AS cheapest
    FROM replica_prices p JOIN estimates e ON e.grid_sha256 = p.grid_sha256 AND e.gpu = p.gpu AND e.tp = p.tp
    WHERE e.agg_tok_s > 0 AND p.deployable
    GROUP BY ALL
), bought AS (
    SELECT h.*, e.model, e.precision, e.context_tokens, e.streams, e.method, e.tp, e.agg_tok_s, e.power_kw,
           e.estimator_version, greatest((e.tp + h.gpu_count - 1) // h.gpu_count, 1) AS configurations
    FROM own_hardware h JOIN estimates e ON e.grid_sha256 = h.grid_sha256 AND e.gpu = h.gpu
), owned AS (
    SELECT * REPLACE (gpu_count * configurations AS gpu_count) FROM bought
), hourly AS (
    SELECT *, gpu_count // tp AS replicas, configurations * (usd_low + usd_high) / 2 AS hardware_usd,
           configurations * (usd_low + usd_high) / 2 * (1 / (years * 12 * 730.0::DOUBLE))
           + coalesce(power_kw / tp * gpu_count * usd_per_kwh, 0.0)
           + maintenance_usd_per_month / 730.0::DOUBLE AS own_usd_per_hr
    FROM owned
), costed AS (
    SELECT o.*, o.agg_tok_s * o.replicas * 3600.0::DOUBLE * 730.0::DOUBLE * (1 / 1e6) AS capacity_mtok_per_month,
           o.own_usd_per_hr * 1e6 / (o.agg_tok_s * o.replicas * o.utilisation * 3600.0::DOUBLE) AS own_usd_per_mtok,
           r.cheapest.usd_per_mtok AS rent_usd_per_mtok, r.cheapest.provider AS rent_provider,
           r.cheapest.price_kind AS rent_price_kind, r.cheapest.replica_pricing AS rent_replica_pricing,
           o.own_usd_per_hr * 730.0::DOUBLE / r.cheapest.usd_per_mtok AS breakeven,
           'a replica of ' || o.tp || ' GPUs spans ' || ((o.tp + 8 - 1) // 8) || ' servers of 8' AS across
    FROM hourly o LEFT JOIN rent r ON r.snapshot_date = o.snapshot_date AND r.grid_sha256 = o.grid_sha256
        AND r.model = o.model AND r.gpu = o.gpu AND r.precision = o.precision AND r.context_tokens = o.context_tokens
        AND r.streams = o.streams AND r.method = o.method
)
SELECT snapshot_date, model, gpu, precision, context_tokens, streams, method, price_kind, gpu_count::INTEGER AS gpu_count,
       tp, replicas::INTEGER AS replicas, hardware_usd, quoted_on, fx_rate, fx_date, fx_source, years, usd_per_kwh,
       maintenance_usd_per_month, utilisation, own_usd_per_hr, own_usd_per_mtok, capacity_mtok_per_month,
       power_kw IS NULL AS power_unknown, rent_usd_per_mtok, rent_provider, rent_price_kind, rent_replica_pricing,
       CASE WHEN breakeven <= capacity_mtok_per_month THEN breakeven END AS breakeven_mtok_per_month,
       estimator_version, quality, tp <= 8 AS deployable,
       CASE WHEN tp <= 8 THEN NULL
            WHEN NOT coalesce(spans_hosts, false) THEN across || ': a consumer or workstation card never spans hosts'
            ELSE across || ': needs a scale-out fabric (switch and NICs), which the hardware prices leave out'
       END AS not_deployable_reason
FROM costed
UNION ALL
SELECT * FROM own_vs_rent_stored;
