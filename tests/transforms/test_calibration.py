"""The measured method's physics terms and its calibration against benchmark throughput."""

import dataclasses
import hashlib
import json

import polars as pl
import pytest

from transforms import calibration, estimator, presets
from transforms.presets import MEASURED, MEASURED_BASE
from warehouse.catalog import REFERENCE_DIR

MEASUREMENTS = REFERENCE_DIR / "calibration" / "measurements.csv"
# No efficiency losses at all: the terms are then pure physics (seconds at the parts' peaks).
IDEAL = dataclasses.replace(
    MEASURED_BASE, bandwidth_efficiency=1.0, compute_efficiency=1.0, compute_efficiency_fp8=1.0,
    compute_efficiency_int4=1.0, prefill_mfu=1.0, tp_derate=0.0, step_overhead_s=0.0, tp_comm_s=0.0, step_time="sum",
)


@pytest.fixture(scope="module")
def gpus(frames) -> pl.DataFrame:
    return estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], "measured")


def terms(models, gpus, model="llama-3.1-8b", gpu="H100 SXM5 80GB", precision="bf16", prompt=1000, answer=1000,
          streams=1, tp=1, params=IDEAL) -> dict:
    grid = estimator.make_grid([model], [gpu], [precision], [prompt + answer], [streams]).with_columns(
        tp=pl.lit(tp, dtype=pl.Int64), input_tokens=pl.lit(prompt, dtype=pl.Int64),
        output_tokens=pl.lit(answer, dtype=pl.Int64))
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


def test_a_wider_group_splits_reads_and_flops_but_pays_collectives(models, gpus):
    one, four = terms(models, gpus, tp=1), terms(models, gpus, tp=4)
    assert four["_t_mem"] == pytest.approx(one["_t_mem"] / 4) and four["_t_cmp"] == pytest.approx(one["_t_cmp"] / 4)
    params = dataclasses.replace(IDEAL, tp_comm_s=0.001)
    step = [estimator.step_seconds(t["_t_mem"], t["_t_cmp"], t["_log2_tp"], 1.0, 1.0, params) for t in (one, four)]
    assert step[1] == pytest.approx(one["_t_mem"] / 4 + one["_t_cmp"] / 4 + 0.002)


def test_a_step_adds_or_overlaps_reads_and_flops():
    added = estimator.step_seconds(0.003, 0.002, 0.0, 1.0, 1.0, IDEAL)
    overlapped = estimator.step_seconds(0.003, 0.002, 0.0, 1.0, 1.0, dataclasses.replace(IDEAL, step_time="max"))
    assert (added, overlapped) == (pytest.approx(0.005), pytest.approx(0.003))


def test_prefill_is_amortised_over_the_answer():
    # 4 streams, 10 ms steps, 1 s of prefill per request: 4 x 100 tokens in 4 x 1 + 100 x 0.01 = 5 s
    assert estimator.request_tok_s(0.01, 1.0, 4, 100, 0.0, 1.0, IDEAL) == pytest.approx(400 / 5)
    assert estimator.request_tok_s(0.01, 0.0, 4, 100, 0.0, 1.0, IDEAL) == pytest.approx(400)


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


# Calibration

def measurements() -> pl.DataFrame:
    return pl.read_csv(MEASUREMENTS, infer_schema_length=None)


def test_the_committed_fit_belongs_to_the_committed_measurements():
    fit = json.loads(presets.MEASURED_FIT.read_text())
    assert fit["data_version"] == "sha256:" + hashlib.sha256(MEASUREMENTS.read_bytes()).hexdigest()[:16]
    assert fit["validation"] == "leave-one-model-out" and fit["fitted_at"]
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
    """Benchmark rows of three families, their terms computed once."""
    rows, _ = calibration.usable(measurements(), models, gpus)
    picked = rows.filter(pl.col("model").is_in(["llama-3.3-70b", "qwen3-30b-a3b", "llama-4-scout"])
                         & (pl.col("suite") == "serving")).head(60)
    return calibration.terms(picked, models, gpus, MEASURED_BASE)[0]


def test_the_fit_recovers_efficiencies_that_generated_the_data(sample):
    truth = calibration.with_values(MEASURED_BASE, {**calibration.PRIOR, "bandwidth_efficiency": 0.4,
                                                    "compute_efficiency_fp8": 0.25, "prefill_mfu": 0.6})
    synthetic = sample.drop("tok_s_per_gpu").join(
        calibration.predict(sample, truth).select("row_id", tok_s_per_gpu="estimate"), on="row_id")
    found = calibration.fit(synthetic, MEASURED_BASE)
    ratios = calibration.predict(synthetic, found.params)["ratio"]
    # the weak prior and the search's tolerance leave a few percent
    assert (ratios - 1).abs().median() < 0.03 and (ratios - 1).abs().max() < 0.12
    start = calibration.predict(synthetic, calibration.with_values(MEASURED_BASE, calibration.PRIOR))["ratio"]
    assert (start - 1).abs().median() > 0.1  # the search had somewhere to go


@pytest.mark.parametrize(("split", "folds"), [
    ("model", {"llama-3.3-70b", "qwen3-30b-a3b", "llama-4-scout"}),
    ("family", {"Llama 3", "Qwen3", "Llama 4"}),
])
def test_every_row_gets_an_estimate_from_a_fit_that_did_not_see_its_model(sample, split, folds):
    out = calibration.cross_validate(sample, MEASURED_BASE, split)
    assert out["row_id"].sort().to_list() == sample["row_id"].unique().sort().to_list()
    assert set(out["fold"]) == folds
    stats = calibration.summary(out, ["fold"])
    assert stats["rows"].sum() == out.height and stats["within_2x"].is_between(0, 1).all()


@pytest.mark.slow
def test_the_committed_parameters_are_what_the_fit_finds_on_the_committed_measurements(models, gpus):
    rows, _ = calibration.usable(measurements(), models, gpus)
    found = calibration.fit(calibration.terms(rows, models, gpus, MEASURED_BASE)[0], MEASURED_BASE).params
    committed = json.loads(presets.MEASURED_FIT.read_text())["parameters"]
    assert {k: getattr(found, k) for k in calibration.SEARCHED} == pytest.approx(
        {k: committed[k] for k in calibration.SEARCHED}, rel=1e-9)
