"""Pipeline commands: nightly, rebuild, serve, export and status.

`status` answers without polars, deltalake or Prefect: the other commands import them in their bodies.
"""

from datetime import date, timedelta
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import DAYS, FormatOption, fail, open_read_only, parse_day
from flows.cli.output import Format, Rows, render, terminal_text
from warehouse import config, db, derived, lake, mirror, queries
from warehouse.lock import WriterBusy

STALE_HOURS = 36.0
# The stored tables: a view's rows (cost_per_mtok, own_vs_rent, cost_at_speed) would be computed for every day to be
# counted (minutes over a year); its facts are counted instead, and its rows per day under "Published days".
COUNTED = ("runs", "fetches", "offers", "unmapped_gpus", "catalog_files", "quarantine", "fx_rates", "daily_prices", "rental_ranges",
           "estimates", "replica_prices", "own_hardware", "price_index", "api_prices", "unmapped_api_models",
           "own_rent_api", "speed_answers", "models", "model_configs", "unmapped_models")


def status(
    runs: Annotated[int, typer.Option(min=1, max=10_000, help="How many recent runs to show.")] = 10,
    fmt: FormatOption = Format.table,
) -> None:
    """The last runs, each source's freshness (stale after 36 hours), each catalog cloud's file version and age,
    the published days and the tables' row counts, and what has not reached the lake or the raw mirror yet."""
    con = open_read_only()
    try:
        recent = Rows.of(queries.recent_runs(con, runs))
        freshness = Rows.of(queries.source_freshness(con, config.utc_now(), STALE_HOURS))
        catalogs = Rows.of(queries.catalog_freshness(con, config.utc_now()))
        days = Rows.of(queries.published_days(con, derived.BY_DATE))
        counts = Rows.of(queries.row_counts(con, COUNTED))
        unpublished = Rows.of(queries.unpublished(con))
    finally:
        con.close()
    render(recent, fmt, title="Recent runs")
    render(freshness, fmt, title=f"Sources (stale when the last success is over {STALE_HOURS:g} h old)")
    if catalogs.height:
        render(catalogs, fmt, title="Catalog files per cloud: the last version read and the day it first came")
    render(days, fmt, title="Published days: quality and derived rows per date")
    render(counts, fmt, title="Rows in every table")
    suspect = [d for d, q in zip(days.column("snapshot_date"), days.column("quality"), strict=True) if q == "suspect"]
    if suspect:
        typer.echo(f"suspect days (see quality_reasons in runs): {', '.join(map(str, suspect))}", err=True)
    stale = [s for s, old in zip(freshness.column("source"), freshness.column("stale"), strict=True) if old]
    if stale:
        typer.echo(f"stale sources: {', '.join(stale)}", err=True)
    if unpublished.height:
        render(unpublished, fmt, title="Days not in the lake yet (the next run publishes them)")
    _mirror_status(fmt)


def _mirror_status(fmt: Format) -> None:
    """What of the raw archive lives only on this machine."""
    if not config.raw_mirror():
        typer.echo("GPULEDGER_RAW_MIRROR is unset: the raw archive lives only on this machine", err=True)
        return
    waiting = [(d.parts[-3], d.parts[-2], d.name, len(names)) for d, names in mirror.pending(config.raw_dir())]
    if waiting:
        render(Rows(["source", "date", "run_id", "files"], [False, False, False, True], waiting), fmt,
               title=f"Raw files not yet mirrored to {config.raw_mirror()} (the next run copies them)")
    else:
        typer.echo(f"raw archive: every file is mirrored to {config.raw_mirror()}", err=True)


def _latest_published(con) -> date:
    day = queries.latest_date(con, "runs")
    if day is None:
        raise fail("the warehouse holds no run yet: run `gpuledger nightly` first")
    return day


def export_cmd(
    tables: Annotated[list[str] | None, typer.Option("--table", help="Table to export (repeatable); default every "
                                                         "table the nightly run exports.")] = None,
    day: Annotated[str | None, typer.Option("--date", help="YYYY-MM-DD; default the latest run's date (with --as-of: "
                                                           "every date).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="parquet or csv.")] = "parquet",
    days: Annotated[int, typer.Option(help="Export this many days ending at --date.", **DAYS)] = 1,
    as_of: Annotated[str | None, typer.Option("--as-of", help="Read the lake instead, as published at VERSION (one "
                                                             "--table) or at a TIMESTAMP (ISO 8601, UTC unless "
                                                             "zoned), into --out.")] = None,
    out: Annotated[Path | None, typer.Option(help="With --as-of: the folder the Parquet files are written to.")] = None,
) -> None:
    """Publish tables to the lake: each date one commit to <exports>/<table>/ (a Delta table; a folder or s3://), or
    csv to <exports>/csv/<table>/date=YYYY-MM-DD/. With --as-of, write what the lake held then to --out instead."""
    import polars as pl

    from flows.derive import EXPORTED, made_by
    from warehouse import export

    if as_of is not None:
        return _export_as_of(tables, as_of, parse_day(day, "--date"), days, fmt, out)
    con = open_read_only()
    try:
        end = parse_day(day, "--date") or _latest_published(con)
        start = end - timedelta(days=days - 1)
        held = export.held_days(con, tables or EXPORTED, start, end)
        if not held:
            raise fail(f"nothing to export for {start}{'' if start == end else f' to {end}'}: no run was made "
                       "for it and the tables hold no row of it")
        store = lake.exports_store()
        written = []
        for held_day in held:
            written += export.export_date(con, held_day, store, tables or EXPORTED, fmt, made_by=made_by())
    except (ValueError, OSError) as exc:  # ExportError and a bad location are ValueErrors; OSError: the store
        raise fail(str(exc)) from None
    finally:
        con.close()
    render(pl.DataFrame([{"table": w.table, "date": w.day, "rows": w.rows, "version": w.version,
                          "published": " ".join(w.describe())} for w in written]))


def _export_as_of(tables: list[str] | None, as_of: str, end: date | None, days: int, fmt: str, out: Path | None) -> None:
    """Each table (default: those the nightly run exports that the lake held at as_of: a lake published before
    replica_prices or own_hardware has none, or had none then) as the lake held it at as_of (of the dates ending at
    end, or all) to <out>/<table>.parquet."""
    import polars as pl

    from flows.cli.lake import chosen_tables
    from flows.derive import EXPORTED
    from warehouse import delta

    if out is None:
        raise fail("--as-of writes files: name their folder with --out")
    if fmt != "parquet":  # a spreadsheet's CSV comes from the warehouse, through the export's CSV safety
        raise fail("--as-of writes parquet only")
    dates = [end - timedelta(days=n) for n in range(days)] if end else None
    try:
        point = delta.parse_as_of(as_of)
        if isinstance(point, int) and len(tables or ()) != 1:
            raise fail("a version number belongs to one table: name it with --table (or give a timestamp)")
        store = lake.exports_store()
        # a table's name is a folder in the lake and a file in --out
        named = chosen_tables(store, tables) if tables else [t for t in EXPORTED if t in delta.tables(store)]
        read = {}
        for table in named:
            try:
                published = delta.open_table(delta.table_uri(store.url, table), point)
            except delta.NotPublished:
                if tables:  # a table asked for by name is refused; by default, one the lake began later is left out
                    raise
                continue
            read[table] = (published.version(), pl.from_arrow(delta.read(published, dates)))
        if not read:
            raise fail(f"the lake in {store.url} held none of {', '.join(named) or 'the nightly tables'} as of {as_of}")
    except (ValueError, OSError) as exc:  # NotPublished is a ValueError; OSError: the store
        raise fail(str(exc)) from None
    out.mkdir(parents=True, exist_ok=True)
    listing = []
    for table, (version, frame) in read.items():
        path = out / f"{table}.parquet"
        frame.write_parquet(path)
        listing.append({"table": table, "version": version, "rows": frame.height, "file": str(path)})
    render(pl.DataFrame(listing), title=f"The lake as of {as_of}")


def nightly(
    source: Annotated[list[str] | None, typer.Option("--source", "-s", help="Only this source (repeatable).")] = None,
    day: Annotated[str | None, typer.Option("--date", help="Snapshot date YYYY-MM-DD; default today (UTC).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="Export format: parquet, csv or none.")] = "parquet",
    no_prefect: Annotated[bool, typer.Option("--no-prefect", help="The same steps without Prefect (cron, containers).")] = False,
) -> None:
    """Run the nightly job once now: fetch, load, derive, export (live progress per source on a terminal). Exit 1
    unless every source was ok."""
    from dataclasses import asdict

    import polars as pl

    from flows import pipeline
    from flows.cli.progress import live_progress

    export_format, snapshot = ("" if fmt == "none" else fmt), parse_day(day, "--date")
    try:
        with live_progress():
            if no_prefect:
                summary = asdict(pipeline.run(source, snapshot, export_format, trigger="cli"))
            else:
                from flows.nightly import nightly as nightly_flow

                state = nightly_flow(sources=source, snapshot_date=snapshot, export_format=export_format,
                                     trigger="cli", return_state=True)
                summary = state.result(raise_on_failure=False)
        if not isinstance(summary, dict):
            raise fail(f"the run failed: {state.message or summary}")
    except (ValueError, db.WarehouseError, WriterBusy) as exc:  # SettingsError is a ValueError
        raise fail(str(exc)) from None
    rows = [{"source": s, "status": st, "error": summary["errors"].get(s)} for s, st in summary["sources"].items()]
    durability = "".join(f", {name} {summary[key]}" for name, key in (("lake", "publication"), ("raw mirror", "mirror"))
                         if summary[key])
    render(pl.DataFrame(rows), title=f"Run {summary['run_id']} for {summary['snapshot_date']}: {summary['status']}, "
                                     f"quality {summary['quality']}{durability}")
    render(pl.DataFrame({"table": list(summary["derived"]), "rows": list(summary["derived"].values())}))
    for warning in summary["warnings"]:  # the day is in the warehouse; the lake or the mirror catches up next run
        typer.echo(f"left for the next run: {terminal_text(warning)}", err=True)  # a store's error text
    if summary["status"] != "ok" or summary["warnings"]:
        raise typer.Exit(1)


def rebuild(
    start: Annotated[str, typer.Option("--from", help="First date YYYY-MM-DD.")],
    end: Annotated[str | None, typer.Option("--to", help="Last date; default --from.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="Export format: parquet, csv or none.")] = "parquet",
    no_prefect: Annotated[bool, typer.Option("--no-prefect", help="The same steps without Prefect.")] = False,
) -> None:
    """Recompute the derived tables for a date range from the raw archive, without network."""
    import polars as pl

    from flows import pipeline

    first, last = parse_day(start, "--from"), parse_day(end, "--to")
    export_format = "" if fmt == "none" else fmt
    try:
        if no_prefect:
            done = pipeline.rebuild(first, last, export_format)
        else:
            from flows.nightly import rebuild as rebuild_flow

            done = rebuild_flow(start=first, end=last, export_format=export_format)
    except (db.WarehouseError, WriterBusy, ValueError, OSError) as exc:  # a bad or unreachable raw mirror
        raise fail(str(exc)) from None
    render(pl.DataFrame([{"date": d, **counts} for d, counts in done.items()]), title="Rebuilt")


def serve(
    cron: Annotated[str, typer.Option(help="When to run, as cron.")] = "0 2 * * *",
    timezone: Annotated[str, typer.Option(help="Time zone of the cron expression.")] = "UTC",
    port: Annotated[int, typer.Option(min=1, max=65535,
                                      help="Port of the local Prefect server started when PREFECT_API_URL is unset.")] = 4200,
) -> None:
    """Serve the nightly flow on a schedule (starts a local Prefect server when none is configured)."""
    import os

    from flows import prefect_env

    server = None
    if not os.environ.get("PREFECT_API_URL"):  # the ephemeral server has no scheduler: runs would never start
        typer.echo(f"starting a local Prefect server on 127.0.0.1:{port} ...", err=True)
        server = prefect_env.start_local_server(port)
    from flows.nightly import serve_nightly

    try:
        serve_nightly(cron, timezone)
    finally:
        if server:
            server.terminate()
            server.wait(timeout=30)
