"""The estimator's question: a grid of models x GPUs x precisions x contexts x streams (and, per row, tp, request
lengths and the measured method's settings), checked and typed before any method reads it."""

import polars as pl

from transforms.presets import DEFAULT_CONTEXT_TOKENS, DEFAULT_STREAMS, PRECISIONS, normalise_precision

# 1.2: per-stream state (windows, recurrent layers) held and read like KV. 1.3: the measured method's replica layout
# (data-parallel attention, a latent KV cache held whole per tensor-parallel GPU), max load sized by memory and the
# engine's batch limit, the host's work per request, the routed experts' share at the grouped matmuls' efficiency.
# 1.4: windowed layers hold and read min(context, window) tokens of KV (not the full window); the attention kind and
# KV heads come from the catalogue, and a GQA cache on a tensor-parallel rank wider than its KV heads is replicated.
# 1.5: a measured replica wider than one node (a provider cluster with a fabric) pays its pipeline stages' network.
# 1.6: the measured method keeps a recurrent state in FP32 and reads and writes it back every step; data-parallel
# attention ranks pay a gather and scatter around the experts per step; a prefill pays a forward pass's fixed seconds,
# and reads the weights its prompt uses, shared by the requests that arrive in one decode step.
# 1.7: the measured method models a serving engine (trtllm, sglang, vllm); a weight-only 4-bit checkpoint computes at
# its activations' precision, attention at the KV cache's; a small card keeps at most 10% of its memory back.
# 1.8: a 4-bit checkpoint quantised from a wider one, on a part without FP4 units, computes at BF16 (W4A16) at the BF16
# efficiency (it ran at the BF16 peak at the FP4 kernels' efficiency).
# 1.9: the measured method's reads and FLOPs overlap imperfectly: a pass takes the longer of the two plus overlap_loss
# (0.25) of the shorter.
# 1.10: the measured method's tensor-parallel all-reduces move their bytes over the part's link (NVLink, PCIe: the
# catalogue's interconnect) at link_efficiency, added to each decode step and prefill; a replica may state the
# pipeline stages its group runs (pipeline_stages), whose tensor-parallel width alone all-reduces.
# 1.11: the all-reduces move the catalogue's hidden size (config.json's), estimated from the active parameters per
# layer only for a row that states none.
ESTIMATOR_VERSION = "1.11.0"
CONTEXT_TOKENS_MAX = 1 << 20
STREAMS_MAX = 4096
PRECISION = pl.Enum(PRECISIONS)
NAME_COLUMNS = ("model", "gpu")  # Enums: their codes index the catalogue rows
# attention_dp (data-parallel attention ranks; None: the method's choice) and max_running_requests (the engine's
# batch limit per rank at max load; None: the method's) and pipeline_stages (the group's pipeline stages, each of
# tp/pipeline_stages tensor-parallel GPUs; None: one) are measured-method settings; streams None asks for max load.
GRID_SCHEMA = {"precision": PRECISION, "context_tokens": pl.Int64, "streams": pl.Int64, "tp": pl.Int64,
               "input_tokens": pl.Int64, "output_tokens": pl.Int64, "attention_dp": pl.Int64,
               "max_running_requests": pl.Int64, "pipeline_stages": pl.Int64}


class EstimatorError(ValueError):
    """A grid the estimator cannot take (unknown names, settings out of range); the message says which."""


def make_grid(
    models: list[str],
    gpus: list[str],
    precisions: list[str | None] = (None,),
    contexts: list[int] = (DEFAULT_CONTEXT_TOKENS,),
    streams: list[int] = (DEFAULT_STREAMS,),
) -> pl.DataFrame:
    """Every combination of the given names and settings, as `estimate` takes it (precision None: the preset's rule).

    Names and precisions come as Enums, whose codes let `estimate` pick catalogue rows without hashing names; a grid
    with String columns works too, a little slower.
    """
    dims = [
        pl.DataFrame({"model": list(models)}, schema={"model": pl.Enum(list(dict.fromkeys(models)))}),
        pl.DataFrame({"gpu": list(gpus)}, schema={"gpu": pl.Enum(list(dict.fromkeys(gpus)))}),
        pl.DataFrame({"precision": [p and normalise_precision(p) for p in precisions]}, schema={"precision": PRECISION}),
        pl.DataFrame({"context_tokens": list(contexts)}, schema={"context_tokens": pl.Int64}),
        pl.DataFrame({"streams": list(streams)}, schema={"streams": pl.Int64}),
    ]
    grid = dims[0]
    for dim in dims[1:]:
        grid = grid.join(dim, how="cross")
    return grid.with_columns(tp=pl.lit(None, dtype=pl.Int64))


def _checked_grid(grid: pl.DataFrame) -> pl.DataFrame:
    """The grid with every column in its type and precisions canonical; settings out of range are refused."""
    grid = grid.with_columns(pl.lit(None, dtype=t).alias(c) for c, t in GRID_SCHEMA.items() if c not in grid.columns)
    if grid.schema["precision"] != PRECISION:
        spellings = grid["precision"].drop_nulls().unique().to_list()
        mapping = {s: normalise_precision(s) for s in spellings}
        grid = grid.with_columns(pl.col("precision").replace_strict(mapping, default=None, return_dtype=PRECISION))
    grid = grid.with_columns(
        pl.col(c).cast(pl.Enum(grid[c].drop_nulls().unique().sort())) for c in NAME_COLUMNS
        if not isinstance(grid.schema[c], pl.Enum)
    ).select(*NAME_COLUMNS, *(pl.col(c).cast(t) for c, t in GRID_SCHEMA.items()))
    # Given both lengths, a stream's context is its prompt plus its answer.
    grid = grid.with_columns(context_tokens=pl.coalesce(pl.col("input_tokens") + pl.col("output_tokens"),
                                                         pl.col("context_tokens")))
    lows = grid.select(pl.col("context_tokens", "streams", "tp", "input_tokens", "output_tokens").min()).row(0, named=True)
    # a data-parallel attention rank batches its own streams: the limit holds per rank
    per_rank = -(-pl.col("streams") // pl.col("attention_dp").fill_null(1))
    highs = grid.select(pl.col("context_tokens").max(), per_rank.max().alias("streams")).row(0, named=True)
    for column, top, per in (("context_tokens", CONTEXT_TOKENS_MAX, ""),
                             ("streams", STREAMS_MAX, " per data-parallel attention rank")):
        for value in (lows[column], highs[column]):
            if value is not None and not 1 <= value <= (top if value == highs[column] else value):
                raise EstimatorError(f"{column} must be between 1 and {top}{per}, not {value}")
    if lows["tp"] is not None and lows["tp"] < 1:
        raise EstimatorError(f"tp must be at least 1, not {lows['tp']}")
    split = grid.filter(pl.col("attention_dp").is_not_null())
    if split.height and not (split["attention_dp"] >= 1).all():
        raise EstimatorError("attention_dp must be at least 1")
    if split.filter(pl.col("tp").is_null() & (pl.col("attention_dp") > 1)).height:
        raise EstimatorError("attention_dp above 1 needs the group's tp")
    if split.filter(pl.col("tp") % pl.col("attention_dp") != 0).height:
        raise EstimatorError("attention_dp must divide tp: each data-parallel attention rank is a whole number of GPUs")
    staged = grid.filter(pl.col("pipeline_stages").is_not_null())
    if staged.height and not (staged["pipeline_stages"] >= 1).all():
        raise EstimatorError("pipeline_stages must be at least 1")
    if staged.filter(pl.col("tp").is_null() | (pl.col("tp") % pl.col("pipeline_stages") != 0)).height:
        raise EstimatorError("pipeline_stages must divide tp: each stage is a whole number of GPUs")
    for column in ("input_tokens", "output_tokens"):
        if lows[column] is not None and lows[column] < (0 if column == "input_tokens" else 1):
            raise EstimatorError(f"{column} must be at least {0 if column == 'input_tokens' else 1}, not {lows[column]}")
    return grid
