"""Trim the measured-throughput sources into warehouse/reference/calibration/measurements.csv (run once by hand).

    python -m bench.calibration_import SOURCE_DIR

SOURCE_DIR holds `mlperf_v4.0-v5.1.csv`, `mlperf_v6.0.csv` (MLPerf Inference closed-division results),
`serving_benchmarks.csv` (NVIDIA's TensorRT-LLM / SGLang / vLLM tables) and `fixed_concurrency_2025_2026.csv`
(SGLang cookbook and InferenceMAX runs of 2025-26 releases at fixed concurrency), each row naming its source file and commit. Every source row becomes
one output row: rows the estimator cannot represent or that the calibration leaves out keep an `excluded` reason,
so nothing is dropped silently. Nothing in the pipeline or the tests reads SOURCE_DIR; they read the trimmed copy.

`legacy` marks runs of early-2025 releases (LEGACY_RELEASES): the same GPUs beat them 8-30 times over under later
releases, so the calibration reports them as a group of their own and never fits on them.
"""

import csv
import re
import sys
from pathlib import Path

OUT = Path(__file__).parent.parent / "warehouse" / "reference" / "calibration" / "measurements.csv"
COLUMNS = (
    "row_id", "suite", "version", "benchmark", "scenario", "submitter", "model", "gpu", "vendor", "gpus",
    "group_gpus", "parallelism", "precision", "precision_note", "input_tokens", "output_tokens", "input_assumed",
    "lengths_source",
    "concurrency", "load", "software", "engine", "attention_dp", "legacy", "tok_s_per_gpu", "excluded", "source",
)

# MLPerf dataset token lengths, from mlperf_datasets.md (the MLCommons sources it cites):
# llama2-70b: output 294.45 mean generated tokens of the FP16 reference run [INF-l2]. No source publishes the mean
#   input of the 24,576 samples (open_orca_gpt4_tokenized_llama.sampled_24576.pkl); its calibration subset is public:
#   open_orca_gpt4_tokenized_llama.calibration_1000.pkl, vendored in AI-Hypercomputer/JetStream at commit
#   a3bb30e972a344675c20d56d8f61dc309e6a5f7b (experimental/jax/inference/entrypoint/; sha256 8d3333d7d2e84ad6..., the
#   same file as the LFS pointer benchmarks/open_orca_gpt4_tokenized_llama.calibration_1000.pkl names),
#   which processorca.py (mlcommons/inference, since 94b0cc48, before v4.0) draws as 1,000 random rows of the 24,576
#   (seed 12345). Its tok_input_length sums to 219,743 over the 1,000 rows: mean 219.74 (median 153.5, sd 171.1,
#   max 1,020; cot 119, flan 197, niv 264, t0 294 per origin), so the 24,576's mean is 220 give or take 5 tokens
#   (standard error). JetStream's experimental/jax/README.md at that commit prints the same rows counted by its own
#   tokenizer (one token fewer a row): 218,743 input tokens over 1,000 requests. The whole 24,576's per-sample lengths
#   are in the third party's extract named for mixtral-8x7b below (mlperf-data/summaries/llama2-70b-99.csv, git blob
#   efbf1c9ba5a332c7d46db28689d654e7179827eb, from that pickle's tok_input_length and tok_output_length): its
#   input_length sums to 5,463,976 over the 24,576 rows, mean 222.33 (median 152, max 1,021), within the subset's
#   standard error; all 1,000 (tok_input_length, tok_output_length) pairs of the calibration subset are among its
#   rows (163 would be by chance, its columns shuffled). That mean is used. Not MLCommons' own statement: it stays
#   marked (input_assumed, out of the fit) until a re-fit takes it in.
# mixtral-8x7b: output 144.84 [INF-mx]. No MLCommons source publishes the mean input of the 15,000 samples
#   (09292024_mixtral_15k_mintoken2_v1.pkl); their per-sample lengths are public in Red Hat PSAP's MLPerf dashboard:
#   openshift-psap/performance-dashboard at commit 67033baeaac181a3a35641dd2b86a7cb22d856dd,
#   mlperf-data/summaries/mixtral-8x7b.csv (git blob 4d54c977f51a6a92efb575865a07e5321cb10c2d, sha256 7ffd735e...;
#   the same blob in Harshith-umesh/mlperf-dashboard at 5a43d274), which that repository's
#   mlperf-data/original/generate_dataset_summaries.py writes from that pickle's tok_input_len and
#   tok_ref_output_len, one row a sample. Its input_length sums to 6,410,905 over the 15,000 rows: mean 427.39
#   (median 283, sd 329, min 35, max 1,948 under max_seq_len 2048 [POL]; by block of 5,000 rows in the pickle's order:
#   GSM8K 5-shot 665.6, OpenOrca 415.4, MBXP 201.2). A third party's extract, checked three ways: its output_length
#   mean is 144.843, the reference's 144.84 [INF-mx]; its row at index 5,000 (92 in, 350 out) matches the one-row
#   slice of the dataset AI-Hypercomputer/JetStream committed as benchmarks/ranran_test.pkl (b5273ca6: index 5,000,
#   OpenOrca cot.83608, tok_input_len 92, tok_ref_output_len 350); and the same dashboard's llama3.1-405b file gives
#   684.68 out, the reference [INF-405]. Not MLCommons' own statement: the rows
#   stay marked (input_assumed, out of the fit).
# llama3.1-405b: input ~9,400 and output ~680 [BLOG-405], output 684.68 reference [INF-405].
# llama3.1-8b: output: the 128-token cap [INF-8bsut], ~129 measured in NVIDIA Offline logs; input 870.73 is
#   secondary [SEC-script] (778 [SEC-notes] disagrees).
# deepseek-r1: output 3,886.2274 [INF-ds]; input ~800 secondary [SEC-ds].
# gpt-oss-120b (v6.0 on): input ~5,000 (the v6.0 blog [BLOG-oss]); output 1,278.20, the reference mean TEST09 holds
#   every run to within 10% [INF-oss].
MLPERF_LENGTHS = {
    "llama2-70b": ("llama-2-70b", 222.33, 294.45,
                   "output [INF-l2]; input: the mean tok_input_length of the 24,576 samples, from a third party's "
                   "per-sample extract, checked against the 1,000-sample calibration subset (bench/calibration_import.py)"),
    "mixtral-8x7b": ("mixtral-8x7b", 427.39, 144.84,
                     "output [INF-mx]; input: the mean tok_input_len of the 15,000 samples, from a third party's "
                     "per-sample extract (bench/calibration_import.py)"),
    "llama3.1-405b": ("llama-3.1-405b", 9400, 684.68, "input [BLOG-405]; output [INF-405]"),
    "llama3.1-8b": ("llama-3.1-8b", 870.73, 129, "input secondary [SEC-script]; output cap 128 [INF-8bsut], ~129 in logs"),
    "deepseek-r1": ("deepseek-r1", 800, 3886.2274, "input secondary [SEC-ds]; output [INF-ds]"),
    "gpt-oss-120b": ("gpt-oss-120b", 5000, 1278.20, "input ~5,000 [BLOG-oss]; output reference 1,278.20 [INF-oss]"),
}
# The families whose dataset's mean prompt no MLCommons source publishes (estimated or extracted above): reported, never
# fitted on.
INPUT_UNPUBLISHED = {"llama2-70b", "mixtral-8x7b"}
SERVING_MODELS = {
    "Llama-3.3-70B-Instruct": "llama-3.3-70b",
    "Llama-3.1-405B-Instruct": "llama-3.1-405b",
    "Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "Qwen3-30B-A3B": "qwen3-30b-a3b",
    "Qwen3-235B-A22B": "qwen3-235b-a22b",
    "DeepSeek-R1": "deepseek-r1",
    "DeepSeek-R1-0528": "deepseek-r1",
    "Llama-4-Scout-17B-16E-Instruct": "llama-4-scout",
    "Llama-4-Maverick-17B-128E-Instruct": "llama-4-maverick",
    "gpt-oss-120b": "gpt-oss-120b",
    "gpt-oss-20b": "gpt-oss-20b",
}
# The 2025-26 fixed-concurrency runs' model names -> models.csv ids. Names the catalogue does not hold yet stay mapped
# (the calibration marks their rows "model not in the catalogue" until the catalogue gains them). A re-release with
# the same configuration maps to its model (R1-0528; Qwen3-235B-2507 and V3.2-Exp, both among their rows' hf_ids;
# Nemotron's FP8 and BF16 checkpoints).
FIXED_MODELS = {
    "DeepSeek-R1-0528": "deepseek-r1",
    "DeepSeek-V3.2-Exp": "deepseek-v3.2",
    "GLM-4.7-Flash": "glm-4.7-flash",
    "gemma-4-E2B-it": "gemma-4-e2b",
    "gemma-4-E4B-it": "gemma-4-e4b",
    "gemma-4-31B-it": "gemma-4-31b",
    "gemma-4-26B-A4B-it": "gemma-4-26b-a4b",
    "Llama-3.1-70B": "llama-3.1-70b",
    "MiniMax-M2.5": "minimax-m2.5",
    "Kimi-K2-Instruct": "kimi-k2",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-FP8": "nemotron-3-nano",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": "nemotron-3-nano",
    "NVIDIA-Nemotron-3-Super-120B-A12B-BF16": "nemotron-3-super",
    "gpt-oss-120b": "gpt-oss-120b",
    "Qwen3-Coder-Next": "qwen3-coder-next",
    "Qwen3-Next-80B-A3B (header: Instruct; serve command: Thinking)": "qwen3-next-80b-a3b",
    "Qwen3.5-397B-A17B": "qwen3.5-397b-a17b",
    "Qwen3-235B-A22B-Instruct-2507": "qwen3-235b-a22b",
}
# Early-2025 releases (SGLang 0.3-0.4, vLLM 0.6-0.7, TensorRT-LLM 0.x): see the module's docstring.
LEGACY_RELEASES = r"^(SGLang 0\.[34]\.|vLLM 0\.[67]\.|TensorRT-LLM 0\.)"
# Launch flags of speculative decoding: more than one token per decode step, which the estimator does not model.
SPECULATIVE = r"MTP|EAGLE|speculative"
# Speculative launches a source's `parallelism` column leaves out, by source document (read at the cited commit): the
# SGLang cookbook's Qwen3.5 speed benchmarks (sections 5.3.1-5.3.2) run on the server launched at line 724 with
# --speculative-algo NEXTN --speculative-num-steps 3 --speculative-num-draft-tokens 4.
UNLISTED_SPECULATIVE = {
    "sgl-project/sgl-cookbook:docs/autoregressive/Qwen/Qwen3.5.md": "speculative NEXTN (MTP), 4 draft tokens",
}
# Accelerator spellings of the sources -> gpus.csv names (first match wins; order matters).
GPU_PATTERNS = (
    (r"x\d+\).*\(x\d+\)|, AMD", None),  # a mixed MI300X + MI325X system: no single part
    (r"CPU-only", None),
    (r"Arc Pro B60 Dual", "Arc Pro B60 24GB"),  # two B60 GPUs on one board: BOARD_GPUS counts them
    (r"Arc Pro(\(R\))? B60", "Arc Pro B60 24GB"),
    (r"Arc Pro(\(R\))? B70", "Arc Pro B70 32GB"),
    (r"GB300", "GB300 NVL72 GPU"),
    (r"GB200", "GB200 NVL72 GPU"),
    (r"B200", "B200 SXM"),
    (r"B300", "B300 SXM"),
    (r"GH200.*144", "GH200 144GB"),
    (r"GH200.*96", "GH200 96GB"),
    (r"H200.?NVL", "H200 NVL"),
    (r"H200", "H200 SXM"),
    (r"H100.?NVL", "H100 NVL 94GB"),
    (r"H100.?PCIe", "H100 PCIe 80GB"),
    (r"H100", "H100 SXM5 80GB"),
    (r"A100", "A100 SXM4 80GB"),  # the cookbook's "A100 (memory variant not stated)": the common 8-GPU SXM4 node
    (r"L40S", "L40S 48GB"),
    (r"RTX PRO 6000", "RTX PRO 6000 Blackwell Server Edition"),
    (r"RTX PRO 4500", "RTX PRO 4500 Blackwell Server Edition"),  # MLPerf's are in servers (HPE ProLiant)
    (r"MI355X", "Instinct MI355X OAM"),
    (r"MI350X", "Instinct MI350X OAM"),
    (r"MI325X", "Instinct MI325X OAM"),
    (r"MI300X", "Instinct MI300X 192GB"),
    (r"Gaudi 2", "Gaudi 2 96GB"),
)
VENDORS = {"Instinct": "AMD", "Gaudi": "Intel", "Arc": "Intel"}
# GPUs per accelerator the source counts: MLPerf counts the Arc Pro B60 Dual's boards, each two 24 GB B60 GPUs
# (Intel's board specification); rates per GPU divide by the GPUs.
BOARD_GPUS = {"Arc Pro B60 Dual": 2}


def gpu_of(accelerator: str) -> str | None:
    for pattern, name in GPU_PATTERNS:
        if re.search(pattern, accelerator):
            return name
    return None


def gpus_per_accelerator(accelerator: str) -> int:
    return next((n for board, n in BOARD_GPUS.items() if board in accelerator), 1)


def vendor_of(gpu: str | None) -> str:
    return next((v for k, v in VENDORS.items() if gpu and k in gpu), "NVIDIA" if gpu else "")


def engine_of(software: str) -> str:
    for engine in ("TensorRT", "vLLM", "SGLang"):
        if engine.lower() in software.lower():
            return {"TensorRT": "TensorRT-LLM"}.get(engine, engine)
    return "other"


def mlperf_precision(row: dict) -> tuple[str, str]:
    """The precision a row ran at, by the caveats of the sources' README."""
    declared = row["precision"].strip().lower()
    nvidia = row["accelerator"].startswith(("NVIDIA", "Virtualized NVIDIA"))
    if not declared:
        return "fp8", "not declared; the NVIDIA TRT-LLM and AMD harnesses of these rounds run FP8"
    if declared == "fp16" and row["version"] == "v4.1" and nvidia:
        return "fp8", "declared fp16, but v4.1 NVIDIA configs enable FP8"
    mapping = {"fp16": "bf16", "fp8": "fp8", "fp8-e4m3": "fp8", "fp4": "int4", "int8": "int8", "int4": "int4",
               "uint4": "int4", "mxfp4": "int4", "nvfp4": "int4"}
    return mapping[declared], "declared"


def mlperf_rows(path: Path, prefix: str = "mlperf") -> list[dict]:
    """One row per MLPerf result; row ids are `prefix-<line>` (each file of rounds its own prefix, so ids stay put
    when a round is added)."""
    rows, seen = [], {}
    for i, row in enumerate(csv.DictReader(path.open())):
        family = re.sub(r"-99(\.9)?$", "", row["benchmark"])
        model, input_tokens, output_tokens, lengths = MLPERF_LENGTHS[family]
        gpu = gpu_of(row["accelerator"])
        precision, note = mlperf_precision(row)
        n = int(row["n_accelerators"] or 0) * gpus_per_accelerator(row["accelerator"])
        excluded = ""
        if row["scenario"] != "Offline":
            excluded = "latency-bound scenario (Server/Interactive): left out, only Offline (no latency limit) compared"
        elif gpu is None:
            excluded = ("accelerator not representable (CPU-only or mixed parts)"
                        if re.search(GPU_PATTERNS[0][0] + "|CPU-only", row["accelerator"])
                        else "accelerator not in the catalogue")
        elif n < 1:
            excluded = "no accelerator count"
        # llama2-70b's 99 and 99.9 rows are often one run reported twice: the same result counts once.
        key = (row["version"], row["submitter"], row["system"], row["scenario"], family, row["tokens_per_s"])
        if not excluded and family == "llama2-70b":
            if key in seen:
                excluded = f"duplicate of {seen[key]} (llama2-70b 99 and 99.9 report one run)"
            else:
                seen[key] = f"{prefix}-{i}"
        rows.append({
            "row_id": f"{prefix}-{i}", "suite": "mlperf", "version": row["version"], "benchmark": row["benchmark"],
            "scenario": row["scenario"], "submitter": row["submitter"], "model": model, "gpu": gpu or "",
            "vendor": vendor_of(gpu), "gpus": n, "group_gpus": "", "parallelism": "", "attention_dp": "", "legacy": False,
            "precision": precision, "precision_note": note, "input_tokens": input_tokens,
            "output_tokens": output_tokens, "input_assumed": family in INPUT_UNPUBLISHED,
            "lengths_source": f"mlperf_datasets.md: {lengths}", "concurrency": "",
            "load": "max_load", "software": row["software"], "engine": engine_of(row["software"]),
            "tok_s_per_gpu": round(float(row["tokens_per_s"]) / n, 3) if n else "", "excluded": excluded,
            "source": row["source"],
        })
    return rows


def group_gpus(parallelism: str) -> int:
    """GPUs of one replica: TPn x PPm, or DEPn (attention data parallel + expert parallel over n)."""
    sizes = [int(n) for n in re.findall(r"(?:TP|PP|DEP)(\d+)", parallelism)]
    out = 1
    for n in sizes:
        out *= n
    return out


def attention_dp(parallelism: str, software: str = "") -> int:
    """Data-parallel attention ranks of one pipeline stage: DEPn is n; SGLang's `dp n` with DP-attention is n;
    attention DP without a count (TensorRT-LLM's "with attention DP", SGLang's --enable-dp-attention) spans the
    stage's tensor-parallel group; otherwise 1 (attention tensor-parallel over the group)."""
    if dep := re.search(r"DEP(\d+)", parallelism):
        return int(dep.group(1))
    if not re.search(r"attention DP|DP-attention|dp-attention", f"{parallelism} {software}"):
        return 1
    if dp := re.search(r"\bdp (\d+)", parallelism):
        return int(dp.group(1))
    return int(re.search(r"TP(\d+)", parallelism).group(1))


# Models published only as a 4-bit checkpoint: their weights stay 4-bit whatever a table labels the run. OpenAI
# publishes gpt-oss in MXFP4 alone, and TensorRT-LLM's gpt-oss deployment guide runs it on Hopper with MXFP4 MoE
# weights and BF16 activations (Triton MoE backend): its performance table's "FP8" on H100/H200 names the rest of the
# run (attention, KV cache), not weights of 1 byte, which no gpt-oss checkpoint has.
FOUR_BIT_CHECKPOINTS = {"gpt-oss-120b", "gpt-oss-20b"}


def serving_precision(text: str, model: str | None = None) -> str:
    """The precision class a serving row's checkpoint runs at (FP4/MXFP4 -> int4, the 4-bit class)."""
    head = text.strip().upper()
    if model in FOUR_BIT_CHECKPOINTS or head.startswith(("FP4", "NVFP4", "MXFP4")):
        return "int4"
    return "fp8" if head.startswith("FP8") else "bf16"


def precision_note(text: str, model: str | None) -> str:
    """The source's label, and why the precision differs from it where it does."""
    if model in FOUR_BIT_CHECKPOINTS and serving_precision(text) != "int4":
        return f"{text} (weights: the MXFP4 checkpoint, the only one published; 4-bit class)"
    return text


def serving_rows(path: Path) -> list[dict]:
    rows = []
    for i, row in enumerate(csv.DictReader(path.open())):
        model = SERVING_MODELS[row["model"]]
        gpu = gpu_of(row["accelerator"])
        batch = re.match(r"batch (\d+)", row["concurrency_or_batch"])
        precision = serving_precision(row["precision"], model)
        excluded = ""
        if not row["input_len"].isdigit():
            excluded = "variable-length dataset (ShareGPT): no fixed input/output lengths"
        elif model is None:
            excluded = "model not in the catalogue"
        elif gpu is None:
            excluded = "accelerator not in the catalogue"
        rows.append({
            "row_id": f"serving-{i}", "suite": "serving", "version": row["source"].split("@")[0],
            "benchmark": row["model"], "scenario": row["mode"], "submitter": "", "model": model or "",
            "gpu": gpu or "", "vendor": vendor_of(gpu), "gpus": row["n"], "group_gpus": group_gpus(row["parallelism"]),
            "parallelism": row["parallelism"], "attention_dp": attention_dp(row["parallelism"], row["software"]),
            "legacy": bool(re.match(LEGACY_RELEASES, row["software"])), "precision": precision,
            "precision_note": precision_note(row["precision"], model),
            "input_tokens": row["input_len"] if not excluded else "", "output_tokens": row["output_len"] if not excluded else "",
            "input_assumed": False, "lengths_source": "fixed by the benchmark", "concurrency": batch.group(1) if batch else "",
            "load": "fixed_concurrency" if batch else "max_load", "software": row["software"],
            "engine": engine_of(row["software"]), "tok_s_per_gpu": row["output_tok_s_per_gpu"], "excluded": excluded,
            "source": row["source"],
        })
    return rows


def fixed_rows(path: Path) -> list[dict]:
    """The 2025-26 fixed-concurrency runs: lengths are the runs' measured means (total tokens / requests)."""
    rows = []
    for i, row in enumerate(csv.DictReader(path.open())):
        gpu = gpu_of(row["accelerator"])
        unlisted = UNLISTED_SPECULATIVE.get(row["source"].split("@")[0])
        parallelism = f"{row['parallelism']} {unlisted}" if unlisted else row["parallelism"]
        excluded = ""
        if re.search(SPECULATIVE, parallelism):
            excluded = "speculative decoding (MTP/EAGLE): several tokens per decode step, which the estimator does not model"
        elif gpu is None:
            excluded = "accelerator not in the catalogue"
        suite = "inferencemax" if row["source"].startswith("SemiAnalysisAI/") else "sglang-cookbook"
        rows.append({
            "row_id": f"fixed-{i}", "suite": suite, "version": row["source"].split("@")[0], "benchmark": row["model"],
            "scenario": row["mode"], "submitter": "", "model": FIXED_MODELS[row["model"]], "gpu": gpu or "",
            "vendor": vendor_of(gpu), "gpus": row["n"], "group_gpus": group_gpus(row["parallelism"]),
            "parallelism": parallelism, "attention_dp": attention_dp(row["parallelism"], row["software"]),
            "legacy": bool(re.match(LEGACY_RELEASES, row["software"])),
            "precision": serving_precision(row["precision"], FIXED_MODELS[row["model"]]),
            "precision_note": precision_note(row["precision"], FIXED_MODELS[row["model"]]),
            "input_tokens": row["input_len"], "output_tokens": row["output_len"],
            "input_assumed": False, "lengths_source": f"measured means of the run; {row['dataset']}",
            "concurrency": row["concurrency_or_batch"], "load": "fixed_concurrency", "software": row["software"],
            "engine": engine_of(row["software"]), "tok_s_per_gpu": row["output_tok_s_per_gpu"], "excluded": excluded,
            "source": row["source"],
        })
    return rows


def main(source_dir: str) -> None:
    base = Path(source_dir)
    rows = (mlperf_rows(base / "mlperf_v4.0-v5.1.csv") + mlperf_rows(base / "mlperf_v6.0.csv", "mlperf6")
            + serving_rows(base / "serving_benchmarks.csv")
            + fixed_rows(base / "fixed_concurrency_2025_2026.csv"))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    kept = sum(1 for r in rows if not r["excluded"])
    print(f"{len(rows)} rows ({kept} usable) -> {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
