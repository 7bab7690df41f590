-- 0027: own_vs_rent picks each estimate's cheapest deployable rental with one arg_min instead of a row_number()
-- window. The same rows (the least of rent $/M, provider, price kind, pricing, as the window's order had it; every
-- row of the bench's warehouse equal both ways), but a hash aggregate instead of a sort of every (estimate, replica
-- price) pair of the night: at 10x the breadth (580 models, 2.98 M estimates) the analyst's own-against-rent query
-- took 1.03 s through the CLI (docs/performance.md); at 1x the view's query 0.16-0.20 -> 0.07 s in process.
DROP VIEW own_vs_rent;

CREATE VIEW own_vs_rent AS
WITH rent AS (
    -- per estimate, its cheapest deployable rental: the least (rent $/M, provider, price kind, pricing) as one
    -- arg_min (a hash aggregate; the row_number() window it replaces sorted every pair: 1.03 s at 10x)
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
