"""The estimator's entry point, `estimate` (a grid in, one row per grid row out), and the questions built on it: a
throughput curve over streams, and whether a replica holds the model at all."""

import polars as pl

from transforms.estimator.grid import (
    ESTIMATOR_VERSION,
    NAME_COLUMNS,
    STREAMS_MAX,
    EstimatorError,
    _checked_grid,
    make_grid,
)
from transforms.estimator.methods import _serving_throughput, _steady_throughput
from transforms.estimator.terms import _terms
from transforms.presets import Params

OUTPUT_COLUMNS = (
    "model", "gpu", "precision", "context_tokens", "streams", "method", "estimator_version", "tp", "multi_node",
    "memory_used_gb", "memory_used_pct", "max_streams", "single_stream_tok_s", "per_stream_tok_s", "agg_tok_s",
    "prefill_tok_s", "bound", "power_kw", "uncertain", "compute_tflops", "fp4_estimated", "input_tokens",
    "output_tokens", "agg_tok_s_low", "agg_tok_s_high", "engine",
)


def estimate(models: pl.DataFrame, gpus: pl.DataFrame, grid: pl.DataFrame, params: Params) -> pl.DataFrame:
    """One row per grid row: sizing, memory, decode and prefill throughput, power, and whether inputs are uncertain.

    `gpus` should come through `apply_overlay` for the preset; `grid` has model, gpu, precision (None: the preset's
    rule), context_tokens, streams and optionally tp (None: the smallest group that holds the model).
    """
    grid = _checked_grid(grid)
    df = _terms(models, gpus, grid, params)
    df = _serving_throughput(df, params) if params.serving_model else _steady_throughput(df, params)
    return df.with_columns(
        *(pl.lit(grid.schema[c].categories).gather(pl.col(c).to_physical()).alias(c) for c in (*NAME_COLUMNS, "precision")),
        uncertain=pl.col("_doubt_spec") | pl.col("_doubt_compute") | pl.col("_doubt_model"),
        fp4_estimated=pl.lit(params.compute_at_precision) & (pl.col("precision") == "int4")
        & (pl.col("fp4_tflops").is_null() | pl.col("fp4_page_estimate")),
        method=pl.lit(params.name),
        # the serving engine the measured method models (transforms/engines.py); the reference methods model none
        engine=pl.lit(params.engine if params.serving_model else None, dtype=pl.String),
        estimator_version=pl.lit(ESTIMATOR_VERSION),
        # The calibrated band: the held-out spread of estimate/measured, p90 gives the low end (see calibration).
        agg_tok_s_low=pl.col("agg_tok_s") / params.band_ratio_high if params.band_ratio_high
        else pl.lit(None, dtype=pl.Float64),
        agg_tok_s_high=pl.col("agg_tok_s") / params.band_ratio_low if params.band_ratio_low
        else pl.lit(None, dtype=pl.Float64),
        max_streams=pl.col("max_streams").cast(pl.Int64),
    ).select(OUTPUT_COLUMNS).collect(engine="streaming")


def curve(
    models: pl.DataFrame,
    gpus: pl.DataFrame,
    model: str,
    gpu: str,
    precision: str | None,
    context_tokens: int,
    params: Params,
    points: int = 24,
    *,
    tp: int | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    streams: int | None = None,
) -> pl.DataFrame:
    """Throughput against concurrent streams for one replica of `tp` GPUs (None: the fewest that hold `streams`
    streams, or one) and requests of the given lengths (the estimate's rule for those not given), from 1 stream to
    `streams` (None: where memory fills, or STREAMS_MAX when the method does not model KV memory; for the measured
    method, at most the engine's batch limit): it climbs while bandwidth binds and bends where compute does. Every
    point is the estimate of that many streams, as `estimate` gives it; a replica that cannot hold one stream is
    refused (EstimatorError), never swapped for a larger one."""
    request = {"tp": pl.lit(tp, dtype=pl.Int64), "input_tokens": pl.lit(input_tokens, dtype=pl.Int64),
               "output_tokens": pl.lit(output_tokens, dtype=pl.Int64)}
    base = estimate(models, gpus, make_grid([model], [gpu], [precision], [context_tokens], [streams or 1]).with_columns(
        **request), params)
    refuse_unheld(base, gpus)
    tp, fills = base["tp"][0], base["max_streams"][0]
    top = STREAMS_MAX if fills is None else min(fills, STREAMS_MAX)
    if params.serving_model:  # an engine batches no more than its limit, whatever memory holds
        top = min(top, params.max_running_requests)
    top = streams or top
    counts = sorted({1, top} | {round(top ** (i / (points - 1))) for i in range(points)}) if tp and top else []
    grid = make_grid([model], [gpu], base["precision"].to_list(), [context_tokens], counts).with_columns(
        **request | {"tp": pl.lit(tp, dtype=pl.Int64)})
    return estimate(models, gpus, grid, params).select(
        "streams", "tp", "precision", "context_tokens", "input_tokens", "output_tokens", "agg_tok_s",
        "per_stream_tok_s", "bound", "memory_used_pct", "max_streams", "method",
    )


def cannot_hold() -> pl.Expr:
    """Estimate rows whose replica cannot hold the model with one stream of its context: memory fills before the
    first stream (a method that does not model the KV cache: the weights and runtime alone overflow it)."""
    return pl.coalesce(pl.col("max_streams") < 1, pl.col("memory_used_pct") > 100)


def refuse_unheld(estimates: pl.DataFrame, gpus: pl.DataFrame) -> None:
    """EstimatorError naming the TP, the model and the part for the first row whose replica cannot hold the model."""
    unheld = estimates.filter(cannot_hold()).join(gpus.select(pl.col("name").alias("gpu"), "memory_gb"), on="gpu")
    if unheld.height:
        r = unheld.row(0, named=True)
        request = (f"{r['input_tokens']:,} + {r['output_tokens']:,} tokens" if r["input_tokens"] is not None
                   else f"{r['context_tokens']:,} tokens")
        raise EstimatorError(
            f"TP {r['tp']} cannot hold {r['model']} ({r['precision']}) on {r['gpu']}: {r['tp']} x {r['memory_gb']:g} GB "
            f"fill before one stream of {request}: use a larger TP, or leave it to the estimate (the fewest GPUs "
            "that hold it)")


def memory_fills_at(
    models: pl.DataFrame, gpus: pl.DataFrame, model: str, gpu_names: list[str], precision: str | None,
    context_tokens: int, params: Params,
) -> pl.DataFrame:
    """Page 001's "memory fills at N users": per GPU, the replica sized for one stream and the streams it holds."""
    grid = make_grid([model], gpu_names, [precision], [context_tokens], [1])
    return estimate(models, gpus, grid, params).select("gpu", "tp", "max_streams")
