"""Render a frame for the terminal or for other programs: table, csv, json or markdown.

Everything written passes through terminal_text, the one place text is made safe for a terminal: provider text
with an escape sequence, NUL or a bidirectional override is shown escaped (\x1b, \u202e), never acted on
(json escapes them itself). CSV text is also spreadsheet-safe (warehouse/csv_safe.py).

Imported by every command, so it stays light: rich loads when a table is drawn for a terminal (a pipe or a file
gets the same table drawn directly, see _boxed) and polars only for a polars frame or for csv. The quick commands
(sql, status, gpus, models) hand it `Rows` fetched straight from DuckDB, which never load polars at all
(importing polars costs about half a second).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb
    import polars as pl

# DuckDB's numeric type names, right-aligned like polars' numeric dtypes
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
            "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL")
PIPE_WIDTH = 1000  # the width of a table written to a pipe or a file: wide enough that no cell wraps
# A text cell longer than this is prose (a "not deployable because" reason, a run's source statuses): when the
# table is too wide for the terminal it becomes a numbered note under the table instead of sizing its column.
NOTE_CHARS = 60
# Control characters but the newline (C0, DEL, C1) and the bidirectional controls: a terminal acts on them
# (moves the cursor, sets the window title, clears the screen, reorders the text that follows).
_UNSAFE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: str) -> str:
    """text with each character a terminal would act on written as its escape (\x1b, \x00, \u202e)."""
    return _UNSAFE.sub(lambda found: found[0].encode("unicode_escape").decode(), text)


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
    return terminal_text(str(value))


def _markdown(cell: str) -> str:
    """A markdown table cell: a pipe escaped, a line break as <br> (a newline would end the row)."""
    return cell.replace("|", "\\|").replace("\n", "<br>")


def _shape(df: pl.DataFrame | Rows) -> tuple[list[str], list[bool], Any]:
    if isinstance(df, Rows):
        return list(map(terminal_text, df.columns)), df.numeric, df.rows
    return list(map(terminal_text, df.columns)), [dtype.is_numeric() for dtype in df.schema.values()], df.iter_rows()


def _csv(df: pl.DataFrame) -> str:
    """The frame as spreadsheet-safe CSV, its text terminal-safe."""
    import polars as pl

    from warehouse import csv_safe

    # CSV has no nested values and no bytes: a list or struct is written as JSON, a blob as the table shows it
    df = df.with_columns(pl.Series(c, [None if v is None else str(v) if isinstance(v, bytes) else
                                       json.dumps(v, default=str) for v in df[c].to_list()], dtype=pl.String)
                         for c, dtype in df.schema.items() if dtype.is_nested() or dtype in (pl.Binary, pl.Object))
    text = [c for c, dtype in df.schema.items() if dtype == pl.String and df[c].str.contains(_UNSAFE.pattern).any()]
    shown = df.with_columns(pl.col(c).map_elements(terminal_text, return_dtype=pl.String) for c in text)
    return csv_safe.frame(shown).rename(terminal_text).write_csv()


def _finite(value: Any) -> Any:
    """The value with every infinite or NaN float (an unbounded p99 wait at the slot limit) as None: JSON has no
    Infinity or NaN, and a reader's parser refuses them."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def printed_json(data: Any) -> str:
    """`data` as the JSON every command writes: indented, values it cannot encode as text, and a float without a
    finite value (inf, NaN) as null, so the output is valid JSON (docs/commands.md)."""
    return json.dumps(_finite(data), default=str, indent=1, allow_nan=False) + "\n"


def render(df: pl.DataFrame | Rows, fmt: Format = Format.table, *, title: str | None = None,
           caption: str | None = None) -> None:
    """Write df to stdout; machine formats carry the data only, tables also the title and caption."""
    out = sys.stdout
    title, caption = title and terminal_text(title), caption and terminal_text(caption)
    if fmt is Format.csv:
        out.write(_csv(df.frame() if isinstance(df, Rows) else df))
    elif fmt is Format.json:
        out.write(printed_json(df.dicts() if isinstance(df, Rows) else df.to_dicts()))
    elif fmt is Format.markdown:
        columns, _, rows = _shape(df)
        if title:
            out.write(f"### {title}\n\n")
        out.write("| " + " | ".join(map(_markdown, columns)) + " |\n")
        out.write("|" + "---|" * len(columns) + "\n")
        for row in rows:
            out.write("| " + " | ".join(_markdown(_cell(v)) for v in row) + " |\n")
        if caption:
            out.write(f"\n{caption}\n")
    else:
        columns, numeric, rows = _shape(df)
        width = table_width()
        columns, numeric, cells, notes = _fit(columns, numeric, [[_cell(v) for v in row] for row in rows], width)
        footer = [*notes, caption] if caption else notes
        drawn = None if sys.stdout.isatty() else _boxed(columns, numeric, cells, width)
        if drawn is not None:
            out.write("".join(f"{line}\n" for line in (_wrap(title, width), drawn, *map(_wrap, footer, [width] * len(footer)))
                              if line))
            return
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        console = Console(width=width)  # rich wraps the cells that still do not fit, within their columns
        if title:
            console.print(Text(title, style="bold"))
        table = Table()
        for name, right in zip(columns, numeric, strict=True):
            table.add_column(Text(name), justify="right" if right else "left", overflow="fold")
        for row in cells:  # Text: a cell is data, never rich markup
            table.add_row(*map(Text, row))
        console.print(table)
        for line in footer:
            console.print(Text(line))


def table_width() -> int:
    """The columns a table may take: $COLUMNS when set, else the terminal's width, else (a pipe or a file)
    PIPE_WIDTH, wide enough that no cell wraps."""
    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    return shutil.get_terminal_size((PIPE_WIDTH, 0)).columns if sys.stdout.isatty() else PIPE_WIDTH


def _wrap(text: str | None, width: int) -> str | None:
    return text and "\n".join(textwrap.fill(line, width, break_on_hyphens=False) or line
                               for line in text.split("\n"))


def _drawn_width(cells_by_column: list[list[str]]) -> int:
    from rich.cells import cell_len

    return sum(max(map(cell_len, column)) + 3 for column in cells_by_column) + 1


def _fit(columns: list[str], numeric: list[bool], cells: list[list[str]],
         width: int) -> tuple[list[str], list[bool], list[list[str]], list[str]]:
    """The table made to fit `width` where it can, and the notes to print under it. In turn, while too wide: the
    prose (text cells over NOTE_CHARS) of the widest columns becomes numbered notes, one per distinct text
    ("[1] column: text"); then a column holding one value in every row becomes a note ("every row: column
    value"). Rich wraps what is still too wide."""
    by_column = [list(column) for column in zip(columns, *cells, strict=True)] if columns else []
    marks: dict[tuple[str, str], str] = {}
    longest = {i: max(len(row[i]) for row in cells) for i, right in enumerate(numeric) if not right and cells}
    for i in sorted((i for i, n in longest.items() if n > NOTE_CHARS), key=lambda i: -longest[i]):
        if _drawn_width(by_column) <= width:
            break
        by_column[i][1:] = [marks.setdefault((columns[i], text), f"[{len(marks) + 1}]") if len(text) > NOTE_CHARS
                            else text for text in by_column[i][1:]]
    notes = [f"{mark} {column}: {text}" for (column, text), mark in marks.items()]
    same = [i for i, column in enumerate(by_column) if len(cells) > 1 and len(set(column[1:])) == 1]
    if same and _drawn_width(by_column) > width:
        notes.append("every row: " + ", ".join(f"{by_column[i][0]} {by_column[i][1]}" for i in same))
        by_column = [column for i, column in enumerate(by_column) if i not in same]
        numeric = [right for i, right in enumerate(numeric) if i not in same]
    if not notes:
        return columns, numeric, cells, []
    fitted = [list(row) for row in zip(*(column[1:] for column in by_column), strict=True)]
    return [column[0] for column in by_column], numeric, fitted, notes


def _boxed(columns: list[str], numeric: list[bool], cells: list[list[str]], width: int = PIPE_WIDTH) -> str | None:
    """The table rich draws for a pipe or a file (heavy-headed box, a space either side of each cell, nothing
    wrapped), drawn directly: rich lays out every cell, 0.3 s for the GPU catalogue's 2,700. None when rich must
    lay it out: no columns, a cell of several lines or with control characters, a character rich draws in no cell
    of its own (a combining mark, a variation selector, an emoji modifier: rich joins it to its neighbour or drops
    it), or wider than `width`."""
    from rich.cells import cell_len, get_character_cell_size

    def plain(text: str) -> bool:
        return text.isprintable() and (text.isascii() or all(map(get_character_cell_size, text)))

    if not columns or not all(map(plain, (*columns, *(c for row in cells for c in row)))):
        return None
    widths = [max(cell_len(c) for c in column) for column in zip(columns, *cells, strict=True)]
    if sum(widths) + 3 * len(widths) + 1 > width:
        return None

    def pad(cell: str, width: int, right: bool) -> str:
        if not right:
            return cell + " " * (width - cell_len(cell))
        cell = cell.rstrip()  # rich sizes a column by its cells as given but drops a right-aligned cell's trailing spaces
        return " " * (width - cell_len(cell)) + cell

    def line(row: list[str], bar: str) -> str:
        padded = (pad(c, w, right) for c, w, right in zip(row, widths, numeric, strict=True))
        return f"{bar} " + f" {bar} ".join(padded) + f" {bar}"

    def rule(left: str, fill: str, cross: str, right: str) -> str:
        return left + cross.join(fill * (w + 2) for w in widths) + right

    return "\n".join([rule("┏", "━", "┳", "┓"), line(columns, "┃"), rule("┡", "━", "╇", "┩"),
                      *(line(row, "│") for row in cells), rule("└", "─", "┴", "┘")])
