"""`gpuledger estimate`: roofline estimates for one model on every (or the named) GPU, or one GPU's curve."""

from typing import Annotated

import duckdb
import polars as pl
import typer

from flows.cli.common import (
    GPUS,
    MAX_TTFT_S,
    MIN_USER_TOK_S,
    PERCENTILE,
    STREAMS,
    TOKENS,
    Percentile,
    fail,
    gpu_names,
    open_read_only,
    resolve_name,
)
from flows.cli.output import Format, render
from transforms import display, engines, estimator, presets, speed

LEAD_COLUMNS = (
    "gpu", "precision", "tp", "memory_used_pct", "single_stream_tok_s", "per_stream_tok_s", "agg_tok_s",
    "prefill_tok_s", "power_kw", "max_streams",
)
TAIL_COLUMNS = (
    "agg_tok_s_low", "agg_tok_s_high", "multi_node", "bound", "uncertain", "fp4_estimated", "context_tokens", "input_tokens", "output_tokens", "streams",
    "method", "engine", "estimator_version",
)
TARGET_COLUMNS = ("reaches", "stopped_by")
SPEED_NOTE = ("user_tok_s: the mean decode tokens/s each user sees (other requests' prefills included); ttft_s: the "
              "mean seconds to the first token (the wait for the running step, then the prompt's prefill pass). "
              "user_tok_s_p99, ttft_p99_s: the 99th percentiles under requests arriving at random (Poisson): the "
              "speed 99 % of users reach or beat, the first-token time 99 % wait no longer (queued prefills and a "
              "wait for a free slot included).")


BAND_NOTE = ("agg_tok_s_low/high: the measured method's band, the p10-p90 of estimate/measured on benchmarks the "
             "fit did not see (docs/calibration.md).")


def _read_catalogues() -> dict[str, pl.DataFrame]:
    con = open_read_only()
    try:
        return {name: con.sql(f"select * from {name}").pl() for name in ("models", "gpus", "gpu_overlays")}
    except duckdb.Error as exc:
        raise fail(str(exc)) from None
    finally:
        con.close()


def _lengths(params: presets.Params, prompt: int | None, answer: int | None) -> dict[str, pl.Expr]:
    """The request of the measured method as given; the estimator fills in what is not (see Params.input_per_output)."""
    if not params.serving_model:
        if prompt is not None or answer is not None:
            raise fail(f"--input-tokens/--output-tokens describe requests of the measured method, not {params.name}")
        return {}
    return {"input_tokens": pl.lit(prompt, dtype=pl.Int64), "output_tokens": pl.lit(answer, dtype=pl.Int64)}


def _request(out: pl.DataFrame) -> str:
    if out.is_empty() or out["input_tokens"][0] is None:
        return f"{out['context_tokens'][0] if not out.is_empty() else 0:,} tokens"
    return f"{out['input_tokens'][0]:,} in + {out['output_tokens'][0]:,} out tokens"


def _rounded(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(pl.col(pl.Float64).round(4))


def _request_tokens(context: int | None, prompt: int | None, answer: int | None) -> int:
    """The tokens of one request: its prompt plus its answer when both are given (a --context beside them must
    agree), else --context (default the preset's)."""
    if prompt is not None and answer is not None:
        if context is not None and context != prompt + answer:
            raise fail(f"--context {context:,} disagrees with --input-tokens {prompt:,} + --output-tokens {answer:,} "
                       f"= {prompt + answer:,}: give the lengths, or the context")
        return prompt + answer
    return presets.DEFAULT_CONTEXT_TOKENS if context is None else context


def _check_context(models: pl.DataFrame, model_id: str, tokens: int) -> None:
    """A request longer than the model's context is refused: the estimate would describe a model that does not exist."""
    context_max = models.filter(pl.col("model_id") == model_id)["context_max"][0]
    if context_max is not None and tokens > context_max:
        raise fail(f"a request of {tokens:,} tokens is longer than {model_id}'s context of {context_max:,} tokens "
                   "(context_max)")


def estimate(
    model: Annotated[str | None, typer.Option(help="Model id (see `gpuledger models`); required but with --params.")] = None,
    method: Annotated[str, typer.Option(help="measured (the serving model fitted to benchmark "
                                              "throughput), calculator (the per-step calculator) or ceiling (the "
                                              "bandwidth ceiling).")] = "measured",
    gpu: Annotated[list[str] | None, typer.Option(help="GPU by name, unique prefix or short label (e.g. 'H200 141GB'); "
                                                             "repeat for several (default: all).")] = None,
    precision: Annotated[str | None, typer.Option(help="bf16, fp8, int8 or int4 (fp4); default: the preset's rule.")] = None,
    context: Annotated[int | None, typer.Option(**TOKENS,
        help=f"Tokens of context per stream (default {presets.DEFAULT_CONTEXT_TOKENS:,}, or --input-tokens + "
             "--output-tokens when both are given).")] = None,
    streams: Annotated[int | None, typer.Option(**STREAMS,
        help=f"Concurrent streams per replica (default {presets.DEFAULT_STREAMS}; with --curve, the last point: "
             "default where memory fills).")] = None,
    max_load: Annotated[bool, typer.Option(
        "--max-load", help="Measured method: as many streams as memory and the engine's batch limit allow (instead of "
                           "--streams), with data-parallel attention for an MLA mixture of experts on a group.")] = False,
    tp: Annotated[int | None, typer.Option(help="GPUs per replica (default: the smallest power of two that holds it); "
                                                "parts this TP cannot hold are left out, or refused when named.",
                                           **GPUS)] = None,
    input_tokens: Annotated[int | None, typer.Option(**TOKENS,
        help="Prompt tokens per request (measured; default: the context less the answer, or the context split at input_per_output, 3:1).")] = None,
    output_tokens: Annotated[int | None, typer.Option(**TOKENS,
        help="Answer tokens per request (measured; default: the context less the prompt, or its share at input_per_output).")] = None,
    engine: Annotated[str | None, typer.Option(help="Serving engine the measured method models: trtllm (TensorRT-LLM, "
                                               "the default), sglang or vllm.")] = None,
    assignments: Annotated[list[str] | None, typer.Option("--set", help="Override a parameter: NAME=VALUE (repeat).")] = None,
    min_user_tok_s: Annotated[float | None, MIN_USER_TOK_S] = None,
    max_ttft_s: Annotated[float | None, MAX_TTFT_S] = None,
    percentile: Annotated[Percentile, PERCENTILE] = Percentile.mean,
    show_curve: Annotated[bool, typer.Option("--curve", help="Throughput against streams for the one --gpu, at every "
                                                             "other option given.")] = False,
    show_params: Annotated[bool, typer.Option("--params", help="List the method's parameters (with --set) and exit.")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
) -> None:
    """Throughput of one model per GPU by one estimator method: sizing, memory, decode, prefill and power."""
    try:
        params = presets.with_overrides(presets.preset(method), presets.parse_assignments(assignments or []))
        params = engines.for_engine(params, engine) if engine else params
        chosen_precision = presets.normalise_precision(precision) if precision else None
    except (presets.ParamError, engines.EngineError) as exc:
        raise fail(str(exc)) from None
    if show_params:
        _list_params(params, fmt, model=model, gpu=gpu, precision=precision, context=context, streams=streams, tp=tp,
                     input_tokens=input_tokens, output_tokens=output_tokens, curve=show_curve or None,
                     max_load=max_load or None, min_user_tok_s=min_user_tok_s, max_ttft_s=max_ttft_s)
        return
    if model is None:
        raise fail("--model is required (see `gpuledger models`)")
    frames = _read_catalogues()
    model_id = resolve_name(model, {m.lower(): m for m in frames["models"]["model_id"]}, "model")
    chosen_gpus = [resolve_name(g, gpu_names(frames["gpus"]), "GPU") for g in gpu or []]
    gpus = estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], method)
    tokens = _request_tokens(context, input_tokens, output_tokens)
    _check_context(frames["models"], model_id, tokens)
    lengths = _lengths(params, input_tokens, output_tokens)
    target = speed.Target(min_user_tok_s, max_ttft_s, percentile.value)
    if not target.none:
        if not params.serving_model:
            raise fail(f"--min-user-tok-s/--max-ttft-s are the measured method's: {params.name} models no requests")
        if show_curve or max_load or streams is not None:
            raise fail("a speed target chooses the streams itself: leave out --streams, --max-load and --curve")
    try:
        if show_curve:
            if len(chosen_gpus) != 1:
                raise fail("--curve needs exactly one --gpu")
            if max_load:
                raise fail("--max-load chooses the streams itself, --curve runs through them: give one")
            out = estimator.curve(frames["models"], gpus, model_id, chosen_gpus[0], chosen_precision, tokens, params,
                                  tp=tp, input_tokens=input_tokens, output_tokens=output_tokens, streams=streams)
            render(_rounded(out), fmt, title=f"{model_id} on {chosen_gpus[0]}{_engine(params)}: tokens/s as streams "
                                              f"grow, {_request(out)} ({params.name})")
            return
        if max_load and streams is not None:
            raise fail("--max-load chooses the streams itself: give it or --streams, not both")
        streams = presets.DEFAULT_STREAMS if streams is None else streams
        grid = estimator.make_grid([model_id], chosen_gpus or gpus["name"].to_list(), [chosen_precision], [tokens],
                                   [None if max_load else streams]).with_columns(tp=pl.lit(tp, dtype=pl.Int64), **lengths)
        out = estimator.estimate(frames["models"], gpus, grid, params)
        left_out = _unheld(out, gpus, tp, named=bool(chosen_gpus))
        if not target.none:
            out = speed.at_target(frames["models"], gpus, grid.filter(~pl.col("gpu").is_in(left_out)), params, target)
    except estimator.EstimatorError as exc:
        raise fail(str(exc)) from None
    if target.none:
        out = speed.with_speed(out, speed.slots(params), params).with_columns(pl.lit(None, dtype=pl.Boolean).alias(c) if c == "reaches" else
                                                 pl.lit(None, dtype=pl.String).alias(c) for c in TARGET_COLUMNS)
    out = out.filter(~pl.col("gpu").is_in(left_out))
    if not chosen_gpus:
        out = out.sort(*(["reaches"] if not target.none else []), "agg_tok_s", descending=True, nulls_last=True)
    shown_speed = (*speed.SPEED_COLUMNS, *(TARGET_COLUMNS if not target.none else ())) if params.serving_model else ()
    out = out.select(*LEAD_COLUMNS, *shown_speed, *TAIL_COLUMNS)
    if fmt in (Format.table, Format.markdown):
        notes = ["~: the FP4 figure is estimated. uncertain: an input spec is uncertain, or was inferred from a "
                 "published estimate's figures rather than a datasheet."]
        notes += [BAND_NOTE] if params.band_ratio_low else []
        notes += [SPEED_NOTE] if params.serving_model else []
        if not target.none:
            notes.append(f"target {target.text}: the most streams that meet it; reaches false: the part "
                         "cannot at one stream on any replica up to a node, its best (one stream) shown")
        if left_out:
            named = ", ".join(left_out[:5]) + (f" and {len(left_out) - 5} more" if len(left_out) > 5 else "")
            notes.append(f"TP {tp} cannot hold {model_id} on {len(left_out)} part(s), left out: {named}")
        render(
            display.labels(out, params).with_columns(pl.col(speed.SPEED_COLUMNS).round(2) if shown_speed else []).drop(
                "fp4_estimated", "method", "engine", "estimator_version", "context_tokens",
                *([] if max_load or not target.none else ["streams"])),
            fmt,
            title=f"{model_id}, {params.name}: {_request(out)} "
                  f"{f'at {target.text}' if not target.none else 'x max-load streams' if max_load else f'x {streams} streams'}"
                  f"{_engine(params)} (estimator {estimator.ESTIMATOR_VERSION})",
            caption="\n".join(notes),
        )
    else:
        render(_rounded(out), fmt)


def _engine(params: presets.Params) -> str:
    """The serving engine an answer models, named even at the default (the reference methods model none)."""
    return f" served by {engines.ENGINES[params.engine]}" if params.serving_model else ""


def _unheld(out: pl.DataFrame, gpus: pl.DataFrame, tp: int | None, *, named: bool) -> list[str]:
    """The parts a given --tp cannot hold the model on: refused when the parts were named (or none holds it), else
    left out of the table; none when the estimate sized the replica."""
    if tp is None:
        return []
    unheld = out.filter(estimator.cannot_hold())
    if named or unheld.height == out.height:
        estimator.refuse_unheld(unheld, gpus)
    return unheld["gpu"].to_list()


def _list_params(params: presets.Params, fmt: Format, **ignored) -> None:
    """The method's parameters; options that do not change them are refused rather than silently ignored."""
    given = [f"--{name.replace('_', '-')}" for name, value in ignored.items() if value is not None]
    if given:
        raise fail(f"--params lists the method's parameters, which only --method and --set change: {', '.join(given)} "
                   "would not apply; leave them out")
    docs = presets.parameter_docs()
    render(pl.DataFrame({
        "parameter": [n for n, _ in docs],
        "value": [str(getattr(params, n)) for n, _ in docs],
        "meaning": [d for _, d in docs],
    }), fmt, title=f"parameters of {params.name}")
