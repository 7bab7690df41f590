"""`gpuledger history` and `gpuledger changes`: how prices moved, read from price_index and cost_per_mtok."""

import sys
from datetime import date, timedelta
from typing import Annotated

import polars as pl
import typer

from flows.cli.common import (
    DAYS,
    STREAMS,
    TOKENS,
    FormatOption,
    fail,
    gpu_names,
    open_read_only,
    parse_day,
    resolve_name,
    within,
)
from flows.cli.output import Format, printed_json, render
from transforms import presets, trends
from warehouse import queries

GAPS = "one bar per day, scaled from the series' low to its high; a blank is a day without data (never filled in)"
PRICE_HEADERS = {"min_usd_per_gpu_hr": "min $/GPU-h", "min_usd_per_gpu_hr_change": "min Δ",
                 "min_usd_per_gpu_hr_trend": "min trend", "median_usd_per_gpu_hr": "median $/GPU-h",
                 "median_usd_per_gpu_hr_change": "median Δ", "median_usd_per_gpu_hr_trend": "median trend"}
COST_HEADERS = {"usd_per_mtok": "$/M tokens", "usd_per_mtok_change": "Δ", "usd_per_mtok_trend": "trend"}
COST_COLUMNS = ["snapshot_date", "model", "method", "estimator_version", "precision", "context_tokens", "streams",
                "price_kind", "gpu", "provider", "replica_pricing", "tp", "agg_tok_s", "replica_usd_per_hr",
                "usd_per_mtok", "offer_ids", "price_observed_at", "quality"]


def _nothing_yet() -> typer.Exit:
    return fail("nothing published yet: run `gpuledger nightly` (or `make demo`) first")


def _from(provider: str) -> str:
    return "over every provider" if provider == trends.ALL_PROVIDERS else f"from {provider}"


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1%}"


def history(
    gpu: Annotated[list[str] | None, typer.Option(
        help="GPU (repeatable), by name, unique prefix or short label; default every GPU with prices in the window.")] = None,
    provider: Annotated[str, typer.Option(help="vastai, runpod, verda, or all (over every provider).")] = "all",
    price_kind: Annotated[str, typer.Option(help="on_demand, interruptible, reserved, ...")] = "on_demand",
    days: Annotated[int, typer.Option(help="Days up to the latest published day.", **DAYS)] = 30,
    model: Annotated[str | None, typer.Option(
        help="Instead of $/GPU-hour: this model's cheapest $/M tokens per day (per GPU with --gpu).")] = None,
    precision: Annotated[str, typer.Option(help="With --model: bf16, fp8, int4, ...")] = "int4",
    context: Annotated[int, typer.Option(help="With --model: tokens of context per stream.", **TOKENS)
                       ] = presets.DEFAULT_CONTEXT_TOKENS,
    streams: Annotated[int, typer.Option(help="With --model: concurrent streams per replica.", **STREAMS)
                       ] = presets.DEFAULT_STREAMS,
    method: Annotated[str, typer.Option(help="With --model: the estimator method of the $/M (measured, calculator or ceiling).")] = presets.DEFAULT_COST_METHOD,
    fmt: FormatOption = Format.table,
) -> None:
    """The daily price series: a sparkline per GPU on the terminal, the daily numbers as csv, json or markdown."""
    con = open_read_only()
    try:
        end = queries.latest_date(con, "cost_per_mtok" if model else "price_index")
        if end is None:
            raise _nothing_yet()
        start = end - timedelta(days=days - 1)
        wanted = [resolve_name(g, gpu_names(queries.table(con, "gpus")), "GPU") for g in gpu or []]
        if model:
            model_id = resolve_name(model, {m.lower(): m for m in queries.table(con, "models")["model_id"]}, "model")
            rows = queries.cost_series(con, model_id, start, end)
        else:
            rows = queries.price_index_between(con, start, end)
    finally:
        con.close()
    if wanted:
        rows = rows.filter(pl.col("gpu").is_in(wanted))
    if model:
        _model_history(rows, model_id, wanted, provider, price_kind, precision.lower(), context, streams, method,
                       start, end, fmt)
    else:
        _price_history(rows, wanted, provider, price_kind, start, end, fmt)


def _price_history(rows: pl.DataFrame, wanted: list[str], provider: str, price_kind: str, start: date, end: date,
                   fmt: Format) -> None:
    series = rows.filter((pl.col("provider") == provider) & (pl.col("price_kind") == price_kind))
    if series.is_empty():
        held = rows.select(pl.format("{} {}", "provider", "price_kind")).unique().sort("provider").to_series()
        raise fail(f"no {price_kind} prices from {provider} for {', '.join(wanted) or 'any GPU'} between {start} and "
                   f"{end}" + (f"; there are: {', '.join(held)}" if held.len() else ""))
    if fmt is not Format.table:
        render(series.sort("gpu", "snapshot_date"), fmt)
        return
    summary = trends.trend_summary(series, ["gpu"], ["min_usd_per_gpu_hr", "median_usd_per_gpu_hr"], start, end,
                                   latest=("listings",))
    render(_shown(summary, PRICE_HEADERS),
           title=f"{price_kind} $/GPU-hour per day {_from(provider)}, {start} to {end} (Δ: latest against the first day)",
           caption=GAPS)


def _model_history(rows: pl.DataFrame, model: str, wanted: list[str], provider: str, price_kind: str, precision: str,
                   context: int, streams: int, method: str, start: date, end: date, fmt: Format) -> None:
    setting = (f"{precision}, {context:,} tokens, {streams} streams, {method} method, {price_kind} prices"
               + f" {_from(provider)}")
    chosen = rows.filter(
        (pl.col("precision") == precision) & (pl.col("context_tokens") == context) & (pl.col("streams") == streams)
        & (pl.col("method") == method) & (pl.col("price_kind") == price_kind)
        & ((pl.col("provider") == provider) | (provider == trends.ALL_PROVIDERS))
    )
    if chosen.is_empty():
        held = rows.select(pl.format("{} {} {} tokens {} streams", "method", "precision", "context_tokens", "streams")
                           ).unique().to_series().sort()
        raise fail(f"no $/M for {model} at {setting} between {start} and {end}"
                   + (f"; the cost tables hold: {', '.join(held)}" if held.len() else ""))
    cheapest = trends.cheapest_per_day(chosen, per_gpu=bool(wanted)).select(COST_COLUMNS)
    if fmt is not Format.table:
        render(cheapest, fmt)
        return
    keys = ["gpu"] if wanted else []
    latest = ("provider", "tp") if wanted else ("gpu", "provider", "tp")
    summary = trends.trend_summary(cheapest, keys, ["usd_per_mtok"], start, end, latest=latest)
    render(_shown(summary, COST_HEADERS),
           title=f"{model}: the cheapest $/M tokens per day{' per GPU' if wanted else ''}, {start} to {end}; {setting}",
           caption=GAPS)


def _shown(summary: pl.DataFrame, headers: dict[str, str]) -> pl.DataFrame:
    changes = [c for c in summary.columns if c.endswith("_change")]
    return summary.with_columns(
        pl.col(c).map_elements(_percent, return_dtype=pl.String, skip_nulls=False) for c in changes
    ).rename({c: h for c, h in headers.items() if c in summary.columns})


def changes(
    day: Annotated[str | None, typer.Option("--date", help="YYYY-MM-DD; default the latest published day.")] = None,
    top: Annotated[int, typer.Option(min=1, max=10_000, help="How many of the biggest price moves to show.")] = 10,
    listing_threshold: Annotated[float, typer.Option(callback=within(0, 1000),
        help="Show a source's listing count when it moved by this share or more (0.2 = 20%).")] = 0.2,
    fmt: FormatOption = Format.table,
) -> None:
    """What moved since the previous published day: parts first seen, back or gone, the biggest price moves,
    and sources whose listing count jumped or fell."""
    con = open_read_only()
    try:
        when = parse_day(day, "--date") or queries.latest_date(con, "price_index")
        if when is None:
            raise _nothing_yet()
        today = queries.price_index_between(con, when, when)
        if today.is_empty():
            raise fail(f"no prices published for {when}: see `gpuledger status` for the published days")
        before = queries.published_before(con, when)
        previous = queries.price_index_between(con, before, before) if before else today.clear()
    finally:
        con.close()
    sections = {
        "appeared_and_gone": trends.appeared_and_gone(today, previous),
        "price_moves": trends.price_moves(today, previous, top),
        "listing_moves": trends.listing_moves(today, previous, listing_threshold),
    }
    if fmt is Format.json:
        sys.stdout.write(printed_json({"date": when, "previous": before} | {k: v.to_dicts() for k, v in sections.items()}))
        return
    if fmt is Format.csv:
        stacked = [frame.select(pl.lit(name).alias("section"), pl.all()) for name, frame in sections.items()]
        render(pl.concat(stacked, how="diagonal_relaxed"), fmt)
        return
    header = (f"What moved from {before} to {when}" if before
              else f"{when} is the first published day: every part is seen for the first time")
    titles = {"appeared_and_gone": f"{header}: parts first seen, back or gone",
              "price_moves": f"The {top} biggest moves of the min or median $/GPU-hour",
              "listing_moves": f"Listing counts per source that moved by {listing_threshold:.0%} or more"}
    for name, frame in sections.items():
        shown = frame.with_columns(pl.col(c).map_elements(_percent, return_dtype=pl.String, skip_nulls=False)
                                   for c, dtype in frame.schema.items() if c.endswith("change") and dtype.is_float())
        render(shown, fmt, title=titles[name], caption=None if frame.height else "nothing")
