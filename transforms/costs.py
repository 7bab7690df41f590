"""Cost tables: the cheapest live price of a replica of TP GPUs, $/M tokens, and owning against renting."""

from dataclasses import dataclass

import polars as pl

from transforms import deployability
from transforms.deployability import CLUSTER_TIER, NODE_GPUS
from transforms.estimator import usd_per_mtok

HOURS_PER_MONTH = 730.0  # 8,760 h / 12
PRICE_COLUMNS = ["offer_ids", "price_observed_at", "native_currency", "fx_rate", "fx_date", "fx_source"]

# How a replica of TP GPUs is priced (the `replica_pricing` column); only the first two are deployable
# (`deployable`, docs/deployability.md), the others stay queryable with their `not_deployable_reason`:
ONE_LISTING = "one_listing"  # one host holds the group: a fixed listing of at least TP GPUs, or a pod of TP
PROVIDER_CLUSTER = "provider_cluster"  # nodes of a cluster the provider sells with a scale-out fabric
MULTI_LISTING = "multi_listing"  # TP across separately rented hosts: TP/8 distinct 8-GPU listings, or several pods
SINGLE_GPU_LISTINGS = "tp_single_gpu_listings"  # TP × the cheapest 1-GPU listing: page 001's way
HOW = {  # what a replica priced that way is, as its not_deployable_reason starts: "TP 16 across ..."
    MULTI_LISTING: "across separately rented hosts, which form no tensor-parallel group",
    SINGLE_GPU_LISTINGS: "from single-GPU listings on separate hosts, which form no tensor-parallel group",
    PROVIDER_CLUSTER: "across the nodes of a cluster",
}


def mtok_per_month(tok_s: pl.Expr) -> pl.Expr:
    """Millions of tokens a month at tok_s tokens per second, around the clock."""
    return tok_s * 3600.0 * HOURS_PER_MONTH / 1e6


def _with_price_provenance(offers: pl.DataFrame) -> pl.DataFrame:
    """Offers with the columns every priced row carries; fx_* stay null where no conversion happened."""
    extra = {c: pl.lit(None, dtype=t) for c, t in
             (("fx_rate", pl.Float64), ("fx_date", pl.Date), ("fx_source", pl.String)) if c not in offers.columns}
    return offers.filter(pl.col("gpu").is_not_null()).with_columns(**extra)


REPLICA_PRICE_KEY = ("snapshot_date", "gpu", "provider", "price_kind", "tp", "replica_pricing")  # a replica price's, and its order


def replica_prices(offers: pl.DataFrame, tps: list[int], gpus: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per date × gpu × provider × price_kind × tp × replica_pricing: the cheapest $/hr for one replica, whether
    someone could deploy it, and if not why (`gpus`, the catalogue, says which parts may span hosts).

    One host holds TP GPUs when a fixed listing has at least TP (it runs gpu_count // TP replicas, so one costs the
    listing over that) or a pod takes TP; a provider cluster holds more than one node's worth, up to its size.
    """
    priced = _with_price_provenance(offers)
    targets = pl.DataFrame({"tp": sorted(set(tps))}, schema={"tp": pl.Int64})
    cluster = pl.col("tier") == CLUSTER_TIER
    per_gpu = pl.col("max_gpu_count").is_not_null() & ~cluster
    fixed = pl.col("max_gpu_count").is_null()
    candidates = priced.join(targets, how="cross")
    by_gpu = pl.col("usd_per_gpu_hr") * pl.col("tp")
    kinds = [
        (ONE_LISTING, (per_gpu & (pl.col("max_gpu_count") >= pl.col("tp"))) | (fixed & (pl.col("gpu_count") >= pl.col("tp"))),
         pl.when(per_gpu).then(by_gpu).otherwise(pl.col("usd_per_hr") / (pl.col("gpu_count") // pl.col("tp")))),
        (PROVIDER_CLUSTER, cluster & (pl.col("tp") > NODE_GPUS) & (pl.col("tp") <= pl.col("max_gpu_count")), by_gpu),
        (MULTI_LISTING, per_gpu & (pl.col("tp") > pl.col("max_gpu_count")), by_gpu),
        (SINGLE_GPU_LISTINGS, fixed & (pl.col("gpu_count") == 1) & (pl.col("tp") > 1), pl.col("usd_per_hr") * pl.col("tp")),
    ]
    keys = list(REPLICA_PRICE_KEY)
    columns = [*keys, "replica_usd_per_hr", *PRICE_COLUMNS]
    singles = pl.concat([
        candidates.filter(where).with_columns(pl.lit(how).alias("replica_pricing"), price.alias("replica_usd_per_hr"),
                                              pl.col("offer_id").alias("offer_ids"))
        for how, where, price in kinds
    ], how="vertical_relaxed").select(
        *keys, "replica_usd_per_hr", "offer_ids", pl.col("fetched_at").alias("price_observed_at"),
        "native_currency", "fx_rate", "fx_date", "fx_source",
    )
    cheapest = singles.sort("replica_usd_per_hr", "offer_ids").group_by(keys).first()
    prices = pl.concat([cheapest.select(columns), _fixed_multi_listing(priced, targets).select(columns)],
                       how="vertical_relaxed")
    return _deployability(prices, deployability.capacity(offers, gpus)).sort(keys)


def _deployability(prices: pl.DataFrame, capacity: pl.DataFrame) -> pl.DataFrame:
    """Each replica price with `deployable` and `not_deployable_reason` (NULL when deployable)."""
    pricing, tp = pl.col("replica_pricing"), pl.col("tp")
    deployable = (pricing == ONE_LISTING) | ((pricing == PROVIDER_CLUSTER) & deployability.may_span_hosts())
    how = pl.format("TP {} {}", tp, pricing.replace_strict(HOW, default=""))
    return deployability.with_capacity(prices, capacity, deployable.alias("deployable"),
                                       deployability.reason(deployable, how, tp).alias("not_deployable_reason"))


def _fixed_multi_listing(priced: pl.DataFrame, targets: pl.DataFrame) -> pl.DataFrame:
    """TP beyond one host from fixed listings: the TP/8 cheapest distinct 8-GPU listings, summed."""
    keys = ["snapshot_date", "gpu", "provider", "price_kind"]
    nodes = priced.filter(pl.col("max_gpu_count").is_null() & (pl.col("gpu_count") == NODE_GPUS)).with_columns(
        pl.col("usd_per_hr").rank("ordinal").over(keys).alias("cheap_rank"), pl.len().over(keys).alias("nodes")
    )
    k = pl.col("tp") // NODE_GPUS
    return (
        nodes.join(targets.filter(pl.col("tp") > NODE_GPUS), how="cross")
        .filter((pl.col("cheap_rank") <= k) & (pl.col("nodes") >= k))
        .sort("cheap_rank")
        .group_by(*keys, "tp")
        .agg(
            pl.col("usd_per_hr").sum().alias("replica_usd_per_hr"),
            pl.col("offer_id").str.join(",").alias("offer_ids"),
            pl.col("fetched_at").max().alias("price_observed_at"),
            pl.col("native_currency").first(),
            pl.col("fx_rate").first(),
            pl.col("fx_date").first(),
            pl.col("fx_source").first(),
        )
        .with_columns(pl.lit(MULTI_LISTING).alias("replica_pricing"))
    )


def cost_per_mtok(estimates: pl.DataFrame, prices: pl.DataFrame) -> pl.DataFrame:
    """Each estimate priced by every live replica price of its GPU and TP: $/M output tokens, with the band
    (usd_per_mtok_low/high) where the method has one (measured: its calibrated p10-p90; reference methods: NULL),
    the request it prices (measured: input_tokens in, output_tokens out, the prompt's prefill paid for), and
    whether the replica could be deployed (a row that could not keeps its price and says why)."""
    joined = estimates.filter(pl.col("agg_tok_s") > 0).join(prices, on=["gpu", "tp"], how="inner")
    return joined.with_columns(
        usd_per_mtok(pl.col("replica_usd_per_hr"), pl.col("agg_tok_s")).alias("usd_per_mtok"),
        # the band: the most tokens/s gives the least $/M
        usd_per_mtok(pl.col("replica_usd_per_hr"), pl.col("agg_tok_s_high")).alias("usd_per_mtok_low"),
        usd_per_mtok(pl.col("replica_usd_per_hr"), pl.col("agg_tok_s_low")).alias("usd_per_mtok_high"),
    ).select(
        "snapshot_date", "model", "gpu", "precision", "context_tokens", "streams", "provider", "price_kind",
        "replica_pricing", "method", "engine", "estimator_version", "tp", "agg_tok_s", "replica_usd_per_hr",
        "usd_per_mtok",
        "usd_per_mtok_low", "usd_per_mtok_high", "input_tokens", "output_tokens", *PRICE_COLUMNS, "deployable",
        "not_deployable_reason",
    ).sort("snapshot_date", "model", "gpu", "precision", "context_tokens", "streams", "provider", "price_kind",
           "replica_pricing")


@dataclass(frozen=True)
class OwnershipParams:
    """Owning hardware: page 002's method with every input settable."""

    years: float = 3.0
    usd_per_kwh: float = 0.10
    maintenance_usd_per_month: float = 500.0
    utilisation: float = 0.5


def own_vs_rent(
    estimates: pl.DataFrame, hardware_usd: pl.DataFrame, costs: pl.DataFrame, params: OwnershipParams,
    gpus: pl.DataFrame,
) -> pl.DataFrame:
    """Owning a priced configuration against renting: $/hr, $/M tokens at a utilisation, break-even volume.

    `hardware_usd` has gpu, price_kind, gpu_count, usd_low, usd_high, quoted_on, fx_rate, fx_date, fx_source
    and the snapshot_date it is converted for. As many configurations are bought as one replica needs (gpu_count
    becomes their GPUs): servers of NODE_GPUS running gpu_count // tp replicas of the estimate, deployable when a
    replica fits one server (no hardware price includes the switch and NICs a replica across servers needs;
    `gpus`, the catalogue, names the parts that could span them at all). Power is charged at TDP around the
    clock, maintenance per month; the rental side is the cheapest deployable $/M of the same estimate that date.
    """
    keys = ["model", "gpu", "precision", "context_tokens", "streams", "method"]
    cheapest = (
        costs.filter(pl.col("deployable")).sort("usd_per_mtok")
        .group_by(*keys, "snapshot_date")
        .agg(
            pl.col("usd_per_mtok").first().alias("rent_usd_per_mtok"),
            pl.col("provider").first().alias("rent_provider"),
            pl.col("price_kind").first().alias("rent_price_kind"),
            pl.col("replica_pricing").first().alias("rent_replica_pricing"),
        )
    )
    configurations = ((pl.col("tp") + pl.col("gpu_count") - 1) // pl.col("gpu_count")).clip(lower_bound=1)
    replicas = pl.col("gpu_count") // pl.col("tp")
    deployable, why = deployability.server_replica(pl.col("tp"), fabric=False)
    price_usd = pl.col("configurations") * (pl.col("usd_low") + pl.col("usd_high")) / 2
    amortised = price_usd / (params.years * 12 * HOURS_PER_MONTH)
    power = pl.col("power_kw") / pl.col("tp") * pl.col("gpu_count") * params.usd_per_kwh
    maintenance = params.maintenance_usd_per_month / HOURS_PER_MONTH
    own = (
        estimates.join(hardware_usd, on="gpu", how="inner")
        .with_columns(configurations.alias("configurations"))
        .with_columns(pl.col("gpu_count") * pl.col("configurations"))
        .with_columns(
            replicas.alias("replicas"),
            price_usd.alias("hardware_usd"),
            (amortised + power.fill_null(0.0) + maintenance).alias("own_usd_per_hr"),
            mtok_per_month(pl.col("agg_tok_s") * replicas).alias("capacity_mtok_per_month"),
        )
        .with_columns(
            usd_per_mtok(pl.col("own_usd_per_hr"), pl.col("agg_tok_s") * pl.col("replicas") * params.utilisation)
            .alias("own_usd_per_mtok"),
            pl.col("power_kw").is_null().alias("power_unknown"),
        )
        .join(deployability.part_classes(gpus), on="gpu", how="left")
        .with_columns(deployable.alias("deployable"), why.alias("not_deployable_reason"))
        .join(cheapest, on=[*keys, "snapshot_date"], how="left")
    )
    breakeven = pl.col("own_usd_per_hr") * HOURS_PER_MONTH / pl.col("rent_usd_per_mtok")
    return own.with_columns(
        pl.when(breakeven <= pl.col("capacity_mtok_per_month")).then(breakeven).alias("breakeven_mtok_per_month"),
        pl.lit(params.years).alias("years"),
        pl.lit(params.usd_per_kwh).alias("usd_per_kwh"),
        pl.lit(params.maintenance_usd_per_month).alias("maintenance_usd_per_month"),
        pl.lit(params.utilisation).alias("utilisation"),
    ).select(
        "snapshot_date", *keys, "price_kind", "gpu_count", "tp", "replicas", "hardware_usd", "quoted_on", "fx_rate",
        "fx_date", "fx_source", "years", "usd_per_kwh", "maintenance_usd_per_month", "utilisation",
        "own_usd_per_hr", "own_usd_per_mtok", "capacity_mtok_per_month", "power_unknown", "rent_usd_per_mtok",
        "rent_provider", "rent_price_kind", "rent_replica_pricing", "breakeven_mtok_per_month",
        "estimator_version", "deployable", "not_deployable_reason",
    ).sort("snapshot_date", *keys, "price_kind")
