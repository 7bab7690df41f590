"""`gpuledger lake`: the published Delta tables' history, their upkeep, and the one-time migration of a lake of
manifest partitions. The reference is docs/lake.md."""

import json
from datetime import date
from typing import Annotated

import polars as pl
import typer

from flows.cli.common import FormatOption, fail
from flows.cli.output import Format, render
from warehouse import config, db, delta, export, lake
from warehouse.lock import WriterBusy, writer_lock

app = typer.Typer(name="lake", help="The lake's Delta tables: what was published when, upkeep, migration.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

TableOption = Annotated[list[str] | None, typer.Option("--table", "-t", help="Only this table (repeatable); "
                                                                             "default every table in the lake.")]


def chosen_tables(store: lake.Store, chosen: list[str] | None) -> list[str]:
    """The lake's tables chosen (default all of them); a name the lake does not hold is refused, never a path."""
    found = delta.tables(store)
    if not chosen:
        return found
    unknown = [t for t in chosen if t not in found]
    if unknown:
        raise fail(f"no lake table {', '.join(unknown)} in {store.url}; the lake holds {', '.join(found) or 'none'}")
    return chosen


def touched(version: dict) -> str | None:
    """What a version changed, for the terminal: the date it replaced, the dates it aged out, or the key (grid, speed
    answers) it wrote."""
    if version["aged_out"]:
        return f"aged out {spans([date.fromisoformat(d) for d in version['aged_out']])}"
    key = next((f"{column} {version[column][:12]}" for column in export.KEYED.values() if version[column]), None)
    return key or version["date"]


@app.command()
def history(
    table: TableOption = None,
    limit: Annotated[int, typer.Option(help="The newest versions of each table to show.")] = 20,
    fmt: FormatOption = Format.table,
) -> None:
    """Every version of the lake's tables, newest first: when, which run, which date, rows written and replaced."""
    try:
        store = lake.exports_store()
        rows = [{"table": name} | entry for name in chosen_tables(store, table)
                for entry in delta.history(delta.open_table(delta.table_uri(store.url, name)))[:limit]]
    except (ValueError, OSError) as exc:
        raise fail(str(exc)) from None
    if not rows:
        raise fail(f"no lake table in {config.exports_location()} yet: `gpuledger nightly` publishes them")
    frame = pl.DataFrame([row | {"catalogues": json.dumps(row["catalogues"]) if row["catalogues"] else None}
                          for row in rows], infer_schema_length=None)
    if fmt is Format.table:  # the terminal gets the columns that tell versions apart; csv and json get all
        frame = frame.with_columns(date=pl.Series([touched(row) for row in rows], dtype=pl.String))
        frame = frame.select("table", "version", "committed_at", "operation", "date", "run_id", "rows",
                             "replaced_rows", "quality")
    render(frame, fmt, title=f"Lake versions in {store.url} (commit times in UTC)")


def spans(days: list) -> str:
    """Sorted dates as runs of consecutive days: `2026-11-01..2026-11-30, 2026-12-02`."""
    runs: list[list] = []
    for day in days:
        if runs and (day - runs[-1][1]).days == 1:
            runs[-1][1] = day
        else:
            runs.append([day, day])
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in runs)


@app.command()
def status(
    table: TableOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """What each lake table holds now: its dates (the estimates and speed answers: their keys) and whether it keeps
    them all or a window of the newest ($GPULEDGER_LAKE_DERIVED_DAYS)."""
    try:
        store = lake.exports_store()
        keep = config.lake_derived_days()
        rows = []
        for name in chosen_tables(store, table):
            published = delta.open_table(delta.table_uri(store.url, name))
            held = sorted(delta.held(published))
            keyed = export.KEYED.get(name)
            rows.append({"table": name, "version": published.version(),
                         "keeps": (f"each {keyed} once" if keyed else f"the newest {keep} dates"
                                   if keep and name in export.WINDOWED else "every date"),
                         "partitions": len(held), "first": None if keyed or not held else held[0],
                         "last": None if keyed or not held else held[-1],
                         "held": ", ".join(k[:12] for k in held) if keyed else spans(held)})
    except (ValueError, OSError) as exc:
        raise fail(str(exc)) from None
    if not rows:
        raise fail(f"no lake table in {config.exports_location()} yet: `gpuledger nightly` publishes them")
    render(pl.DataFrame(rows, infer_schema_length=None), fmt, title=f"What the lake in {store.url} holds")


@app.command()
def query(
    table: Annotated[str, typer.Argument(help="A table the lake keeps for a window: "
                                              f"{', '.join(export.WINDOWED)}.")],
) -> None:
    """Print the SQL that computes TABLE, every date of it, from the lake's facts, as the warehouse's view does:
    run it with `gpuledger sql --lake` on the tables it names, or in any engine that reads Delta."""
    try:
        typer.echo(export.lake_query(table))
    except ValueError as exc:
        raise fail(str(exc)) from None


@app.command()
def upkeep(
    table: TableOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Age the derived tables' old dates out ($GPULEDGER_LAKE_DERIVED_DAYS), then compact, vacuum (keeping
    $GPULEDGER_LAKE_RETENTION_DAYS of versions) and checkpoint the lake's tables now."""
    try:
        store = lake.exports_store()
        names = chosen_tables(store, table)
        with writer_lock("lake upkeep", wait_s=config.lock_wait_s()), db.connect() as con:
            aged = export.age_out(store, config.lake_derived_days(), f"upkeep-{config.utc_now():%Y%m%dT%H%M%SZ}",
                                  names)
            done = export.upkeep(con, store, names, config.lake_retention_days())
    except (ValueError, OSError, db.WarehouseError, WriterBusy) as exc:
        raise fail(str(exc)) from None
    for name, days in aged.items():
        typer.echo(f"{name}: aged out {spans(days)} (`gpuledger export --date` puts a date back)", err=True)
    render(pl.DataFrame([vars(u) for u in done], schema=["table", "version", "compacted_files", "vacuumed_files"]),
           fmt, title=f"Upkeep done, versions of the last {config.lake_retention_days()} days kept")


@app.command()
def migrate(fmt: FormatOption = Format.table) -> None:
    """Convert a lake of manifest partitions (gpuledger before the Delta tables) into Delta tables, every date kept."""
    try:
        store = lake.exports_store()
        done = export.migrate(store, config.lake_retention_days())
    except (ValueError, OSError) as exc:
        raise fail(str(exc)) from None
    if not done:
        typer.echo(f"{store.url}: no manifest partition left to migrate", err=True)
        return
    render(pl.DataFrame([vars(m) for m in done]), fmt, title=f"Migrated {len(done)} partition(s) of {store.url}")
