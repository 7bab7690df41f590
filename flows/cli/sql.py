"""`gpuledger sql`: ad-hoc SQL on a read-only connection to the warehouse.

Read-only means no writes and no downloads: besides refusing every statement but a read, the connection may
reach no file but the warehouse and the local exports folder, no URL, and installs or loads no extension;
its configuration is then locked, so no statement (SET, PRAGMA, CALL enable_logging...) can undo that.
"""

from typing import Annotated

import duckdb
import typer

from flows.cli.common import FormatOption, fail, open_read_only
from flows.cli.output import Format, Rows, render
from warehouse import config

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
) -> None:
    """Run ad-hoc SQL on a read-only connection to the warehouse."""
    read_only_statements(query)
    con = open_read_only()
    try:
        confine(con)
        df = Rows.of(con.sql(query))
    except duckdb.Error as exc:
        raise fail(str(exc)) from None
    finally:
        con.close()
    render(df, fmt)
