"""Render a polars frame for the terminal or for other programs: table, csv, json or markdown."""

import json
import sys
from enum import StrEnum

import polars as pl
from rich.console import Console
from rich.table import Table


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def render(df: pl.DataFrame, fmt: Format = Format.table, *, title: str | None = None, caption: str | None = None) -> None:
    """Write df to stdout; machine formats carry the data only, tables also the title and caption."""
    out = sys.stdout
    if fmt is Format.csv:
        out.write(df.write_csv())
    elif fmt is Format.json:
        out.write(json.dumps(df.to_dicts(), default=str, indent=1) + "\n")
    elif fmt is Format.markdown:
        if title:
            out.write(f"### {title}\n\n")
        out.write("| " + " | ".join(df.columns) + " |\n")
        out.write("|" + "---|" * len(df.columns) + "\n")
        for row in df.iter_rows():
            out.write("| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |\n")
        if caption:
            out.write(f"\n{caption}\n")
    else:
        probe = Console()
        console = probe if probe.is_terminal else Console(width=1000)  # a pipe or a file: never wrap cells
        if title:
            console.print(f"[bold]{title}[/bold]", highlight=False, soft_wrap=True)
        table = Table()
        for name, dtype in df.schema.items():
            table.add_column(name, justify="right" if dtype.is_numeric() else "left", overflow="fold")
        for row in df.iter_rows():
            table.add_row(*(_cell(v) for v in row))
        console.print(table)
        if caption:
            console.print(caption, highlight=False, soft_wrap=True)
