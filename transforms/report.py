"""The report's data: the frames a market page and a model page are drawn from (pure polars, no IO).

The model page shows the calculator view (transforms/tables.py) exactly as `gpuledger table` builds it; this
module only picks, labels and explains its columns, so a number on a page and in the terminal are the same.
"""

import re
from datetime import date

import polars as pl

from transforms import display
from transforms.costs import MULTI_LISTING, ONE_LISTING, PROVIDER_CLUSTER, SINGLE_GPU_LISTINGS

# The parts readers look for first; every other part is one click away in the chart's legend.
FEATURED = re.compile(r"\b(H100|H200|B200|RTX 4090)\b")
PRICE_KIND_ORDER = ("on_demand", "interruptible", "reserved", "dynamic")
PRICING_LABEL = {ONE_LISTING: "one host", PROVIDER_CLUSTER: "provider cluster", MULTI_LISTING: "separate hosts",
                 SINGLE_GPU_LISTINGS: "TP single GPUs"}
PRICING_TEXT = {  # the page prices only the first two: replicas someone could deploy (docs/deployability.md)
    ONE_LISTING: "one listing holds the whole replica on one host",
    PROVIDER_CLUSTER: "the nodes of a cluster the provider sells with a scale-out fabric",
    MULTI_LISTING: "separately rented hosts: no tensor-parallel group, not deployable",
    SINGLE_GPU_LISTINGS: "TP single-GPU listings on separate hosts: no tensor-parallel group, not deployable",
}
# The page's table, in order: (column, header). Extra columns (e.g. another estimator method's $/M) go here,
# with their values added to the frame `table_rows` receives.
TABLE_COLUMNS = [
    ("rank", "#"), ("gpu", "GPU"), ("tp", "TP"), ("memory_used_pct", "memory"), ("agg_tok_s", "tok/s"),
    ("per_stream_tok_s", "per stream tok/s"), ("replica_usd_per_hr", "$/hr"), ("usd_per_mtok", "$/M tokens"),
    ("usd_per_mtok_high", "$/M range (p10-p90)"), ("power_kw", "power"), ("provider", "provider"), ("replica_pricing", "replica priced as"),
    ("not_deployable_reason", "not deployable because"),
]


def featured_first(gpus: list[str]) -> list[str]:
    """H100, H200, B200 and RTX 4090 parts first, then the rest, each group by name."""
    unique = sorted(set(gpus))
    return [g for g in unique if FEATURED.search(g)] + [g for g in unique if not FEATURED.search(g)]


def _order(frame: pl.DataFrame, gpus: list[str]) -> pl.DataFrame:
    rank = {g: i for i, g in enumerate(featured_first(gpus))}
    kinds = {k: i for i, k in enumerate(PRICE_KIND_ORDER)}
    return frame.with_columns(
        pl.col("gpu").replace_strict(rank, return_dtype=pl.Int32).alias("_g"),
        pl.col("price_kind").replace_strict(kinds, default=len(kinds), return_dtype=pl.Int32).alias("_k"),
    )


def origin_labels(origins: pl.DataFrame) -> pl.DataFrame:
    """Per provider, where its prices come from: "live listing (vastai)", "catalog list price (skypilot, resold by
    shadeform)"; from `warehouse.queries.offer_origins`."""
    basis = {"listing": "live listing", "catalog": "catalog list price"}
    rows = [{"provider": r["provider"],
             "origin": " + ".join(basis.get(b, b) for b in r["price_basis"] if b) + f" ({', '.join(r['sources'])}"
             + (f", resold by {', '.join(r['resellers'])}" if r["resellers"] else "") + ")"}
            for r in origins.iter_rows(named=True)]
    return pl.DataFrame(rows, schema={"provider": pl.String, "origin": pl.String})


def market_today(price_index: pl.DataFrame, day: date, origins: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per GPU, price kind and provider on `day`: listings, cheapest and median $/GPU-hour (featured GPUs first),
    and where the provider's prices come from (origin_labels: a market's live listing or a catalog's list price)."""
    today = price_index.filter((pl.col("snapshot_date") == day) & (pl.col("provider") != "all"))
    labels = origin_labels(origins) if origins is not None else pl.DataFrame(
        schema={"provider": pl.String, "origin": pl.String})
    return (
        _order(today, today["gpu"].to_list())
        .sort("_g", "_k", "min_usd_per_gpu_hr", "provider")
        .join(labels, on="provider", how="left", maintain_order="left")
        .select("gpu", "price_kind", "provider", "origin", "listings", "min_usd_per_gpu_hr", "median_usd_per_gpu_hr",
                "min_change_1d", "median_change_1d")
    )


def price_history(price_index: pl.DataFrame, price_kind: str = "on_demand") -> pl.DataFrame:
    """Per GPU and day over every provider: the minimum and median $/GPU-hour of the kind, featured GPUs first."""
    rows = price_index.filter((pl.col("provider") == "all") & (pl.col("price_kind") == price_kind))
    return (
        _order(rows, rows["gpu"].to_list())
        .sort("_g", "snapshot_date")
        .select("gpu", "snapshot_date", "listings", "min_usd_per_gpu_hr", "median_usd_per_gpu_hr")
    )


def listing_counts(history: pl.DataFrame, providers: tuple[str, ...]) -> pl.DataFrame:
    """Listings loaded per provider per day (from `warehouse.queries.listing_history`), oldest first; sources
    that list no GPUs (FX) are left out."""
    listed = history.rename({"source": "provider"}).filter(pl.col("provider").is_in(providers))
    return listed.sort("snapshot_date", "provider").select(
        "snapshot_date", "provider", "listings"
    )


SIGNIFICANT_DIGITS = 5  # raw values kept to sort and plot by: far finer than any label, a third of the bytes


def compact(frame: pl.DataFrame) -> pl.DataFrame:
    """Floats to SIGNIFICANT_DIGITS significant digits: what a page embeds to sort and plot by."""
    return frame.with_columns(pl.col(pl.Float64).round_sig_figs(SIGNIFICANT_DIGITS))


def _labels(label, *columns: pl.Series, skip_nulls: bool = True) -> pl.Series:
    """label(*values) of each row of the columns, computed once per distinct values (a label is a function of its
    values alone; a batch of pages repeats most of them); with skip_nulls, a row whose first value is null has none,
    as polars' map_elements leaves it."""
    cache: dict[tuple, str | None] = {}

    def one(values: tuple) -> str | None:
        if skip_nulls and values[0] is None:
            return None
        if values not in cache:
            cache[values] = label(*values)
        return cache[values]

    return pl.Series([one(values) for values in zip(*(c.to_list() for c in columns), strict=True)], dtype=pl.String)


def _band_label(low: float | None, high: float | None) -> str | None:
    """The measured method's calibrated band (sorted by its high end); the reference methods have none."""
    return None if high is None else f"{display.usd_label(low)}-{display.usd_label(high)}"


def table_rows(table: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """The calculator view as the page's table: the TABLE_COLUMNS' raw values to sort and plot by, their labels,
    and where each price came from (provider, price kind, listings, when they were seen); with `by`, the tables of
    calculator_view's groups, the groups' columns first."""
    approx = table["fp4_estimated"].fill_null(False)
    labelled = table.with_columns(
        *(_labels(lambda v, a: display.compact_label(v, approx=bool(a)), table[c], approx, skip_nulls=False)
          .alias(f"{c}_label") for c in ("agg_tok_s", "per_stream_tok_s")),
        _labels(display.pct_label, table["memory_used_pct"]).alias("memory_used_pct_label"),
        _labels(display.kw_label, table["power_kw"]).alias("power_kw_label"),
        _labels(display.usd_label, table["replica_usd_per_hr"]).alias("replica_usd_per_hr_label"),
        _labels(display.usd_label, table["usd_per_mtok"]).alias("usd_per_mtok_label"),
        _labels(_band_label, table["usd_per_mtok_low"], table["usd_per_mtok_high"], skip_nulls=False).alias(
            "usd_per_mtok_high_label"),
        pl.col("replica_pricing").replace_strict(PRICING_LABEL, default=None).alias("replica_pricing_label"),
        pl.col("price_observed_at").dt.strftime("%Y-%m-%d %H:%M UTC").alias("price_observed_at"),
    )
    shown = [k for k, _ in TABLE_COLUMNS]
    extra = ["vendor", "price_kind", "offer_ids", "price_observed_at", "uncertain"]
    return compact(labelled.select(*by, *shown, *(c for c in extra if c not in shown),
                                   *(c for c in labelled.columns if c.endswith("_label"))))


# The table's columns the estimator alone determines (one model, setting and part): the same every night of one
# estimator version and catalogue, so a model page shares them in a file of their own and carries only the night's.
ESTIMATE_COLUMNS = ("gpu", "tp", "vendor", "uncertain", "memory_used_pct", "agg_tok_s", "per_stream_tok_s", "power_kw",
                    "memory_used_pct_label", "agg_tok_s_label", "per_stream_tok_s_label", "power_kw_label")


# The columns of a night's table row that describe the replica pricing it (the same for every model priced with it):
# the night's model pages name each by its index in one file of the night's replicas.
REPLICA_COLUMNS = ("provider", "price_kind", "replica_pricing", "replica_pricing_label", "replica_usd_per_hr",
                   "replica_usd_per_hr_label", "offer_ids", "price_observed_at", "not_deployable_reason")


def split_table(rows: pl.DataFrame, by: tuple[str, ...] = ()) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """A page's table (table_rows) as what the estimator determines, ESTIMATE_COLUMNS, one row per part in name
    order; the table's order as positions in it, `at` (a row's rank is one more than its index); and the price
    columns of the rows a price or a reason touches, each with its position `at`: what the night adds. With `by`,
    each group of table_rows' groups split alike, the groups' columns first in all three."""
    keys = list(by)
    night = [c for c in rows.columns if c not in ESTIMATE_COLUMNS and c != "rank" and c not in keys]
    index = pl.int_range(pl.len(), dtype=pl.UInt32)
    index = index.over(keys) if keys else index
    parts = rows.with_columns(index.alias("_row")).sort(*keys, "gpu", "tp", "_row").with_columns(index.alias("at"))
    touched = parts.filter(pl.any_horizontal(pl.col(night).is_not_null())) if night else parts.clear()
    return (parts.select(*keys, *ESTIMATE_COLUMNS), parts.sort(*keys, "_row").select(*keys, "at"),
            touched.select(*keys, "at", *night))


def card_rows(cards: pl.DataFrame, replicas: pl.DataFrame) -> pl.DataFrame:
    """The calculator cards with where each price came from (the replica's listings and when they were seen)."""
    provenance = replicas.select("gpu", "tp", "price_kind", "replica_pricing", "offer_ids",
                                 pl.col("price_observed_at").dt.strftime("%Y-%m-%d %H:%M UTC"))
    # labels from the exact values, then the compact numbers: rounding twice can move a label by a cent
    return compact(cards.join(provenance, on=["gpu", "tp"], how="left", maintain_order="left").with_columns(
        pl.struct("tp", "gpu", "agg_tok_s", "replica_usd_per_hr", "usd_per_mtok", "provider").map_elements(
            part_label, return_dtype=pl.String).alias("part_label"),
        pl.col("agg_tok_s").map_elements(display.compact_label, return_dtype=pl.String).alias("agg_tok_s_label"),
        pl.col("replica_usd_per_hr").map_elements(display.usd_label, return_dtype=pl.String).alias("replica_usd_per_hr_label"),
        pl.col("usd_per_mtok").map_elements(display.usd_label, return_dtype=pl.String).alias("usd_per_mtok_label"),
        pl.col("memory_used_pct").map_elements(display.pct_label, return_dtype=pl.String).alias("memory_used_pct_label"),
    ))


def part_label(card: dict) -> str:
    """A card's replica in one line, with what is known of it: '2 x H200 SXM, 822 tok/s for $4.96/hr ($1.68/M,
    vastai)'; a part without a throughput figure or a price shows without them, never as 'null'."""
    text = _part(card)
    if card["agg_tok_s"] is not None:
        text += f", {display.compact_label(card['agg_tok_s'])} tok/s"
    if card["replica_usd_per_hr"] is not None:
        per_mtok = f"{display.usd_label(card['usd_per_mtok'])}/M, " if card["usd_per_mtok"] is not None else ""
        text += f" for {display.usd_label(card['replica_usd_per_hr'])}/hr ({per_mtok}{card['provider']})"
    return text


def own_rows(own_vs_rent: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """Owning against renting at one setting (with `by`, at each group's, the groups' columns first): per part and
    hardware price whose replica fits one server (the deployable configurations), cheapest own $/M first (sorted
    before the digits are cut: two $/M that round alike keep their order); rows of one $/M (a part's list and
    market price alike) by part, then price kind, the same order in every run."""
    return compact(own_vs_rent.filter(pl.col("deployable")).sort(
        *by, pl.col("rent_usd_per_mtok").is_null(), "own_usd_per_mtok", "gpu", "tp", "gpu_count", "price_kind")).select(
        *by, "gpu", "price_kind", "gpu_count", "tp", "replicas", "hardware_usd", "quoted_on", "own_usd_per_hr",
        "own_usd_per_mtok", "capacity_mtok_per_month", "rent_usd_per_mtok", "rent_provider",
        "breakeven_mtok_per_month",
    )


def ownership_terms(own_vs_rent: pl.DataFrame) -> dict | None:
    """The assumptions every own-vs-rent row shares (years, $/kWh, maintenance, utilisation)."""
    terms = own_vs_rent.select("years", "usd_per_kwh", "maintenance_usd_per_month", "utilisation").unique()
    return terms.row(0, named=True) if terms.height == 1 else None


def _precision(p: str) -> str:
    return display.PAGE_000_PRECISION.get(p, p.upper())


def _part(row: dict) -> str:
    return f"{row['tp']} x {row['gpu']}"


def _h100(frame: pl.DataFrame) -> dict | None:
    """The H100 row to answer for: the SXM part when the view has it, else any H100."""
    rows = frame.filter(pl.col("gpu").str.contains(r"\bH100\b"))
    if rows.is_empty():
        return None
    return rows.sort(~pl.col("gpu").str.contains("SXM"), "gpu").row(0, named=True)


def faq(model: dict, setting: tuple[str, int, int], table: pl.DataFrame, one_stream: pl.DataFrame,
        cards: pl.DataFrame, bytes_per_param: dict[str, float], day: date, method: str,
        missing: str | None = None) -> list[dict]:
    """The questions everyone asks, answered from the setting's table: each answer says its date and method; when
    no part has a deployable replica, the first answer says so and what is missing (views.Calculator.note)."""
    precision, context, streams = setting
    name, shown = model["name"], _precision(precision)
    at = f"at {shown}, {context:,} tokens of context and {streams} streams"
    out = []
    if missing:
        out.append({"q": f"Can {name} be served from rented GPUs {at}?",
                    "a": f"On the live listings of {day}, {missing}."})
    weights = ", ".join(f"{model['total_params_b'] * bytes_per_param[p]:,.0f} GB at {_precision(p)}"
                        for p in ("bf16", "fp8", "int4") if p in bytes_per_param)
    kv = model.get("kv_bytes_per_token")
    kv_text = (f" Each concurrent stream adds {kv / 1024:.1f} KB of KV cache per token: "
               f"{kv * context / 1e9:.1f} GB at {context:,} tokens." if kv else "")
    out.append({"q": f"How much GPU memory does {name} need?", "a": f"The weights take {weights}.{kv_text}"})
    bare = cards.filter(pl.col("card").str.starts_with("bare minimum"))
    if not bare.is_empty():
        b = bare.row(0, named=True)
        out.append({"q": f"What is the bare minimum to run {name}?",
                    "a": f"{_part(b)} at {shown} with 4,096 tokens of context and one stream: about "
                         f"{display.compact_label(b['agg_tok_s'])} tokens/s for {display.usd_label(b['replica_usd_per_hr'])}"
                         f"/hr ({b['provider']}, live price of {day})."})
    one, now = _h100(one_stream.filter(pl.col("tp").is_not_null() & ~pl.col("multi_node"))), _h100(table)
    if one and now:
        out.append({"q": f"How many H100s do you need to run {name}?",
                    "a": f"{one['tp']} x {one['gpu']} at {shown} for 4,096 tokens of context and one stream; "
                         f"{now['tp']} {at} ({method} estimate)."})
    if now and now["usd_per_mtok"] is not None:
        cheapest = table.filter(pl.col("usd_per_mtok").is_not_null()).sort("usd_per_mtok").row(0, named=True)
        out.append({"q": f"What does {name} cost per million tokens on an H100?",
                    "a": f"About {display.usd_label(now['usd_per_mtok'])} per million output tokens on {_part(now)} "
                         f"{at}, renting one replica for {display.usd_label(now['replica_usd_per_hr'])}/hr "
                         f"({now['provider']} {now['price_kind']}, listings {now['offer_ids']}, {day}). The cheapest "
                         f"part per token is {_part(cheapest)} at {display.usd_label(cheapest['usd_per_mtok'])} "
                         f"({cheapest['provider']}, {day})."})
    elif now:
        out.append({"q": f"What does {name} cost per million tokens on an H100?",
                    "a": f"No H100 listing could price {_part(now)} on {day}"
                         + (f" as one deployable replica: {now['not_deployable_reason']}" if now["not_deployable_reason"]
                            else "") + "; the table shows every priced part."})
    out.append({"q": f"What precision does {name} ship in?",
                "a": f"The published checkpoint is {_precision(model['native_precision'])}."})
    return out


def api_price_lines(api: pl.DataFrame, model: str) -> list[dict]:
    """The model's cheapest API price (cheapest_api's frame) as a page's price line, dated by its fetch."""
    return [
        {"label": "API", "value": f"${r['usd_per_mtok_output']:,.2f}/M out, ${r['usd_per_mtok_input']:,.2f}/M in",
         "source": f"{r['api_provider']} {r['api_model_id']}, fetched {r['fetched_at']:%Y-%m-%d}"}
        for r in api.filter(pl.col("model") == model).iter_rows(named=True)
    ]
