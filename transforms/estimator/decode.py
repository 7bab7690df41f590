"""Decode: the seconds of one step, its weight and KV reads and its FLOPs, and how the measured method turns them into
time (efficiencies, the group's scaling, the fixed seconds of a pass, pipeline hops between nodes)."""

import polars as pl

from transforms import engines
from transforms.estimator.memory import _kv_term
from transforms.presets import Params


def _step_seconds(params: Params, streams: pl.Expr | None, verified: float = 1.0) -> tuple[pl.Expr, pl.Expr]:
    """(memory time, compute time) of one decode step serving `streams` streams (None: one stream), each computing
    `verified` tokens (speculative decoding: the token and the drafts it checks, `verified_tokens`): the weights and
    each stream's KV are read once a step, the FLOPs and the experts' coverage are the tokens'."""
    # The serving model reads the always-read weights once per data-parallel attention rank and each stream's KV once
    # per copy the group holds (_serving_layout); the reference methods read both once. A recurrent state splits by
    # head like the weights: one copy, moved state_passes times a step (the serving model reads it and writes it back).
    dense = pl.col("_dense_b") * pl.col("_dense_copies") if params.serving_model else pl.col("_dense_b")
    kv_read_gb = pl.col("_kv_read_gb") * pl.col("_kv_copies") + params.state_passes * pl.col("_state_gb")
    if not params.expert_coverage:
        read_b = pl.col("active_params_b")
    else:
        read_b = dense + pl.col("_expert_b") * _coverage(_tokens(streams, verified))
    count = pl.lit(1.0) if streams is None else streams
    t_mem = (read_b * pl.col("_bytes") + _kv_term(params.kv_read_factor, count * kv_read_gb)) / pl.col("_mem_gbs")
    if not (params.decode_flops_per_param or params.attention_flops_factor):
        return t_mem, pl.lit(0.0)  # no decode compute counted: a part without a compute figure still decodes
    return t_mem, count * verified * pl.col("_token_flops") / pl.col("_flops_per_s")


def _tokens(streams: pl.Expr | None, verified: float) -> pl.Expr | None:
    """The tokens one step computes: `verified` per stream (None: one stream's single token)."""
    if verified == 1.0:
        return streams
    return (pl.lit(1.0) if streams is None else streams) * verified


def _coverage(tokens: pl.Expr | None) -> pl.Expr:
    """The share of the routed experts that `tokens` tokens of one step touch (None: one token's share)."""
    return pl.col("_route_p") if tokens is None else 1 - (tokens * pl.col("_log_keep")).exp()


def _expert_seconds(params: Params, streams: pl.Expr | None, verified: float = 1.0) -> tuple[pl.Expr, pl.Expr]:
    """(memory time, compute time) of a decode step's routed experts alone: the share of _step_seconds' terms the
    grouped expert matmuls take (serving model)."""
    tokens = _tokens(streams, verified)
    coverage = _coverage(tokens)
    count = pl.lit(1.0) if tokens is None else tokens
    return (pl.col("_expert_b") * coverage * pl.col("_bytes") / pl.col("_mem_gbs"),
            count * params.decode_flops_per_param * pl.col("_expert_b") * pl.col("_route_p") * 1e9 / pl.col("_flops_per_s"))


# Bytes per value of the activations a tensor-parallel group all-reduces: BF16, the engines' default (TensorRT-LLM's
# and vLLM's all-reduce of the layer's output, in the activations' dtype, whatever the weights' precision).
ALLREDUCE_BYTES = 2.0


def _link_seconds(tokens: pl.Expr) -> pl.Expr:
    """Seconds, at the link's full rate, of the all-reduces of one forward pass over `tokens` tokens (serving model).

    A tensor-parallel layer ends its attention and its MLP (a mixture of experts' too, whether the experts split by
    tensor or by expert parallelism: each GPU's partial outputs are summed) with an all-reduce of every token's
    hidden vector; with data-parallel attention the attention needs none, and the gather before the experts and the
    scatter after move one all-reduce's bytes. A ring all-reduce of w GPUs sends and receives 2(w-1)/w of the data per
    GPU over its link (link_gbs per direction). A group run as pipeline stages all-reduces within each stage's
    tp/stages GPUs over its layers/stages layers, the stages working at once on different streams; a stage boundary's
    send is one token's vector, not charged. No term where the catalogue states no link (NULL) or a stage is one GPU."""
    collectives = pl.when(pl.col("attention_dp") > 1).then(1.0).otherwise(2.0)
    stages = pl.col("pipeline_stages").fill_null(1)
    width = pl.col("tp") / stages
    ring = 2 * (width - 1) / width
    gb = collectives * pl.col("_layers") / stages * tokens * pl.col("_hidden") * ALLREDUCE_BYTES * ring * 1e-9
    return (gb / pl.col("link_gbs")).fill_null(0.0)


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
                 x_cmp=0.0, log2_dp=0.0, t_link=0.0):
    """Seconds of one decode step (numbers, polars Series or Exprs alike): reads at the bandwidth efficiency and FLOPs at
    the precision's compute efficiency, the routed experts' share of both (x_mem, x_cmp) slower by the grouped expert
    matmuls' efficiency, added or overlapped (step_time), slowed by the group's scale, then the all-reduces' bytes
    over the link (t_link at the link's full rate, at link_efficiency of it: a layer's all-reduce sits between its
    output and the next layer's input, so it adds to the pass rather than hiding under it); the host's work for the
    requests one scheduler runs overlaps that (the engines prepare the next step while the GPUs run this one); plus a
    fixed overhead per step, a collective's latency per doubling of the group and, with data-parallel attention, the
    gather of the ranks' tokens before the experts and their scatter after, per doubling of the ranks (log2_dp)."""
    scale = group_scale(log2_tp, vendor_eff, params)
    slower = 1 / params.moe_compute_efficiency - 1
    reads, flops = (t_mem + x_mem * slower) / params.bandwidth_efficiency, (t_cmp + x_cmp * slower) / compute_eff
    gpus = _overlap(reads, flops, params) / scale + t_link / params.link_efficiency
    return _larger(gpus, params.request_overhead_s * requests_per_rank) + pass_seconds(log2_tp, log2_dp, params)


def _overlap(reads, flops, params: Params):
    """A pass's reads and FLOPs added (step_time 'sum') or overlapped ('max'; numbers, Series or Exprs alike): the
    longer of the two, plus the share overlap_loss of the shorter that does not hide under it (kernels between the
    memory-bound and the compute-bound regime reach neither roofline)."""
    if params.step_time == "sum":
        return reads + flops
    longer = _larger(reads, flops)
    return longer + params.overlap_loss * (reads + flops - longer)


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
