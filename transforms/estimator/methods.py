"""The methods' throughput from the terms: the reference methods' steady decode, and the measured method's whole
requests with its fitted efficiencies."""

import polars as pl

from transforms.estimator.decode import (
    _combine,
    _step_seconds,
    efficiencies,
    group_scale,
    pipeline_seconds,
    step_seconds,
)
from transforms.estimator.prefill import request_tok_s
from transforms.estimator.terms import _serving_terms
from transforms.presets import Params


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


def _serving_throughput(df: pl.LazyFrame, params: Params) -> pl.LazyFrame:
    """The measured method: whole requests (prefill amortised over the answer), efficiencies fitted to benchmarks."""
    df = _serving_terms(df, params)
    compute_eff, vendor_eff = efficiencies(pl.col("_compute_precision"), pl.col("_vendor"), params)
    log2_tp = pl.col("_log2_tp")
    tp, streams = pl.col("tp"), pl.col("streams")
    step = (step_seconds(pl.col("_t_mem"), pl.col("_t_cmp"), log2_tp, compute_eff, vendor_eff, params,
                         pl.col("_requests_per_rank"), pl.col("_x_mem"), pl.col("_x_cmp"), pl.col("_log2_dp"),
                         pl.col("_t_link"))
            + pipeline_seconds(tp, streams, params))
    step1 = (step_seconds(pl.col("_t_mem1"), pl.col("_t_cmp1"), log2_tp, compute_eff, vendor_eff, params, 1.0,
                          pl.col("_x_mem1"), pl.col("_x_cmp1"), pl.col("_log2_dp"), pl.col("_t_link1"))
             + pipeline_seconds(tp, 1, params))
    scale = group_scale(log2_tp, vendor_eff, params)
    # speculative decoding: a step keeps tokens_per_step tokens per stream (its own and the drafts accepted)
    kept = params.tokens_per_step
    return df.with_columns(
        single_stream_tok_s=kept / step1,
        per_stream_tok_s=kept / step,
        agg_tok_s=request_tok_s(step / kept, pl.col("_t_prefill"), pl.col("streams"), pl.col("output_tokens"), log2_tp,
                                vendor_eff, params, pl.col("_x_prefill"), pl.col("_log2_dp"),
                                pl.col("_t_pass_read"), pl.col("_t_link_prefill")),
        prefill_tok_s=params.prefill_mfu * scale * pl.col("_flops_per_s") / pl.col("_prefill_flops"),
        _t_mem=pl.col("_t_mem") / params.bandwidth_efficiency,
        _t_cmp=pl.col("_t_cmp") / compute_eff,
    ).with_columns(bound=_bound())
