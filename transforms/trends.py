"""Price trends: the daily price index per part, what moved between two published days, $/M series per day."""

from datetime import date, timedelta

import polars as pl

from transforms.display import sparkline

ALL_PROVIDERS = "all"  # the provider of the row over every provider
SERIES_KEYS = ["gpu", "provider", "price_kind"]
CHANGE_DAYS = (1, 7, 30)
PRICES = ["min_usd_per_gpu_hr", "p10_usd_per_gpu_hr", "median_usd_per_gpu_hr", "max_usd_per_gpu_hr"]
CHANGES = [f"{stat}_change_{n}d" for stat in ("min", "median") for n in CHANGE_DAYS]
# price_index's columns (migration 0009) but `quality`, which derive adds like on every derived table.
INDEX_SCHEMA = pl.Schema({
    "snapshot_date": pl.Date, **dict.fromkeys(SERIES_KEYS, pl.String), "listings": pl.Int32,
    **dict.fromkeys(PRICES, pl.Float64), **dict.fromkeys(CHANGES, pl.Float64),
    "first_seen_date": pl.Date, "days_since_first_seen": pl.Int32,
})


def _distribution(offers: pl.DataFrame, provider: pl.Expr) -> pl.DataFrame:
    price = pl.col("usd_per_gpu_hr")
    return offers.group_by(provider.alias("provider"), "gpu", "price_kind").agg(
        pl.len().cast(pl.Int32).alias("listings"),
        price.min().alias("min_usd_per_gpu_hr"),
        price.quantile(0.10, "linear").alias("p10_usd_per_gpu_hr"),
        price.median().alias("median_usd_per_gpu_hr"),
        price.max().alias("max_usd_per_gpu_hr"),
    )


def _change(now: str, before: str) -> pl.Expr:
    """Relative change (0.05 = 5% dearer); NULL when the earlier day has no row, never filled in."""
    return pl.col(now) / pl.col(before) - 1


def price_index(offers: pl.DataFrame, previous: pl.DataFrame, day: date) -> pl.DataFrame:
    """The day's price index rows: per gpu × provider (and 'all') × price_kind over every gpu_count.

    `offers`: the day's kept offers (`gpu` NULL ones are left out). `previous`: earlier price_index rows
    (INDEX_SCHEMA); the rows 1, 7 and 30 days before give the changes, a series' earliest row its first_seen_date.
    """
    priced = offers.filter(pl.col("gpu").is_not_null() & pl.col("usd_per_gpu_hr").is_not_null())
    today = pl.concat([_distribution(priced, pl.col("provider")), _distribution(priced, pl.lit(ALL_PROVIDERS))])
    earlier = previous.filter(pl.col("snapshot_date") < day)
    first_seen = earlier.group_by(SERIES_KEYS).agg(pl.col("first_seen_date").min().alias("first_seen_before"))
    rows = today.join(first_seen, on=SERIES_KEYS, how="left")
    for n in CHANGE_DAYS:
        then = earlier.filter(pl.col("snapshot_date") == day - timedelta(days=n)).select(
            *SERIES_KEYS, pl.col("min_usd_per_gpu_hr").alias("_min_then"),
            pl.col("median_usd_per_gpu_hr").alias("_median_then"))
        rows = rows.join(then, on=SERIES_KEYS, how="left").with_columns(
            _change("min_usd_per_gpu_hr", "_min_then").alias(f"min_change_{n}d"),
            _change("median_usd_per_gpu_hr", "_median_then").alias(f"median_change_{n}d"),
        ).drop("_min_then", "_median_then")
    first = pl.coalesce("first_seen_before", pl.lit(day))
    return (
        rows.with_columns(pl.lit(day).alias("snapshot_date"), first.alias("first_seen_date"))
        .with_columns((pl.lit(day) - pl.col("first_seen_date")).dt.total_days().cast(pl.Int32)
                      .alias("days_since_first_seen"))
        .select(pl.col(name).cast(dtype) for name, dtype in INDEX_SCHEMA.items())
        .sort(SERIES_KEYS)
    )


def appeared_and_gone(today: pl.DataFrame, before: pl.DataFrame) -> pl.DataFrame:
    """Series with a row on one of two published days only: 'first seen' (never before), 'back' or 'gone'."""
    keys = pl.col(SERIES_KEYS)
    new = today.join(before, on=SERIES_KEYS, how="anti").with_columns(
        pl.when(pl.col("days_since_first_seen") == 0).then(pl.lit("first seen")).otherwise(pl.lit("back"))
        .alias("change"))
    gone = before.join(today, on=SERIES_KEYS, how="anti").with_columns(pl.lit("gone").alias("change"))
    return (
        pl.concat([new, gone])
        .select("change", keys, "snapshot_date", "listings", "min_usd_per_gpu_hr", "median_usd_per_gpu_hr",
                "first_seen_date")
        .sort("change", pl.col("provider") != ALL_PROVIDERS, *SERIES_KEYS)
    )


def price_moves(today: pl.DataFrame, before: pl.DataFrame, top: int) -> pl.DataFrame:
    """The `top` series whose min or median $/GPU-hour moved most between the two days (by the larger move)."""
    both = today.join(before, on=SERIES_KEYS, suffix="_before")
    moves = both.select(
        *SERIES_KEYS,
        pl.col("min_usd_per_gpu_hr_before").alias("min_before"), pl.col("min_usd_per_gpu_hr").alias("min_now"),
        _change("min_usd_per_gpu_hr", "min_usd_per_gpu_hr_before").alias("min_change"),
        pl.col("median_usd_per_gpu_hr_before").alias("median_before"),
        pl.col("median_usd_per_gpu_hr").alias("median_now"),
        _change("median_usd_per_gpu_hr", "median_usd_per_gpu_hr_before").alias("median_change"),
        pl.col("listings_before"), pl.col("listings").alias("listings_now"),
    )
    size = pl.max_horizontal(pl.col("min_change").abs(), pl.col("median_change").abs())
    return moves.filter(size > 0).sort(size, *SERIES_KEYS, descending=[True, False, False, False]).head(top)


def listing_moves(today: pl.DataFrame, before: pl.DataFrame, threshold: float) -> pl.DataFrame:
    """Per source and price kind: listings on both days, kept where the count moved by `threshold` or more."""
    def totals(index: pl.DataFrame, name: str) -> pl.DataFrame:
        per_source = index.filter(pl.col("provider") != ALL_PROVIDERS)
        return per_source.group_by("provider", "price_kind").agg(pl.col("listings").sum().alias(name))

    joined = totals(today, "listings_now").join(
        totals(before, "listings_before"), on=["provider", "price_kind"], how="full", coalesce=True
    ).with_columns(pl.col("listings_now", "listings_before").fill_null(0))
    change = _change("listings_now", "listings_before")
    moved = joined.with_columns(
        pl.when(pl.col("listings_before") > 0).then(change).alias("change"),
        pl.when(pl.col("listings_before") == 0).then(pl.lit("appeared"))
        .when(pl.col("listings_now") == 0).then(pl.lit("vanished"))
        .when(change > 0).then(pl.lit("jumped")).otherwise(pl.lit("fell")).alias("move"),
    )
    return moved.filter((pl.col("change").abs() >= threshold) | pl.col("change").is_null()).select(
        "provider", "price_kind", "move", "listings_before", "listings_now", "change"
    ).sort("provider", "price_kind")


def cheapest_per_day(cost: pl.DataFrame, per_gpu: bool) -> pl.DataFrame:
    """The cheapest $/M per day (per GPU when asked) from cost_per_mtok rows of one model and setting: deployable
    replicas only, as in the calculator table; then the cheapest GPU of the day wins."""
    per_gpu_rows = (
        cost.filter(pl.col("deployable"))
        .sort("usd_per_mtok", "provider")
        .group_by("snapshot_date", "gpu")
        .first()
    )
    keys = ["snapshot_date", "gpu"] if per_gpu else ["snapshot_date"]
    return per_gpu_rows.sort("usd_per_mtok", "gpu").group_by(keys).first().sort(keys)


def trend_summary(series: pl.DataFrame, keys: list[str], values: list[str], start: date, end: date,
                  latest: tuple[str, ...] = ()) -> pl.DataFrame:
    """Per series (keys): days with a row from start to end, the latest day with its `latest` columns, and per
    value its latest figure, its change against the window's first row, and a sparkline with one bar per
    calendar day (a blank for a day without a row)."""
    calendar = [start + timedelta(days=i) for i in range((end - start).days + 1)]
    ordered = series.sort(*keys, "snapshot_date")
    groups = ordered.group_by(keys, maintain_order=True) if keys else [((), ordered)]
    rows = []
    for key, group in groups:
        last = group.row(-1, named=True)
        row = {**dict(zip(keys, key, strict=True)), "days": group.height, "latest_date": last["snapshot_date"],
               **{c: last[c] for c in latest}}
        for value in values:
            by_day = dict(zip(group["snapshot_date"], group[value], strict=True))
            first = group[value][0]
            row |= {value: last[value], f"{value}_change": last[value] / first - 1 if first else None,
                    f"{value}_trend": sparkline([by_day.get(d) for d in calendar])}
        rows.append(row)
    return pl.DataFrame(rows)
