"""Spreadsheet-safe CSV text, for every CSV gpuledger writes (exports and `--format csv`).

A spreadsheet runs a cell that starts with =, +, -, @, a tab or a carriage return as a formula: provider text
such as `=HYPERLINK("http://…","click")` in a GPU name, a region or an offer id would become a live formula in
the reader's sheet. Such a text cell is written with a leading apostrophe, as spreadsheet-safe exporters do
(OWASP: CSV injection); a text that is a plain number (`-5`, `+1.5e3`) cannot be a formula and is left alone,
and numeric columns are never touched. Parquet keeps the raw text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

FORMULA_START = r"^[=+\-@\t\r]"
PLAIN_NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"
ESCAPE = "'"


def frame(df: pl.DataFrame) -> pl.DataFrame:
    """df with every text cell a spreadsheet would run as a formula escaped; other cells unchanged."""
    import polars as pl

    text = [name for name, dtype in df.schema.items() if dtype == pl.String]
    if not text:
        return df
    return df.with_columns(
        pl.when(pl.col(name).str.contains(FORMULA_START) & ~pl.col(name).str.contains(PLAIN_NUMBER))
        .then(ESCAPE + pl.col(name)).otherwise(pl.col(name)).alias(name)
        for name in text
    )
