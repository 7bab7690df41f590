"""Pipeline commands: status and export (nightly, rebuild and serve join them as the flows land)."""

from datetime import date, timedelta
from pathlib import Path
from typing import Annotated

import polars as pl
import typer

from flows.cli import FormatOption, fail, open_read_only
from flows.output import Format, render
from warehouse import config, export, queries

STALE_HOURS = 36.0
COUNTED = ("runs", "fetches", "offers", "unmapped_gpus", "quarantine", "fx_rates", "daily_prices", "rental_ranges",
           "estimates", "cost_per_mtok", "own_vs_rent")


def status(
    runs: Annotated[int, typer.Option(help="How many recent runs to show.")] = 10,
    fmt: FormatOption = Format.table,
) -> None:
    """The last runs, each source's freshness (stale after 36 hours) and the tables' row counts."""
    con = open_read_only()
    try:
        recent = queries.recent_runs(con, runs)
        freshness = queries.source_freshness(con, config.utc_now(), STALE_HOURS)
        counts = queries.row_counts(con, COUNTED)
    finally:
        con.close()
    render(recent, fmt, title="Recent runs")
    render(freshness, fmt, title=f"Sources (stale when the last success is over {STALE_HOURS:g} h old)")
    render(counts, fmt, title="Rows")
    stale = freshness.filter(pl.col("stale"))["source"].to_list()
    if stale:
        typer.echo(f"stale sources: {', '.join(stale)}", err=True)


def _latest_published(con) -> date:
    day = queries.latest_date(con, "runs")
    if day is None:
        raise fail("the warehouse holds no run yet: run `gpuledger nightly` first")
    return day


def export_cmd(
    tables: Annotated[list[str] | None, typer.Option("--table", help="Table to export (repeatable); default all.")] = None,
    day: Annotated[str | None, typer.Option("--date", help="YYYY-MM-DD; default the latest run's date.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="parquet or csv.")] = "parquet",
    days: Annotated[int, typer.Option(help="Export this many days ending at --date.")] = 1,
) -> None:
    """Write tables to exports/<table>/date=YYYY-MM-DD/ (hive layout), atomically, replacing the partition."""
    con = open_read_only()
    try:
        try:
            end = date.fromisoformat(day) if day else _latest_published(con)
        except ValueError:
            raise fail(f"--date {day!r} is not YYYY-MM-DD") from None
        written: list[Path] = []
        for offset in range(days):
            written += export.export_date(con, end - timedelta(days=offset), config.exports_dir(), tables, fmt)
    except export.ExportError as exc:
        raise fail(str(exc)) from None
    finally:
        con.close()
    render(pl.DataFrame({"file": [str(p) for p in written], "bytes": [p.stat().st_size for p in written]}))
