"""`gpuledger lake`: the published Delta tables' history, their upkeep, and the one-time migration of a lake of
manifest partitions. The reference is docs/lake.md."""

import json
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
        frame = frame.select("table", "version", "committed_at", "operation", "date", "run_id", "rows",
                             "replaced_rows", "quality")
    render(frame, fmt, title=f"Lake versions in {store.url} (commit times in UTC)")


@app.command()
def upkeep(
    table: TableOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Compact, vacuum (keeping $GPULEDGER_LAKE_RETENTION_DAYS of versions) and checkpoint the lake's tables now."""
    try:
        store = lake.exports_store()
        names = chosen_tables(store, table)
        with writer_lock("lake upkeep", wait_s=config.lock_wait_s()), db.connect() as con:
            done = export.upkeep(con, store, names, config.lake_retention_days())
    except (ValueError, OSError, db.WarehouseError, WriterBusy) as exc:
        raise fail(str(exc)) from None
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
