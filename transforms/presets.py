"""Every constant of the roofline estimator, named and documented once, and the two presets built from them.

`ceiling` reproduces page 000 (a single-stream bandwidth ceiling with rules of thumb for batching and prefill),
`calculator` reproduces page 001 (a roofline over concurrent streams with memory, bandwidth and compute terms).
Each preset's page-specific GPU spec values live in warehouse/reference/gpu_overlays.csv, never here.
"""

import difflib
import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

# Canonical precisions; "int4" is the 4-bit class both pages call INT4/FP4.
PRECISIONS = ("bf16", "fp8", "int8", "int4")
PRECISION_ALIASES = {"fp16": "bf16", "fp16/bf16": "bf16", "fp4": "int4", "int4/fp4": "int4", "mxfp4": "int4"}
# The tensor peak a precision runs at when the part has one (else the BF16 peak is used).
PEAK_COLUMN = {"bf16": "bf16_tflops", "fp8": "fp8_tflops", "int8": "int8_tops", "int4": "fp4_tflops"}


class ParamError(ValueError):
    """An unknown parameter name or a value of the wrong kind; the message names it."""


def normalise_precision(name: str) -> str:
    """Map a user or catalogue spelling (FP16, FP4, int4/fp4, ...) to a canonical precision."""
    key = name.strip().lower()
    key = PRECISION_ALIASES.get(key, key)
    if key not in PRECISIONS:
        raise ParamError(f"unknown precision {name!r}: use one of {', '.join(PRECISIONS)} (or fp16, fp4)")
    return key


def _doc(text: str, interval: str | None = None):
    """A parameter's description and, for a number, the interval it must lie in: "(0, 1]" is above 0 and at most
    1; "[1, inf]" admits infinity. NaN lies in none."""
    return field(metadata={"doc": text, "range": interval})


def _within(value: float, interval: str) -> bool:
    low, high = (float(bound) for bound in interval[1:-1].split(","))
    above = value > low if interval[0] == "(" else value >= low
    return above and (value < high if interval[-1] == ")" else value <= high)


@dataclass(frozen=True)
class Params:
    """The estimator's constants; a preset is one complete set, `with_overrides` changes some by name."""

    name: str = _doc("method name stored with every estimate (gains the overrides when any are set)")
    # Precision
    precision_rule: str = _doc("what no --precision means: 'suggested' (the bandwidth ceiling's rule) or "
                               "'native' (the model's)")
    precision_ladder: str = _doc("precisions the suggested rule tries, highest first")
    bytes_bf16: float = _doc("bytes per parameter at BF16/FP16", "(0, 8]")
    bytes_fp8: float = _doc("bytes per parameter at FP8", "(0, 8]")
    bytes_int8: float = _doc("bytes per parameter at INT8", "(0, 8]")
    bytes_int4: float = _doc("bytes per parameter at INT4/FP4 (the per-step calculator: 4.5 bits, values plus "
                             "group scales)", "(0, 8]")
    # Memory and sizing
    weights_memory_factor: float = _doc("memory needed per byte of weights (the bandwidth ceiling's k, which also "
                                        "covers KV)", "(0, 10]")
    runtime_gb: float = _doc("fixed memory per replica beyond the weights (activations, buffers)", "[0, 10000]")
    gpu_overhead_gb: float = _doc("memory each GPU of a replica loses to its runtime context", "[0, 10000]")
    gpu_overhead_share: float = _doc("a GPU loses at most this share of its memory to gpu_overhead_gb, so a small card "
                                     "keeps more for its KV cache (serving model; 1: gpu_overhead_gb alone)", "(0, 1]")
    kv_memory_factor: float = _doc("memory held per byte of KV cache (0: KV not modelled, no memory-full point)",
                                   "[0, 10]")
    fill_reserve_gb: float = _doc("extra headroom per GPU kept free when computing where memory fills", "[0, 10000]")
    min_tp: int = _doc("smallest GPU group sized (the bandwidth ceiling always prices a whole 8-GPU node)",
                       "[1, 4096]")
    node_gpus: int = _doc("GPUs in one node: the suggested rule's limit; wider groups are multi-node", "[1, 4096]")
    # Decode: memory time per step
    bandwidth_efficiency: float = _doc("fraction of peak memory bandwidth reached", "(0, 1]")
    tp_derate: float = _doc("tensor-parallel efficiency lost per doubling of the group: 1 - derate*log2(tp)",
                            "[0, 1)")
    tp_efficiency_floor: float = _doc("tensor-parallel efficiency never drops below this (very wide groups)",
                                      "(0, 1]")
    kv_read_factor: float = _doc("KV bytes read per step per byte cached (0: ignore KV reads)", "[0, 10]")
    expert_coverage: bool = _doc("MoE reads the expected expert coverage 1-(1-k/E)^B at B streams (else active only)")
    # Decode: compute time per step
    decode_flops_per_param: float = _doc("FLOPs per active parameter per generated token in decode (2 physically)",
                                         "[0, 100]")
    attention_flops_factor: float = _doc("multiplies the model's attention FLOPs per token of context", "[0, 100]")
    attention_context_offset: int = _doc("tokens of context not attended to in decode (the per-step calculator: 128)",
                                         "[0, 10000000]")
    compute_efficiency: float = _doc("fraction of the tensor peak reached in decode", "(0, 1]")
    compute_at_precision: bool = _doc("use the precision's own tensor peak when the part has one (else BF16)")
    step_time: str = _doc("how memory and compute time combine per step: 'sum' or 'max'")
    overlap_loss: float = _doc("with step_time 'max', the share of the shorter of a pass's reads and FLOPs that does not "
                               "hide under the longer (0: the roofline's perfect overlap; 1: added, as 'sum')", "[0, 1]")
    batch_gain_max: float = _doc("batching multiplies single-stream decode by at most this (inf: the roofline decides)",
                                 "[1, inf]")
    pcie_penalty: float = _doc("throughput factor for multi-GPU groups on parts without a scale-up fabric", "(0, 1]")
    # Prefill
    prefill_mfu: float = _doc("fraction of the tensor peak reached in prefill", "(0, 1]")
    prefill_active: str = _doc("parameters prefill FLOPs count: 'input' active or 'output' active (the "
                                "bandwidth ceiling)")
    prefill_attention_factor: float = _doc("multiplies attention FLOPs in prefill (average context: half the prompt)",
                                           "[0, 100]")
    # Whole requests (the measured method): prefill amortised, fitted efficiencies by precision and vendor
    serving_model: bool = _doc("whole requests: prefill of the prompt amortised over the answer, decode at the mean "
                               "context, the fitted efficiencies below (else steady decode at the full context)")
    compute_efficiency_fp8: float = _doc("fraction of the tensor peak reached in decode at FP8/INT8 (serving model)",
                                         "(0, 1]")
    compute_efficiency_int4: float = _doc("fraction of the tensor peak reached in decode at INT4/FP4 (serving model)",
                                          "(0, 1]")
    moe_compute_efficiency: float = _doc("a mixture of experts' routed experts (grouped matmuls over the few tokens "
                                         "each expert gets) run at this fraction of the dense matmuls' efficiency, "
                                         "in their weight reads, FLOPs and prefill (serving model)", "(0, 1]")
    vendor_efficiency_amd: float = _doc("AMD parts reach this fraction of what NVIDIA's do at the same specs",
                                        "(0, 10]")
    vendor_efficiency_intel: float = _doc("Intel parts reach this fraction of what NVIDIA's do at the same specs",
                                          "(0, 10]")
    engine: str = _doc("the serving engine the measured method models: trtllm, sglang or vllm (transforms/engines.py; "
                       "the reference methods model none: 'none')")
    engine_efficiency_sglang: float = _doc("SGLang's throughput over TensorRT-LLM's on a part (serving model)", "(0, 10]")
    engine_efficiency_vllm: float = _doc("vLLM's throughput over TensorRT-LLM's on a part (serving model)", "(0, 10]")
    step_overhead_s: float = _doc("fixed seconds per decode step (kernel launches, synchronisation, scheduling)",
                                  "[0, 10]")
    request_overhead_s: float = _doc("host seconds per running request per decode step of one scheduler (batch "
                                     "bookkeeping, sampling, stop checks), overlapped with the GPUs' step: it bounds "
                                     "a step when the model's own work per token is small (serving model)", "[0, 10]")
    tp_comm_s: float = _doc("seconds of collective latency per decode step per doubling of the GPU group", "[0, 10]")
    link_efficiency: float = _doc("fraction of the link's per-direction rate (the catalogue's interconnect: NVLink, "
                                  "PCIe) a tensor-parallel all-reduce's bytes move at: each forward pass's all-reduces "
                                  "take their bytes over link x this, added to the pass (serving model)", "(0, 1]")
    dp_comm_s: float = _doc("seconds per decode step per doubling of the data-parallel attention ranks: the "
                            "gather of every rank's tokens before the experts and the scatter after (serving model)",
                            "[0, 10]")
    pp_hop_s: float = _doc("seconds a decode step waits at each pipeline-stage boundary of a replica wider than one "
                           "node (node_gpus): a send over the cluster's scale-out fabric (0: no network cost)", "[0, 10]")
    pp_hop_s_per_stream: float = _doc("seconds per stream each pipeline-stage boundary adds to a decode step: the "
                                      "stream's activations over the scale-out fabric", "[0, 10]")
    kv_fp8_when_quantized: bool = _doc("the KV cache is stored in FP8 when weights are FP8 or narrower")
    state_fp32: bool = _doc("the engine keeps a recurrent state (Mamba, DeltaNet) in FP32 whatever the weights' "
                            "precision: twice the catalogue's 2 bytes per value (else at the KV cache's precision)")
    state_passes: float = _doc("times a decode step moves each stream's recurrent state through memory (a read, "
                               "and the write of the updated state: 2)", "[0, 8]")
    input_per_output: float = _doc("prompt tokens per answer token of a request given only its context (serving "
                                   "model): the request fills the context at this mix", "[0, 10000]")
    kv_replicated: bool = _doc("tensor parallelism splits the KV cache by KV head over at most kv_heads GPUs: a "
                               "wider attention group holds and reads each head's cache on group/kv_heads GPUs (a "
                               "multi-head latent, MLA, is one head: every GPU holds it whole) (serving model)")
    dp_attention_at_max_load: bool = _doc("at max load an MLA mixture of experts on a group runs data-parallel attention "
                                          "with expert parallelism, as serving engines deploy it (serving model)")
    max_running_requests: int = _doc("streams one data-parallel attention rank (else the replica) batches at most at "
                                     "max load: the engine's limit (serving model; see ENGINE_MAX_RUNNING_REQUESTS)",
                                     "[0, 1000000]")
    draft_tokens: int = _doc("speculative decoding (serving model): tokens a draft (an MTP head, an EAGLE draft) "
                             "proposes per stream and decode step, which the step checks with the stream's own "
                             "token (0: none)", "[0, 16]")
    tokens_per_step: float = _doc("speculative decoding (serving model): the mean tokens a stream keeps per decode "
                                  "step, its own and the drafts accepted (1: none); a figure the user states from a "
                                  "source for the model, draft and data (at most 1 + draft_tokens)", "[1, 17]")
    band_ratio_low: float = _doc("p10 of estimate/measured on held-out benchmarks: the band's high end (0: none)",
                                 "[0, 100]")
    band_ratio_high: float = _doc("p90 of estimate/measured on held-out benchmarks: the band's low end (0: none)",
                                  "[0, 100]")
    # Display
    display: str = _doc("label style: 'integer' (the bandwidth ceiling) or 'compact' (the per-step calculator: "
                        "x.yk, integer, one decimal)")
    rounding: str = _doc("how displayed numbers round ties: 'half_even' (both reference methods) or 'half_up'")

    def __post_init__(self) -> None:
        choices = {
            "precision_rule": ("suggested", "native"),
            "step_time": ("sum", "max"),
            "prefill_active": ("input", "output"),
            "display": ("integer", "compact"),
            "rounding": ("half_even", "half_up"),
            "engine": ("none", "trtllm", "sglang", "vllm"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ParamError(f"{name} must be one of {', '.join(allowed)}, not {getattr(self, name)!r}")
        for precision in self.ladder:
            normalise_precision(precision)
        if self.tokens_per_step > 1 + self.draft_tokens:
            raise ParamError(f"tokens_per_step ({self.tokens_per_step:g}) is more than the 1 + draft_tokens = "
                             f"{1 + self.draft_tokens} tokens a step checks: it keeps its own and the drafts it accepts")
        for item in fields(self):
            interval, value = item.metadata.get("range"), getattr(self, item.name)
            if interval and not _within(value, interval):
                raise ParamError(f"{item.name} must lie in {interval}, not {value!r}")

    @property
    def ladder(self) -> tuple[str, ...]:
        return tuple(normalise_precision(p) for p in self.precision_ladder.split(","))

    @property
    def verified_tokens(self) -> float:
        """Tokens each stream computes per decode step: its own and the drafts it checks."""
        return float(1 + self.draft_tokens)

    @property
    def bytes_per_param(self) -> dict[str, float]:
        return {p: getattr(self, f"bytes_{p}") for p in PRECISIONS}


# The reference methods model steady decode only: none of the serving model's terms, no fitted band.
STEADY_DECODE = {
    "serving_model": False, "compute_efficiency_fp8": 1.0, "compute_efficiency_int4": 1.0,
    "moe_compute_efficiency": 1.0, "vendor_efficiency_amd": 1.0, "vendor_efficiency_intel": 1.0, "engine": "none",
    "engine_efficiency_sglang": 1.0, "engine_efficiency_vllm": 1.0, "gpu_overhead_share": 1.0,
    "overlap_loss": 0.0, "step_overhead_s": 0.0, "request_overhead_s": 0.0, "tp_comm_s": 0.0, "link_efficiency": 1.0, "dp_comm_s": 0.0, "pp_hop_s": 0.0, "pp_hop_s_per_stream": 0.0,
    "kv_fp8_when_quantized": False, "state_fp32": False, "state_passes": 1.0, "band_ratio_low": 0.0,
    "band_ratio_high": 0.0, "input_per_output": 0.0, "kv_replicated": False, "dp_attention_at_max_load": False,
    "max_running_requests": 0, "draft_tokens": 0, "tokens_per_step": 1.0,
}
# Documented defaults of the engines' batch limit per scheduler (a data-parallel attention rank, else the replica), the
# streams a max-load benchmark can run at once when memory allows; a decode step's tokens stay within each engine's
# token budget (8,192-32,768) at these batches, so the budget never binds first.
# - TensorRT-LLM: trtllm-bench sizes max_batch_size to the requests its KV memory holds, capped at 4,096 per rank
#   (tensorrt_llm/bench/tuning/heuristics.py, finetune_setting); the LLM API and trtllm-serve default to 2,048.
# - SGLang: the request pool, min(max(KV tokens / context length x 512, 2048), 4096) per rank: 2,048 for the
#   long-context models benchmarked (sglang model_runner, init_memory_pool).
# - vLLM: max_num_seqs 1,024 on parts of 70 GiB or more other than A100, else 256 (vllm/engine/arg_utils.py,
#   get_batch_defaults, from v0.9; 256 before).
ENGINE_MAX_RUNNING_REQUESTS = {"TensorRT-LLM": 4096, "SGLang": 2048, "vLLM": 1024}

CEILING = Params(
    name="ceiling",
    precision_rule="suggested",
    precision_ladder="bf16,int8,int4",
    bytes_bf16=2.0,
    bytes_fp8=1.0,
    bytes_int8=1.0,
    bytes_int4=0.5,
    weights_memory_factor=1.5,  # page 000 implies k in (1.391, 1.855]
    runtime_gb=0.0,
    gpu_overhead_gb=0.0,
    kv_memory_factor=0.0,
    fill_reserve_gb=0.0,
    min_tp=8,
    node_gpus=8,
    bandwidth_efficiency=1.0,
    tp_derate=0.0,
    tp_efficiency_floor=0.1,
    kv_read_factor=0.0,
    expert_coverage=False,
    decode_flops_per_param=0.0,  # neither page counts weight FLOPs in decode
    attention_flops_factor=0.0,
    attention_context_offset=0,
    compute_efficiency=1.0,
    compute_at_precision=False,
    step_time="sum",
    batch_gain_max=1.7,
    pcie_penalty=0.6,
    prefill_mfu=0.13,  # 4.0625 tok/s per BF16 TFLOPS on 16B output-active parameters
    prefill_active="output",
    prefill_attention_factor=0.0,
    **STEADY_DECODE,
    display="integer",
    rounding="half_even",
)

# Page 001's calculator differs from page 000's ceiling in these values only.
CALCULATOR = replace(
    CEILING,
    name="calculator",
    precision_rule="native",
    bytes_int4=0.5625,
    weights_memory_factor=1.0,
    runtime_gb=5.563,  # A = 169.217 GB for 163.654 GB of V4-Flash weights
    gpu_overhead_gb=0.8829,
    kv_memory_factor=1.0351,  # 8591.5 B held per 8300 B of KV
    fill_reserve_gb=0.2373,
    min_tp=1,
    bandwidth_efficiency=0.75,
    tp_derate=0.05,
    kv_read_factor=1.0,
    expert_coverage=True,
    attention_flops_factor=1.0,
    attention_context_offset=128,
    compute_at_precision=True,
    batch_gain_max=float("inf"),
    pcie_penalty=1.0,
    prefill_active="input",  # prefill_mfu stays page 000's 0.13: page 001 shows no prefill
    prefill_attention_factor=1.0,
    display="compact",
)

# Grid defaults when the caller gives none: page 001's settings (page 000 does not depend on them).
DEFAULT_CONTEXT_TOKENS = 32768
DEFAULT_STREAMS = 32
# The measured method's request when only a context is given: it fills the context at 3 prompt tokens per answer
# token, the mix API prices are blended at, so self-hosted and API $/M describe the same requests (at 32,768 tokens:
# 24,576 in + 8,192 out). The cost tables and views take the mix from $GPULEDGER_INPUT_PER_OUTPUT (config).
DEFAULT_INPUT_PER_OUTPUT = 3.0
MEASURED_FIT = Path(__file__).with_name("measured_fit.json")
# The structure of the measured method; its efficiencies come from the fit (transforms/calibration.py).
MEASURED_BASE = replace(
    CALCULATOR,
    name="measured",
    bytes_int4=0.5625,  # FP4 values plus a scale per 16 (NVFP4) or 32 (MXFP4) values
    runtime_gb=2.0,
    gpu_overhead_gb=6.0,  # activations, CUDA graphs and the engine's workspace on every GPU
    gpu_overhead_share=0.1,  # at most: vLLM's default gpu_memory_utilization (0.9) keeps 10% of a card
    kv_memory_factor=1.0,
    fill_reserve_gb=0.0,
    decode_flops_per_param=2.0,  # a multiply-add per active parameter per token: the matmuls
    attention_context_offset=0,
    prefill_attention_factor=1.0,
    serving_model=True,
    step_time="max",  # batched decode overlaps weight reads with the matmuls; it fits the benchmarks better than 'sum'
    # Not fitted: the fit cannot tell it from the efficiencies (searched, it stays at its prior: 0.2 -> 0.21, 0.5 ->
    # 0.48). Chosen on the held-out figures (docs/estimator.md): 0.15-0.5 all fix the fixed-concurrency rows left out
    # with their source; above 0.3 the max-load rows get worse.
    overlap_loss=0.25,
    kv_fp8_when_quantized=True,
    # SGLang (server_args mamba_ssm_dtype) and vLLM keep the Mamba-2 / Gated DeltaNet state in FP32 (the Qwen3.5
    # configs say so too: mamba_ssm_dtype float32), and every decode step reads it and writes the updated state back.
    state_fp32=True,
    state_passes=2.0,
    tp_efficiency_floor=0.5,
    input_per_output=DEFAULT_INPUT_PER_OUTPUT,
    kv_replicated=True,
    dp_attention_at_max_load=True,
    engine="trtllm",  # engines.DEFAULT_ENGINE: the cost tables' engine unless asked for another
    # No speculative decoding unless a user states it (--set draft_tokens=K --set tokens_per_step=A): how many drafts
    # a step keeps depends on the model, its draft and the data, and no figure holds across them.
    draft_tokens=0,
    tokens_per_step=1.0,
    max_running_requests=2048,  # trtllm-serve's and the LLM API's max_batch_size (engines.SERVE_MAX_RUNNING_REQUESTS)
    # Not fitted (the benchmarks' replicas are nearly all one node): a point-to-point send between nodes takes a
    # few microseconds on InfiniBand/RoCE and some 20 us through NCCL's send/recv; a stream's activations at a
    # stage boundary are at most 16,384 values x 2 bytes = 32 KB, 0.66 us at 400 Gb/s (50 GB/s) per node.
    # Not fitted: point-to-point copies between RTX PRO 6000s over PCIe 5 x16 reach 53-56 of its 63 GB/s per direction
    # (CUDA p2pBandwidthLatencyTest on five 8-GPU systems, voipmonitor/rtx6kpro hardware/pcie-bandwidth.md), 0.85-0.89;
    # a ring all-reduce's steps are such copies. One fraction for NVLink and PCIe alike (docs/estimator.md).
    link_efficiency=0.85,
    pp_hop_s=25e-6,
    pp_hop_s_per_stream=32_768 / 50e9,
)
FITTED = ("bandwidth_efficiency", "compute_efficiency", "compute_efficiency_fp8", "compute_efficiency_int4",
          "moe_compute_efficiency", "vendor_efficiency_amd", "vendor_efficiency_intel", "engine_efficiency_sglang",
          "engine_efficiency_vllm", "prefill_mfu", "tp_derate",
          "step_overhead_s", "request_overhead_s", "tp_comm_s", "dp_comm_s", "band_ratio_low", "band_ratio_high")


def fitted(base: Params, values: dict) -> Params:
    """`base` with the fitted parameters (the keys of FITTED) taken from `values`."""
    return replace(base, **{k: float(values[k]) for k in FITTED})


def _measured() -> Params:
    """The measured method as last fitted: its parameters are read from the committed fit file."""
    return fitted(MEASURED_BASE, json.loads(MEASURED_FIT.read_text())["parameters"])


MEASURED = _measured()
PRESETS: dict[str, Params] = {p.name: p for p in (CEILING, CALCULATOR, MEASURED)}
# The method whose $/M a cost view shows unless asked for another (`gpuledger table`, `gpuledger history --model`).
DEFAULT_COST_METHOD = MEASURED.name


def preset(name: str) -> Params:
    try:
        return PRESETS[name]
    except KeyError:
        raise ParamError(f"unknown method {name!r}: use one of {', '.join(PRESETS)}") from None


def parameter_docs() -> list[tuple[str, str]]:
    """(name, description with the interval a number must lie in) for every overridable parameter, in order."""
    return [(f.name, f.metadata["doc"] + (f" {f.metadata['range']}" if f.metadata["range"] else ""))
            for f in fields(Params) if f.name != "name"]


def _convert(name: str, text: str, kind: type):
    if kind is bool:
        if text.lower() in ("true", "yes", "1"):
            return True
        if text.lower() in ("false", "no", "0"):
            return False
        raise ParamError(f"{name} takes true or false, not {text!r}")
    try:
        return kind(text)
    except ValueError:
        raise ParamError(f"{name} takes {'a whole number' if kind is int else 'a number'}, not {text!r}") from None


def with_overrides(params: Params, overrides: dict[str, str]) -> Params:
    """Params with some constants replaced by name (values as text, e.g. from --set NAME=VALUE)."""
    if not overrides:
        return params
    kinds = {f.name: type(getattr(params, f.name)) for f in fields(Params) if f.name != "name"}
    changes = {}
    for name, text in overrides.items():
        if name not in kinds:
            close = difflib.get_close_matches(name, list(kinds), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(kinds)}"
            raise ParamError(f"unknown parameter {name!r}{hint}")
        changes[name] = _convert(name, text.strip(), kinds[name])
    label = ",".join(f"{k}={v}" for k, v in sorted(changes.items()))
    return replace(params, name=f"{params.name}[{label}]", **changes)


def parse_assignments(items: list[str]) -> dict[str, str]:
    """NAME=VALUE strings to a dict; a malformed item raises ParamError naming it."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ParamError(f"--set takes NAME=VALUE, not {item!r}")
        out[name.strip()] = value
    return out
