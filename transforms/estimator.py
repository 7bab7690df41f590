"""Roofline LLM-inference estimator: pure polars over a whole grid (models x GPUs x precisions x contexts x streams).

Frames in, frames out: the catalogues come in as frames (warehouse tables or `catalog.read_all()`), nothing is
read or written here. The formulas and both reference pages are described in transforms/presets.py and the
README section on the estimator.
"""

import polars as pl

from transforms.presets import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_STREAMS,
    PEAK_COLUMN,
    Params,
    normalise_precision,
)

ESTIMATOR_VERSION = "1.0.0"
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
    "prefill_tok_s", "bound", "power_kw", "uncertain", "compute_tflops", "fp4_estimated",
)
GRID_SCHEMA = {
    "model": pl.String, "gpu": pl.String, "precision": pl.String,
    "context_tokens": pl.Int64, "streams": pl.Int64, "tp": pl.Int64,
}


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
    """Every combination of the given names and settings, as `estimate` takes it (precision None: the preset's rule)."""
    dims = [
        pl.DataFrame({"model": list(models)}, schema={"model": pl.String}),
        pl.DataFrame({"gpu": list(gpus)}, schema={"gpu": pl.String}),
        pl.DataFrame({"precision": list(precisions)}, schema={"precision": pl.String}),
        pl.DataFrame({"context_tokens": list(contexts)}, schema={"context_tokens": pl.Int64}),
        pl.DataFrame({"streams": list(streams)}, schema={"streams": pl.Int64}),
    ]
    grid = dims[0]
    for dim in dims[1:]:
        grid = grid.join(dim, how="cross")
    return grid.with_columns(tp=pl.lit(None, dtype=pl.Int64))


def _checked_grid(grid: pl.DataFrame, models: pl.DataFrame, gpus: pl.DataFrame) -> pl.DataFrame:
    grid = grid.with_columns(
        pl.lit(None, dtype=dtype).alias(name) for name, dtype in GRID_SCHEMA.items() if name not in grid.columns
    ).select(pl.col(name).cast(dtype) for name, dtype in GRID_SCHEMA.items())
    for column, known, what in (("model", models["model_id"], "model"), ("gpu", gpus["name"], "GPU")):
        unknown = set(grid[column].unique().to_list()) - set(known.to_list())
        if unknown:
            raise EstimatorError(f"unknown {what} {', '.join(sorted(map(str, unknown)))}: not in the catalogue")
    for column, top in (("context_tokens", CONTEXT_TOKENS_MAX), ("streams", STREAMS_MAX)):
        bad = grid.filter(~pl.col(column).is_between(1, top))
        if bad.height:
            raise EstimatorError(f"{column} must be between 1 and {top}, not {bad[column][0]}")
    bad_tp = grid.filter(pl.col("tp") < 1)
    if bad_tp.height:
        raise EstimatorError(f"tp must be at least 1, not {bad_tp['tp'][0]}")
    spellings = grid["precision"].drop_nulls().unique().to_list()
    return grid.with_columns(
        pl.col("precision").replace_strict({s: normalise_precision(s) for s in spellings}, default=None)
    )


def _pow2_at_least(n: pl.Expr) -> pl.Expr:
    # The epsilon keeps log2 of an exact power of two from rounding up a size.
    return pl.lit(2.0).pow((n.log(2) - 1e-9).ceil().clip(lower_bound=0)).cast(pl.Int64)


def _field_doubts(text: pl.Expr, field: str) -> pl.Expr:
    known = {w for words in UNCERTAIN_WORDS.values() for w in words} | {"all"}
    words = "|".join(("all", *UNCERTAIN_WORDS[field]))
    named = text.str.contains(rf"\b({words})\b")
    unexplained = (text.str.len_chars() > 0) & ~text.str.contains(rf"\b({'|'.join(sorted(known))})\b")
    return named | unexplained


def _precision_expr(params: Params) -> pl.Expr:
    """The precision each row runs at: the grid's, else the preset's rule."""
    if params.precision_rule == "native":
        rule = pl.col("native_precision").str.to_lowercase().replace(
            {k: normalise_precision(k) for k in ("fp16", "fp4", "mxfp4")}
        )
    else:
        rule = pl.lit(params.ladder[-1])
        for precision in reversed(params.ladder[:-1]):
            need_gb = _fixed_gb(params, pl.lit(params.bytes_per_param[precision])) + params.gpu_overhead_gb * params.node_gpus
            rule = pl.when(need_gb <= params.node_gpus * pl.col("memory_gb")).then(pl.lit(precision)).otherwise(rule)
    return pl.coalesce(pl.col("precision"), rule)


def _kv_term(factor: float, expr: pl.Expr) -> pl.Expr:
    # A zero factor means "not modelled": it must not turn a missing KV size into a missing result.
    return pl.lit(0.0) if factor == 0 else factor * expr


def _kv_gb(streams: pl.Expr) -> pl.Expr:
    """KV cache of `streams` streams at the row's context."""
    return streams * pl.col("context_tokens") * pl.col("kv_bytes_per_token") * 1e-9


def _replica_gb(params: Params, bytes_per_param: pl.Expr) -> pl.Expr:
    """Memory a replica needs before its streams' KV cache and per-GPU overhead: weights and runtime."""
    return pl.col("total_params_b") * bytes_per_param * params.weights_memory_factor + params.runtime_gb


def _fixed_gb(params: Params, bytes_per_param: pl.Expr) -> pl.Expr:
    """Memory a replica needs apart from the per-GPU overhead: weights, runtime and the streams' KV cache."""
    return _replica_gb(params, bytes_per_param) + _kv_term(params.kv_memory_factor, _kv_gb(pl.col("streams")))


def _step_seconds(params: Params, streams: pl.Expr | int) -> tuple[pl.Expr, pl.Expr]:
    """(memory time, compute time) of one decode step serving `streams` streams."""
    streams = pl.lit(streams) if isinstance(streams, int) else streams
    if params.expert_coverage:
        read_params_b = pl.col("_dense_b") + pl.col("_expert_b") * (1 - (1 - pl.col("_route_p")).pow(streams))
    else:
        read_params_b = pl.col("active_params_b")
    kv_gb = _kv_term(params.kv_read_factor, _kv_gb(streams))
    group = pl.col("tp") * pl.col("_tp_eff")
    t_mem = (read_params_b * pl.col("_bytes") + kv_gb) / (params.bandwidth_efficiency * pl.col("bandwidth_gbs") * group)
    flops = pl.lit(0.0)
    if params.decode_flops_per_param:
        flops = flops + params.decode_flops_per_param * pl.col("active_params_b") * 1e9
    if params.attention_flops_factor:
        context = (pl.col("context_tokens") - params.attention_context_offset).clip(lower_bound=0)
        flops = flops + params.attention_flops_factor * context * pl.col("attn_flops_per_ctx_token")
    if not (params.decode_flops_per_param or params.attention_flops_factor):
        return t_mem, pl.lit(0.0)
    t_cmp = streams * flops / (params.compute_efficiency * pl.col("compute_tflops") * 1e12 * group)
    return t_mem, t_cmp


def _combine(params: Params, t_mem: pl.Expr, t_cmp: pl.Expr) -> pl.Expr:
    return t_mem + t_cmp if params.step_time == "sum" else pl.max_horizontal(t_mem, t_cmp)


def _model_doubt(params: Params) -> pl.Expr:
    used = ["total_params_b", "active_params_b"]
    used += ["active_params_in_b"] if params.prefill_active == "input" else []
    used += ["experts", "experts_per_token"] if params.expert_coverage else []
    used += ["kv_bytes_per_token"] if params.kv_memory_factor or params.kv_read_factor else []
    used += ["attn_flops_per_ctx_token"] if params.attention_flops_factor or params.prefill_attention_factor else []
    return pl.col("model_uncertain").fill_null("").str.contains(rf"\b({'|'.join(used)})\b")


def estimate(models: pl.DataFrame, gpus: pl.DataFrame, grid: pl.DataFrame, params: Params) -> pl.DataFrame:
    """One row per grid row: sizing, memory, decode and prefill throughput, power, and whether inputs are uncertain.

    `gpus` should come through `apply_overlay` for the preset; `grid` has model, gpu, precision (None: the preset's
    rule), context_tokens, streams and optionally tp (None: the smallest group that holds the model).
    """
    grid = _checked_grid(grid, models, gpus)
    if "overlay_fields" not in gpus.columns:
        gpus = apply_overlay(gpus, pl.DataFrame(schema={"preset": pl.String, "gpu": pl.String}), "")
    model_cols = models.select(
        pl.col("model_id").alias("model"), "arch", "total_params_b", "active_params_b", "active_params_in_b",
        "experts", "experts_per_token", "kv_bytes_per_token", "attn_flops_per_ctx_token", "native_precision",
        pl.col("uncertain").alias("model_uncertain"),
    )
    gpu_cols = gpus.select(
        pl.col("name").alias("gpu"), *SPEC_FIELDS, "fabric", "solved_from_page", "overlay_fields",
        "fp4_page_estimate", pl.col("uncertain").fill_null("").str.to_lowercase().alias("gpu_uncertain"),
    )
    df = grid.join(model_cols, on="model", how="left", maintain_order="left").join(
        gpu_cols, on="gpu", how="left", maintain_order="left"
    )
    routed = (pl.col("arch") == "moe") & pl.col("experts").is_not_null() & pl.col("experts_per_token").is_not_null()
    df = df.with_columns(precision=_precision_expr(params)).with_columns(
        _bytes=pl.col("precision").replace_strict(params.bytes_per_param, return_dtype=pl.Float64),
        # Expected expert coverage: a MoE without routing geometry is read as if every weight were an expert.
        _route_p=pl.when(routed).then(pl.col("experts_per_token") / pl.col("experts"))
        .when(pl.col("arch") == "moe").then(pl.col("active_params_b") / pl.col("total_params_b"))
        .otherwise(0.0),
    )
    peak = pl.lit(None, dtype=pl.Float64)
    source = pl.lit(None, dtype=pl.String)
    if params.compute_at_precision:
        for precision, column in PEAK_COLUMN.items():
            has = (pl.col("precision") == precision) & pl.col(column).is_not_null()
            peak = pl.when(has).then(pl.col(column)).otherwise(peak)
            source = pl.when(has).then(pl.lit(column)).otherwise(source)
    df = df.with_columns(
        _fixed_gb=_fixed_gb(params, pl.col("_bytes")),
        _dense_b=pl.when(routed)
        .then((pl.col("active_params_b") - pl.col("_route_p") * pl.col("total_params_b")) / (1 - pl.col("_route_p")))
        .when(pl.col("arch") == "moe").then(0.0)
        .otherwise(pl.col("total_params_b")),
        compute_tflops=pl.coalesce(peak, pl.col("bf16_tflops")),
        _compute_field=pl.coalesce(source, pl.lit("bf16_tflops")),
    ).with_columns(
        _expert_b=pl.col("total_params_b") - pl.col("_dense_b"),
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
    per_stream_gb = params.kv_memory_factor * _kv_gb(pl.lit(1))
    penalty = pl.when((pl.col("fabric") == "PCIe") & (pl.col("tp") > 1)).then(params.pcie_penalty).otherwise(1.0)
    df = df.with_columns(
        memory_used_gb=pl.col("_fixed_gb") + params.gpu_overhead_gb * pl.col("tp"),
        max_streams=None if params.kv_memory_factor == 0 else (fill_gb / per_stream_gb).floor().clip(lower_bound=0),
        multi_node=pl.col("tp") > params.node_gpus,
        power_kw=pl.col("tp") * pl.col("tdp_w") / 1000,
        _tp_eff=(1 - params.tp_derate * pl.col("tp").log(2)).clip(lower_bound=params.tp_efficiency_floor),
        _penalty=penalty,
    )
    t_mem, t_cmp = _step_seconds(params, pl.col("streams"))
    single = 1 / _combine(params, *_step_seconds(params, 1))
    prefill_params_b = (
        pl.coalesce("active_params_in_b", "active_params_b") if params.prefill_active == "input" else pl.col("active_params_b")
    )
    prefill_flops = FLOPS_PER_PARAM * prefill_params_b * 1e9
    if params.prefill_attention_factor:
        prefill_flops = prefill_flops + params.prefill_attention_factor * pl.col("attn_flops_per_ctx_token") * pl.col(
            "context_tokens"
        ) / 2
    doubts = {f: pl.col("solved_from_page") | _field_doubts(pl.col("gpu_uncertain"), f)
              | pl.col("overlay_fields").list.contains(f) for f in SPEC_FIELDS}
    compute_doubt = pl.lit(False)
    for field in COMPUTE_FIELDS:
        compute_doubt = pl.when(pl.col("_compute_field") == field).then(doubts[field]).otherwise(compute_doubt)
    df = df.with_columns(
        _t_mem=t_mem,
        _t_cmp=t_cmp,
        _single=single,
    ).with_columns(
        memory_used_pct=100 * pl.col("memory_used_gb") / (pl.col("tp") * pl.col("memory_gb")),
        single_stream_tok_s=pl.col("_single"),
        per_stream_tok_s=1 / pl.col("_t_mem"),
        agg_tok_s=pl.min_horizontal(
            pl.col("streams") / _combine(params, pl.col("_t_mem"), pl.col("_t_cmp")),
            params.batch_gain_max * pl.col("_single"),
        ) * pl.col("_penalty"),
        prefill_tok_s=params.prefill_mfu * pl.col("compute_tflops") * 1e12 * pl.col("tp") * pl.col("_tp_eff") / prefill_flops
        * pl.col("_penalty"),
        bound=pl.when(pl.col("_t_cmp") > pl.col("_t_mem")).then(pl.lit("compute"))
        .when(pl.col("_t_cmp").is_not_null() & pl.col("_t_mem").is_not_null()).then(pl.lit("memory")),
        uncertain=doubts["memory_gb"] | doubts["bandwidth_gbs"] | compute_doubt
        | (doubts["tdp_w"] & pl.col("tdp_w").is_not_null()) | _model_doubt(params),
        fp4_estimated=pl.lit(params.compute_at_precision) & (pl.col("precision") == "int4")
        & (pl.col("fp4_tflops").is_null() | pl.col("fp4_page_estimate")),
        method=pl.lit(params.name),
        estimator_version=pl.lit(ESTIMATOR_VERSION),
    )
    return df.with_columns(pl.col("max_streams").cast(pl.Int64)).select(OUTPUT_COLUMNS)


def curve(
    models: pl.DataFrame,
    gpus: pl.DataFrame,
    model: str,
    gpu: str,
    precision: str | None,
    context_tokens: int,
    params: Params,
    points: int = 24,
) -> pl.DataFrame:
    """Throughput against concurrent streams for one replica (sized for one stream), from 1 stream to where memory
    fills (or STREAMS_MAX when the method does not model KV memory): it climbs while bandwidth binds and bends
    where compute does."""
    base = estimate(models, gpus, make_grid([model], [gpu], [precision], [context_tokens], [1]), params)
    tp, fills = base["tp"][0], base["max_streams"][0]
    top = STREAMS_MAX if fills is None else min(fills, STREAMS_MAX)
    streams = sorted({1, top} | {round(top ** (i / (points - 1))) for i in range(points)}) if tp and top else []
    grid = make_grid([model], [gpu], base["precision"].to_list(), [context_tokens], streams)
    return estimate(models, gpus, grid.with_columns(tp=pl.lit(tp, dtype=pl.Int64)), params).select(
        "streams", "tp", "agg_tok_s", "per_stream_tok_s", "bound", "memory_used_pct", "max_streams"
    )


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


def _fleet(df: pl.DataFrame, replicas: pl.Expr) -> pl.DataFrame:
    """Replicas of each row's estimate: tokens/s, $/hr and $/M of the whole fleet."""
    return df.with_columns(replicas=replicas.cast(pl.Int64)).with_columns(
        agg_tok_s=pl.col("replicas") * pl.col("agg_tok_s"),
        usd_per_hr=pl.col("replicas") * pl.col("tp") * pl.col("usd_per_gpu_hr"),
    ).with_columns(usd_per_mtok=usd_per_mtok(pl.col("usd_per_hr"), pl.col("agg_tok_s")))


def fleet_whatif(estimates: pl.DataFrame, fleets: pl.DataFrame, prices: pl.DataFrame) -> pl.DataFrame:
    """Page 001's fleet what-if for fleets (gpu, gpu_count): replicas of the estimate's TP, idle GPUs, tokens/s,
    $/hr (replicas priced), power (every GPU at TDP) and $/M."""
    df = fleets.select("gpu", "gpu_count").join(
        with_costs(estimates, prices).select("gpu", "tp", "agg_tok_s", "power_kw", "usd_per_gpu_hr"),
        on="gpu", how="left", maintain_order="left",
    )
    return _fleet(df, pl.col("gpu_count") // pl.col("tp")).with_columns(
        idle_gpus=pl.col("gpu_count") % pl.col("tp"),
        power_kw=pl.col("gpu_count") * pl.col("power_kw") / pl.col("tp"),
    ).select("gpu", "gpu_count", "tp", "replicas", "idle_gpus", "agg_tok_s", "usd_per_hr", "power_kw", "usd_per_mtok")


def size_for_target(estimates: pl.DataFrame, target_tok_s: float, prices: pl.DataFrame) -> pl.DataFrame:
    """Page 001's "size for a tokens/s target": per GPU, replicas = ceil(target / aggregate), their GPUs and price."""
    df = with_costs(estimates, prices).select("gpu", "tp", "agg_tok_s", "usd_per_gpu_hr")
    return _fleet(df, (target_tok_s / pl.col("agg_tok_s")).ceil()).with_columns(
        gpu_count=pl.col("replicas") * pl.col("tp")
    ).select("gpu", "tp", "replicas", "gpu_count", "agg_tok_s", "usd_per_hr", "usd_per_mtok")
