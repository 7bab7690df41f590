"""The measured method's physics terms and its calibration against benchmark throughput.

Every check here runs in `make test` and takes seconds: the physics on small known cases, the import's bookkeeping,
the fit on a small sample (a synthetic recovery, converged) and the folds' bookkeeping (fits bounded to a few
iterations: what they test is which rows each fit sees, not the fitted values). The two checks that need the full fit
and both full cross-validations, minutes by nature, live in test_calibration_acceptance.py and run in
`make check-calibration` (a CI step of their own, after `make test`).
"""

import dataclasses
import hashlib
import json

import polars as pl
import pytest

from bench import calibration_import
from transforms import calibration, estimator, presets
from transforms.presets import MEASURED, MEASURED_BASE
from warehouse.catalog import REFERENCE_DIR

MEASUREMENTS = REFERENCE_DIR / "calibration" / "measurements.csv"
# No efficiency losses at all: the terms are then pure physics (seconds at the parts' peaks).
IDEAL = dataclasses.replace(
    MEASURED_BASE, bandwidth_efficiency=1.0, compute_efficiency=1.0, compute_efficiency_fp8=1.0,
    compute_efficiency_int4=1.0, moe_compute_efficiency=1.0, prefill_mfu=1.0, tp_derate=0.0, step_overhead_s=0.0,
    request_overhead_s=0.0, tp_comm_s=0.0, step_time="sum", overlap_loss=0.0,
)
QUICK = 40  # Nelder-Mead iterations of a fit whose values a test does not look at


@pytest.fixture(scope="module")
def gpus(frames) -> pl.DataFrame:
    return estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], "measured")


def terms(models, gpus, model="llama-3.1-8b", gpu="H100 SXM5 80GB", precision="bf16", prompt=1000, answer=1000,
          streams=1, tp=1, params=IDEAL, **grid_columns) -> dict:
    grid = estimator.make_grid([model], [gpu], [precision], [prompt + answer], [streams]).with_columns(
        tp=pl.lit(tp, dtype=pl.Int64), input_tokens=pl.lit(prompt, dtype=pl.Int64),
        output_tokens=pl.lit(answer, dtype=pl.Int64),
        **{k: pl.lit(v, dtype=pl.Int64) for k, v in grid_columns.items()})
    return estimator.serving_terms(models, gpus, grid, params).row(0, named=True)


def spec(frame: pl.DataFrame, key: str, name: str) -> dict:
    return frame.filter(pl.col(key) == name).row(0, named=True)


# Physics terms: known small cases at full efficiency.

def test_decode_compute_counts_two_flops_per_active_parameter_plus_attention_over_the_mean_context(models, gpus):
    llama, h100 = spec(models, "model_id", "llama-3.1-8b"), spec(gpus, "name", "H100 SXM5 80GB")
    t = terms(models, gpus, prompt=1000, answer=1000, streams=4)
    mean_context = 1000 + 1000 / 2
    per_token = 2 * llama["active_params_b"] * 1e9 + llama["attn_flops_per_ctx_token"] * mean_context
    assert t["_t_cmp"] == pytest.approx(4 * per_token / (h100["bf16_tflops"] * 1e12))


def test_a_moe_computes_with_its_active_parameters_only(models, gpus):
    qwen = spec(models, "model_id", "qwen3-30b-a3b")
    t = terms(models, gpus, model="qwen3-30b-a3b", prompt=0, answer=2)  # mean context 1 token
    h100 = spec(gpus, "name", "H100 SXM5 80GB")
    assert t["_t_cmp1"] == pytest.approx(
        (2 * qwen["active_params_b"] * 1e9 + qwen["attn_flops_per_ctx_token"]) / (h100["bf16_tflops"] * 1e12))


def test_prefill_costs_the_prompts_matmuls_and_attention_once_per_request(models, gpus):
    llama, h100 = spec(models, "model_id", "llama-3.1-8b"), spec(gpus, "name", "H100 SXM5 80GB")
    t = terms(models, gpus, prompt=4000, answer=100)
    flops = 4000 * (2 * llama["active_params_b"] * 1e9 + llama["attn_flops_per_ctx_token"] * 4000 / 2)
    assert t["_t_prefill"] == pytest.approx(flops / (h100["bf16_tflops"] * 1e12))


def test_each_step_reads_the_weights_and_every_streams_kv_cache(models, gpus):
    llama, h100 = spec(models, "model_id", "llama-3.1-8b"), spec(gpus, "name", "H100 SXM5 80GB")
    t = terms(models, gpus, prompt=1000, answer=1000, streams=8)
    read = llama["total_params_b"] * 2 + 8 * 1500 * llama["kv_bytes_per_token"] * 1e-9
    assert t["_t_mem"] == pytest.approx(read / h100["bandwidth_gbs"])
    fp8 = terms(models, gpus, precision="fp8", prompt=1000, answer=1000, streams=8)
    assert fp8["_t_mem"] == pytest.approx((read - llama["total_params_b"] - read / 2 + llama["total_params_b"])
                                          / h100["bandwidth_gbs"])  # FP8 weights and an FP8 KV cache: half the bytes


def test_a_latent_kv_cache_is_read_whole_by_every_tensor_parallel_gpu_and_once_with_data_parallel_attention(
        models, gpus):
    r1, h200 = spec(models, "model_id", "deepseek-r1"), spec(gpus, "name", "H200 SXM")
    # 2,000 and 3,000 streams touch every expert (1 - 8/256)^2000 ~ 1e-28): only the streams' KV reads differ
    def kv_seconds_of_1000_more_streams(attention_dp: int) -> float:
        at = [terms(models, gpus, "deepseek-r1", "H200 SXM", "fp8", streams=s, tp=8, attention_dp=attention_dp)["_t_mem"]
              for s in (2000, 3000)]
        return at[1] - at[0]
    one_stream_gb = 1500 * r1["kv_bytes_per_token"] / 2 * 1e-9  # FP8 KV at the mean context
    assert kv_seconds_of_1000_more_streams(8) == pytest.approx(1000 * one_stream_gb / (8 * h200["bandwidth_gbs"]))
    assert kv_seconds_of_1000_more_streams(1) == pytest.approx(8 * kv_seconds_of_1000_more_streams(8))
    # a GQA model's KV heads split over the group: the same reads whatever the attention split
    gqa = [terms(models, gpus, "llama-3.3-70b", "H200 SXM", "fp8", streams=64, tp=8, attention_dp=dp)
           for dp in (1, 8)]
    kv = 64 * 1500 * spec(models, "model_id", "llama-3.3-70b")["kv_bytes_per_token"] / 2 * 1e-9
    assert gqa[1]["_t_mem"] - gqa[0]["_t_mem"] == pytest.approx(
        7 * spec(models, "model_id", "llama-3.3-70b")["total_params_b"] / (8 * h200["bandwidth_gbs"]))
    assert gqa[0]["_t_mem"] == pytest.approx((70.55 + kv) / (8 * h200["bandwidth_gbs"]))


def test_data_parallel_attention_reads_the_always_read_weights_once_per_rank(models, gpus):
    tp_ranks = terms(models, gpus, "deepseek-r1", "H200 SXM", "fp8", streams=2000, tp=8, attention_dp=1)
    dp_ranks = terms(models, gpus, "deepseek-r1", "H200 SXM", "fp8", streams=2000, tp=8, attention_dp=8)
    r1, h200 = spec(models, "model_id", "deepseek-r1"), spec(gpus, "name", "H200 SXM")
    kv = 2000 * 1500 * r1["kv_bytes_per_token"] / 2 * 1e-9
    experts = tp_ranks["_x_mem"] * 8 * h200["bandwidth_gbs"]  # GB of routed experts read (every one at 2,000 streams)
    assert dp_ranks["_x_mem"] == pytest.approx(tp_ranks["_x_mem"])
    dense = {n: t["_t_mem"] * 8 * h200["bandwidth_gbs"] - experts for n, t in (("tp", tp_ranks), ("dp", dp_ranks))}
    assert dense["dp"] - kv == pytest.approx(8 * (dense["tp"] - 8 * kv))
    # the always-read weights: active parameters less the routed experts' share, at one byte (FP8)
    assert dense["tp"] - 8 * kv == pytest.approx(r1["total_params_b"] - experts, rel=1e-9)


def test_at_max_load_the_batch_is_what_memory_holds_up_to_the_engine_limit_per_rank(models, gpus):
    def max_load(model, gpu, precision, tp, **columns) -> dict:
        grid = estimator.make_grid([model], [gpu], [precision], [2000], [1]).with_columns(
            streams=pl.lit(None, dtype=pl.Int64), tp=pl.lit(tp, dtype=pl.Int64), input_tokens=pl.lit(1000),
            output_tokens=pl.lit(1000), **{k: pl.lit(v, dtype=pl.Int64) for k, v in columns.items()})
        return estimator.serving_terms(models, gpus, grid, MEASURED).row(0, named=True)
    # a dense model attends tensor-parallel; its batch is what memory holds, at most the engine's limit
    dense = max_load("llama-3.1-8b", "B200 SXM", "int4", 1)
    assert dense["attention_dp"] == 1 and dense["streams"] == min(dense["max_streams"], MEASURED.max_running_requests)
    assert max_load("llama-3.1-8b", "B200 SXM", "int4", 1, max_running_requests=256)["streams"] == 256
    # an MLA mixture of experts on a group runs data-parallel attention: a limit per rank, each rank its own latents
    mla = max_load("deepseek-r1", "B200 SXM", "int4", 8)
    assert mla["attention_dp"] == 8
    assert mla["streams"] == min(mla["max_streams"], 8 * MEASURED.max_running_requests) > estimator.STREAMS_MAX
    tensor_parallel = max_load("deepseek-r1", "B200 SXM", "int4", 8, attention_dp=1)
    assert mla["max_streams"] > 6 * tensor_parallel["max_streams"]  # 8 copies of each latent fewer, less 8 x dense


def test_with_no_group_given_max_load_sizes_the_smallest_group_for_its_layout(models, gpus):
    parts = ["H200 SXM", "Instinct MI300X 192GB"]
    grid = estimator.make_grid(["deepseek-r1"], parts, ["fp8"], [2000], [1]).with_columns(
        streams=pl.lit(None, dtype=pl.Int64))
    out = estimator.serving_terms(models, gpus, grid, MEASURED)
    # every GPU holds the always-read weights whole and its share of the experts, runtime and one stream's latent
    r1 = spec(models, "model_id", "deepseek-r1")
    route = r1["experts_per_token"] / r1["experts"]
    dense_gb = (r1["active_params_b"] - route * r1["total_params_b"]) / (1 - route)
    split_gb = r1["total_params_b"] - dense_gb + MEASURED.runtime_gb + 2000 * r1["kv_bytes_per_token"] / 2 * 1e-9
    smallest = [next(g for g in (1, 2, 4, 8, 16) if g * (spec(gpus, "name", p)["memory_gb"] - MEASURED.gpu_overhead_gb
                                                       - dense_gb) >= split_gb) for p in parts]
    assert out["tp"].to_list() == smallest == [8, 4]
    assert (out["attention_dp"] == out["tp"]).all() and (out["max_streams"] > 0).all()


def test_a_wider_group_splits_reads_and_flops_but_pays_collectives(models, gpus):
    one, four = terms(models, gpus, tp=1), terms(models, gpus, tp=4)
    assert four["_t_mem"] == pytest.approx(one["_t_mem"] / 4) and four["_t_cmp"] == pytest.approx(one["_t_cmp"] / 4)
    params = dataclasses.replace(IDEAL, tp_comm_s=0.001)
    step = [estimator.step_seconds(t["_t_mem"], t["_t_cmp"], t["_log2_tp"], 1.0, 1.0, params) for t in (one, four)]
    assert step[1] == pytest.approx(one["_t_mem"] / 4 + one["_t_cmp"] / 4 + 0.002)


def test_data_parallel_attention_ranks_pay_a_gather_and_scatter_per_doubling(models, gpus):
    one_rank = terms(models, gpus, model="deepseek-r1", gpu="B200 SXM", precision="fp8", tp=8, attention_dp=1)
    four_ranks = terms(models, gpus, model="deepseek-r1", gpu="B200 SXM", precision="fp8", tp=8, attention_dp=4)
    assert (one_rank["_log2_dp"], four_ranks["_log2_dp"]) == (0.0, 2.0)
    params = dataclasses.replace(IDEAL, dp_comm_s=0.001)
    # 4 ranks are two doublings: a 5 ms step pays 2 ms of gathers and scatters
    assert estimator.step_seconds(0.004, 0.001, 0.0, 1.0, 1.0, params, 0.0, 0.0, 0.0, 2.0) == pytest.approx(0.007)
    assert estimator.step_seconds(0.004, 0.001, 0.0, 1.0, 1.0, params) == pytest.approx(0.005)


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_a_recurrent_state_is_kept_in_fp32_and_written_back_every_step(models, gpus, precision):
    """SGLang keeps Qwen3-Next's Gated DeltaNet state in FP32 (mamba_ssm_dtype), with FP8 weights too: twice the
    catalogue's 2 bytes per value, read and written back by every decode step of every stream."""
    stateless = models.filter(pl.col("model_id") == "qwen3-next-80b-a3b").with_columns(
        model_id=pl.lit("stateless"), state_bytes_per_stream=pl.lit(None, dtype=models.schema["state_bytes_per_stream"]))
    pair = pl.concat([models, stateless])
    state_bytes = spec(models, "model_id", "qwen3-next-80b-a3b")["state_bytes_per_stream"]
    h200 = spec(gpus, "name", "H200 SXM")
    with_state, without = (terms(pair, gpus, model=m, gpu="H200 SXM", precision=precision, streams=16, tp=4)
                           for m in ("qwen3-next-80b-a3b", "stateless"))
    moved_gb = 16 * 2 * 2 * state_bytes * 1e-9  # 16 streams x (read + write) x FP32
    assert with_state["_t_mem"] - without["_t_mem"] == pytest.approx(moved_gb / (4 * h200["bandwidth_gbs"]))


def test_a_step_adds_or_overlaps_reads_and_flops():
    added = estimator.step_seconds(0.003, 0.002, 0.0, 1.0, 1.0, IDEAL)
    overlapped = estimator.step_seconds(0.003, 0.002, 0.0, 1.0, 1.0, dataclasses.replace(IDEAL, step_time="max"))
    assert (added, overlapped) == (pytest.approx(0.005), pytest.approx(0.003))
    # overlap_loss: that share of the shorter term (2 ms of FLOPs) does not hide under the longer (3 ms of reads)
    partly = dataclasses.replace(IDEAL, step_time="max", overlap_loss=0.3)
    assert estimator.step_seconds(0.003, 0.002, 0.0, 1.0, 1.0, partly) == pytest.approx(0.003 + 0.3 * 0.002)
    assert estimator.step_seconds(0.002, 0.003, 0.0, 1.0, 1.0, partly) == pytest.approx(0.003 + 0.3 * 0.002)


def test_prefill_is_amortised_over_the_answer():
    # 4 streams, 10 ms steps, 1 s of prefill per request: 4 x 100 tokens in 4 x 1 + 100 x 0.01 = 5 s
    assert estimator.request_tok_s(0.01, 1.0, 4, 100, 0.0, 1.0, IDEAL) == pytest.approx(400 / 5)
    assert estimator.request_tok_s(0.01, 0.0, 4, 100, 0.0, 1.0, IDEAL) == pytest.approx(400)


def test_a_prefill_pass_reads_its_weights_and_pays_a_passs_fixed_seconds_shared_by_the_requests_arriving_together():
    fixed = dataclasses.replace(IDEAL, step_overhead_s=0.002, tp_comm_s=0.001)
    # TP2: a 3 ms pass. 4 streams of 100 tokens: one arrival every 25 steps, each prefill a pass of its own:
    # 4 x 100 tokens in 4 x (1 + 0.003) + 100 x 0.01 s
    assert estimator.request_tok_s(0.01, 1.0, 4, 100, 1.0, 1.0, fixed) == pytest.approx(400 / (4 * 1.003 + 1))
    # 400 streams of 100 tokens: 4 arrivals a step share each prefill pass, its 8 ms of weight reads too
    assert estimator.request_tok_s(0.01, 1.0, 400, 100, 1.0, 1.0, fixed, t_pass_read=0.008) == pytest.approx(
        40_000 / (400 * (1 + 0.008 / 4 + 0.003 / 4) + 1))
    # overlapped (step_time 'max'), a prompt's 2 ms of FLOPs hide under the 8 ms read of its own pass
    overlapped = dataclasses.replace(IDEAL, step_time="max")
    assert estimator.request_tok_s(0.01, 0.002, 4, 100, 0.0, 1.0, overlapped, t_pass_read=0.008) == pytest.approx(
        400 / (4 * 0.008 + 1))


def test_a_prefill_pass_reads_the_always_read_weights_and_the_experts_its_prompt_touches(models, gpus):
    qwen, b200 = spec(models, "model_id", "qwen3-235b-a22b"), spec(gpus, "name", "B200 SXM")
    t = terms(models, gpus, model="qwen3-235b-a22b", gpu="B200 SXM", prompt=1000, tp=8)
    # 1,000 tokens routed to 8 of 128 experts each leave none untouched: the pass reads every weight once
    assert t["_t_pass_read"] == pytest.approx(qwen["total_params_b"] * 2 / (8 * b200["bandwidth_gbs"]), rel=1e-6)
    # a one-token prompt touches its 8 experts: the active weights, as a decode step of one stream reads them
    one = terms(models, gpus, model="qwen3-235b-a22b", gpu="B200 SXM", prompt=1, tp=8)
    assert one["_t_pass_read"] == pytest.approx(qwen["active_params_b"] * 2 / (8 * b200["bandwidth_gbs"]), rel=1e-6)


def test_the_routed_experts_share_of_reads_flops_and_prefill_runs_at_the_grouped_matmuls_efficiency():
    half = dataclasses.replace(IDEAL, moe_compute_efficiency=0.5)
    # 4 ms of reads of which 2 ms experts, 1 ms of FLOPs of which 0.5 ms experts: each expert share counts twice
    assert estimator.step_seconds(0.004, 0.001, 0.0, 1.0, 1.0, half, 0.0, 0.002, 0.0005) == pytest.approx(0.0075)
    assert estimator.step_seconds(0.004, 0.001, 0.0, 1.0, 1.0, IDEAL, 0.0, 0.002, 0.0005) == pytest.approx(0.005)
    # 1 s of prefill of which 0.5 s experts: 1.5 s; 4 x 100 tokens in 4 x 1.5 + 100 x 0.01 = 7 s
    assert estimator.request_tok_s(0.01, 1.0, 4, 100, 0.0, 1.0, half, 0.5) == pytest.approx(400 / 7)


def test_the_hosts_work_per_request_bounds_a_step_it_overlaps():
    host = dataclasses.replace(IDEAL, request_overhead_s=1e-5, step_overhead_s=0.001)
    # 500 requests x 10 us = 5 ms of host work hide a 1.5 ms GPU step; 50 requests' 0.5 ms hide under it
    assert estimator.step_seconds(0.001, 0.0005, 0.0, 1.0, 1.0, host, 500) == pytest.approx(0.006)
    assert estimator.step_seconds(0.001, 0.0005, 0.0, 1.0, 1.0, host, 50) == pytest.approx(0.0025)


@pytest.mark.parametrize(("setting", "base"), [
    ("input_tokens", {"input_tokens": 1000, "output_tokens": 1000, "streams": 16}),
    # answers amortise the prompt's prefill; beyond that their KV reads grow, so a long prompt shows it
    ("output_tokens", {"input_tokens": 8000, "output_tokens": 100, "streams": 16}),
    ("streams", {"input_tokens": 1000, "output_tokens": 1000, "streams": 16}),
])
def test_throughput_moves_the_physical_way_with_the_request(models, gpus, setting, base):
    rates = []
    for factor in (1, 2, 4):
        row = {**base, setting: base[setting] * factor}
        grid = estimator.make_grid(["llama-3.3-70b"], ["H200 SXM"], ["fp8"], [1], [row["streams"]]).with_columns(
            input_tokens=pl.lit(row["input_tokens"], dtype=pl.Int64),
            output_tokens=pl.lit(row["output_tokens"], dtype=pl.Int64))
        rates.append(estimator.estimate(models, gpus, grid, MEASURED)["agg_tok_s"][0])
    # longer prompts cost prefill and KV reads; longer answers amortise the prefill; more streams share the weights
    assert rates == (sorted(rates, reverse=True) if setting == "input_tokens" else sorted(rates))
    assert len(set(rates)) == 3


def test_the_measured_estimate_carries_its_request_and_band_and_the_references_do_not(models, gpus, calculator_gpus):
    grid = estimator.make_grid(["llama-3.3-70b"], ["H200 SXM"], ["fp8"], [4096], [32])
    measured = estimator.estimate(models, gpus, grid, MEASURED).row(0, named=True)
    # given only a context, the request fills it at 3 prompt tokens per answer token
    assert (measured["input_tokens"], measured["output_tokens"], measured["method"]) == (3072, 1024, "measured")
    one_to_one = estimator.estimate(models, gpus, grid, dataclasses.replace(MEASURED, input_per_output=1.0)).row(0, named=True)
    assert (one_to_one["input_tokens"], one_to_one["output_tokens"]) == (2048, 2048)
    assert measured["agg_tok_s_low"] < measured["agg_tok_s"] < measured["agg_tok_s_high"]
    reference = estimator.estimate(models, calculator_gpus, grid, presets.CALCULATOR).row(0, named=True)
    assert reference["agg_tok_s_low"] is None and reference["input_tokens"] is None


@pytest.mark.parametrize(("change", "message"), [
    ({"attention_dp": 3, "tp": 8}, "attention_dp must divide tp"),
    ({"attention_dp": 2}, "attention_dp above 1 needs the group's tp"),
    ({"attention_dp": 0, "tp": 8}, "attention_dp must be at least 1"),
    ({"streams": 4097, "tp": 8, "attention_dp": 1}, "streams must be between 1 and 4096"),
])
def test_a_bad_layout_is_refused(models, gpus, change, message):
    grid = estimator.make_grid(["deepseek-r1"], ["H200 SXM"], ["fp8"], [2000], [1]).with_columns(
        pl.lit(v, dtype=pl.Int64).alias(k) for k, v in change.items())
    with pytest.raises(estimator.EstimatorError, match=message):
        estimator.estimate(models, gpus, grid, MEASURED)
    # 4,097 streams are 513 a rank over eight data-parallel ranks
    ok = grid.with_columns(attention_dp=pl.lit(8, dtype=pl.Int64)) if "streams" in change else None
    assert ok is None or estimator.estimate(models, gpus, ok, MEASURED)["agg_tok_s"][0] > 0


def test_max_load_is_a_question_for_the_measured_method_only(models, calculator_gpus):
    grid = estimator.make_grid(["llama-3.3-70b"], ["H200 SXM"], ["fp8"], [4096], [None])
    with pytest.raises(estimator.EstimatorError, match="max load"):
        estimator.estimate(models, calculator_gpus, grid, presets.CALCULATOR)


def test_the_measured_curve_stops_at_the_engines_batch_limit(models, gpus):
    points = estimator.curve(models, gpus, "llama-3.1-8b", "B200 SXM", "int4", 1024, MEASURED)
    assert points["streams"][-1] == MEASURED.max_running_requests < points["max_streams"][-1]
    assert points["agg_tok_s"].is_sorted()


# The import (run by hand on the shared sources; these check its parsing and the committed copy)

@pytest.mark.parametrize(("parallelism", "software", "ranks"), [
    ("DEP4", "", 4), ("DEP2,PP2 (4 GPUs)", "", 2), ("TP8", "", 1), ("TP4,PP2 (8 GPUs)", "", 1),
    ("TP8 dp 4 ep 4 DP-attention", "", 4), ("TP8 ep 8 dp 8 DP-attention", "", 8),
    ("TP8 EP8 with attention DP, MTP speculative decoding (spec_method mtp), single node", "", 8),
    ("TP8", "SGLang 0.4.3.post2 (--tp 8 --enable-dp-attention per README task)", 8),
])
def test_the_import_reads_the_attention_split_a_benchmark_states(parallelism, software, ranks):
    assert calibration_import.attention_dp(parallelism, software) == ranks


@pytest.mark.parametrize(("label", "model", "precision"), [
    ("FP8", "llama-3.3-70b", "fp8"), ("NVFP4", "llama-3.3-70b", "int4"), ("BF16", "qwen3-235b-a22b", "bf16"),
    ("FP8", "gpt-oss-120b", "int4"),  # gpt-oss exists only as MXFP4: a table's FP8 on Hopper is not its weights
])
def test_the_import_reads_the_weights_precision_a_run_holds(label, model, precision):
    assert calibration_import.serving_precision(label, model) == precision


def test_gpt_oss_hopper_rows_keep_the_source_label_beside_the_4_bit_class():
    hopper = measurements().filter(pl.col("model").str.starts_with("gpt-oss"), pl.col("gpu").str.contains("H100|H200"),
                                   pl.col("suite") == "serving")  # the TensorRT-LLM tables label them FP8
    assert hopper.height and (hopper["precision"] == "int4").all()
    assert hopper["precision_note"].str.starts_with("FP8 (weights: the MXFP4 checkpoint").all()


def measurements() -> pl.DataFrame:
    return pl.read_csv(MEASUREMENTS, infer_schema_length=None)


def test_speculative_decoding_runs_are_left_out_and_legacy_runs_are_the_early_2025_releases():
    rows = measurements()
    speculative = rows.filter(pl.col("parallelism").str.contains("MTP|EAGLE"))
    assert speculative.height == 8 and speculative["excluded"].str.starts_with("speculative decoding").all()
    # the cookbook's Qwen3.5 benchmarks ran on a NEXTN (MTP) server, which the source's parallelism column omits
    assert set(speculative.filter(pl.col("model") == "qwen3.5-397b-a17b")["row_id"]) == {"fixed-61", "fixed-62"}
    legacy = rows.filter(pl.col("legacy"))
    assert legacy["software"].str.contains(calibration_import.LEGACY_RELEASES).all()
    assert set(legacy.filter(pl.col("excluded").is_null())["load"]) == {"fixed_concurrency"}
    current = rows.filter(pl.col("suite").is_in(["sglang-cookbook", "inferencemax"]))
    assert current.height == 77 and not current["legacy"].any()
    # MLPerf counts the Arc Pro B60 Dual's boards: two 24 GB B60 GPUs each
    b60 = rows.filter(pl.col("gpu") == "Arc Pro B60 24GB", pl.col("source").str.contains("Dual"))
    assert b60.height and (b60["gpus"] == 8).all()


@pytest.mark.parametrize(("engine", "software", "gpu", "limit"), [
    ("TensorRT-LLM", "TensorRT-LLM (PyTorch backend, trtllm-bench)", "B200 SXM", 4096),
    ("SGLang", "SGLang 0.5.6", "B200 SXM", 2048),
    ("vLLM", "vLLM 0.10.1", "H200 SXM", 1024),
    ("vLLM", "vLLM 0.10.1", "A100 SXM4 80GB", 256),
    ("vLLM", "vLLM 0.9.0, PyTorch 2.7.0", "Arc Pro B60 24GB", 256),
    ("vLLM", "vLLM 0.7.3.dev138+g21f6ca217 (ROCm 6.3)", "Instinct MI300X 192GB", 256),
    ("other", "Mango LLMBoost", "Instinct MI300X 192GB", None),
])
def test_each_engine_batches_what_its_documented_defaults_allow(gpus, engine, software, gpu, limit):
    row = pl.DataFrame({"engine": [engine], "software": [software], "gpu": [gpu]}).join(
        gpus.select(gpu="name", memory_gb="memory_gb"), on="gpu")
    assert row.select(calibration.engine_batch_limit(pl.col("engine"), pl.col("software"), pl.col("memory_gb"),
                                                     pl.col("gpu"))).item() == limit


# Calibration


def test_the_committed_fit_belongs_to_the_committed_measurements():
    fit = json.loads(presets.MEASURED_FIT.read_text())
    assert fit["data_version"] == "sha256:" + hashlib.sha256(MEASUREMENTS.read_bytes()).hexdigest()[:16]
    assert fit["validation"] == "leave-one-source-out and leave-one-model-out and leave-one-vendor-out" and fit["fitted_at"]
    assert set(fit["parameters"]) == set(presets.FITTED)
    assert {k: getattr(MEASURED, k) for k in presets.FITTED} == fit["parameters"]
    assert 0 < MEASURED.band_ratio_low < 1 < MEASURED.band_ratio_high


def test_rows_the_estimator_cannot_represent_are_listed_with_their_reason(models, gpus):
    rows, left_out = calibration.usable(measurements(), models, gpus)
    assert rows.height + left_out.height == measurements().height
    assert left_out["excluded"].null_count() == 0 and rows["excluded"].null_count() == rows.height
    reasons = " ".join(left_out["excluded"].unique().to_list())
    assert "latency-bound" in reasons and "duplicate" in reasons and "CPU-only" in reasons
    unknown = measurements().head(3).with_columns(model=pl.lit("no-such-model"), excluded=pl.lit(None, pl.String))
    assert calibration.usable(unknown, models, gpus)[1]["excluded"].to_list() == ["model not in the catalogue"] * 3


def test_llama2_duplicates_count_once_and_only_offline_rows_are_compared():
    rows = measurements().filter(pl.col("excluded").is_null())
    assert set(rows.filter(pl.col("suite") == "mlperf")["scenario"]) == {"Offline"}
    llama2 = rows.filter(pl.col("model") == "llama-2-70b")
    assert llama2.select("version", "submitter", "benchmark", "tok_s_per_gpu").unique(
        ["version", "submitter", "tok_s_per_gpu"]).height == llama2.height


@pytest.fixture(scope="module")
def sample(models, gpus) -> pl.DataFrame:
    """Benchmark rows of four models of three makers at max load and fixed concurrency, legacy ones among them,
    their terms computed once."""
    rows, _ = calibration.usable(measurements(), models, gpus)
    picked = rows.filter(pl.col("model").is_in(["llama-3.3-70b", "qwen3-30b-a3b", "llama-4-scout"])
                         & (pl.col("suite") == "serving")).group_by("model", maintain_order=True).head(15).select(rows.columns)
    fixed = rows.filter((pl.col("model") == "deepseek-r1") & (pl.col("load") == "fixed_concurrency")).head(15)
    return calibration.terms(pl.concat([picked, fixed]), models, gpus, MEASURED_BASE)[0]


def test_the_stated_layout_is_what_the_estimator_is_asked(models, gpus):
    rows, _ = calibration.usable(measurements(), models, gpus)
    dep = rows.filter(pl.col("parallelism") == "DEP4").head(1)
    mlperf = rows.filter((pl.col("model") == "deepseek-r1") & (pl.col("suite") == "mlperf")).head(1)
    cookbook = rows.filter((pl.col("model") == "deepseek-r1") & (pl.col("suite") == "sglang-cookbook")
                           & (pl.col("concurrency") == 100)).head(1)
    out = calibration.terms(pl.concat([dep, mlperf, cookbook]), models, gpus, MEASURED_BASE)[0]
    stated = out.filter(pl.col("row_id") == dep["row_id"][0]).row(0, named=True)
    assert (stated["tp"], stated["attention_dp"]) == (4, 4)
    # MLPerf states no layout: every candidate group runs data-parallel attention, as the engine would at max load
    free = out.filter(pl.col("row_id") == mlperf["row_id"][0])
    assert free.height > 1 and (free["attention_dp"] == free["tp"]).all()
    fixed = out.filter(pl.col("row_id") == cookbook["row_id"][0]).row(0, named=True)
    assert (fixed["tp"], fixed["attention_dp"], fixed["streams"]) == (8, 1, 100)


def test_the_fit_never_sees_legacy_rows_nor_assumed_lengths(sample):
    fitted = calibration.fit(sample, MEASURED_BASE, iterations=QUICK)
    current = sample.filter(~pl.col("legacy") & ~pl.col("input_assumed"))["row_id"].n_unique()
    assert sample["legacy"].any() and fitted.rows == current < sample["row_id"].n_unique()


def test_the_fit_recovers_efficiencies_that_generated_the_data(sample):
    truth = calibration.with_values(MEASURED_BASE, {**calibration.PRIOR, "bandwidth_efficiency": 0.4,
                                                    "compute_efficiency_fp8": 0.25, "prefill_mfu": 0.6})
    synthetic = sample.drop("tok_s_per_gpu").join(
        calibration.predict(sample, truth).select("row_id", tok_s_per_gpu="estimate"), on="row_id")
    found = calibration.fit(synthetic, MEASURED_BASE)
    ratios = calibration.predict(synthetic.filter(~pl.col("legacy")), found.params)["ratio"]
    # the weak prior and the search's tolerance leave a few percent
    assert (ratios - 1).abs().median() < 0.03 and (ratios - 1).abs().max() < 0.12
    start = calibration.predict(synthetic, calibration.with_values(MEASURED_BASE, calibration.PRIOR))["ratio"]
    assert (start - 1).abs().median() > 0.1  # the search had somewhere to go


@pytest.mark.parametrize("split", calibration.VALIDATION)
def test_every_row_gets_an_estimate_from_a_fit_that_did_not_see_its_source_model_or_maker(sample, split):
    out = calibration.cross_validate(sample, MEASURED_BASE, split, iterations=QUICK)
    assert out["row_id"].sort().to_list() == sample["row_id"].unique().sort().to_list()
    key = calibration.FOLD_KEYS[split]
    assert set(out["fold"]) == set(sample[key]) and len(set(out["fold"])) > 1
    seen = sample.select("row_id", key).unique().join(out.select("row_id", "fold"), on="row_id")
    assert (seen[key] == seen["fold"]).all()  # each row is estimated by the fit that held its group out
    stats = calibration.summary(out, ["fold"])
    assert stats["rows"].sum() == out.height and stats["within_2x"].is_between(0, 1).all()


def test_acceptance_judges_each_split_and_group_on_held_out_rows_against_its_thresholds():
    def predictions(ratios: list[float], load: str = "max_load") -> pl.DataFrame:
        return pl.DataFrame({"row_id": [f"r{i}" for i in range(len(ratios))], "ratio": ratios, "load": load,
                             "legacy": False, "input_assumed": False})
    good = pl.concat([predictions([1.0, 1.1, 0.9, 1.2, 1.6]), predictions([1.0, 0.95, 1.05], "fixed_concurrency")])
    wide = pl.concat([predictions([1.0, 1.4, 0.7, 1.3, 2.5]), predictions([1.0, 0.95, 1.05], "fixed_concurrency")])
    shares = pl.DataFrame({"group": ["fixed_concurrency", "max_load"], "share": [0.5, 1.0]})
    checks = calibration.acceptance({"by model": good, "by vendor": wide}, shares)
    failing = checks.filter(~pl.col("passes")).select("split", "group", "figure").rows()
    assert failing == [("by model", "fixed_concurrency", "representable"),
                       ("by vendor", "fixed_concurrency", "representable"),
                       ("by vendor", "max_load", "median_abs_error"), ("by vendor", "max_load", "within_25pct"),
                       ("by vendor", "max_load", "within_2x")]
    assert checks.height == 2 * 2 * 4  # legacy rows are never judged


def test_the_report_groups_rows_by_prompt_tokens_per_answer_token_in_order():
    # the TensorRT-LLM tables' shapes: decode-heavy, balanced and prefill-heavy (short answers to long prompts)
    shapes = pl.DataFrame({"input_tokens": [2048.0, 5000, 1000, 500, 128, 871.4, 250],
                           "output_tokens": [128.0, 500, 1000, 2000, 2048, 129, 1000]})
    buckets = shapes.with_columns(calibration.prompt_per_answer()).sort("prompt_per_answer")
    assert buckets["prompt_per_answer"].cast(pl.String).to_list() == [
        "< 0.25", "0.25-1", "0.25-1", "1-4", "4-12", "4-12", ">= 12"]
    assert buckets["input_tokens"].to_list()[-1] == 2048  # 16 prompt tokens per answer token


def test_a_row_is_representable_when_its_model_and_gpu_are_in_the_catalogue_and_it_fits(models, gpus):
    rows = measurements()
    compared, _ = calibration.usable(rows, models, gpus)
    shares = calibration.representable(rows, compared).rows_by_key("group", named=True, unique=True)
    usable = rows.filter(pl.col("excluded").is_null() & ~pl.col("input_assumed") & ~pl.col("legacy"))
    assert shares["max_load"]["rows"] + shares["fixed_concurrency"]["rows"] == usable.height
    missing = usable.filter(~pl.col("model").is_in(models["model_id"].implode()))
    assert shares["fixed_concurrency"]["represented"] == shares["fixed_concurrency"]["rows"] - missing.filter(
        pl.col("load") == "fixed_concurrency").height


def test_a_folds_band_comes_from_the_other_folds_residuals_never_its_own():
    def fold(name: str, ratios: list[float]) -> pl.DataFrame:
        return pl.DataFrame({"row_id": [f"{name}{i}" for i in range(len(ratios))], "fold": name, "ratio": ratios,
                             "legacy": False, "input_assumed": False})
    narrow, wide = fold("narrow", [0.95, 1.0, 1.0, 1.05] * 3), fold("wide", [0.5, 0.8, 1.0, 1.25, 2.0] * 3)
    inside = calibration.band_check(pl.concat([narrow, wide])).group_by("fold").agg(pl.col("inside_band").mean())
    shares = dict(inside.iter_rows())
    # the narrow source sits inside the band the wide one's residuals give; the wide one mostly outside the narrow's
    assert shares["narrow"] == 1.0 and shares["wide"] < 0.5
