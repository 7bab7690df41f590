"""What every command shares: the error channel, the read-only warehouse connection, the format option."""

from typing import Annotated

import duckdb
import typer
from rich.console import Console

from flows.output import Format
from warehouse import db

err = Console(stderr=True)
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print the message on stderr; the caller raises the returned Exit."""
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def open_read_only() -> duckdb.DuckDBPyConnection:
    try:
        return db.connect(read_only=True)
    except (db.WarehouseError, duckdb.Error) as exc:
        raise fail(str(exc)) from None
