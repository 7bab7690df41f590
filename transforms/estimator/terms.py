"""Per grid row, the terms every method combines: the catalogue's fields, the request's lengths, the layout's
memory and copies, and the decode and prefill seconds before the method's efficiencies."""

import polars as pl

from transforms import stack
from transforms.estimator.catalogue import _attached, _gpu_table, _model_table
from transforms.estimator.decode import _coverage, _expert_seconds, _link_seconds, _step_seconds, _token_flops
from transforms.estimator.grid import NAME_COLUMNS, EstimatorError, _checked_grid
from transforms.estimator.layout import _reference_layout, _serving_layout
from transforms.estimator.memory import QUANTIZED, _precision_expr
from transforms.estimator.prefill import FLOPS_PER_PARAM
from transforms.presets import PEAK_COLUMN, PRECISIONS, Params


def _compute_columns(params: Params) -> dict[str, pl.Expr]:
    """The tensor peak each row computes at (its precision's when the part has one, else BF16) and its doubt."""
    peak, doubt = pl.col("bf16_tflops"), pl.col("_doubt_bf16_tflops")
    if params.compute_at_precision:
        for precision, column in PEAK_COLUMN.items():
            has = (pl.col("precision") == precision) & pl.col(column).is_not_null()
            peak = pl.when(has).then(pl.col(column)).otherwise(peak)
            doubt = pl.when(has).then(pl.col(f"_doubt_{column}")).otherwise(doubt)
    return {"compute_tflops": peak, "_doubt_compute": doubt}


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
        "_requests_per_rank", "_log2_dp", "_t_pass_read", "_t_link", "_t_link1", "_t_link_prefill",
    ).collect(engine="streaming")


def _serving_terms(df: pl.LazyFrame, params: Params) -> pl.LazyFrame:
    """The serving model's terms at full efficiency on one replica of `tp` GPUs: seconds of weight and KV reads
    per decode step (_t_mem, _t_mem1 at one stream), of decode FLOPs per step (_t_cmp, _t_cmp1) and of prefill
    FLOPs per request (_t_prefill), of the tensor-parallel all-reduces' bytes over the link per decode step and per
    request's prefill (_t_link, _t_link1, _t_link_prefill); the calibration fits the efficiencies that scale them.

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
    # speculative decoding: a step computes each stream's token and the drafts it checks (params.verified_tokens)
    verified = params.verified_tokens
    t_mem, t_cmp = _step_seconds(params, pl.col("streams"), verified)
    t_mem1, t_cmp1 = _step_seconds(params, None, verified)
    x_mem, x_cmp = _expert_seconds(params, pl.col("streams"), verified)
    x_mem1, x_cmp1 = _expert_seconds(params, None, verified)
    return df.with_columns(
        _t_mem=t_mem, _t_cmp=t_cmp, _t_mem1=t_mem1, _t_cmp1=t_cmp1,
        _x_mem=x_mem, _x_cmp=x_cmp, _x_mem1=x_mem1, _x_cmp1=x_cmp1,
        _t_prefill=pl.col("input_tokens") * pl.col("_prefill_flops") / pl.col("_flops_per_s"),
        _x_prefill=pl.col("input_tokens") * FLOPS_PER_PARAM * pl.col("_expert_b") * pl.col("_route_p") * 1e9
        / pl.col("_flops_per_s"),
        _requests_per_rank=pl.col("streams") / pl.col("attention_dp"),
        _t_link=_link_seconds(pl.col("streams") * verified),
        _t_link1=_link_seconds(pl.lit(verified)),
        _t_link_prefill=_link_seconds(pl.col("input_tokens")),
        # a prefill pass reads the always-read weights per copy and the experts its prompt's tokens touch
        _t_pass_read=(pl.col("_dense_b") * pl.col("_dense_copies")
                      + pl.col("_expert_b") * _coverage(pl.col("input_tokens").clip(lower_bound=1)))
        * pl.col("_bytes") / pl.col("_mem_gbs"),
    )
