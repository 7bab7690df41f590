"""The serving engine as a dimension of the measured method, and what the serving stack does with a part
(transforms/engines.py, transforms/stack.py)."""

import dataclasses

import polars as pl
import pytest

from transforms import engines, estimator, presets, stack
from transforms.presets import CALCULATOR, MEASURED


@pytest.fixture(scope="module")
def gpus(frames) -> pl.DataFrame:
    return estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], "measured")


def agg(models, gpus, params, model="llama-3.1-8b", gpu="H100 SXM5 80GB", streams=64) -> dict:
    grid = estimator.make_grid([model], [gpu], [None], [4096], [streams])
    return estimator.estimate(models, gpus, grid, params).row(0, named=True)


@pytest.mark.parametrize(("spelling", "key"), [("trtllm", "trtllm"), ("TensorRT-LLM", "trtllm"), ("SGLang", "sglang"),
                                               (" vllm ", "vllm")])
def test_an_engine_is_named_as_users_and_benchmarks_spell_it(spelling, key):
    assert engines.engine_name(spelling) == key


def test_an_unknown_engine_or_an_engine_for_a_reference_method_is_refused():
    with pytest.raises(engines.EngineError, match="trtllm, sglang, vllm"):
        engines.engine_name("tgi")
    with pytest.raises(engines.EngineError, match="calculator models none"):
        engines.for_engine(CALCULATOR, "sglang")


def test_each_engine_batches_at_its_serving_default_and_scales_by_its_fitted_efficiency(models, gpus):
    slow = dataclasses.replace(MEASURED, engine_efficiency_vllm=0.5)
    vllm = engines.for_engine(slow, "vllm")
    assert (vllm.engine, vllm.max_running_requests) == ("vllm", 1024)
    reference, served = agg(models, gpus, slow), agg(models, gpus, vllm)
    assert (reference["engine"], served["engine"]) == ("trtllm", "vllm")
    assert served["agg_tok_s"] < reference["agg_tok_s"]
    # the engine is a measured-method dimension: the reference methods name none
    assert agg(models, gpus, CALCULATOR)["engine"] is None


def test_benchmark_rows_map_to_engines_and_a_vendors_own_harness_to_the_reference():
    engine = pl.Series(["TensorRT-LLM", "SGLang", "vLLM", "other"])
    keys = pl.select(engines.engine_key(pl.lit(engine))).to_series()
    assert keys.to_list() == ["trtllm", "sglang", "vllm", None]
    factors = engines.engine_efficiency(keys, dataclasses.replace(MEASURED, engine_efficiency_sglang=0.8,
                                                                  engine_efficiency_vllm=0.6))
    assert factors.to_list() == [1.0, 0.8, 0.6, 1.0]


@pytest.mark.parametrize(("precision", "native", "fp8", "fp4", "runs_at"), [
    ("int4", "int4", True, True, "fp8"),  # gpt-oss's MXFP4 on Blackwell: W4A8
    ("int4", "int4", True, False, "bf16"),  # on Hopper: BF16 activations
    ("int4", "fp8", True, True, "int4"),  # NVFP4 from an FP8 checkpoint: activations in FP4 too
    ("int4", "bf16", True, False, "bf16"),  # AWQ/GPTQ on a part without FP4 units: W4A16
    ("int4", "bf16", False, False, "bf16"),  # Intel's XPU int4: W4A16
    ("fp8", "bf16", True, True, "fp8"),
])
def test_a_4_bit_checkpoint_of_weights_alone_computes_at_its_activations_precision(precision, native, fp8, fp4,
                                                                                  runs_at):
    row = pl.DataFrame({"p": [precision], "n": [native], "f8": [fp8], "f4": [fp4]})
    assert row.select(stack.activation_precision(pl.col("p"), pl.col("n"), pl.col("f8"), pl.col("f4")))[0, 0] == runs_at


def test_attention_runs_at_the_kv_caches_precision():
    row = pl.DataFrame({"bf16": [2250.0, 2250.0, 400.0], "fp8": [4500.0, 4500.0, None], "kv8": [True, False, True]})
    peaks = row.select(stack.attention_peak(pl.col("bf16"), pl.col("fp8"), pl.col("kv8"))).to_series().to_list()
    assert peaks == [4500.0, 2250.0, 400.0]


def test_a_small_card_keeps_a_share_of_its_memory_a_large_one_the_engines_fixed_reserve():
    row = pl.DataFrame({"memory_gb": [24.0, 180.0]})
    reserved = row.select(stack.reserved_gb(pl.col("memory_gb"), 6.0, 0.1)).to_series().to_list()
    assert reserved == pytest.approx([2.4, 6.0])
    assert presets.MEASURED_BASE.gpu_overhead_share == 0.1 and CALCULATOR.gpu_overhead_share == 1.0
