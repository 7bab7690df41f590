"""The replica's layout: its GPUs (tp), for the measured method its data-parallel attention ranks and what each GPU
holds and reads, the memory it uses and the streams it holds (and batches at max load)."""

import polars as pl

from transforms import stack
from transforms.estimator.grid import EstimatorError
from transforms.estimator.memory import MAX_STREAMS, _fixed_gb, _pow2_at_least, _replica_gb
from transforms.presets import Params


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
