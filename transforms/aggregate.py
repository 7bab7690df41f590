"""Daily price aggregates over one date's offers: price distributions and rental ranges for N GPUs."""

import polars as pl

from transforms import deployability
from transforms.deployability import CLUSTER_TIER, NODE_GPUS

RENTAL_SIZES = (1, 2, 4, 8, 16, 32)


def _quantiles(column: str, suffix: str) -> list[pl.Expr]:
    value = pl.col(column)
    return [
        value.min().alias(f"min_{suffix}"),
        value.quantile(0.25, "linear").alias(f"p25_{suffix}"),
        value.median().alias(f"median_{suffix}"),
        value.max().alias(f"max_{suffix}"),
    ]


def daily_prices(offers: pl.DataFrame) -> pl.DataFrame:
    """Per date × provider × gpu × gpu_count × price_kind × tier: listing count and price quantiles."""
    keys = ["snapshot_date", "provider", "gpu", "gpu_count", "price_kind", "tier"]
    return (
        offers.filter(pl.col("gpu").is_not_null())
        .with_columns(pl.col("tier").fill_null("unknown"))
        .group_by(keys)
        .agg(
            pl.len().cast(pl.Int32).alias("listings"),
            *_quantiles("usd_per_gpu_hr", "usd_per_gpu_hr"),
            *_quantiles("usd_per_hr", "usd_per_hr"),
            pl.col("fetched_at").max().alias("observed_at"),
        )
        .sort(keys)
    )


def _beyond_one_node(n_gpus: pl.Expr) -> pl.Expr:
    """Sizes only several hosts make: whole multiples of a node."""
    return (n_gpus > NODE_GPUS) & (n_gpus % NODE_GPUS == 0)


def _fixed_size_groups(offers: pl.DataFrame, sizes: tuple[int, ...]) -> pl.DataFrame:
    """N GPUs from one listing of exactly N GPUs (one host), or, beyond one node, N/8 distinct 8-GPU listings."""
    keys = ["snapshot_date", "gpu", "provider", "price_kind"]
    fixed = offers.filter(pl.col("max_gpu_count").is_null())
    targets = pl.DataFrame({"n_gpus": list(sizes)}, schema={"n_gpus": pl.Int32})
    ranked = fixed.with_columns(
        pl.col("usd_per_hr").rank("ordinal").over(*keys, "gpu_count").alias("cheap_rank"),
        pl.col("usd_per_hr").rank("ordinal", descending=True).over(*keys, "gpu_count").alias("dear_rank"),
        pl.len().over(*keys, "gpu_count").alias("same_size"),
    ).join(targets, how="cross")
    one_host = pl.col("gpu_count") == pl.col("n_gpus")
    several_nodes = (pl.col("gpu_count") == NODE_GPUS) & _beyond_one_node(pl.col("n_gpus"))
    usable = ranked.with_columns(
        pl.when(one_host).then(1).otherwise(pl.col("n_gpus") // NODE_GPUS).alias("k")
    ).filter((one_host | several_nodes) & (pl.col("same_size") >= pl.col("k")))
    return usable.group_by(*keys, "n_gpus", "gpu_count").agg(
        pl.col("usd_per_hr").filter(pl.col("cheap_rank") <= pl.col("k")).sum().alias("min_usd_per_hr"),
        pl.col("usd_per_hr").filter(pl.col("dear_rank") <= pl.col("k")).sum().alias("max_usd_per_hr"),
        pl.len().cast(pl.Int32).alias("listings"),
        pl.col("k").first().cast(pl.Int32).alias("listings_per_group"),
        pl.col("fetched_at").max().alias("observed_at"),
    ).with_columns((pl.col("listings_per_group") == 1).alias("deployable")).drop("gpu_count")


def _per_gpu_groups(offers: pl.DataFrame, sizes: tuple[int, ...]) -> pl.DataFrame:
    """N GPUs from listings priced per GPU that scale to max_gpu_count per pod (RunPod): one pod, or whole pods
    beyond one node; and from a provider cluster (tier `cluster`), N beyond one node up to its size."""
    keys = ["snapshot_date", "gpu", "provider", "price_kind"]
    scalable = offers.filter(pl.col("max_gpu_count").is_not_null() & (pl.col("max_gpu_count") > 0))
    targets = pl.DataFrame({"n_gpus": list(sizes)}, schema={"n_gpus": pl.Int32})
    cluster = pl.col("tier") == CLUSTER_TIER
    one_pod = ~cluster & (pl.col("n_gpus") <= pl.col("max_gpu_count"))
    in_cluster = cluster & (pl.col("n_gpus") > NODE_GPUS) & (pl.col("n_gpus") <= pl.col("max_gpu_count"))
    pods = pl.when(one_pod | in_cluster).then(1).otherwise(
        (pl.col("n_gpus") + pl.col("max_gpu_count") - 1) // pl.col("max_gpu_count"))
    return (
        scalable.join(targets, how="cross")
        .filter(one_pod | in_cluster | (~cluster & _beyond_one_node(pl.col("n_gpus"))))
        .with_columns((pl.col("usd_per_gpu_hr") * pl.col("n_gpus")).alias("group_usd_per_hr"), pods.alias("k"),
                      cluster.alias("cluster"))
        .group_by(*keys, "n_gpus", "cluster")
        .agg(
            pl.col("group_usd_per_hr").min().alias("min_usd_per_hr"),
            pl.col("group_usd_per_hr").max().alias("max_usd_per_hr"),
            pl.len().cast(pl.Int32).alias("listings"),
            pl.col("k").min().cast(pl.Int32).alias("listings_per_group"),
            pl.col("fetched_at").max().alias("observed_at"),
        )
        .with_columns((pl.col("listings_per_group") == 1).alias("deployable"))
    )


def rental_ranges(offers: pl.DataFrame, sizes: tuple[int, ...] = RENTAL_SIZES,
                  gpus: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per date × gpu × N GPUs × provider × price_kind: the cheapest and dearest $/hr to rent N GPUs, and the
    range over the ways that make one deployable replica of N (`deployable_min_usd_per_hr`/`max`; NULL, with
    `not_deployable_reason`, when N GPUs come only as separately rented hosts; docs/deployability.md).

    Fixed-size listings serve N GPUs only at exactly N GPUs on one host, or, beyond one node, as N/8
    distinct 8-GPU listings (the k cheapest or dearest summed); per-GPU listings serve N × their price up to
    their pod size, or whole pods beyond one node; a provider cluster serves N beyond one node up to its size
    (deployable for parts that may span hosts, which `gpus`, the catalogue, names). Besides `sizes`, every GPU
    count a host offers that day is a size (vast.ai hosts rent ×3, ×6, ×10, ...).
    """
    mapped = offers.filter(pl.col("gpu").is_not_null())
    offered = mapped.filter(pl.col("max_gpu_count").is_null())["gpu_count"].unique().to_list()
    sizes = tuple(sorted(set(sizes) | {int(n) for n in offered if n and n > 0}))
    capacity = deployability.capacity(mapped, gpus)
    parts = [
        _fixed_size_groups(mapped, sizes).with_columns(pl.lit("fixed_listings").alias("composition")),
        _per_gpu_groups(mapped, sizes).join(capacity.select("gpu", "spans_hosts"), on="gpu", how="left").with_columns(
            pl.col("deployable") & (~pl.col("cluster") | deployability.may_span_hosts()),
            pl.when(pl.col("cluster")).then(pl.lit("cluster")).otherwise(pl.lit("per_gpu")).alias("composition"),
        ).drop("cluster", "spans_hosts"),
    ]
    keys = ["snapshot_date", "gpu", "n_gpus", "provider", "price_kind"]
    deployable = pl.col("deployable")
    ranges = (
        pl.concat(parts, how="vertical_relaxed")
        .group_by(keys)
        .agg(
            pl.col("min_usd_per_hr").min(),
            pl.col("max_usd_per_hr").max(),
            pl.col("min_usd_per_hr").filter(deployable).min().alias("deployable_min_usd_per_hr"),
            pl.col("max_usd_per_hr").filter(deployable).max().alias("deployable_max_usd_per_hr"),
            pl.col("listings").sum(),
            pl.col("listings_per_group").min(),
            pl.col("listings_per_group").filter(pl.col("composition") != "cluster").min().alias("_hosts"),
            pl.col("composition").unique().sort().str.join("+"),
            pl.col("observed_at").max(),
        )
    )
    n = pl.col("n_gpus").cast(pl.Int64)
    how = pl.when(pl.col("_hosts").is_null()).then(pl.format("{} GPUs only across the nodes of a cluster", n)).otherwise(
        pl.format("{} GPUs only from {} separately rented hosts", n, pl.col("_hosts")))
    return deployability.with_capacity(ranges, capacity, deployability.reason(
        pl.col("deployable_min_usd_per_hr").is_not_null(), how, n).alias("not_deployable_reason")).drop("_hosts").sort(keys)
