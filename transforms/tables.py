"""The published views: page 000's estimate cards and page 001's calculator, as frames with live prices.

Every price here is a replica someone could deploy (docs/deployability.md); a part without one says why."""

import polars as pl

from transforms import deployability, estimator

REPLICA_COLUMNS = ["usd_per_gpu_hr", "replica_usd_per_hr", "provider", "price_kind", "replica_pricing", "offer_ids",
                   "price_observed_at"]


def cheapest_replicas(prices: pl.DataFrame, price_kind: str = "on_demand") -> pl.DataFrame:
    """Per gpu and tp: the cheapest deployable replica price of the kind, else the cheapest of the rest, which
    says why it is not deployable (`not_deployable_reason`)."""
    return (
        prices.filter(pl.col("price_kind") == price_kind)
        .sort(pl.col("deployable").not_(), "replica_usd_per_hr", "provider")
        .group_by("gpu", "tp")
        .first()
        .with_columns((pl.col("replica_usd_per_hr") / pl.col("tp")).alias("usd_per_gpu_hr"))
    )


def priced(estimates: pl.DataFrame, replicas: pl.DataFrame, capacity: pl.DataFrame | None = None) -> pl.DataFrame:
    """Estimates with the cheapest deployable replica of their own GPU and TP: $/hr, $/M, provider and listings.

    Where no deployable replica exists the price columns stay empty and `not_deployable_reason` says why: the
    replica the listings could only fake, or, given the day's `capacity` (deployability.capacity), what no host
    offers.
    """
    offered = replicas.select("gpu", "tp", "deployable", "not_deployable_reason", *REPLICA_COLUMNS).with_columns(
        pl.when(pl.col("deployable")).then(pl.col(REPLICA_COLUMNS)))
    joined = estimates.join(offered, on=["gpu", "tp"], how="left", maintain_order="left")
    if capacity is not None:
        missing = pl.when(pl.col("gpu").is_in(capacity["gpu"].implode())).then(deployability.shortfall(pl.col("tp")))
        joined = deployability.with_capacity(joined, capacity,
                                             pl.coalesce("not_deployable_reason", missing).alias("not_deployable_reason"))
    return joined.with_columns(
        pl.col("deployable").fill_null(False),
        estimator.usd_per_mtok(pl.col("replica_usd_per_hr"), pl.col("agg_tok_s")).alias("usd_per_mtok"),
        estimator.usd_per_mtok(pl.col("replica_usd_per_hr"), pl.col("agg_tok_s_high")).alias("usd_per_mtok_low"),
        estimator.usd_per_mtok(pl.col("replica_usd_per_hr"), pl.col("agg_tok_s_low")).alias("usd_per_mtok_high"),
    )


def rental_for_n(ranges: pl.DataFrame, price_kind: str = "on_demand") -> pl.DataFrame:
    """Per gpu and N GPUs, over providers: the cheapest and dearest $/hr, the cheapest that makes one deployable
    replica (else why none does), the providers and the listings."""
    deployable = pl.col("deployable_min_usd_per_hr").is_not_null()
    return (
        ranges.filter(pl.col("price_kind") == price_kind)
        .group_by("gpu", "n_gpus", "snapshot_date")
        .agg(
            pl.col("min_usd_per_hr").min().alias("rental_min_usd_per_hr"),
            pl.col("max_usd_per_hr").max().alias("rental_max_usd_per_hr"),
            pl.col("deployable_min_usd_per_hr").min().alias("rental_deployable_min_usd_per_hr"),
            pl.col("not_deployable_reason").filter(~deployable).first(),
            pl.col("provider").unique().sort().str.join(",").alias("rental_providers"),
            pl.col("listings").sum().alias("rental_listings"),
        )
        .with_columns(pl.when(pl.col("rental_deployable_min_usd_per_hr").is_null()).then("not_deployable_reason"))
        .rename({"n_gpus": "tp", "snapshot_date": "rental_date"})
    )


def _hardware_columns(hardware: pl.DataFrame) -> pl.DataFrame:
    wide = hardware.select("gpu", "price_kind", "usd_low", "usd_high", "gpu_count").pivot(
        on="price_kind", index="gpu", values=["usd_low", "usd_high", "gpu_count"]
    )
    names = {f"{v}_{k}": f"{k}_{v}" for v in ("usd_low", "usd_high", "gpu_count") for k in ("list", "market")}
    wide = wide.rename({c: n for c, n in names.items() if c in wide.columns})
    return wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(n) for n in names.values() if n not in wide.columns)


def estimate_view(
    estimates: pl.DataFrame, gpus: pl.DataFrame, ranges: pl.DataFrame, hardware: pl.DataFrame
) -> pl.DataFrame:
    """Page 000's cards as one table: one row per GPU with its suggested sizing, prices and rental range."""
    rental = rental_for_n(ranges)
    view = (
        estimates.join(gpus.select(pl.col("name").alias("gpu"), "label_000", "memory_gb", "bandwidth_gbs", "vendor"),
                       on="gpu", how="left")
        .join(rental, on=["gpu", "tp"], how="left")
        .join(_hardware_columns(hardware), on="gpu", how="left")
        .with_columns(  # a price only for what someone could deploy: one host, or a provider's cluster
            estimator.usd_per_mtok(pl.col("rental_deployable_min_usd_per_hr"), pl.col("agg_tok_s")).alias("usd_per_mtok")
        )
    )
    return view.select(
        "gpu", "label_000", "vendor", "memory_gb", "bandwidth_gbs", "precision", pl.col("tp").alias("gpus"),
        "multi_node", pl.col("single_stream_tok_s").alias("decode_tok_s"),
        pl.col("agg_tok_s").alias("batched_out_tok_s"), pl.col("prefill_tok_s").alias("batched_in_tok_s"),
        "list_usd_low", "list_usd_high", "market_usd_low", "market_usd_high",
        "rental_min_usd_per_hr", "rental_max_usd_per_hr", "rental_providers", "rental_listings", "rental_date",
        "rental_deployable_min_usd_per_hr", "usd_per_mtok", "not_deployable_reason", "uncertain", "method",
        "estimator_version",
    ).sort(pl.col("rental_min_usd_per_hr").is_null(), "usd_per_mtok", pl.col("batched_out_tok_s"),
           descending=[False, False, True], nulls_last=True)


def calculator_view(estimates: pl.DataFrame, gpus: pl.DataFrame, replicas: pl.DataFrame,
                    capacity: pl.DataFrame | None = None, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """Page 001's table: every part the model fits on (one node), priced parts first by $/M, then by tokens/s; a
    part with listings but no deployable replica says why (`priced`). With `by` (e.g. model and setting), a table
    per group in one pass: the groups' columns first, each group ranked on its own."""
    keys = list(by)
    fits = estimates.filter(pl.col("tp").is_not_null() & ~pl.col("multi_node"))
    table = priced(fits, replicas, capacity).join(gpus.select(pl.col("name").alias("gpu"), "vendor"), on="gpu",
                                                  how="left")
    ordered = table.sort(*keys, pl.col("usd_per_mtok").is_null(), "usd_per_mtok", pl.col("agg_tok_s"),
                         descending=[*(False,) * len(keys), False, False, True], nulls_last=True)
    ranked = (ordered.with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).over(keys)) if keys
              else ordered.with_row_index("rank", offset=1))
    return ranked.select(
        *keys, "rank", "gpu", "vendor", "tp", "memory_used_pct", "agg_tok_s", "per_stream_tok_s", "max_streams",
        "replica_usd_per_hr", "usd_per_mtok", "usd_per_mtok_low", "usd_per_mtok_high", "power_kw", "provider",
        "price_kind", "replica_pricing", "offer_ids", "price_observed_at", "not_deployable_reason", "fp4_estimated",
        "uncertain", "method",
    )


def calculator_cards(table: pl.DataFrame, one_stream: pl.DataFrame, replicas: pl.DataFrame,
                     by: tuple[str, ...] = ()) -> pl.DataFrame:
    """Page 001's cards: bare minimum and cheapest per hour (one stream, short context), cheapest per M tokens,
    and each vendor's best value and fewest GPUs, as rows card, gpu, tp, tok/s, $/hr, $/M, memory %. With `by`,
    the cards of each group of `table` and `one_stream` (calculator_view's groups) in one pass, the groups'
    columns first."""
    columns = ["gpu", "tp", "agg_tok_s", "replica_usd_per_hr", "usd_per_mtok", "memory_used_pct", "provider"]
    keys = list(by) or ["_all"]  # no groups: one group of every row
    table, one_stream = (frame.with_columns(_all=pl.lit(0)) if not by else frame for frame in (table, one_stream))
    small = priced(one_stream.filter(pl.col("tp").is_not_null() & ~pl.col("multi_node")), replicas)
    small_priced = small.filter(pl.col("usd_per_mtok").is_not_null())
    table_priced = table.filter(pl.col("usd_per_mtok").is_not_null())
    vendors = table.filter(pl.col("vendor").is_not_null())

    def first(frame: pl.DataFrame, group: list[str], order: list[str], descending: list[bool]) -> pl.DataFrame:
        return (frame.sort(*group, *order, descending=[*(False,) * len(group), *descending], nulls_last=True)
                .group_by(group, maintain_order=True).first())

    # Among parts of one group size, one with a throughput figure first: a card shows what is known. The cards in
    # order: the three of the whole table, then each vendor's (by name) best value and fewest GPUs.
    fewest = (["tp", "agg_tok_s"], [False, True])
    cards = [
        (first(small_priced, keys, *fewest), pl.lit("bare minimum (1 stream)"), None, 0),
        (first(small_priced, keys, ["replica_usd_per_hr"], [False]), pl.lit("cheapest per hour (1 stream)"), None, 1),
        (first(table_priced, keys, ["usd_per_mtok"], [False]), pl.lit("cheapest per M tokens"), None, 2),
        (first(vendors.filter(pl.col("usd_per_mtok").is_not_null()), [*keys, "vendor"], ["usd_per_mtok"], [False]),
         pl.col("vendor") + ": best value", pl.col("vendor"), 3),
        (first(vendors, [*keys, "vendor"], *fewest), pl.col("vendor") + ": fewest GPUs", pl.col("vendor"), 4),
    ]
    frames = [frame.select(*keys, card.alias("card"), *columns, (vendor if vendor is not None else pl.lit(None,
                           dtype=pl.String)).alias("_vendor"), pl.lit(i).alias("_card")) for frame, card, vendor, i in cards]
    every = pl.concat(frames, how="vertical_relaxed").sort(*keys, "_vendor", "_card", nulls_last=False)
    return every.select(*(by or ()), "card", *columns).with_columns(
        pl.col(c).cast(table.schema[c]) for c in columns if c in table.schema)


def deployment_note(table: pl.DataFrame, estimates: pl.DataFrame, replicas: pl.DataFrame,
                    capacity: pl.DataFrame) -> str | None:
    """None when the calculator table (one node) prices a part; else the cheapest replica wider than a node that a
    provider cluster holds, or, when none does, what the day's listings lack for the replica with the fewest GPUs
    that some listing of its part could make."""
    if table.filter(pl.col("usd_per_mtok").is_not_null()).height:
        return None
    rows = priced(estimates.filter(pl.col("tp").is_not_null()), replicas, capacity)
    known = rows.filter(pl.col("usd_per_mtok").is_not_null() | pl.col("not_deployable_reason").is_not_null())
    if known.is_empty():
        return "no part with a live listing that day holds a replica at this setting"
    best = known.sort(pl.col("usd_per_mtok").is_null(), "usd_per_mtok", "tp", pl.col("agg_tok_s"),
                      descending=[False, False, False, True], nulls_last=True).row(0, named=True)
    part = f"{best['tp']} x {best['gpu']}"
    if best["usd_per_mtok"] is not None:
        return (f"no part holds a replica within one node at this setting; {part} on a {best['provider']} cluster "
                f"does, at ${best['usd_per_mtok']:,.2f}/M tokens")
    return f"no deployable replica at this setting: {part}: {best['not_deployable_reason']}"
