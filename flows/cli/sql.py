"""`gpuledger sql`: ad-hoc SQL on a read-only connection to the warehouse."""

from typing import Annotated

import duckdb
import typer

from flows.cli.common import FormatOption, fail, open_read_only
from flows.cli.output import Format, Rows, render

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


def sql(
    query: Annotated[str, typer.Argument(help="SQL to run; read-only statements only.")],
    fmt: FormatOption = Format.table,
) -> None:
    """Run ad-hoc SQL on a read-only connection to the warehouse."""
    read_only_statements(query)
    con = open_read_only()
    try:
        df = Rows.of(con.sql(query))
    except duckdb.Error as exc:
        raise fail(str(exc)) from None
    finally:
        con.close()
    render(df, fmt)
