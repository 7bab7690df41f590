"""Exports: one table's rows for one date as `<root>/<table>/date=YYYY-MM-DD/data.<parquet|csv>`, atomically."""

import os
import uuid
from datetime import date
from pathlib import Path

import duckdb

# The tables a date partition can be cut from, and the column that dates their rows.
EXPORTABLE = {
    "offers": "snapshot_date",
    "daily_prices": "snapshot_date",
    "rental_ranges": "snapshot_date",
    "cost_per_mtok": "snapshot_date",
    "own_vs_rent": "snapshot_date",
    "price_index": "snapshot_date",
    "fx_rates": "date",
}
FORMATS = ("parquet", "csv")
TMP_PREFIX = ".tmp-"


class ExportError(ValueError):
    """An export that was not asked for in a way it can be done safely."""


def partition_dir(root: Path, table: str, day: date) -> Path:
    """The partition folder, checked to stay inside root whatever the table name says."""
    if table not in EXPORTABLE:
        raise ExportError(f"cannot export {table!r}: exportable tables are {', '.join(sorted(EXPORTABLE))}")
    if not isinstance(day, date):
        raise ExportError(f"an export date must be a date, not {day!r}")
    target = (root / table / f"date={day.isoformat()}").resolve()
    if not target.is_relative_to(root.resolve()):
        raise ExportError(f"export path {target} leaves the export folder {root}")
    return target


def export_table(con: duckdb.DuckDBPyConnection, table: str, day: date, root: Path, fmt: str = "parquet") -> Path:
    """Write the table's rows for day to its partition; a rerun replaces the file and removes stale ones."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}: use {' or '.join(FORMATS)}")
    folder = partition_dir(root, table, day)
    folder.mkdir(parents=True, exist_ok=True)
    frame = con.sql(f"select * from {table} where {EXPORTABLE[table]} = ? order by all", params=[day]).pl()
    final = folder / f"data.{fmt}"
    tmp = folder / f"{TMP_PREFIX}{uuid.uuid4().hex}"
    try:
        if fmt == "parquet":
            frame.write_parquet(tmp)
        else:
            frame.write_csv(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)  # readers see the old file or the new one, never half of one
    finally:
        tmp.unlink(missing_ok=True)
    for stale in folder.iterdir():
        if stale != final and (stale.suffix == final.suffix or stale.name.startswith(TMP_PREFIX)):
            stale.unlink()
    return final


def export_date(con: duckdb.DuckDBPyConnection, day: date, root: Path, tables=None, fmt: str = "parquet") -> list[Path]:
    """Export the given tables (default: all exportable) for one date."""
    return [export_table(con, table, day, root, fmt) for table in (tables or EXPORTABLE)]
