"""Exports: one table's rows for one date as a hive partition `<lake>/<table>/date=YYYY-MM-DD/` of the lake.

`offers` holds the listings the date's tables were derived from (per provider, the latest run whose fetch
succeeded), never an interrupted or superseded run's; CSV text is spreadsheet-safe (warehouse/csv_safe.py).

The lake is a folder or an object store (warehouse/lake.py); each partition holds its data file under a
unique name and a `_manifest.json` written last. Whether a date reached the lake is kept in `publications`,
so a date the store refused is published again by the next run.
"""

import io
from dataclasses import dataclass
from datetime import date

import duckdb

from warehouse import config, csv_safe, lake, queries

FORMATS = ("parquet", "csv")
DATE_COLUMNS = ("snapshot_date", "date")  # the column that dates a table's rows, in order of preference


class ExportError(ValueError):
    """An export that was not asked for in a way it can be done safely."""


@dataclass(frozen=True)
class Publication:
    snapshot_date: date
    location: str
    status: str  # published | unpublished
    files: tuple[str, ...] = ()
    error: str | None = None


def exportable(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Every warehouse table with a date column, and that column: any of them can be cut into partitions."""
    found: dict[str, str] = {}
    rows = con.execute(
        "select table_name, column_name from information_schema.columns where table_schema = 'main' "
        "and column_name in ? order by table_name", [list(DATE_COLUMNS)]).fetchall()
    for table, column in sorted(rows, key=lambda r: (r[0], DATE_COLUMNS.index(r[1]))):
        found.setdefault(table, column)
    return found


def partition_prefix(table: str, day: date) -> str:
    return f"{table}/date={day.isoformat()}"


def _render(con: duckdb.DuckDBPyConnection, table: str, day: date, fmt: str) -> tuple[bytes, int]:
    tables = exportable(con)
    if table not in tables:
        raise ExportError(f"cannot export {table!r}: exportable tables are {', '.join(sorted(tables))}")
    if not isinstance(day, date):
        raise ExportError(f"an export date must be a date, not {day!r}")
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}: use {' or '.join(FORMATS)}")
    rows = (queries.published_offers(con, day) if table == "offers"  # the listings the day was derived from
            else con.sql(f"select * from {table} where {tables[table]} = ?", params=[day]))
    frame = rows.order("all").pl()
    buffer = io.BytesIO()
    if fmt == "parquet":
        frame.write_parquet(buffer)
    else:
        csv_safe.frame(frame).write_csv(buffer)
    return buffer.getvalue(), frame.height


def export_table(con: duckdb.DuckDBPyConnection, table: str, day: date, store: lake.Store, fmt: str = "parquet",
                 run_id: str | None = None) -> dict:
    """Replace the table's partition for day in the lake; return its manifest."""
    data, rows = _render(con, table, day, fmt)
    run_id = run_id or f"export-{config.utc_now():%Y%m%dT%H%M%SZ}"
    return lake.replace_partition(store, partition_prefix(table, day), [(data, rows)], fmt, run_id,
                                  table=table, date=day.isoformat())


def export_date(con: duckdb.DuckDBPyConnection, day: date, store: lake.Store, tables, fmt: str = "parquet",
                run_id: str | None = None) -> list[str]:
    """Export the given tables for one date; return the keys of the files written."""
    keys = []
    for table in tables:
        manifest = export_table(con, table, day, store, fmt, run_id)
        keys += [f"{partition_prefix(table, day)}/{entry['file']}" for entry in manifest["files"]]
    return keys


def record(con: duckdb.DuckDBPyConnection, pub: Publication, fmt: str, run_id: str, tables) -> None:
    now = config.utc_now()
    con.execute(
        "insert or replace into publications (snapshot_date, location, format, tables, status, run_id, error, "
        "attempted_at, published_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [pub.snapshot_date, pub.location, fmt, ",".join(tables), pub.status, run_id, pub.error, now,
         now if pub.status == "published" else None])


def publish_date(con: duckdb.DuckDBPyConnection, day: date, tables, fmt: str, run_id: str,
                 store: lake.Store | None = None) -> Publication:
    """Export the date to the lake and record the outcome; a store that fails leaves it `unpublished`."""
    store = store or lake.exports_store()
    try:
        keys = export_date(con, day, store, tables, fmt, run_id)
        pub = Publication(day, store.url, "published", tuple(keys))
    except OSError as exc:  # the store is unreachable or refused a write: the warehouse already holds the day
        pub = Publication(day, store.url, "unpublished", error=f"{store.url}: {exc}")
    record(con, pub, fmt, run_id, tables)
    return pub


def unpublished(con: duckdb.DuckDBPyConnection, location: str) -> list[tuple[date, str, list[str]]]:
    """Dates (with format and tables) whose last publication to location failed, oldest first."""
    rows = con.execute("select snapshot_date, format, tables from publications where location = ? "
                       "and status = 'unpublished' order by snapshot_date", [location]).fetchall()
    return [(day, fmt, tables.split(",")) for day, fmt, tables in rows]
