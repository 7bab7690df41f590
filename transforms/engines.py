"""The serving engine as a dimension of the measured method: which engines it models and what an engine changes.

An engine changes two things the benchmarks measure: how much of a part's peak its kernels and scheduler reach (a
factor per engine, fitted beside the vendor's: TensorRT-LLM is the reference, 1; SGLang's and vLLM's are
engine_efficiency_sglang and engine_efficiency_vllm), and how many requests its scheduler batches at most when
memory allows (SERVE_MAX_RUNNING_REQUESTS). A vendor's software maturity (ROCm, Intel's stack) is part of what an
engine reaches on that vendor's parts: vendor_efficiency_amd and vendor_efficiency_intel multiply the engine's
factor, fitted on the AMD and Intel rows, never per model.
"""

from dataclasses import replace

import polars as pl

# The names `estimate` and `table` take (--engine), and the spelling of each in the benchmarks' `engine` column.
ENGINES = {"trtllm": "TensorRT-LLM", "sglang": "SGLang", "vllm": "vLLM"}
DEFAULT_ENGINE = "trtllm"
# The batch limit a user's server runs with, per data-parallel scheduler, by each engine's documented default:
# trtllm-serve and the LLM API's max_batch_size 2,048; SGLang's request pool, 2,048 for long-context models;
# vLLM's max_num_seqs 1,024 on parts of 70 GiB or more (256 below: the calibration reads that per row).
SERVE_MAX_RUNNING_REQUESTS = {"trtllm": 2048, "sglang": 2048, "vllm": 1024}


class EngineError(ValueError):
    """An engine the measured method does not model; the message names the ones it does."""


def engine_name(name: str) -> str:
    """A user's spelling (trtllm, TensorRT-LLM, SGLang, ...) as one of ENGINES' keys."""
    key = name.strip().lower()
    for short, long in ENGINES.items():
        if key in (short, long.lower()):
            return short
    raise EngineError(f"unknown engine {name!r}: use one of {', '.join(ENGINES)}")


def engine_key(benchmark_engine: pl.Expr) -> pl.Expr:
    """A benchmark row's engine as one of ENGINES' keys; None for a vendor's own harness (MLPerf's 'other'), which
    the method reads as the vendor's reference engine (factor 1)."""
    return benchmark_engine.replace_strict({long: short for short, long in ENGINES.items()}, default=None,
                                           return_dtype=pl.String)


def engine_efficiency(engine, params) -> pl.Expr | pl.Series | float:
    """The fraction of TensorRT-LLM's throughput an engine reaches on the same part: a polars Expr or Series of
    ENGINES' keys (None: 1), or one key as text."""
    factors = {"trtllm": 1.0, "sglang": params.engine_efficiency_sglang, "vllm": params.engine_efficiency_vllm}
    if isinstance(engine, str) or engine is None:
        return factors.get(engine, 1.0)
    return engine.replace_strict(factors, default=1.0, return_dtype=pl.Float64).fill_null(1.0)


def for_engine(params, name: str):
    """The measured method serving with another engine: its efficiency and its batch limit (a reference method
    models no engine: EngineError)."""
    key = engine_name(name)
    if not params.serving_model:
        raise EngineError(f"--engine names the serving engine of the measured method; {params.name} models none")
    return replace(params, engine=key, max_running_requests=SERVE_MAX_RUNNING_REQUESTS[key])
