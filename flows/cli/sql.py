"""`gpuledger sql`: ad-hoc SQL on a read-only connection to the warehouse, or on the lake's tables as published.

Read-only means no writes and no downloads: besides refusing every statement but a read, the connection may
reach no file but the warehouse and the local exports folder, no URL, and installs or loads no extension;
its configuration is then locked, so no statement (SET, PRAGMA, CALL enable_logging...) can undo that.
"""

from typing import Annotated

import duckdb
import typer

from flows.cli.common import FormatOption, fail, open_read_only
from flows.cli.output import Format, Rows, render
from warehouse import config, queries

READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN", "PRAGMA", "CALL"}


def read_only_statements(query: str) -> None:
    """Refuse any statement that could change the warehouse or write files."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise fail(str(exc)) from None
    for number, statement in enumerate(statements, 1):
        kind = statement.type.name
        if kind not in READ_ONLY_STATEMENTS:
            raise fail(
                f"gpuledger sql is read-only: statement {number} is {kind}, only "
                f"{', '.join(sorted(READ_ONLY_STATEMENTS))} are run"
            )


def lake_views(con: duckdb.DuckDBPyConnection, tables: list[str], as_of: str | None) -> None:
    """Register each lake table, as published at as_of (default: now), under its own name: it hides the
    warehouse table of that name for this query. deltalake loads only here: the plain query stays quick."""
    from warehouse import delta, lake

    try:
        point = delta.parse_as_of(as_of) if as_of else None
        if isinstance(point, int) and len(tables) != 1:
            raise fail("a version number belongs to one table: give one --lake (or a timestamp)")
        location = lake.exports_store().url
        for table in tables:
            con.register(table, delta.open_table(delta.table_uri(location, table), point).to_pyarrow_dataset())
    except (ValueError, OSError) as exc:  # NotPublished is a ValueError; OSError: the store
        raise fail(str(exc)) from None


def latest_day(con: duckdb.DuckDBPyConnection) -> None:
    """Define latest_day(): the newest day the published tables hold (NULL before the first), read from the stored
    tables as the query starts. It is a constant to the planner, so `where snapshot_date = latest_day()` is pushed
    below cost_per_mtok's join and reads one day's prices; a date from a subquery (`= (select max(snapshot_date)
    from ...)`) is joined above the view's computed columns, so every day's rows are computed first (docs/warehouse.md)."""
    day = queries.latest_date(con)
    con.execute(f"create temp macro latest_day() as {'NULL::DATE' if day is None else repr(day.isoformat()) + '::DATE'}")


def confine(con: duckdb.DuckDBPyConnection) -> None:
    """Let the connection read the exports folder and nothing else outside the warehouse, install and load no
    extension, then lock its configuration (DuckDB's enable_external_access, allowed_directories,
    autoinstall/autoload_known_extensions, lock_configuration)."""
    readable = [str(config.exports_dir())] if config.exports_local() else []
    con.execute("set allowed_directories = ?", [readable])
    for setting in ("enable_external_access", "autoinstall_known_extensions", "autoload_known_extensions",
                    "allow_community_extensions"):
        con.execute(f"set {setting} = false")
    con.execute("set lock_configuration = true")


def sql(
    query: Annotated[str, typer.Argument(help="SQL to run; read-only statements only, reading the warehouse and "
                                               "the local exports folder.")],
    fmt: FormatOption = Format.table,
    lake_tables: Annotated[list[str] | None, typer.Option(
        "--lake", help="Read this table from the lake (repeatable) instead of the warehouse.")] = None,
    as_of: Annotated[str | None, typer.Option(
        "--as-of", help="With --lake: as published at VERSION (one table) or at a TIMESTAMP (ISO 8601, UTC unless "
                        "zoned).")] = None,
) -> None:
    """Run ad-hoc SQL on a read-only connection to the warehouse (--lake: on the lake's tables as published)."""
    read_only_statements(query)
    if as_of and not lake_tables:
        raise fail("--as-of reads the lake: name the tables with --lake")
    con = open_read_only()
    try:
        if lake_tables:
            lake_views(con, lake_tables, as_of)
        latest_day(con)
        confine(con)
        df = Rows.of(con.sql(query))
    except duckdb.Error as exc:
        raise fail(str(exc)) from None
    finally:
        con.close()
    render(df, fmt)
