"""`gpuledger table`: page 000's estimate cards and page 001's calculator, priced with a date's live listings."""

import re
from enum import StrEnum
from typing import Annotated

import polars as pl
import typer

from flows import views
from flows.cli.common import (
    MAX_TTFT_S,
    MIN_USER_TOK_S,
    PERCENTILE,
    STREAMS,
    TOKENS,
    FormatOption,
    Percentile,
    fail,
    gpu_names,
    open_read_only,
    parse_day,
    resolve_name,
    within,
)
from flows.cli.output import Format, printed_json, render
from transforms import api_prices, display, engines, estimator, fx, presets, speed, tables

SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "CNY": "¥", "JPY": "¥"}
HEADERS = {
    "rank": "#", "gpu": "GPU", "tp": "TP", "memory_used_pct": "memory", "agg_tok_s": "tok/s",
    "per_stream_tok_s": "per stream tok/s", "max_streams": "fills at (streams)", "replica_usd_per_hr": "per hour",
    "usd_per_mtok": "per M tokens", "usd_per_mtok_low": "per M low", "usd_per_mtok_high": "per M high",
    "usd_per_hr": "per hour", "power_kw": "power", "price_kind": "price",
    "replica_pricing": "replica priced as", "gpu_count": "GPUs", "idle_gpus": "idle", "usd_per_gpu_hr": "per GPU-hour",
    "usd_per_mtok_output": "per M out", "usd_per_mtok_input": "per M in", "usd_per_mtok_cache_read": "per M cached in",
    "not_deployable_reason": "not deployable because",
}
FLEET_GPUS_MAX = 10_000_000
PRICING_NOTE = ("priced: replicas someone could deploy, on one host (one_listing) or across a provider's cluster "
                "with a scale-out fabric (provider_cluster); a part whose listings hold no replica says why "
                "(docs/deployability.md)")


class Style(StrEnum):
    estimate = "estimate"
    calculator = "calculator"


def load_published(day: str | None) -> views.Day:
    """What the published day `--date` (YYYY-MM-DD; None: the latest) is built from, or the error saying why not."""
    when = parse_day(day, "--date")
    con = open_read_only()
    try:
        return views.load_day(con, when)
    except views.ViewError as exc:
        raise fail(str(exc)) from None
    finally:
        con.close()


def _currency(data: views.Day, code: str) -> tuple[float, str]:
    """Units of the currency per USD at the day's rate (or the latest before), and where it came from."""
    code = code.upper()
    if code == "USD":
        return 1.0, ""
    probe = fx.attach_usd_rate(pl.DataFrame({"c": [code], "d": [data.day]}), data.fx_rates, "c", "d").row(0, named=True)
    if probe["fx_rate"] is None:
        raise fail(f"no {code} rate on or before {data.day}: run `gpuledger fetch --source fx`")
    return probe["fx_rate"], f"{code} at {probe['fx_rate']:.4f} per USD ({probe['fx_source']}, {probe['fx_date']})"


def _convert(df: pl.DataFrame, rate: float, code: str) -> pl.DataFrame:
    """Money columns from USD into the currency; their names say which (usd_per_mtok -> eur_per_mtok)."""
    if code.upper() == "USD":
        return df
    money = [c for c in df.columns if "usd" in c]
    return df.with_columns(pl.col(money) * rate).rename({c: c.replace("usd", code.lower()) for c in money})


def _money(code: str, value: float | None, decimals: int = 2) -> str:
    if value is None:
        return display.MISSING
    symbol = SYMBOLS.get(code.upper(), f"{code.upper()} ")
    return f"{symbol}{value:,.{decimals}f}"


def _span(code: str, low, high, decimals: int = 0) -> str:
    if low is None:
        return "n/a"
    one = _money(code, low, decimals)
    return one if high is None or round(high, decimals) == round(low, decimals) else f"{one}–{_money(code, high, decimals)}"


def _parse_fleet(text: str, names: dict[str, str]) -> tuple[str, int]:
    match = re.fullmatch(r"\s*([\d,_]+)\s*[x×]\s*(.+?)\s*", text)
    count = int(match[1].replace(",", "").replace("_", "") or 0) if match else 0
    if not match or not 1 <= count <= FLEET_GPUS_MAX:
        raise fail(f"--fleet {text!r}: write it as COUNTxGPU with 1 to {FLEET_GPUS_MAX:,} GPUs, e.g. '1000xH200 SXM'")
    return resolve_name(match[2], names, "GPU"), count


def _estimate_style(data: views.Day, model: str, method: str, wanted: list[str], precision, context, streams, code,
                    rate, engine: str | None = None):
    try:
        view = views.estimate_cards(data, model, method, wanted, precision, context, streams, engine)
    except views.ViewError as exc:
        raise fail(str(exc)) from None
    view = _convert(view, rate, code)
    m = code.lower()
    labelled = view.with_columns(
        pl.struct(f"list_{m}_low", f"list_{m}_high").map_elements(
            lambda r: _span(code, r[f"list_{m}_low"], r[f"list_{m}_high"]), return_dtype=pl.String).alias("list_price"),
        pl.struct(f"market_{m}_low", f"market_{m}_high").map_elements(
            lambda r: _span(code, r[f"market_{m}_low"], r[f"market_{m}_high"]), return_dtype=pl.String
        ).alias("market_price"),
        pl.struct("gpus", f"rental_min_{m}_per_hr", f"rental_max_{m}_per_hr", "rental_date")
        .map_elements(lambda r: _rental_label(code, r, m), return_dtype=pl.String).alias("cloud_rental_live"),
        pl.col(f"{m}_per_mtok").map_elements(lambda v: _money(code, v), return_dtype=pl.String).alias("per_mtok"),
        *(pl.col(c).map_elements(display.integer_label, return_dtype=pl.String)
          for c in ("decode_tok_s", "batched_out_tok_s", "batched_in_tok_s")),
        pl.col("precision").replace_strict(display.PAGE_000_PRECISION, default=pl.col("precision")),
    ).select(
        pl.col("gpu").alias("GPU"), pl.col("memory_gb").alias("GB"), pl.col("bandwidth_gbs").alias("GB/s"),
        "precision", pl.col("gpus").alias("GPUs"), pl.col("decode_tok_s").alias("decode tok/s"),
        pl.col("batched_out_tok_s").alias("out tok/s"), pl.col("batched_in_tok_s").alias("in tok/s"),
        pl.col("list_price").alias("list price"), pl.col("market_price").alias("market price"),
        pl.col("cloud_rental_live").alias("cloud rental (live)"), pl.col("rental_providers").alias("rented from"),
        pl.col("per_mtok").alias("per M tokens"),
        pl.col("not_deployable_reason").fill_null("").alias("not deployable because"),
        pl.when(pl.col("uncertain")).then(pl.lit("yes")).otherwise(pl.lit("")).alias("uncertain spec"),
    )
    return view, labelled


def _rental_label(code: str, r: dict, m: str) -> str:
    if r[f"rental_min_{m}_per_hr"] is None:
        return display.MISSING
    span = _span(code, r[f"rental_min_{m}_per_hr"], r[f"rental_max_{m}_per_hr"], 2)
    return f"×{r['gpus']}: {span}/hr ({r['rental_date']})"


def _calculator_style(data: views.Day, model: str, method: str, wanted, precision, context, streams, price_kind, code,
                      rate, fleets: list[tuple[str, int]], target_tok_s: float | None, engine: str | None = None):
    try:
        view = views.calculator(data, model, wanted, [(precision, context, streams)], price_kind, method, engine)[
            (precision, context, streams)]
    except views.ViewError as exc:
        raise fail(str(exc)) from None
    est, table, cards = view.estimates, view.table, view.cards
    per_gpu = tables.priced(est, view.replicas).select("gpu", "usd_per_gpu_hr").drop_nulls()
    extras = {}
    if fleets:
        fleet_frame = pl.DataFrame(fleets, schema={"gpu": pl.String, "gpu_count": pl.Int64}, orient="row")
        extras["Fleet what-if"] = estimator.fleet_whatif(est, fleet_frame, per_gpu, data.gpus)
    if target_tok_s:
        fits = est.filter(pl.col("tp").is_not_null() & ~pl.col("multi_node"))
        sized = estimator.size_for_target(fits, target_tok_s, per_gpu, data.gpus)
        extras[f"Size for {target_tok_s:,.0f} tok/s"] = sized.sort(pl.col("usd_per_hr").is_null(), "usd_per_hr")
    api = data.api.filter(pl.col("model") == model).select(
        "api_provider", "api_model_id", "price_kind", "usd_per_mtok_output", "usd_per_mtok_input",
        "usd_per_mtok_cache_read", "context_length", "fetched_at")
    frames = {name: _convert(frame, rate, code) for name, frame in
              {"table": table, "Cards": cards, **({"API": api} if api.height else {}), **extras}.items()}
    return frames, views.request(est), view.note


def _labelled_calculator(frames: dict[str, pl.DataFrame], code: str) -> dict[str, pl.DataFrame]:
    """Page 001's display: x.yk tokens/s with ~ for estimated FP4, money with its symbol, whole percents."""
    out = {}
    for name, frame in frames.items():
        exprs = []
        for column in frame.columns:
            if column.endswith("tok_s"):
                approx = pl.col("fp4_estimated") if "fp4_estimated" in frame.columns else pl.lit(False)
                exprs.append(pl.struct(column, approx.alias("_a")).map_elements(
                    lambda r, c=column: display.compact_label(r[c], approx=bool(r["_a"])), return_dtype=pl.String
                ).alias(column))
            elif code.lower() in column:
                exprs.append(pl.col(column).map_elements(lambda v: _money(code, v), return_dtype=pl.String))
            elif column == "memory_used_pct":
                exprs.append(pl.col(column).map_elements(display.pct_label, return_dtype=pl.String))
            elif column == "power_kw":
                exprs.append(pl.col(column).map_elements(display.kw_label, return_dtype=pl.String))
        shown = frame.with_columns(exprs).drop("fp4_estimated", "offer_ids", "price_observed_at", strict=False)
        if "uncertain" in shown.columns:
            shown = shown.with_columns(pl.when(pl.col("uncertain")).then(pl.lit("yes")).otherwise(pl.lit("")).alias("uncertain"))
        out[name] = shown.rename(lambda c: HEADERS.get(c.replace(code.lower(), "usd"), c))
    return out


def table(
    model: Annotated[str, typer.Option(help="Model id (see `gpuledger models`).")],
    style: Annotated[Style, typer.Option(help="estimate: a card per GPU (suggested precision, GPUs needed, decode, batched out and in, "
                                                  "hardware and live rental prices); calculator: every part the model "
                                                  "fits on, ranked by $/M, with the cheapest-option cards.")] = Style.calculator,
    method: Annotated[str | None, typer.Option(help="Estimator for tokens/s and $/M: measured (the serving model "
                                               "fitted to benchmark throughput, with a band; the default), calculator "
                                               "(the per-step calculator), ceiling (the bandwidth ceiling).")] = None,
    engine: Annotated[str | None, typer.Option(help="Serving engine the measured method models: trtllm (TensorRT-LLM, "
                                               "the default), sglang or vllm.")] = None,
    day: Annotated[str | None, typer.Option("--date", help="Prices of this date (YYYY-MM-DD); default the latest.")] = None,
    gpu: Annotated[list[str] | None, typer.Option(help="Only these GPUs (repeatable): name, unique prefix or short label "
                                                                "(e.g. 'H200 141GB').")] = None,
    precision: Annotated[str | None, typer.Option(help="bf16, fp8, int8, int4; default: calculator int4; estimate the method's "
                                                      "rule (ceiling: the highest that fits 8 GPUs, else the model's native).")] = None,
    context: Annotated[int, typer.Option(help="Tokens of context per stream.", **TOKENS)] = presets.DEFAULT_CONTEXT_TOKENS,
    streams: Annotated[int, typer.Option(help="Concurrent streams per replica.", **STREAMS)] = presets.DEFAULT_STREAMS,
    price_kind: Annotated[str, typer.Option(help="on_demand, interruptible, reserved, ...")] = "on_demand",
    fleet: Annotated[list[str] | None, typer.Option(help="Fleet what-if, e.g. '1000xH200 SXM' (calculator; repeatable).")] = None,
    target_tok_s: Annotated[float | None, typer.Option(callback=within(0, 1e12, above=True),
                                                       help="Size every GPU for this many tokens/s (calculator).")] = None,
    currency: Annotated[str, typer.Option(help="Show money in this currency, at the date's rate.")] = "USD",
    min_user_tok_s: Annotated[float | None, MIN_USER_TOK_S] = None,
    max_ttft_s: Annotated[float | None, MAX_TTFT_S] = None,
    percentile: Annotated[Percentile, PERCENTILE] = Percentile.mean,
    fmt: FormatOption = Format.table,
) -> None:
    """A dated cost table for one model: a card per GPU (estimate) or every part ranked by $/M (calculator), with
    live prices."""
    data = load_published(day)
    model_id = resolve_name(model, {m.lower(): m for m in data.models["model_id"]}, "model")
    names = gpu_names(data.gpus)
    wanted = [resolve_name(g, names, "GPU") for g in gpu or []]
    rate, fx_note = _currency(data, currency)
    api_note = api_prices.api_line(data.api, model_id, rate=rate, symbol=SYMBOLS.get(currency.upper(), f"{currency.upper()} "))
    providers = ", ".join(sorted(data.offers["provider"].unique().to_list())) or "no listings"
    header = (f"{model_id}, {style.value} view; live prices of {data.day} ({providers}); "
              f"quality {data.quality or 'unknown'}")
    method = method or presets.DEFAULT_COST_METHOD
    if method not in presets.PRESETS:
        raise fail(f"unknown method {method!r}: use one of {', '.join(presets.PRESETS)}")
    try:  # as estimate checks it: a name of engines.ENGINES, for the measured method only
        engine = engines.for_engine(presets.preset(method), engine).engine if engine else None
    except engines.EngineError as exc:
        raise fail(str(exc)) from None
    target = speed.Target(min_user_tok_s, max_ttft_s, percentile.value)
    if not target.none:
        if style is not Style.calculator or method != presets.MEASURED.name or fleet or target_tok_s:
            raise fail("a speed target (--min-user-tok-s, --max-ttft-s) is the measured method's, in the calculator "
                       "view, without --fleet or --target-tok-s")
        _at_target(data, model_id, wanted, precision or "int4", context, target, price_kind, currency, rate, fmt,
                   header, [n for n in (api_note, fx_note, PRICING_NOTE, _method_note(method, engine)) if n], engine)
        return
    if style is Style.estimate:
        raw, labelled = _estimate_style(data, model_id, method, wanted, precision, context, streams, currency, rate,
                                        engine)
        notes = [n for n in (api_note, fx_note, f"hardware prices converted from CNY at the rate of {data.day} or the latest before it",
                             _method_note(method, engine)) if n]
        _emit({"table": raw}, {"table": labelled}, fmt, header, notes)
        return
    frames, asked, missing = _calculator_style(data, model_id, method, wanted, precision or "int4", context, streams,
                                               price_kind, currency, rate, [_parse_fleet(f, names) for f in fleet or []],
                                               target_tok_s, engine)
    requests = (f" (requests of {asked['input_tokens']:,} in + {asked['output_tokens']:,} out, prefill included)"
                if asked else "")
    settings = f"{(precision or 'int4').upper()}, {context:,} tokens{requests}, {streams} streams, {price_kind} prices"
    notes = [n for n in (missing and f"{missing} ({data.day})", api_note, fx_note, PRICING_NOTE,
                         _method_note(method, engine)) if n]
    _emit(frames, _labelled_calculator(frames, currency), fmt, f"{header}; {settings}", notes)


def _at_target(data: views.Day, model: str, wanted: list[str], precision: str, context: int, target: speed.Target,
               price_kind: str, code: str, rate: float, fmt: Format, header: str, notes: list[str],
               engine: str | None) -> None:
    """The calculator view at a speed target, served by `engine` (None: the default): the parts that reach it
    priced, the others with their best."""
    try:
        answers, table, unreached = views.calculator_at_target(data, model, wanted, precision, context, target,
                                                               price_kind, engine=engine)
    except views.ViewError as exc:
        raise fail(str(exc)) from None
    frames = {"table": _convert(table, rate, code)}
    if unreached.height:
        frames["Cannot reach the target (best at one stream, not priced)"] = unreached
    promise = target.text
    asked = views.request(answers)
    requests = f" (requests of {asked['input_tokens']:,} in + {asked['output_tokens']:,} out)" if asked else ""
    held = ("user_tok_s and ttft_s are means" if target.percentile == "mean" else
            "user_tok_s_p99 and ttft_p99_s, the 99th percentiles under random arrivals, keep the promise (user_tok_s "
            "and ttft_s: the means)")
    notes = [*notes, f"{held}; streams: the most that keep the promise (stopped_by: target, memory or the engine's "
             "batch limit)"]
    _emit(frames, _labelled_calculator(frames, code), fmt,
          f"{header}; {precision.upper()}, {context:,} tokens{requests} at {promise}, {price_kind} prices", notes)


def _method_note(method: str, engine: str | None = None) -> str:
    """The method priced and, for the measured method, the serving engine it models (stated even at the default)."""
    what = {
        "measured": "the measured serving model, fitted to benchmark throughput; $/M low-high is its p10-p90 band "
                    "on benchmarks the fit did not see (docs/calibration.md)",
        "calculator": "the per-step calculator, a roofline per decode step over concurrent streams (a bandwidth and "
                      "compute ceiling, not a price)",
        "ceiling": "the bandwidth ceiling, one stream's memory-bound limit with rules of thumb for batching and "
                   "prefill (not a price)",
    }[method]
    served = presets.preset(method).serving_model
    on = f", serving engine {engines.ENGINES[engines.engine_name(engine or engines.DEFAULT_ENGINE)]}" if served else ""
    return f"estimator: {method} {estimator.ESTIMATOR_VERSION}{on}: {what}"


def _emit(raw: dict[str, pl.DataFrame], labelled: dict[str, pl.DataFrame], fmt: Format, header: str,
          notes: list[str]) -> None:
    """Machine formats get the raw numbers (csv: the main table only); table and markdown get the page's labels."""
    if fmt is Format.csv:
        render(raw["table"], fmt)
        return
    if fmt is Format.json:
        import sys

        sys.stdout.write(printed_json({"title": header, "notes": notes} | {k: v.to_dicts() for k, v in raw.items()}))
        return
    for name, frame in labelled.items():
        render(frame, fmt, title=header if name == "table" else name,
               caption="\n".join(notes) if name == "table" else None)
