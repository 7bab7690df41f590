"""`gpuledger estimate`: roofline estimates for one model on every (or the named) GPU, or one GPU's curve."""

from typing import Annotated

import duckdb
import polars as pl
import typer

from flows.cli.common import GPUS, STREAMS, TOKENS, fail, gpu_names, open_read_only, resolve_name
from flows.cli.output import Format, render
from transforms import display, estimator, presets

LEAD_COLUMNS = (
    "gpu", "precision", "tp", "memory_used_pct", "single_stream_tok_s", "per_stream_tok_s", "agg_tok_s",
    "prefill_tok_s", "power_kw", "max_streams",
)
TAIL_COLUMNS = (
    "agg_tok_s_low", "agg_tok_s_high", "multi_node", "bound", "uncertain", "fp4_estimated", "context_tokens", "input_tokens", "output_tokens", "streams",
    "method", "estimator_version",
)
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


def estimate(
    model: Annotated[str | None, typer.Option(help="Model id (see `gpuledger models`); required but with --params.")] = None,
    method: Annotated[str, typer.Option(help="measured (the serving model fitted to benchmark "
                                              "throughput), calculator (the per-step calculator) or ceiling (the "
                                              "bandwidth ceiling).")] = "measured",
    gpu: Annotated[list[str] | None, typer.Option(help="GPU by name, unique prefix or short label (e.g. 'H200 141GB'); "
                                                             "repeat for several (default: all).")] = None,
    precision: Annotated[str | None, typer.Option(help="bf16, fp8, int8 or int4 (fp4); default: the preset's rule.")] = None,
    context: Annotated[int, typer.Option(help="Tokens of context per stream.", **TOKENS)] = presets.DEFAULT_CONTEXT_TOKENS,
    streams: Annotated[int, typer.Option(help="Concurrent streams per replica.", **STREAMS)] = presets.DEFAULT_STREAMS,
    max_load: Annotated[bool, typer.Option(
        "--max-load", help="Measured method: as many streams as memory and the engine's batch limit allow (instead of "
                           "--streams), with data-parallel attention for an MLA mixture of experts on a group.")] = False,
    tp: Annotated[int | None, typer.Option(help="GPUs per replica (default: the smallest power of two that holds it).",
                                           **GPUS)] = None,
    input_tokens: Annotated[int | None, typer.Option(**TOKENS,
        help="Prompt tokens per request (measured; default: the context less the answer, or the context split at input_per_output, 3:1).")] = None,
    output_tokens: Annotated[int | None, typer.Option(**TOKENS,
        help="Answer tokens per request (measured; default: the context less the prompt, or its share at input_per_output).")] = None,
    assignments: Annotated[list[str] | None, typer.Option("--set", help="Override a parameter: NAME=VALUE (repeat).")] = None,
    show_curve: Annotated[bool, typer.Option("--curve", help="Throughput against streams for the one --gpu.")] = False,
    show_params: Annotated[bool, typer.Option("--params", help="List the method's parameters and exit.")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
) -> None:
    """Throughput of one model per GPU by one estimator method: sizing, memory, decode, prefill and power."""
    try:
        params = presets.with_overrides(presets.preset(method), presets.parse_assignments(assignments or []))
        chosen_precision = presets.normalise_precision(precision) if precision else None
    except presets.ParamError as exc:
        raise fail(str(exc)) from None
    if show_params:
        docs = presets.parameter_docs()
        render(pl.DataFrame({
            "parameter": [n for n, _ in docs],
            "value": [str(getattr(params, n)) for n, _ in docs],
            "meaning": [d for _, d in docs],
        }), fmt, title=f"parameters of {params.name}")
        return
    if model is None:
        raise fail("--model is required (see `gpuledger models`)")
    frames = _read_catalogues()
    model_id = resolve_name(model, {m.lower(): m for m in frames["models"]["model_id"]}, "model")
    chosen_gpus = [resolve_name(g, gpu_names(frames["gpus"]), "GPU") for g in gpu or []]
    gpus = estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], method)
    try:
        if show_curve:
            if len(chosen_gpus) != 1:
                raise fail("--curve needs exactly one --gpu")
            out = estimator.curve(frames["models"], gpus, model_id, chosen_gpus[0], chosen_precision, context, params)
            render(_rounded(out), fmt, title=f"{model_id} on {chosen_gpus[0]}: tokens/s as streams grow ({params.name})")
            return
        grid = estimator.make_grid([model_id], chosen_gpus or gpus["name"].to_list(), [chosen_precision], [context],
                                   [None if max_load else streams])
        grid = grid.with_columns(tp=pl.lit(tp, dtype=pl.Int64), **_lengths(params, input_tokens, output_tokens))
        out = estimator.estimate(frames["models"], gpus, grid, params)
    except estimator.EstimatorError as exc:
        raise fail(str(exc)) from None
    if not chosen_gpus:
        out = out.sort("agg_tok_s", descending=True, nulls_last=True)
    out = out.select(*LEAD_COLUMNS, *TAIL_COLUMNS)
    if fmt in (Format.table, Format.markdown):
        render(
            display.labels(out, params).drop("fp4_estimated", "method", "estimator_version", "context_tokens",
                                             *([] if max_load else ["streams"])),
            fmt,
            title=f"{model_id}, {params.name}: {_request(out)} x {'max-load' if max_load else streams} streams "
                  f"(estimator {estimator.ESTIMATOR_VERSION})",
            caption="~: the FP4 figure is estimated. uncertain: an input spec is uncertain, or was inferred from a "
                    "published estimate's figures rather than a datasheet."
            + (f"\n{BAND_NOTE}" if params.band_ratio_low else ""),
        )
    else:
        render(_rounded(out), fmt)
