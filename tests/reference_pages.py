"""The reference pages' observed values, copied into tests/fixtures/reference: every value as the page shows it."""

from pathlib import Path

import polars as pl

REFERENCE = Path(__file__).parent / "fixtures" / "reference"


def observed(name: str) -> pl.DataFrame:
    """A reference table as the page displays it: every value a string."""
    return pl.read_csv(REFERENCE / f"{name}.csv", infer_schema=False)
