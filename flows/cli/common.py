"""What every command shares: the error channel, the read-only warehouse connection, the format option.

Imported by every command, so only light modules load here (see flows/cli.py on start-up time).
"""

from __future__ import annotations

import difflib
import math
from datetime import date
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Annotated

import duckdb
import typer

from flows.cli.output import Format, terminal_text
from warehouse import config, db

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console

FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
# The ranges of the numeric options the commands share (typer.Option(..., **TOKENS)): out of range is click's
# clear error naming the option, never a plausible-looking number.
TOKENS = {"min": 1, "max": 10_000_000}  # tokens of context, prompt or answer
STREAMS = {"min": 1, "max": 100_000}
GPUS = {"min": 1, "max": 4096}


def within(low: float, high: float, *, above: bool = False):
    """A float option's callback: a finite number from low (above it when `above`) to high. NaN and infinity,
    which pass click's own range checks, are refused too."""
    def check(value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and (value > low if above else value >= low)
                                      and value <= high):
            raise typer.BadParameter(f"{value:g} is not {'above' if above else 'at least'} {low:g} and at most {high:g}")
        return value
    return check


# A speed target (estimate, table): what each user is promised; the answer runs the most streams that keep it.
MIN_USER_TOK_S = typer.Option("--min-user-tok-s", callback=within(0, 1e6, above=True),
                              help="Measured method: each user decodes at least this many tokens/s (a mean); the "
                                   "answer runs the most streams, on the replica up to a node with the most "
                                   "tokens/s per GPU, that keep it and --max-ttft-s.")
MAX_TTFT_S = typer.Option("--max-ttft-s", callback=within(0, 1e6, above=True),
                          help="Measured method: the mean time to the first token is at most this many seconds.")


class Percentile(StrEnum):
    """What a speed target's limits are judged at (transforms/speed.py's PERCENTILES)."""

    mean = "mean"
    p99 = "p99"


PERCENTILE = typer.Option(
    help="What --min-user-tok-s and --max-ttft-s hold: the means (user_tok_s, ttft_s) or the 99th percentiles "
         "(user_tok_s_p99, ttft_p99_s), as MLPerf and most service promises judge a limit.")
DAYS = {"min": 1, "max": 36_500}


@cache
def err() -> Console:
    """The stderr console (rich loads on the first message)."""
    from rich.console import Console

    return Console(stderr=True)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print the message on stderr, as text (never markup, never a terminal escape); the caller raises the
    returned Exit."""
    from rich.markup import escape

    err().print(f"[red]error:[/red] {escape(terminal_text(message))}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def open_read_only() -> duckdb.DuckDBPyConnection:
    try:
        return db.connect(read_only=True)
    except (db.WarehouseError, duckdb.Error) as exc:
        raise fail(str(exc)) from None


def parse_day(text: str | None, option: str) -> date | None:
    """A YYYY-MM-DD option's date (None when not given); a clear error naming the option otherwise."""
    try:
        day = date.fromisoformat(text) if text else None
    except ValueError:
        raise fail(f"{option} {text!r} is not YYYY-MM-DD") from None
    try:
        return day and config.check_day(day, option)
    except ValueError as exc:
        raise fail(str(exc)) from None


def resolve_name(name: str, names: dict[str, str], what: str) -> str:
    """The canonical name for a user's spelling (any case, or a unique prefix; GPUs also by a page's label)."""
    key = name.strip().lower()
    if key in names:
        return names[key]
    prefixed = {canonical for spelling, canonical in names.items() if spelling.startswith(key)}
    if len(prefixed) == 1:
        return prefixed.pop()
    similar = [names[c] for c in difflib.get_close_matches(key, list(names), n=4, cutoff=0.5)]
    close = list(dict.fromkeys([*sorted(prefixed), *similar]))  # prefix matches, then the most similar first
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise fail(f"unknown {what} {name!r}{hint}")


def gpu_names(gpus: pl.DataFrame) -> dict[str, str]:
    """Every spelling a user may type for a GPU (canonical name, either page's label), lower-cased."""
    names = {}
    for label in ("label_001", "label_000", "name"):  # canonical names win over labels
        names |= {k.lower(): v for k, v in zip(gpus[label], gpus["name"], strict=True) if k}
    return names
