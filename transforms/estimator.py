"""Roofline LLM-inference estimator: pure polars over a whole grid (models x GPUs x precisions x contexts x streams).

Frames in, frames out: the catalogues come in as frames (warehouse tables or `catalog.read_all()`), nothing is
read or written here. The formulas and both reference pages are described in transforms/presets.py and the
README section on the estimator.
"""

import polars as pl

from transforms import deployability, engines, stack
from transforms.presets import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_STREAMS,
    PEAK_COLUMN,
    PRECISIONS,
    Params,
    normalise_precision,
)

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
ESTIMATOR_VERSION = "1.7.0"
CONTEXT_TOKENS_MAX = 1 << 20
STREAMS_MAX = 4096
FLOPS_PER_PARAM = 2.0  # one multiply-add per parameter per token, used by prefill
PAGE_ESTIMATE_SOURCE = "estimate"  # an overlay whose source ends with this is a figure the page marks estimated (~)

COMPUTE_FIELDS = ("bf16_tflops", "fp8_tflops", "int8_tops", "fp4_tflops")
SPEC_FIELDS = ("memory_gb", "bandwidth_gbs", *COMPUTE_FIELDS, "tdp_w")
# Words of the gpus `uncertain` column and the spec fields they cast doubt on; other text doubts them all.
UNCERTAIN_WORDS = {
    "memory_gb": ("memory",),
    "bandwidth_gbs": ("bandwidth",),
    "bf16_tflops": ("compute", "bf16"),
    "fp8_tflops": ("compute", "fp8"),
    "int8_tops": ("compute", "int8"),
    "fp4_tflops": ("compute", "fp4"),
    "tdp_w": ("tdp",),
}
OUTPUT_COLUMNS = (
    "model", "gpu", "precision", "context_tokens", "streams", "method", "estimator_version", "tp", "multi_node",
    "memory_used_gb", "memory_used_pct", "max_streams", "single_stream_tok_s", "per_stream_tok_s", "agg_tok_s",
    "prefill_tok_s", "bound", "power_kw", "uncertain", "compute_tflops", "fp4_estimated", "input_tokens",
    "output_tokens", "agg_tok_s_low", "agg_tok_s_high", "engine",
)
PRECISION = pl.Enum(PRECISIONS)
NAME_COLUMNS = ("model", "gpu")  # Enums: their codes index the catalogue rows
# attention_dp (data-parallel attention ranks; None: the method's choice) and max_running_requests (the engine's
# batch limit per rank at max load; None: the method's) are measured-method settings; streams None asks for max load.
GRID_SCHEMA = {"precision": PRECISION, "context_tokens": pl.Int64, "streams": pl.Int64, "tp": pl.Int64,
               "input_tokens": pl.Int64, "output_tokens": pl.Int64, "attention_dp": pl.Int64,
               "max_running_requests": pl.Int64}
QUANTIZED = ("fp8", "int8", "int4")  # precisions whose serving stacks keep the KV cache in FP8
# The most streams a replica is said to hold: the estimates' INTEGER column. A KV memory factor near 0 (1e-20 is in
# its range) makes memory hold ~1e21 streams, which no integer column keeps; any count this large is "unbounded".
MAX_STREAMS = 2**31 - 1
POWERS_OF_TWO = pl.Series([1 << k for k in range(63)], dtype=pl.Int64)
NO_OVERLAY = pl.DataFrame(schema={"preset": pl.String, "gpu": pl.String, "field": pl.String, "value": pl.Float64,
                                  "source": pl.String})


class EstimatorError(ValueError):
    """A grid the estimator cannot take (unknown names, settings out of range); the message says which."""


def apply_overlay(gpus: pl.DataFrame, overlays: pl.DataFrame, preset: str) -> pl.DataFrame:
    """The GPU catalogue as a preset's page saw it: its overlay values replace the vendor's (NULL: unknown).

    Adds `overlay_fields` (the fields replaced) and `fp4_page_estimate` (the page marks its FP4 figure estimated).
    """
    rows = overlays.filter(pl.col("preset") == preset)
    marks = rows.group_by("gpu").agg(
        overlay_fields=pl.col("field"),
        fp4_page_estimate=((pl.col("field") == "fp4_tflops") & pl.col("source").str.ends_with(PAGE_ESTIMATE_SOURCE)).any(),
    )
    out = gpus.join(marks, left_on="name", right_on="gpu", how="left", maintain_order="left").with_columns(
        pl.col("overlay_fields").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        pl.col("fp4_page_estimate").fill_null(False),
    )
    if rows.is_empty():
        return out
    values = rows.pivot(on="field", index="gpu", values="value").rename(lambda c: c if c == "gpu" else f"_{c}")
    out = out.join(values, left_on="name", right_on="gpu", how="left", maintain_order="left")
    replaced = [c.removeprefix("_") for c in values.columns if c != "gpu"]
    return out.with_columns(
        pl.when(pl.col("overlay_fields").list.contains(f)).then(pl.col(f"_{f}")).otherwise(pl.col(f)).alias(f)
        for f in replaced
    ).drop(f"_{f}" for f in replaced)


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
    for column in ("input_tokens", "output_tokens"):
        if lows[column] is not None and lows[column] < (0 if column == "input_tokens" else 1):
            raise EstimatorError(f"{column} must be at least {0 if column == 'input_tokens' else 1}, not {lows[column]}")
    return grid


def _attached(grid: pl.DataFrame, column: str, table: pl.DataFrame, what: str) -> list[pl.Expr]:
    """A small per-name table's columns for every grid row, gathered by the name's Enum code (no hash join)."""
    rows = pl.DataFrame({column: grid.schema[column].categories}).join(table, on=column, how="left", maintain_order="left")
    unknown = rows.filter(pl.col(table.columns[1]).is_null())[column].to_list()
    if unknown:
        raise EstimatorError(f"unknown {what} {', '.join(unknown)}: not in the catalogue")
    return [pl.lit(rows[c]).gather(pl.col(column).to_physical()).alias(c) for c in table.columns if c != column]


def _pow2_at_least(n: pl.Expr) -> pl.Expr:
    """The smallest power of two >= n, for whole n >= 1: 2 ** bit_length(n - 1)."""
    return pl.lit(POWERS_OF_TWO).gather(64 - (n.cast(pl.Int64) - 1).bitwise_leading_zeros())


def _field_doubts(text: pl.Expr, field: str) -> pl.Expr:
    known = {w for words in UNCERTAIN_WORDS.values() for w in words} | {"all"}
    words = "|".join(("all", *UNCERTAIN_WORDS[field]))
    named = text.str.contains(rf"\b({words})\b")
    unexplained = (text.str.len_chars() > 0) & ~text.str.contains(rf"\b({'|'.join(sorted(known))})\b")
    return named | unexplained


def _gpu_table(gpus: pl.DataFrame) -> pl.DataFrame:
    """Per GPU: the spec fields, which of them are in doubt, and whether it lacks a scale-up fabric."""
    if "overlay_fields" not in gpus.columns:
        gpus = apply_overlay(gpus, NO_OVERLAY, "vendor")
    text = pl.col("uncertain").fill_null("").str.to_lowercase()
    doubts = {
        f: pl.col("solved_from_page") | _field_doubts(text, f) | pl.col("overlay_fields").list.contains(f)
        for f in SPEC_FIELDS
    }
    return gpus.select(
        pl.col("name").alias("gpu"), *SPEC_FIELDS, "fp4_page_estimate", _pcie=pl.col("fabric") == "PCIe",
        _vendor=pl.col("vendor"),
        # Memory, bandwidth and (when known) TDP feed every row; which compute peak does depends on the row.
        _doubt_spec=doubts["memory_gb"] | doubts["bandwidth_gbs"] | (doubts["tdp_w"] & pl.col("tdp_w").is_not_null()),
        **{f"_doubt_{f}": doubts[f] for f in COMPUTE_FIELDS},
    )


def _model_table(models: pl.DataFrame, params: Params) -> pl.DataFrame:
    """Per model: sizes, the split into always-read and routed-expert weights, and whether used fields are in doubt."""
    routed = (pl.col("arch") == "moe") & pl.col("experts").is_not_null() & pl.col("experts_per_token").is_not_null()
    used = ["total_params_b", "active_params_b"]
    used += ["active_params_in_b"] if params.prefill_active == "input" else []
    used += ["experts", "experts_per_token"] if params.expert_coverage else []
    used += ["kv_bytes_per_token", "state_bytes_per_stream", "window_tokens", "window_kv_bytes_per_token"] \
        if params.kv_memory_factor or params.kv_read_factor else []
    used += ["attn_flops_per_ctx_token"] if params.attention_flops_factor or params.prefill_attention_factor else []
    natives = {p: normalise_precision(p) for p in models["native_precision"].unique().to_list()}
    return models.select(
        pl.col("model_id").alias("model"), "total_params_b", "active_params_b", "kv_bytes_per_token",
        "attn_flops_per_ctx_token",
        # a model without recurrent layers holds no fixed state per stream, one without windowed layers no window
        _state_bytes=pl.col("state_bytes_per_stream").fill_null(0.0),
        _window_tokens=pl.col("window_tokens").fill_null(0),
        _window_kv_bytes=pl.col("window_kv_bytes_per_token").fill_null(0.0),
        # a GQA cache splits by KV head over at most kv_heads GPUs; a latent (MLA) is one head; unknown: no limit
        _kv_heads=pl.col("kv_heads"),
        _native=pl.col("native_precision").replace_strict(natives, return_dtype=PRECISION),
        _prefill_params_b=pl.coalesce("active_params_in_b", "active_params_b")
        if params.prefill_active == "input" else pl.col("active_params_b"),
        # Expected expert coverage: a MoE without routing geometry is read as if every weight were an expert.
        _route_p=pl.when(routed).then(pl.col("experts_per_token") / pl.col("experts"))
        .when(pl.col("arch") == "moe").then(pl.col("active_params_b") / pl.col("total_params_b"))
        .otherwise(0.0),
        _doubt_model=pl.col("uncertain").fill_null("").str.contains(rf"\b({'|'.join(used)})\b"),
        _routed=routed,
        _moe=pl.col("arch") == "moe",
        _latent_kv=pl.col("attention") == "mla",
    ).with_columns(
        _dense_b=pl.when(pl.col("_routed"))
        .then((pl.col("active_params_b") - pl.col("_route_p") * pl.col("total_params_b")) / (1 - pl.col("_route_p")))
        .when(pl.col("_moe")).then(0.0)
        .otherwise(pl.col("total_params_b")),
    ).with_columns(
        _expert_b=pl.col("total_params_b") - pl.col("_dense_b"),
        _log_keep=(1 - pl.col("_route_p")).log(),
    ).drop("_routed")


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


def _compute_columns(params: Params) -> dict[str, pl.Expr]:
    """The tensor peak each row computes at (its precision's when the part has one, else BF16) and its doubt."""
    peak, doubt = pl.col("bf16_tflops"), pl.col("_doubt_bf16_tflops")
    if params.compute_at_precision:
        for precision, column in PEAK_COLUMN.items():
            has = (pl.col("precision") == precision) & pl.col(column).is_not_null()
            peak = pl.when(has).then(pl.col(column)).otherwise(peak)
            doubt = pl.when(has).then(pl.col(f"_doubt_{column}")).otherwise(doubt)
    return {"compute_tflops": peak, "_doubt_compute": doubt}


def _step_seconds(params: Params, streams: pl.Expr | None) -> tuple[pl.Expr, pl.Expr]:
    """(memory time, compute time) of one decode step serving `streams` streams (None: one stream)."""
    # The serving model reads the always-read weights once per data-parallel attention rank and each stream's KV once
    # per copy the group holds (_serving_layout); the reference methods read both once. A recurrent state splits by
    # head like the weights: one copy, moved state_passes times a step (the serving model reads it and writes it back).
    dense = pl.col("_dense_b") * pl.col("_dense_copies") if params.serving_model else pl.col("_dense_b")
    kv_read_gb = pl.col("_kv_read_gb") * pl.col("_kv_copies") + params.state_passes * pl.col("_state_gb")
    if not params.expert_coverage:
        read_b = pl.col("active_params_b")
    else:
        read_b = dense + pl.col("_expert_b") * _coverage(streams)
    count = pl.lit(1.0) if streams is None else streams
    t_mem = (read_b * pl.col("_bytes") + _kv_term(params.kv_read_factor, count * kv_read_gb)) / pl.col("_mem_gbs")
    if not (params.decode_flops_per_param or params.attention_flops_factor):
        return t_mem, pl.lit(0.0)  # no decode compute counted: a part without a compute figure still decodes
    return t_mem, count * pl.col("_token_flops") / pl.col("_flops_per_s")


def _coverage(tokens: pl.Expr | None) -> pl.Expr:
    """The share of the routed experts that `tokens` tokens of one step touch (None: one token's share)."""
    return pl.col("_route_p") if tokens is None else 1 - (tokens * pl.col("_log_keep")).exp()


def _expert_seconds(params: Params, streams: pl.Expr | None) -> tuple[pl.Expr, pl.Expr]:
    """(memory time, compute time) of a decode step's routed experts alone: the share of _step_seconds' terms the
    grouped expert matmuls take (serving model)."""
    coverage = _coverage(streams)
    count = pl.lit(1.0) if streams is None else streams
    return (pl.col("_expert_b") * coverage * pl.col("_bytes") / pl.col("_mem_gbs"),
            count * params.decode_flops_per_param * pl.col("_expert_b") * pl.col("_route_p") * 1e9 / pl.col("_flops_per_s"))


def _combine(params: Params, t_mem: pl.Expr, t_cmp: pl.Expr) -> pl.Expr:
    return t_mem + t_cmp if params.step_time == "sum" else pl.max_horizontal(t_mem, t_cmp)


def _token_flops(params: Params) -> pl.Expr:
    """Decode FLOPs per generated token per stream: weights and attention over the context, as the preset counts."""
    flops = pl.lit(0.0)
    if params.decode_flops_per_param:
        flops = flops + params.decode_flops_per_param * pl.col("active_params_b") * 1e9
    if params.attention_flops_factor:
        context = (pl.col("_decode_context") - params.attention_context_offset).clip(lower_bound=0)
        flops = flops + params.attention_flops_factor * context * pl.col("attn_flops_per_ctx_token")
    return flops


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


def _lengths(params: Params) -> dict[str, pl.Expr]:
    """Prompt and answer per request (serving model only: the context split into them), and the contexts read."""
    if not params.serving_model:
        return {"input_tokens": pl.lit(None, dtype=pl.Int64), "output_tokens": pl.lit(None, dtype=pl.Int64),
                "_decode_context": pl.col("context_tokens"), "_prefill_context": pl.col("context_tokens")}
    # Given neither length, the request fills the context at params.input_per_output prompt tokens per answer token;
    # given one, the other is the context's rest.
    at_mix = (pl.col("context_tokens") / (1 + params.input_per_output)).round().cast(pl.Int64).clip(lower_bound=1)
    output = pl.coalesce("output_tokens", pl.when(pl.col("input_tokens").is_not_null()).then(
        (pl.col("context_tokens") - pl.col("input_tokens")).clip(lower_bound=1)).otherwise(at_mix))
    prompt = pl.coalesce("input_tokens", (pl.col("context_tokens") - output).clip(lower_bound=0))
    return {"input_tokens": prompt, "output_tokens": output,
            # decode attends, on average over the answer, to the prompt and half the answer
            "_decode_context": prompt + output / 2, "_prefill_context": prompt}


def _terms(models: pl.DataFrame, gpus: pl.DataFrame, grid: pl.DataFrame, params: Params) -> pl.LazyFrame:
    """Per grid row: sizing, memory, and the decode and prefill terms before the method combines them."""
    if not params.serving_model and grid["streams"].null_count():
        raise EstimatorError("streams must be given: max load (no streams) is a question for the measured method")
    catalogue = [
        *_attached(grid, "model", _model_table(models, params), "model"),
        *_attached(grid, "gpu", _gpu_table(gpus), "GPU"),
    ]
    # Windowed layers hold and read the KV of min(context, window) tokens, kept at the KV cache's precision; a
    # recurrent state is held and read whole whatever the context, at the KV cache's precision or in FP32 (state_fp32:
    # twice the catalogue's 2 bytes per value, as SGLang's mamba_ssm_dtype and vLLM keep it).
    kv_bytes, window_bytes, state_bytes = pl.col("kv_bytes_per_token"), pl.col("_window_kv_bytes"), pl.col("_state_bytes")
    if params.kv_fp8_when_quantized:
        fp8 = pl.col("precision").is_in(QUANTIZED)
        kv_bytes, window_bytes = (pl.when(fp8).then(b / 2).otherwise(b) for b in (kv_bytes, window_bytes))
        if not params.state_fp32:
            state_bytes = pl.when(fp8).then(state_bytes / 2).otherwise(state_bytes)
    if params.state_fp32:
        state_bytes = 2 * state_bytes

    def kv_gb(context: str) -> pl.Expr:
        return (pl.col(context) * pl.col("_kv_bytes")
                + pl.min_horizontal(context, "_window_tokens") * pl.col("_window_kv_bytes_c")) * 1e-9

    # Lazily on the streaming engine: about twice as fast here as eager, and column-wise work keeps the row order.
    df = grid.lazy().with_columns(catalogue).with_columns(precision=_precision_expr(params)).with_columns(
        **_lengths(params), _kv_bytes=kv_bytes, _window_kv_bytes_c=window_bytes, _state_gb=state_bytes * 1e-9,
    ).with_columns(
        _bytes=pl.lit(pl.Series([params.bytes_per_param[p] for p in PRECISIONS])).gather(
            pl.col("precision").to_physical()),
        # per stream: the KV held at the full context and read per decode step (tensor parallelism may replicate
        # it, _kv_copies), and the recurrent state, held and read whole
        _kv_stream_gb=kv_gb("context_tokens"),
        _kv_read_gb=kv_gb("_decode_context"),
        **_compute_columns(params),
    ).with_columns(_stream_gb=pl.col("_kv_stream_gb") + pl.col("_state_gb"))
    df = _serving_layout(df, params) if params.serving_model else _reference_layout(df, params)
    prefill_flops = FLOPS_PER_PARAM * pl.col("_prefill_params_b") * 1e9
    if params.prefill_attention_factor:
        prefill_flops = prefill_flops + params.prefill_attention_factor * pl.col("attn_flops_per_ctx_token") * pl.col(
            "_prefill_context") / 2
    return df.with_columns(
        multi_node=pl.col("tp") > params.node_gpus,
        power_kw=pl.col("tp") * pl.col("tdp_w") / 1000,
        _prefill_flops=prefill_flops,
        _token_flops=_token_flops(params),
    ).with_columns(
        memory_used_pct=100 * pl.col("memory_used_gb") / (pl.col("tp") * pl.col("memory_gb")),
    )


def _reference_layout(df: pl.LazyFrame, params: Params) -> pl.LazyFrame:
    """The reference methods' replica: the smallest power-of-two group (at least min_tp) holding the weights, runtime
    and every stream's KV cache, each split evenly over the group; memory fills when the KV fills the rest."""
    df = df.with_columns(_fixed_gb=_fixed_gb(params, pl.col("_bytes"))).with_columns(
        tp=pl.coalesce(
            pl.col("tp"),
            _pow2_at_least(
                pl.when(pl.col("memory_gb") > params.gpu_overhead_gb)
                .then((pl.col("_fixed_gb") / (pl.col("memory_gb") - params.gpu_overhead_gb) - 1e-9).ceil())
                .clip(lower_bound=params.min_tp)
            ),
        ),
    )
    fill_gb = pl.col("tp") * (pl.col("memory_gb") - params.gpu_overhead_gb - params.fill_reserve_gb) - _replica_gb(
        params, pl.col("_bytes")
    )
    return df.with_columns(
        memory_used_gb=pl.col("_fixed_gb") + params.gpu_overhead_gb * pl.col("tp"),
        max_streams=None if params.kv_memory_factor == 0
        else (fill_gb / (params.kv_memory_factor * pl.col("_stream_gb"))).floor().clip(0, MAX_STREAMS),
        _kv_copies=pl.lit(1.0),
    )


def _serving_layout(df: pl.LazyFrame, params: Params) -> pl.LazyFrame:
    """The measured method's replica: its GPUs, its data-parallel attention ranks, what each GPU holds and reads, and
    at max load (no streams given) the streams it batches.

    A group of `tp` GPUs runs attention in `attention_dp` data-parallel ranks of tp/attention_dp GPUs each, the
    experts (and, with one rank, every matrix) split over the whole group. Each rank holds the always-read weights
    (attention, shared experts, dense layers, embeddings) of its own, so the group holds and reads them
    `attention_dp` times (_dense_copies), and each rank keeps the KV cache of its own streams. Within a rank tensor
    parallelism splits the cache by KV head, over at most kv_heads GPUs: a rank wider than that holds and reads every
    head's cache on rank/kv_heads GPUs (_kv_copies; a multi-head latent, MLA, is one head that serves every query
    head: each of the rank's GPUs holds its streams' latents whole). A recurrent state splits by head like the
    weights: held once.

    At max load the streams are what memory holds, at most `max_running_requests` per rank (the engine's batch
    limit: each data-parallel rank schedules its own batch), and a multi-head-latent mixture of experts runs
    data-parallel attention over its whole group unless told otherwise, as SGLang and TensorRT-LLM serve the
    DeepSeek-V3 family at high load: the batch then grows with the GPUs and each rank reads only its own latents."""
    if params.max_running_requests < 1:
        raise EstimatorError("the serving model needs max_running_requests of at least 1 (the engine's batch limit)")
    weights_gb = pl.col("_bytes") * params.weights_memory_factor
    dense_gb, expert_gb = pl.col("_dense_b") * weights_gb, pl.col("_expert_b") * weights_gb
    kv_gb, state_gb = params.kv_memory_factor * pl.col("_kv_stream_gb"), params.kv_memory_factor * pl.col("_state_gb")
    stream_gb = kv_gb + state_gb
    reserved_gb = stack.reserved_gb(pl.col("memory_gb"), params.gpu_overhead_gb, params.gpu_overhead_share)
    free_gb = pl.col("memory_gb") - reserved_gb
    max_load = pl.col("streams").is_null()
    whole_latent = pl.col("_latent_kv") if params.kv_replicated else pl.lit(False)
    dp_whole_group = (max_load & pl.col("attention_dp").is_null() & pl.col("_latent_kv") & pl.col("_moe")
                      if params.dp_attention_at_max_load else pl.lit(False))
    # The smallest group holding the weights, the runtime and the streams asked for (one at max load), in GB per GPU
    # of what every GPU holds whole over what the group splits; no group fits when a GPU cannot hold the former.
    asked_gb = pl.coalesce("streams", 1) * stream_gb
    replicated_gb = (pl.when(dp_whole_group).then(dense_gb).when(whole_latent).then(asked_gb).otherwise(0.0))
    split_gb = (pl.when(dp_whole_group).then(expert_gb + asked_gb).when(whole_latent).then(dense_gb + expert_gb)
                .otherwise(dense_gb + expert_gb + asked_gb) + params.runtime_gb)
    room_gb = free_gb - replicated_gb
    smallest = _pow2_at_least(pl.when(room_gb > 0).then((split_gb / room_gb - 1e-9).ceil()).clip(lower_bound=params.min_tp))
    df = df.with_columns(tp=pl.coalesce("tp", smallest)).with_columns(
        attention_dp=pl.when(dp_whole_group).then(pl.col("tp")).otherwise(pl.coalesce("attention_dp", 1)),
    ).with_columns(
        _dense_copies=pl.col("attention_dp").cast(pl.Float64),
        _kv_copies=(pl.col("tp") / pl.col("attention_dp") / pl.col("_kv_heads")).clip(lower_bound=1.0).fill_null(1.0)
        if params.kv_replicated else pl.lit(1.0),
    ).with_columns(
        _held_gb=dense_gb * pl.col("_dense_copies") + expert_gb + params.runtime_gb,
        _stream_held_gb=kv_gb * pl.col("_kv_copies") + state_gb,
    )
    fill_gb = pl.col("tp") * (free_gb - params.fill_reserve_gb) - pl.col("_held_gb")
    df = df.with_columns(
        max_streams=(fill_gb / pl.col("_stream_held_gb")).floor().clip(0, MAX_STREAMS),
    ).with_columns(
        streams=pl.coalesce("streams", pl.min_horizontal(
            "max_streams",
            pl.col("attention_dp") * pl.coalesce("max_running_requests", pl.lit(params.max_running_requests)),
        ).cast(pl.Int64)),
    )
    return df.with_columns(
        memory_used_gb=pl.col("_held_gb") + pl.col("streams") * pl.col("_stream_held_gb")
        + reserved_gb * pl.col("tp"),
    )


def _steady_throughput(df: pl.LazyFrame, params: Params) -> pl.LazyFrame:
    """The reference methods: steady decode of `streams` streams at the full context, efficiencies as constants."""
    group = pl.col("tp") * (1 - params.tp_derate * pl.col("tp").log(2)).clip(lower_bound=params.tp_efficiency_floor)
    penalty = pl.when(pl.col("_pcie") & (pl.col("tp") > 1)).then(params.pcie_penalty).otherwise(1.0)
    df = df.with_columns(
        prefill_tok_s=params.prefill_mfu * pl.col("compute_tflops") * 1e12 * group / pl.col("_prefill_flops") * penalty,
        _penalty=penalty,
        _mem_gbs=params.bandwidth_efficiency * pl.col("bandwidth_gbs") * group,
        _flops_per_s=params.compute_efficiency * pl.col("compute_tflops") * 1e12 * group,
    )
    t_mem, t_cmp = _step_seconds(params, pl.col("streams"))
    return df.with_columns(
        _t_mem=t_mem,
        _t_cmp=t_cmp,
        single_stream_tok_s=1 / _combine(params, *_step_seconds(params, None)),
    ).with_columns(
        per_stream_tok_s=1 / pl.col("_t_mem"),
        agg_tok_s=pl.min_horizontal(
            pl.col("streams") / _combine(params, pl.col("_t_mem"), pl.col("_t_cmp")),
            params.batch_gain_max * pl.col("single_stream_tok_s"),
        ) * pl.col("_penalty"),
        bound=_bound(),
    )


def _bound() -> pl.Expr:
    return (pl.when(pl.col("_t_cmp") > pl.col("_t_mem")).then(pl.lit("compute"))
            .when(pl.col("_t_cmp").is_not_null() & pl.col("_t_mem").is_not_null()).then(pl.lit("memory")))


def serving_terms(models: pl.DataFrame, gpus: pl.DataFrame, grid: pl.DataFrame, params: Params) -> pl.DataFrame:
    """Per grid row, the serving model's terms before efficiencies (see _serving_terms), with the row's vendor."""
    df = _serving_terms(_terms(models, gpus, _checked_grid(grid), params), params)
    return df.with_columns(
        *(pl.col(c).cast(pl.String) for c in (*NAME_COLUMNS, "precision")), vendor=pl.col("_vendor"),
        max_streams=pl.col("max_streams").cast(pl.Int64),
    ).select(
        *NAME_COLUMNS, "precision", "vendor", "tp", "attention_dp", "streams", "input_tokens", "output_tokens",
        "max_streams", "_compute_precision",
        "_log2_tp", "_t_mem", "_t_cmp", "_t_mem1", "_t_cmp1", "_x_mem", "_x_cmp", "_t_prefill", "_x_prefill",
        "_requests_per_rank", "_log2_dp", "_t_pass_read",
    ).collect(engine="streaming")


def _serving_terms(df: pl.LazyFrame, params: Params) -> pl.LazyFrame:
    """The serving model's terms at full efficiency on one replica of `tp` GPUs: seconds of weight and KV reads
    per decode step (_t_mem, _t_mem1 at one stream), of decode FLOPs per step (_t_cmp, _t_cmp1) and of prefill
    FLOPs per request (_t_prefill); the calibration fits the efficiencies that scale them.

    Weights' matmuls run at the precision's peak; attention (QK and AV over the cached context) runs at the KV
    cache's (stack.attention_peak), so its FLOPs count `peak / attention peak` times at the precision's."""
    # a 4-bit checkpoint of weights alone computes at its activations' precision (stack.activation_precision)
    df = df.with_columns(_compute_precision=stack.activation_precision(
        pl.col("precision"), pl.col("_native"), pl.col("fp8_tflops").is_not_null(), pl.col("fp4_tflops").is_not_null()))
    df = df.with_columns(compute_tflops=pl.when(pl.col("_compute_precision") == pl.col("precision").cast(pl.String))
                         .then(pl.col("compute_tflops"))
                         .when(pl.col("_compute_precision") == "fp8").then(pl.col("fp8_tflops"))
                         .otherwise(pl.col("bf16_tflops")))
    attention_peak = stack.attention_peak(pl.col("bf16_tflops"), pl.col("fp8_tflops"),
                                          pl.col("precision").is_in(QUANTIZED) & params.kv_fp8_when_quantized)
    attention_cost = pl.coalesce(pl.col("compute_tflops") / attention_peak, pl.lit(1.0))
    attention = pl.col("attn_flops_per_ctx_token") * attention_cost
    df = df.with_columns(
        _mem_gbs=pl.col("bandwidth_gbs") * pl.col("tp"),
        _flops_per_s=pl.col("compute_tflops") * 1e12 * pl.col("tp"),
        _log2_tp=pl.col("tp").log(2),
        _log2_dp=pl.col("attention_dp").log(2),
        _token_flops=params.decode_flops_per_param * pl.col("active_params_b") * 1e9
        + params.attention_flops_factor * pl.col("_decode_context") * attention,
        _prefill_flops=FLOPS_PER_PARAM * pl.col("_prefill_params_b") * 1e9
        + params.prefill_attention_factor * pl.col("_prefill_context") / 2 * attention,
    )
    t_mem, t_cmp = _step_seconds(params, pl.col("streams"))
    t_mem1, t_cmp1 = _step_seconds(params, None)
    x_mem, x_cmp = _expert_seconds(params, pl.col("streams"))
    x_mem1, x_cmp1 = _expert_seconds(params, None)
    return df.with_columns(
        _t_mem=t_mem, _t_cmp=t_cmp, _t_mem1=t_mem1, _t_cmp1=t_cmp1,
        _x_mem=x_mem, _x_cmp=x_cmp, _x_mem1=x_mem1, _x_cmp1=x_cmp1,
        _t_prefill=pl.col("input_tokens") * pl.col("_prefill_flops") / pl.col("_flops_per_s"),
        _x_prefill=pl.col("input_tokens") * FLOPS_PER_PARAM * pl.col("_expert_b") * pl.col("_route_p") * 1e9
        / pl.col("_flops_per_s"),
        _requests_per_rank=pl.col("streams") / pl.col("attention_dp"),
        # a prefill pass reads the always-read weights per copy and the experts its prompt's tokens touch
        _t_pass_read=(pl.col("_dense_b") * pl.col("_dense_copies")
                      + pl.col("_expert_b") * _coverage(pl.col("input_tokens").clip(lower_bound=1)))
        * pl.col("_bytes") / pl.col("_mem_gbs"),
    )


def efficiencies(precision, vendor, params: Params, engine=None):
    """Compute and vendor efficiency per row (polars Exprs or Series alike): by the row's precision and GPU vendor;
    the vendor's is the engine's on that vendor (engines.engine_efficiency: `engine`, per row, else params.engine)."""
    compute = precision.replace_strict(
        {"fp8": params.compute_efficiency_fp8, "int8": params.compute_efficiency_fp8,
         "int4": params.compute_efficiency_int4}, default=params.compute_efficiency, return_dtype=pl.Float64,
    )
    maker = vendor.replace_strict({"AMD": params.vendor_efficiency_amd, "Intel": params.vendor_efficiency_intel},
                                  default=1.0, return_dtype=pl.Float64)
    maker = maker * engines.engine_efficiency(params.engine if engine is None else engine, params)
    return compute, maker


def _larger(a, b):
    """max(a, b) with arithmetic alone, so numbers, polars Series and Exprs all take it."""
    return (a + b + abs(a - b)) / 2


def group_scale(log2_tp, vendor_eff, params: Params):
    """The fraction of a group's peak it reaches: its scaling loss per doubling times the vendor's efficiency."""
    return _larger(1 - params.tp_derate * log2_tp, params.tp_efficiency_floor) * vendor_eff


def step_seconds(t_mem, t_cmp, log2_tp, compute_eff, vendor_eff, params: Params, requests_per_rank=0.0, x_mem=0.0,
                 x_cmp=0.0, log2_dp=0.0):
    """Seconds of one decode step (numbers, polars Series or Exprs alike): reads at the bandwidth efficiency and FLOPs at
    the precision's compute efficiency, the routed experts' share of both (x_mem, x_cmp) slower by the grouped expert
    matmuls' efficiency, added or overlapped (step_time), slowed by the group's scale; the host's work for the
    requests one scheduler runs overlaps that (the engines prepare the next step while the GPUs run this one); plus a
    fixed overhead per step, a collective's latency per doubling of the group and, with data-parallel attention, the
    gather of the ranks' tokens before the experts and their scatter after, per doubling of the ranks (log2_dp)."""
    scale = group_scale(log2_tp, vendor_eff, params)
    slower = 1 / params.moe_compute_efficiency - 1
    reads, flops = (t_mem + x_mem * slower) / params.bandwidth_efficiency, (t_cmp + x_cmp * slower) / compute_eff
    return (_larger(_overlap(reads, flops, params) / scale, params.request_overhead_s * requests_per_rank)
            + pass_seconds(log2_tp, log2_dp, params))


def _overlap(reads, flops, params: Params):
    """A pass's reads and FLOPs added (step_time 'sum') or overlapped ('max'; numbers, Series or Exprs alike)."""
    return reads + flops if params.step_time == "sum" else _larger(reads, flops)


def pass_seconds(log2_tp, log2_dp, params: Params):
    """The fixed seconds of one forward pass, a decode step's or a prefill's: the overhead per pass and the
    collectives' latency, per doubling of the group and of the data-parallel attention ranks."""
    return params.step_overhead_s + params.tp_comm_s * log2_tp + params.dp_comm_s * log2_dp


def pipeline_seconds(tp, streams, params: Params):
    """Seconds a decode step of `streams` streams spends between nodes (numbers, polars Series or Exprs alike).

    A replica wider than one node (node_gpus) runs only where a provider's cluster joins the nodes with a
    scale-out fabric (transforms/deployability.py): tensor parallelism inside each node, pipeline stages across
    them. Each of the tp / node_gpus - 1 stage boundaries sends the step's activations over the fabric: pp_hop_s,
    plus pp_hop_s_per_stream per stream. Prefill's larger sends overlap its chunks' compute and are not charged.
    """
    boundaries = _larger(tp / params.node_gpus - 1, 0)
    return boundaries * (params.pp_hop_s + streams * params.pp_hop_s_per_stream)


def request_tok_s(step, t_prefill, streams, output_tokens, log2_tp, vendor_eff, params: Params, x_prefill=0.0,
                  log2_dp=0.0, t_pass_read=0.0):
    """Output tokens per second of one replica serving `streams` requests at a time, each a prefill of its prompt
    (its routed experts' share x_prefill slower by the grouped expert matmuls' efficiency) then `output_tokens`
    decode steps (numbers, polars Series or Exprs alike).

    A prefill is a forward pass of its own (SGLang runs prefill and decode batches apart): it reads the weights its
    prompt uses (t_pass_read: the always-read weights per copy, the experts its tokens touch), overlapped with its
    FLOPs like a decode step's (step_time), and pays a pass's fixed seconds, both shared by the requests that arrive
    together: as each finished request is replaced, about streams / output_tokens arrive per decode step and join one
    prefill pass; fewer than one a step, each gets its own.
    """
    t_prefill = t_prefill + x_prefill * (1 / params.moe_compute_efficiency - 1)
    scale, together = group_scale(log2_tp, vendor_eff, params), _larger(streams / output_tokens, 1.0)
    flops, reads = t_prefill / (params.prefill_mfu * scale), t_pass_read / (params.bandwidth_efficiency * scale * together)
    prefill = _overlap(flops, reads, params) + pass_seconds(log2_tp, log2_dp, params) / together
    return streams * output_tokens / (streams * prefill + output_tokens * step)


def _serving_throughput(df: pl.LazyFrame, params: Params) -> pl.LazyFrame:
    """The measured method: whole requests (prefill amortised over the answer), efficiencies fitted to benchmarks."""
    df = _serving_terms(df, params)
    compute_eff, vendor_eff = efficiencies(pl.col("_compute_precision"), pl.col("_vendor"), params)
    log2_tp = pl.col("_log2_tp")
    tp, streams = pl.col("tp"), pl.col("streams")
    step = (step_seconds(pl.col("_t_mem"), pl.col("_t_cmp"), log2_tp, compute_eff, vendor_eff, params,
                         pl.col("_requests_per_rank"), pl.col("_x_mem"), pl.col("_x_cmp"), pl.col("_log2_dp"))
            + pipeline_seconds(tp, streams, params))
    step1 = (step_seconds(pl.col("_t_mem1"), pl.col("_t_cmp1"), log2_tp, compute_eff, vendor_eff, params, 1.0,
                          pl.col("_x_mem1"), pl.col("_x_cmp1"), pl.col("_log2_dp"))
             + pipeline_seconds(tp, 1, params))
    scale = group_scale(log2_tp, vendor_eff, params)
    return df.with_columns(
        single_stream_tok_s=1 / step1,
        per_stream_tok_s=1 / step,
        agg_tok_s=request_tok_s(step, pl.col("_t_prefill"), pl.col("streams"), pl.col("output_tokens"), log2_tp,
                                vendor_eff, params, pl.col("_x_prefill"), pl.col("_log2_dp"),
                                pl.col("_t_pass_read")),
        prefill_tok_s=params.prefill_mfu * scale * pl.col("_flops_per_s") / pl.col("_prefill_flops"),
        _t_mem=pl.col("_t_mem") / params.bandwidth_efficiency,
        _t_cmp=pl.col("_t_cmp") / compute_eff,
    ).with_columns(bound=_bound())


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


def usd_per_mtok(usd_per_hr: pl.Expr, tok_s: pl.Expr) -> pl.Expr:
    """Dollars per million tokens from an hourly price and the tokens per second it buys."""
    return usd_per_hr * 1e6 / (tok_s * 3600)


def with_costs(estimates: pl.DataFrame, prices: pl.DataFrame) -> pl.DataFrame:
    """Adds usd_per_hr (one replica of tp GPUs) and usd_per_mtok, from per-GPU prices (gpu, usd_per_gpu_hr)."""
    return estimates.join(
        prices.select("gpu", "usd_per_gpu_hr"), on="gpu", how="left", maintain_order="left"
    ).with_columns(usd_per_hr=pl.col("tp") * pl.col("usd_per_gpu_hr")).with_columns(
        usd_per_mtok=usd_per_mtok(pl.col("usd_per_hr"), pl.col("agg_tok_s"))
    )


def bare_minimum(estimates: pl.DataFrame, prices: pl.DataFrame) -> pl.DataFrame:
    """Page 001's "bare minimum" card: among priced parts, the fewest GPUs, then the most tokens/s (one row)."""
    priced = with_costs(estimates, prices).filter(pl.col("usd_per_mtok").is_not_null())
    return priced.filter(pl.col("tp") == pl.col("tp").min()).sort("agg_tok_s", descending=True).head(1)


def _fleet(df: pl.DataFrame, replicas: pl.Expr, gpus: pl.DataFrame) -> pl.DataFrame:
    """Replicas of each row's estimate on servers of a part (deployability.server_replica: a replica wider than a
    server needs a part that spans hosts and a scale-out fabric, which a provider cluster's per-GPU price includes;
    a consumer or workstation card gets none, and the reason): tokens/s, $/hr and $/M of the whole fleet."""
    deployable, why = deployability.server_replica(pl.col("tp"), fabric=True)
    return df.join(deployability.part_classes(gpus), on="gpu", how="left", maintain_order="left").with_columns(
        replicas=pl.when(deployable).then(replicas).otherwise(0).cast(pl.Int64), not_deployable_reason=why,
    ).with_columns(
        agg_tok_s=pl.col("replicas") * pl.col("agg_tok_s"),
        usd_per_hr=pl.col("replicas") * pl.col("tp") * pl.col("usd_per_gpu_hr"),
    ).with_columns(usd_per_mtok=pl.when(pl.col("replicas") > 0).then(usd_per_mtok(pl.col("usd_per_hr"), pl.col("agg_tok_s"))))


def fleet_whatif(estimates: pl.DataFrame, fleets: pl.DataFrame, prices: pl.DataFrame, gpus: pl.DataFrame) -> pl.DataFrame:
    """Page 001's fleet what-if for fleets (gpu, gpu_count): replicas of the estimate's TP, idle GPUs, tokens/s,
    $/hr (replicas priced), power (every GPU at TDP) and $/M; `gpus` is the catalogue (which parts span hosts)."""
    df = fleets.select("gpu", "gpu_count").join(
        with_costs(estimates, prices).select("gpu", "tp", "agg_tok_s", "power_kw", "usd_per_gpu_hr"),
        on="gpu", how="left", maintain_order="left",
    )
    return _fleet(df, pl.col("gpu_count") // pl.col("tp"), gpus).with_columns(
        idle_gpus=pl.col("gpu_count") - pl.col("replicas") * pl.col("tp"),
        power_kw=pl.col("gpu_count") * pl.col("power_kw") / pl.col("tp"),
    ).select("gpu", "gpu_count", "tp", "replicas", "idle_gpus", "agg_tok_s", "usd_per_hr", "power_kw", "usd_per_mtok",
             "not_deployable_reason")


def size_for_target(estimates: pl.DataFrame, target_tok_s: float, prices: pl.DataFrame,
                    gpus: pl.DataFrame) -> pl.DataFrame:
    """Page 001's "size for a tokens/s target": per GPU, replicas = ceil(target / aggregate), their GPUs and price;
    none of a replica no servers of the part could hold (`gpus`, the catalogue: see fleet_whatif), nor of a part the
    method gives no throughput (a catalogue row without the compute peaks it needs, such as the first Gaudi)."""
    df = with_costs(estimates, prices).select("gpu", "tp", "agg_tok_s", "usd_per_gpu_hr").filter(pl.col("agg_tok_s") > 0)
    return _fleet(df, (target_tok_s / pl.col("agg_tok_s")).ceil(), gpus).with_columns(
        gpu_count=pl.col("replicas") * pl.col("tp")
    ).select("gpu", "tp", "replicas", "gpu_count", "agg_tok_s", "usd_per_hr", "usd_per_mtok", "not_deployable_reason")
