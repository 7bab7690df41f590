"""Render a frame for the terminal or for other programs: table, csv, json or markdown.

Imported by every command, so it stays light: rich loads when a table is drawn and polars only for a polars
frame or for csv. The quick commands (sql, status, gpus, models) hand it `Rows` fetched straight from DuckDB,
which never load polars at all (importing polars costs about half a second).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb
    import polars as pl

# DuckDB's numeric type names, right-aligned like polars' numeric dtypes
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
            "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL")


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


@dataclass(frozen=True)
class Rows:
    """A query result as plain Python rows: what the quick commands render without polars."""

    columns: list[str]
    numeric: list[bool]
    rows: list[tuple]

    @classmethod
    def of(cls, relation: duckdb.DuckDBPyRelation | None) -> Rows:
        if relation is None:  # a statement without a result (PRAGMA, CALL of a procedure)
            return cls([], [], [])
        numeric = [str(t).split("(")[0] in _NUMERIC for t in relation.types]
        return cls(list(relation.columns), numeric, relation.fetchall())

    @property
    def height(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> list:
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def frame(self) -> pl.DataFrame:
        import polars as pl

        return pl.DataFrame({c: self.column(c) for c in self.columns}, strict=False)


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _shape(df: pl.DataFrame | Rows) -> tuple[list[str], list[bool], Any]:
    if isinstance(df, Rows):
        return df.columns, df.numeric, df.rows
    return df.columns, [dtype.is_numeric() for dtype in df.schema.values()], df.iter_rows()


def render(df: pl.DataFrame | Rows, fmt: Format = Format.table, *, title: str | None = None,
           caption: str | None = None) -> None:
    """Write df to stdout; machine formats carry the data only, tables also the title and caption."""
    out = sys.stdout
    if fmt is Format.csv:
        out.write((df.frame() if isinstance(df, Rows) else df).write_csv())
    elif fmt is Format.json:
        out.write(json.dumps(df.dicts() if isinstance(df, Rows) else df.to_dicts(), default=str, indent=1) + "\n")
    elif fmt is Format.markdown:
        columns, _, rows = _shape(df)
        if title:
            out.write(f"### {title}\n\n")
        out.write("| " + " | ".join(columns) + " |\n")
        out.write("|" + "---|" * len(columns) + "\n")
        for row in rows:
            out.write("| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |\n")
        if caption:
            out.write(f"\n{caption}\n")
    else:
        from rich.console import Console
        from rich.table import Table

        probe = Console()
        console = probe if probe.is_terminal else Console(width=1000)  # a pipe or a file: never wrap cells
        if title:
            console.print(f"[bold]{title}[/bold]", highlight=False, soft_wrap=True)
        columns, numeric, rows = _shape(df)
        table = Table()
        for name, right in zip(columns, numeric, strict=True):
            table.add_column(name, justify="right" if right else "left", overflow="fold")
        for row in rows:
            table.add_row(*(_cell(v) for v in row))
        console.print(table)
        if caption:
            console.print(caption, highlight=False, soft_wrap=True)
