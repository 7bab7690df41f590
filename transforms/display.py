"""How the reference pages display numbers, for the CLI and the tests: page 000 whole numbers, page 001 x.yk."""

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

import polars as pl

from transforms.presets import Params

PAGE_000_PRECISION = {"bf16": "FP16", "int8": "INT8", "int4": "INT4", "fp8": "FP8"}
MISSING = "—"


def round_half(value: float, decimals: int = 0, mode: str = "half_even") -> float:
    """Round like the pages: ties to even (or up); float noise below 1e-6 never decides a tie."""
    settled = Decimal(repr(round(value, 6)))
    rounding = ROUND_HALF_EVEN if mode == "half_even" else ROUND_HALF_UP
    return float(settled.quantize(Decimal(1).scaleb(-decimals), rounding=rounding))


def integer_label(value: float | None, mode: str = "half_even", approx: bool = False) -> str:
    """Page 000: a whole number with thousands separators (32142.5 -> '32,142'); '~' if estimated."""
    return MISSING if value is None else ("~" if approx else "") + f"{round_half(value, 0, mode):,.0f}"


def compact_label(value: float | None, mode: str = "half_even", approx: bool = False) -> str:
    """Page 001: '411k' from 100k, 'x.yk' from 1000, a whole number from 100, else one decimal; '~' if estimated."""
    if value is None:
        return MISSING
    if round_half(value / 1000, 0, mode) >= 100:
        text = f"{round_half(value / 1000, 0, mode):.0f}k"
    elif round_half(value, 0, mode) >= 1000:
        text = f"{round_half(value / 1000, 1, mode):.1f}k"
    elif round_half(value, 1, mode) >= 100:
        text = f"{round_half(value, 0, mode):.0f}"
    else:
        text = f"{round_half(value, 1, mode):.1f}"
    return ("~" if approx else "") + text


def usd_label(value: float | None, mode: str = "half_even") -> str:
    """'$2,480' from $1000, else cents: '$12.42'."""
    if value is None:
        return MISSING
    return f"${round_half(value, 0, mode):,.0f}" if value >= 1000 else f"${round_half(value, 2, mode):.2f}"


def kw_label(value: float | None, mode: str = "half_even") -> str:
    return MISSING if value is None else f"{compact_label(value, mode)} kW"


def pct_label(value: float | None, mode: str = "half_even") -> str:
    return MISSING if value is None else f"{round_half(value, 0, mode):.0f}%"


def labels(estimates: pl.DataFrame, params: Params) -> pl.DataFrame:
    """The estimate columns as a page shows them (the preset's display style and rounding), for tables."""
    mode = params.rounding
    number = integer_label if params.display == "integer" else compact_label
    approx = estimates["fp4_estimated"].to_list()

    def text(column: str, fmt) -> pl.Series:
        values = estimates[column].to_list()
        return pl.Series(column, [fmt(v, a) for v, a in zip(values, approx, strict=True)], dtype=pl.String)

    return estimates.with_columns(
        text("memory_used_pct", lambda v, _: pct_label(v, mode)),
        *(text(c, lambda v, _: number(v, mode)) for c in ("single_stream_tok_s", "per_stream_tok_s", "prefill_tok_s")),
        text("agg_tok_s", lambda v, a: number(v, mode, a)),
        text("power_kw", lambda v, _: kw_label(v, mode)),
    )


SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float | None]) -> str:
    """One bar per value, scaled from the series' low to its high; a missing value (a day without data) is a
    blank, so a gap shows as a gap."""
    present = [v for v in values if v is not None]
    if not present:
        return " " * len(values)
    low, span = min(present), max(present) - min(present)
    top = len(SPARKS) - 1
    return "".join(" " if v is None else SPARKS[round((v - low) / span * top) if span else top // 2] for v in values)
