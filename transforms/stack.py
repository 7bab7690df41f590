"""What a serving stack does with a part's hardware, beyond its peaks: the precision a checkpoint's matmuls run at,
and the memory an engine keeps back on a small card. Polars expressions over the estimator's per-row columns
(transforms/estimator/ uses them for the measured method).
"""

import polars as pl


def activation_precision(precision: pl.Expr, native: pl.Expr, has_fp8: pl.Expr, has_fp4: pl.Expr) -> pl.Expr:
    """The precision a row's matmuls run at. A model published only as a 4-bit checkpoint (gpt-oss's MXFP4) holds
    4-bit weights with 8-bit or 16-bit activations: TensorRT-LLM runs it W4A8 (MXFP4 x MXFP8) on parts with FP4 units,
    and at BF16 activations elsewhere (Hopper's Triton MoE); a checkpoint quantised to 4 bits from a wider one (NVFP4)
    quantises activations too and runs at the FP4 peak where the part has FP4 units; a part without them holds the
    4-bit weights and computes at BF16 (W4A16: vLLM's Marlin and AWQ kernels, Intel's XPU int4). Other precisions run
    at their own."""
    four_bit = precision == "int4"
    weight_only = four_bit & (native == "int4")
    return (pl.when(weight_only & has_fp8 & has_fp4).then(pl.lit("fp8"))
            .when(weight_only | (four_bit & ~has_fp4)).then(pl.lit("bf16"))
            .otherwise(precision.cast(pl.String)))


def reserved_gb(memory_gb: pl.Expr, overhead_gb: float, overhead_share: float) -> pl.Expr:
    """Memory per GPU the engine keeps from the KV cache: its activations, graphs and workspace, at most a share of
    a small card (vLLM's default gpu_memory_utilization 0.9 keeps 10%; SGLang sizes mem_fraction_static to the card)."""
    return pl.min_horizontal(pl.lit(overhead_gb), memory_gb * overhead_share)


def attention_peak(bf16_tflops: pl.Expr, fp8_tflops: pl.Expr, kv_fp8: pl.Expr) -> pl.Expr:
    """The tensor peak attention (QK and AV over the cached context) runs at: the KV cache's precision, FP8 where the
    engine keeps it in FP8 and the part has FP8 units (FlashMLA's and TensorRT-LLM's FP8 attention kernels), else BF16."""
    return pl.when(kv_fp8 & fp8_tflops.is_not_null()).then(fp8_tflops).otherwise(bf16_tflops)
