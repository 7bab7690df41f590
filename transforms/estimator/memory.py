"""Memory: what a replica holds (weights, runtime, the streams' KV cache and state), the precision a preset's rule
picks by what fits, and the power-of-two group sizes the layouts choose from."""

import polars as pl

from transforms.estimator.grid import PRECISION
from transforms.presets import Params

QUANTIZED = ("fp8", "int8", "int4")  # precisions whose serving stacks keep the KV cache in FP8
# The most streams a replica is said to hold: the estimates' INTEGER column. A KV memory factor near 0 (1e-20 is in
# its range) makes memory hold ~1e21 streams, which no integer column keeps; any count this large is "unbounded".
MAX_STREAMS = 2**31 - 1
POWERS_OF_TWO = pl.Series([1 << k for k in range(63)], dtype=pl.Int64)


def _pow2_at_least(n: pl.Expr) -> pl.Expr:
    """The smallest power of two >= n, for whole n >= 1: 2 ** bit_length(n - 1)."""
    return pl.lit(POWERS_OF_TWO).gather(64 - (n.cast(pl.Int64) - 1).bitwise_leading_zeros())


def _precision_expr(params: Params) -> pl.Expr:
    """The precision each row runs at: the grid's, else the preset's rule."""
    if params.precision_rule == "native":
        rule = pl.col("_native")
    else:
        rule = pl.lit(params.ladder[-1], dtype=PRECISION)
        for precision in reversed(params.ladder[:-1]):
            need_gb = _fixed_gb(params, pl.lit(params.bytes_per_param[precision])) + params.gpu_overhead_gb * params.node_gpus
            rule = pl.when(need_gb <= params.node_gpus * pl.col("memory_gb")).then(
                pl.lit(precision, dtype=PRECISION)).otherwise(rule)
    return pl.coalesce(pl.col("precision"), rule)


def _kv_term(factor: float, expr: pl.Expr) -> pl.Expr:
    # A zero factor means "not modelled": it must not turn a missing KV size into a missing result.
    return pl.lit(0.0) if factor == 0 else factor * expr


def _replica_gb(params: Params, bytes_per_param: pl.Expr) -> pl.Expr:
    """Memory a replica needs before its streams' KV cache and per-GPU overhead: weights and runtime."""
    return pl.col("total_params_b") * bytes_per_param * params.weights_memory_factor + params.runtime_gb


def _fixed_gb(params: Params, bytes_per_param: pl.Expr) -> pl.Expr:
    """Memory a replica needs apart from the per-GPU overhead: weights, runtime and the streams' KV cache and state."""
    return _replica_gb(params, bytes_per_param) + _kv_term(params.kv_memory_factor,
                                                           pl.col("streams") * pl.col("_stream_gb"))
