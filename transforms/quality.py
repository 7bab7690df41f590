"""Data-quality gates run before a day's tables are published: what fails them is flagged, never silent."""

import json
from dataclasses import dataclass
from datetime import date, datetime

import polars as pl

from transforms.normalise import API_PRICE_COLUMNS, MAX_USD_PER_MTOK


@dataclass(frozen=True)
class QualityRules:
    """The gates' thresholds; a day that trips one is published as `suspect` with the reasons."""

    max_ratio_to_median: float = 10.0  # a listing this many times above or below its GPU's median is quarantined
    min_listings_for_median: int = 3  # fewer listings than this: no median to judge against
    usd_per_gpu_hr_min: float = 0.01  # configured bounds on any GPU-hour price
    usd_per_gpu_hr_max: float = 100.0
    volume_drop: float = 0.5  # a source below this share of its median listing count over the history is flagged
    history_days: int = 7
    min_history_days: int = 3  # fewer earlier days than this: no volume check yet
    # share of a source's listings with an unknown GPU name above which the day is flagged: none, since the
    # catalogue covers the markets and a new card must surface the day it appears (one catalogue row fixes it)
    max_unknown_share: float = 0.0
    max_quarantined_share: float = 0.05  # share of the day's listings price sanity may remove quietly
    # A catalog file is refreshed every few hours upstream: one unchanged this many days is stale (its fetcher
    # stopped), flagged rather than silently published as today's list price
    catalog_stale_days: int = 3


@dataclass(frozen=True)
class Verdict:
    quality: str  # ok | suspect
    reasons: tuple[str, ...]

    @property
    def text(self) -> str | None:
        return "; ".join(self.reasons) or None


def price_outliers(
    offers: pl.DataFrame, rules: QualityRules, quarantined_at: datetime
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split offers into those kept and quarantine rows for prices out of bounds or far from their GPU's median.

    A market's live listings are judged against live listings, a catalog's list prices against list prices: a
    $0.10 P100 at vast.ai is the market, not an error, though a hyperscaler lists the part at $1.28."""
    keys = ["gpu", "price_kind", "price_basis"]
    price = pl.col("usd_per_gpu_hr")
    median = price.median().over(keys)
    judged = pl.len().over(keys) >= rules.min_listings_for_median
    ratio = pl.max_horizontal(price / median, median / price)
    reason = (
        pl.when(price < rules.usd_per_gpu_hr_min)
        .then(pl.format("price sanity: {} USD per GPU-hour is below the bound {}", price, pl.lit(rules.usd_per_gpu_hr_min)))
        .when(price > rules.usd_per_gpu_hr_max)
        .then(pl.format("price sanity: {} USD per GPU-hour is above the bound {}", price, pl.lit(rules.usd_per_gpu_hr_max)))
        .when(pl.col("gpu").is_not_null() & judged & (ratio > rules.max_ratio_to_median))
        .then(pl.format("price sanity: {} USD per GPU-hour is {}x away from the median {} of {} {}",
                        price, ratio.round(1), median.round(4), pl.col("gpu"), pl.col("price_kind")))
    )
    marked = offers.with_columns(reason.alias("_reason"))
    kept = marked.filter(pl.col("_reason").is_null()).drop("_reason")
    flagged = marked.filter(pl.col("_reason").is_not_null())
    records = [json.dumps(r, default=str) for r in flagged.drop("_reason").to_dicts()]
    quarantine = flagged.select(
        "snapshot_date", "run_id", "provider", "offer_id", "price_kind",
        pl.lit("usd_per_gpu_hr").alias("field"), pl.col("_reason").alias("reason"),
        pl.Series("record", records, dtype=pl.String), pl.lit(quarantined_at).alias("quarantined_at"),
        pl.lit("quality").alias("stage"),
    )
    return kept, quarantine


def volume_flags(today: pl.DataFrame, history: pl.DataFrame, day: date, rules: QualityRules) -> list[str]:
    """Sources whose listing count fell below `volume_drop` of their median over the previous days.

    `today`: source, listings. `history`: snapshot_date, source, listings (one row per earlier date).
    """
    window = history.filter(
        (pl.col("snapshot_date") < day) & (pl.col("snapshot_date") >= pl.lit(day) - pl.duration(days=rules.history_days))
    )
    medians = window.group_by("source").agg(pl.col("listings").median().alias("median"), pl.len().alias("days"))
    low = today.join(medians, on="source").filter(
        (pl.col("days") >= rules.min_history_days) & (pl.col("listings") < rules.volume_drop * pl.col("median"))
    )
    return [
        f"{r['source']}: {r['listings']} listings, under {rules.volume_drop:g} of its {rules.history_days}-day "
        f"median of {r['median']:g}"
        for r in low.sort("source").iter_rows(named=True)
    ]


def unknown_share_flags(offers: pl.DataFrame, rules: QualityRules) -> list[str]:
    """Sources with more listings than allowed whose GPU name the resolver does not know, naming the names."""
    unknown = offers.filter(pl.col("gpu").is_null())
    names = (
        unknown.group_by("provider", "gpu_raw").len()
        .sort("len", "gpu_raw", descending=[True, False])
        .group_by("provider", maintain_order=True)
        .agg(names=pl.format("{} ({})", "gpu_raw", "len").head(5).str.join(", "))
    )
    shares = offers.group_by("provider").agg(
        pl.col("gpu").is_null().mean().alias("share"), pl.col("gpu").is_null().sum().alias("unknown"), pl.len()
    ).join(names, on="provider", how="left")
    return [
        f"{r['provider']}: {r['unknown']} of {r['len']} listings ({r['share']:.1%}) have an unknown GPU name: "
        f"{r['names']}"
        for r in shares.filter(pl.col("share") > rules.max_unknown_share).sort("provider").iter_rows(named=True)
    ]


def missing_provider_flags(offers: pl.DataFrame, providers: tuple[str, ...], day: date) -> list[str]:
    """Sources of offers with no listing on the day: their fetch failed, so the day's tables lack their market."""
    present = set(offers["source"].unique().to_list())
    return [f"{p}: no successful fetch on {day}" for p in providers if p not in present]


def catalog_file_flags(files: pl.DataFrame, day: date, rules: QualityRules, earlier: pl.DataFrame | None = None
                       ) -> list[str]:
    """A catalog's clouds whose file failed on the day, gave no answer at all (read on an earlier day of the
    history window, absent today: the transport failed), or is unchanged for more than catalog_stale_days.

    `files`: the day's catalog_files rows (source, cloud, status, changed_on, error); `earlier`: source, cloud of
    the files read in the days before."""
    silent = [] if earlier is None else [
        f"{r['source']}: {r['cloud']} gave no answer on {day}" for r in earlier.join(
            files.select("source", "cloud"), on=["source", "cloud"], how="anti").unique().sort("cloud").iter_rows(named=True)
        if r["source"] in set(files["source"])]
    failed = files.filter(pl.col("status") == "failed")
    stale = files.filter((pl.col("status") != "failed") &
                         (pl.col("changed_on") < pl.lit(day) - pl.duration(days=rules.catalog_stale_days)))
    return ([f"{r['source']}: {r['cloud']} failed: {r['error']}" for r in failed.sort("cloud").iter_rows(named=True)]
            + silent
            + [f"{r['source']}: {r['cloud']} catalog stale: unchanged since {r['changed_on']} (more than "
               f"{rules.catalog_stale_days} days)" for r in stale.sort("cloud").iter_rows(named=True)])


def quarantined_share_flags(quarantined: int, listings: int, rules: QualityRules) -> list[str]:
    """A few outliers are the market; many mean a feed or a parser went wrong."""
    if listings and quarantined / listings > rules.max_quarantined_share:
        return [f"price sanity quarantined {quarantined} of {listings} listings ({quarantined / listings:.0%})"]
    return []


def absurd_api_price_flags(quarantined: pl.DataFrame) -> list[str]:
    """API prices the day's fetches refused as absurd (above normalise.MAX_USD_PER_MTOK), naming model and field:
    a provider sending them has a broken feed, whose other prices deserve a look."""
    absurd = quarantined.filter(pl.col("field").is_in(API_PRICE_COLUMNS))
    return [
        f"{r['provider']}: {r['len']} API price(s) above {MAX_USD_PER_MTOK:g} USD per million tokens quarantined: "
        f"{r['names']}"
        for r in absurd.group_by("provider").agg(
            pl.len(), names=pl.format("{} ({})", "offer_id", "field").sort().head(5).str.join(", ")
        ).sort("provider").iter_rows(named=True)
    ]


def verdict(reasons: list[str]) -> Verdict:
    return Verdict("suspect" if reasons else "ok", tuple(reasons))
