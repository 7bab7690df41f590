"""`gpuledger fetch` and `gpuledger replay`: the sources from the command line."""

import time
from pathlib import Path
from typing import Annotated

import duckdb
import polars as pl
import typer

from flows import pipeline
from flows.cli.common import err, fail, within
from flows.cli.output import render
from flows.replay.faults import parse_faults
from flows.replay.server import ReplayServer
from scrapers import sources
from warehouse import db
from warehouse.lock import WriterBusy


def fetch(
    source: Annotated[list[str] | None, typer.Option(
        "--source", "-s", help=f"Only this source (repeatable): {', '.join(sources.SOURCES)}. Default: all.")] = None,
) -> None:
    """Fetch, archive, parse and load the sources; exit 1 when any source failed."""
    unknown = sorted(set(source or ()) - set(sources.SOURCES))
    if unknown:
        raise fail(f"unknown source {', '.join(unknown)}; known: {', '.join(sources.SOURCES)}", code=2)
    try:
        summary = pipeline.run(source or None, export_format="", derive=False)
    except (ValueError, db.WarehouseError, duckdb.Error, WriterBusy) as exc:  # SettingsError is a ValueError
        raise fail(str(exc)) from None
    rows = summary.fetches
    table = pl.DataFrame([{
        "source": r.source, "status": r.status, "http": r.http_status, "requests": r.requests,
        "records": r.record_count, "offers": r.offers_loaded, "quarantined": r.quarantined, "unmapped": r.unmapped,
        "truncated": r.truncated, "error / notes": r.error or "; ".join(r.notes) or None,
    } for r in rows])
    render(table, title=f"run {summary.run_id} ({summary.snapshot_date}): {summary.status}")
    if any(r.status != "ok" for r in rows):
        raise typer.Exit(1)


def replay(
    directory: Annotated[Path, typer.Option("--dir", exists=True, file_okay=False,
                                            help="A fixture directory with replay.json, or a raw archive directory.")],
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: any free port).")] = 8787,
    latency: Annotated[float, typer.Option(callback=within(0, 3600), help="Seconds to wait before every response.")
                       ] = 0.0,
    retry_after: Annotated[str, typer.Option(help="Retry-After sent with injected 429/503 ('none': no header).")] = "1",
    hang: Annotated[float, typer.Option(callback=within(0, 3600),
        help="Seconds a 'timeout' fault holds the request before closing it, and a 'trickle' takes.")] = 60.0,
    fault: Annotated[list[str] | None, typer.Option(
        help="PATH=SPEC, repeatable. SPEC: comma-separated items used one per request: an HTTP status, ok, "
             "timeout, drop, truncate, trickle, huge, invalid, html, empty, dup, deep, missing:F, null:F, "
             "absurd:F, control:F, rename:F, string:F, type:CT, redirect:CODE or redirect:CODE:same (see "
             "flows/replay/faults.py); a trailing * repeats the last for ever. "
             "E.g. /api/v0/bundles/=429,429,200 or /graphql=500* or /v1/instance-types=rename:price_per_hour*")] = None,
) -> None:
    """Serve recorded responses on 127.0.0.1 at the providers' real paths, with optional faults, until Ctrl-C."""
    try:
        faults = parse_faults(fault or [])
        server = ReplayServer(directory, port=port, latency_s=latency, hang_s=hang, faults=faults,
                              retry_after=None if retry_after.lower() == "none" else retry_after)
    except (ValueError, FileNotFoundError, OSError) as exc:
        raise fail(str(exc), code=2) from None
    with server:
        err().print(f"replaying {directory} on {server.url}; point gpuledger at it with:", highlight=False)
        for name, value in server.env().items():
            print(f"export {name}={value}")
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            err().print("stopped")
