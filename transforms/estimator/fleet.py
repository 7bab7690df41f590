"""Prices on estimates: $/M from an hourly price and a throughput, one replica's cost, and page 001's cards (the
bare minimum, the fleet what-if, the size for a tokens/s target)."""

import polars as pl

from transforms import deployability


def usd_per_mtok(usd_per_hr: pl.Expr, tok_s: pl.Expr) -> pl.Expr:
    """Dollars per million tokens from an hourly price and the tokens per second it buys."""
    return usd_per_hr * 1e6 / (tok_s * 3600)


def with_costs(estimates: pl.DataFrame, prices: pl.DataFrame) -> pl.DataFrame:
    """Adds usd_per_hr (one replica of tp GPUs) and usd_per_mtok, from per-GPU prices (gpu, usd_per_gpu_hr)."""
    return estimates.join(
        prices.select("gpu", "usd_per_gpu_hr"), on="gpu", how="left", maintain_order="left"
    ).with_columns(usd_per_hr=pl.col("tp") * pl.col("usd_per_gpu_hr")).with_columns(
        usd_per_mtok=usd_per_mtok(pl.col("usd_per_hr"), pl.col("agg_tok_s"))
    )


def bare_minimum(estimates: pl.DataFrame, prices: pl.DataFrame) -> pl.DataFrame:
    """Page 001's "bare minimum" card: among priced parts, the fewest GPUs, then the most tokens/s (one row)."""
    priced = with_costs(estimates, prices).filter(pl.col("usd_per_mtok").is_not_null())
    return priced.filter(pl.col("tp") == pl.col("tp").min()).sort("agg_tok_s", descending=True).head(1)


def _fleet(df: pl.DataFrame, replicas: pl.Expr, gpus: pl.DataFrame) -> pl.DataFrame:
    """Replicas of each row's estimate on servers of a part (deployability.server_replica: a replica wider than a
    server needs a part that spans hosts and a scale-out fabric, which a provider cluster's per-GPU price includes;
    a consumer or workstation card gets none, and the reason): tokens/s, $/hr and $/M of the whole fleet."""
    deployable, why = deployability.server_replica(pl.col("tp"), fabric=True)
    return df.join(deployability.part_classes(gpus), on="gpu", how="left", maintain_order="left").with_columns(
        replicas=pl.when(deployable).then(replicas).otherwise(0).cast(pl.Int64), not_deployable_reason=why,
    ).with_columns(
        agg_tok_s=pl.col("replicas") * pl.col("agg_tok_s"),
        usd_per_hr=pl.col("replicas") * pl.col("tp") * pl.col("usd_per_gpu_hr"),
    ).with_columns(usd_per_mtok=pl.when(pl.col("replicas") > 0).then(usd_per_mtok(pl.col("usd_per_hr"), pl.col("agg_tok_s"))))


def fleet_whatif(estimates: pl.DataFrame, fleets: pl.DataFrame, prices: pl.DataFrame, gpus: pl.DataFrame) -> pl.DataFrame:
    """Page 001's fleet what-if for fleets (gpu, gpu_count): replicas of the estimate's TP, idle GPUs, tokens/s,
    $/hr (replicas priced), power (every GPU at TDP) and $/M; `gpus` is the catalogue (which parts span hosts)."""
    df = fleets.select("gpu", "gpu_count").join(
        with_costs(estimates, prices).select("gpu", "tp", "agg_tok_s", "power_kw", "usd_per_gpu_hr"),
        on="gpu", how="left", maintain_order="left",
    )
    return _fleet(df, pl.col("gpu_count") // pl.col("tp"), gpus).with_columns(
        idle_gpus=pl.col("gpu_count") - pl.col("replicas") * pl.col("tp"),
        power_kw=pl.col("gpu_count") * pl.col("power_kw") / pl.col("tp"),
    ).select("gpu", "gpu_count", "tp", "replicas", "idle_gpus", "agg_tok_s", "usd_per_hr", "power_kw", "usd_per_mtok",
             "not_deployable_reason")


def size_for_target(estimates: pl.DataFrame, target_tok_s: float, prices: pl.DataFrame,
                    gpus: pl.DataFrame) -> pl.DataFrame:
    """Page 001's "size for a tokens/s target": per GPU, replicas = ceil(target / aggregate), their GPUs and price;
    none of a replica no servers of the part could hold (`gpus`, the catalogue: see fleet_whatif), nor of a part the
    method gives no throughput (a catalogue row without the compute peaks it needs, such as the first Gaudi)."""
    df = with_costs(estimates, prices).select("gpu", "tp", "agg_tok_s", "usd_per_gpu_hr").filter(pl.col("agg_tok_s") > 0)
    return _fleet(df, (target_tok_s / pl.col("agg_tok_s")).ceil(), gpus).with_columns(
        gpu_count=pl.col("replicas") * pl.col("tp")
    ).select("gpu", "tp", "replicas", "gpu_count", "agg_tok_s", "usd_per_hr", "usd_per_mtok", "not_deployable_reason")
