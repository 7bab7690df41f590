-- 0017: only replicas someone could deploy answer "what does it cost" (docs/deployability.md). A tensor-parallel
-- group runs inside one host, or across the nodes of a cluster the provider sells with a scale-out fabric; a group
-- across separately rented machines, or consumer and workstation cards across hosts, is not deployable. Such rows
-- stay queryable, flagged, with the reason; the published answers leave them out.
ALTER TABLE cost_per_mtok ADD COLUMN deployable BOOLEAN;
ALTER TABLE cost_per_mtok ADD COLUMN not_deployable_reason VARCHAR;
ALTER TABLE own_vs_rent ADD COLUMN deployable BOOLEAN;
ALTER TABLE own_vs_rent ADD COLUMN not_deployable_reason VARCHAR;
-- rental_ranges keeps min/max over every way of renting N GPUs (page 000's ranges); these are over the ways that
-- make one deployable replica of N (one host, a provider's cluster), NULL with the reason when none does.
ALTER TABLE rental_ranges ADD COLUMN deployable_min_usd_per_hr DOUBLE;
ALTER TABLE rental_ranges ADD COLUMN deployable_max_usd_per_hr DOUBLE;
ALTER TABLE rental_ranges ADD COLUMN not_deployable_reason VARCHAR;
ALTER TABLE own_rent_api ADD COLUMN rent_not_deployable_reason VARCHAR;
ALTER TABLE own_rent_api ADD COLUMN own_not_deployable_reason VARCHAR;

-- Days derived before: what their rows already say. Every one_listing replica was on one host, every other way
-- across hosts; an owned replica of at most 8 GPUs fits one server; a range of at most 8 GPUs came from one host.
-- The rest (ranges beyond 8 GPUs, own_rent_api) is recomputed by `gpuledger rebuild`.
UPDATE cost_per_mtok SET
    deployable = replica_pricing = 'one_listing',
    not_deployable_reason = CASE replica_pricing
        WHEN 'multi_listing' THEN 'TP ' || tp || ' across separately rented hosts, which form no tensor-parallel group'
        WHEN 'tp_single_gpu_listings' THEN 'TP ' || tp || ' from single-GPU listings on separate hosts, which form no tensor-parallel group'
    END;
UPDATE own_vs_rent SET
    deployable = tp <= 8,
    not_deployable_reason = CASE WHEN tp > 8 THEN 'a replica of ' || tp || ' GPUs spans ' || (tp + 7) // 8 || ' servers of 8' END;
UPDATE rental_ranges SET deployable_min_usd_per_hr = min_usd_per_hr, deployable_max_usd_per_hr = max_usd_per_hr
    WHERE n_gpus <= 8;
