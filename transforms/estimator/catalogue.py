"""The catalogues as the estimator reads them: a preset's overlay on the GPU specs, and per GPU and per model the
fields each method uses with whether they are in doubt, gathered onto the grid's rows by name."""

import polars as pl

from transforms.estimator.grid import PRECISION, EstimatorError
from transforms.presets import Params, normalise_precision

PAGE_ESTIMATE_SOURCE = "estimate"  # an overlay whose source ends with this is a figure the page marks estimated (~)
COMPUTE_FIELDS = ("bf16_tflops", "fp8_tflops", "int8_tops", "fp4_tflops")
SPEC_FIELDS = ("memory_gb", "bandwidth_gbs", *COMPUTE_FIELDS, "tdp_w")
# Words of the gpus `uncertain` column and the spec fields they cast doubt on; other text doubts them all.
UNCERTAIN_WORDS = {
    "memory_gb": ("memory",),
    "bandwidth_gbs": ("bandwidth",),
    "bf16_tflops": ("compute", "bf16"),
    "fp8_tflops": ("compute", "fp8"),
    "int8_tops": ("compute", "int8"),
    "fp4_tflops": ("compute", "fp4"),
    "tdp_w": ("tdp",),
}
NO_OVERLAY = pl.DataFrame(schema={"preset": pl.String, "gpu": pl.String, "field": pl.String, "value": pl.Float64,
                                  "source": pl.String})


def apply_overlay(gpus: pl.DataFrame, overlays: pl.DataFrame, preset: str) -> pl.DataFrame:
    """The GPU catalogue as a preset's page saw it: its overlay values replace the vendor's (NULL: unknown).

    Adds `overlay_fields` (the fields replaced) and `fp4_page_estimate` (the page marks its FP4 figure estimated).
    """
    rows = overlays.filter(pl.col("preset") == preset)
    marks = rows.group_by("gpu").agg(
        overlay_fields=pl.col("field"),
        fp4_page_estimate=((pl.col("field") == "fp4_tflops") & pl.col("source").str.ends_with(PAGE_ESTIMATE_SOURCE)).any(),
    )
    out = gpus.join(marks, left_on="name", right_on="gpu", how="left", maintain_order="left").with_columns(
        pl.col("overlay_fields").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        pl.col("fp4_page_estimate").fill_null(False),
    )
    if rows.is_empty():
        return out
    values = rows.pivot(on="field", index="gpu", values="value").rename(lambda c: c if c == "gpu" else f"_{c}")
    out = out.join(values, left_on="name", right_on="gpu", how="left", maintain_order="left")
    replaced = [c.removeprefix("_") for c in values.columns if c != "gpu"]
    return out.with_columns(
        pl.when(pl.col("overlay_fields").list.contains(f)).then(pl.col(f"_{f}")).otherwise(pl.col(f)).alias(f)
        for f in replaced
    ).drop(f"_{f}" for f in replaced)


def _attached(grid: pl.DataFrame, column: str, table: pl.DataFrame, what: str) -> list[pl.Expr]:
    """A small per-name table's columns for every grid row, gathered by the name's Enum code (no hash join)."""
    rows = pl.DataFrame({column: grid.schema[column].categories}).join(table, on=column, how="left", maintain_order="left")
    unknown = rows.filter(pl.col(table.columns[1]).is_null())[column].to_list()
    if unknown:
        raise EstimatorError(f"unknown {what} {', '.join(unknown)}: not in the catalogue")
    return [pl.lit(rows[c]).gather(pl.col(column).to_physical()).alias(c) for c in table.columns if c != column]


def _field_doubts(text: pl.Expr, field: str) -> pl.Expr:
    known = {w for words in UNCERTAIN_WORDS.values() for w in words} | {"all"}
    words = "|".join(("all", *UNCERTAIN_WORDS[field]))
    named = text.str.contains(rf"\b({words})\b")
    unexplained = (text.str.len_chars() > 0) & ~text.str.contains(rf"\b({'|'.join(sorted(known))})\b")
    return named | unexplained


# PCIe generation -> GB/s per direction of an x16 link (3.0: 8 GT/s x 16 lanes at 128b/130b ~ 16 GB/s; each later
# generation doubles the rate); fewer lanes carry their share.
PCIE_X16_GBS = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}


def link_gbs(interconnect: pl.Expr) -> pl.Expr:
    """GB/s per direction of the link a GPU reaches its peers over, read from the catalogue's `interconnect` text;
    NULL where the text states neither an NVLink figure nor a PCIe generation (no figure is guessed).

    - "NVLink 4 (900 GB/s)", "NVLink 5 (1.8 TB/s)", "NVLink (400 GB/s, China)": NVIDIA states NVLink per GPU as the
      sum of both directions, so half of it; a generation without its figure ("NVLink 5") says nothing of the part's
      links (H800 and A800 have fewer than their generation's): NULL.
    - "PCIe 4", "PCIe 5 x8", "PCIe 5 + NVLink bridge": the generation's x16 rate, times lanes/16 where stated. A bridge
      in parentheses or after "+" is optional and joins pairs only: a group's ring crosses PCIe, so PCIe is read.
    - Infinity Fabric, Xe Link, ICI, NeuronLink, RoCE and the like state no per-GPU figure here: NULL."""
    stated = interconnect.str.extract_groups(r"^NVLink[^(]*\((?P<rate>\d+(?:\.\d+)?) (?P<unit>[TG])B/s")
    nvlink, tera = stated.struct.field("rate").cast(pl.Float64), stated.struct.field("unit") == "T"
    generation = interconnect.str.extract(r"^PCIe (\d)\b", 1).cast(pl.Int64)
    lanes = interconnect.str.extract(r"^PCIe \d x(\d+)\b", 1).cast(pl.Float64).fill_null(16.0)
    pcie = generation.replace_strict(PCIE_X16_GBS, default=None, return_dtype=pl.Float64) * lanes / 16
    return pl.coalesce(pl.when(tera).then(nvlink * 1000).otherwise(nvlink) / 2, pcie)


def _gpu_table(gpus: pl.DataFrame) -> pl.DataFrame:
    """Per GPU: the spec fields, which of them are in doubt, whether it lacks a scale-up fabric and its link to its
    peers (link_gbs)."""
    if "overlay_fields" not in gpus.columns:
        gpus = apply_overlay(gpus, NO_OVERLAY, "vendor")
    text = pl.col("uncertain").fill_null("").str.to_lowercase()
    doubts = {
        f: pl.col("solved_from_page") | _field_doubts(text, f) | pl.col("overlay_fields").list.contains(f)
        for f in SPEC_FIELDS
    }
    return gpus.select(
        pl.col("name").alias("gpu"), *SPEC_FIELDS, "fp4_page_estimate", _pcie=pl.col("fabric") == "PCIe",
        _vendor=pl.col("vendor"), link_gbs=link_gbs(pl.col("interconnect")),
        # Memory, bandwidth and (when known) TDP feed every row; which compute peak does depends on the row.
        _doubt_spec=doubts["memory_gb"] | doubts["bandwidth_gbs"] | (doubts["tdp_w"] & pl.col("tdp_w").is_not_null()),
        **{f"_doubt_{f}": doubts[f] for f in COMPUTE_FIELDS},
    )


def _model_table(models: pl.DataFrame, params: Params) -> pl.DataFrame:
    """Per model: sizes, the split into always-read and routed-expert weights, and whether used fields are in doubt."""
    routed = (pl.col("arch") == "moe") & pl.col("experts").is_not_null() & pl.col("experts_per_token").is_not_null()
    used = ["total_params_b", "active_params_b"]
    used += ["active_params_in_b"] if params.prefill_active == "input" else []
    used += ["experts", "experts_per_token"] if params.expert_coverage else []
    used += ["kv_bytes_per_token", "state_bytes_per_stream", "window_tokens", "window_kv_bytes_per_token"] \
        if params.kv_memory_factor or params.kv_read_factor else []
    used += ["attn_flops_per_ctx_token"] if params.attention_flops_factor or params.prefill_attention_factor else []
    natives = {p: normalise_precision(p) for p in models["native_precision"].unique().to_list()}
    return models.select(
        pl.col("model_id").alias("model"), "total_params_b", "active_params_b", "kv_bytes_per_token",
        "attn_flops_per_ctx_token",
        # a model without recurrent layers holds no fixed state per stream, one without windowed layers no window
        _state_bytes=pl.col("state_bytes_per_stream").fill_null(0.0),
        _window_tokens=pl.col("window_tokens").fill_null(0),
        _window_kv_bytes=pl.col("window_kv_bytes_per_token").fill_null(0.0),
        # a GQA cache splits by KV head over at most kv_heads GPUs; a latent (MLA) is one head; unknown: no limit
        _kv_heads=pl.col("kv_heads"),
        # The width of the activations a tensor-parallel group all-reduces: the row's hidden size (its config.json's).
        # A row without one (no source states it) falls back to an estimate: a transformer layer holds about 12 d^2
        # parameters a token passes through (4 d^2 attention, 8 d^2 MLP; Kaplan et al. 2020, "Scaling Laws for
        # Neural Language Models", eq. 2.1), so d from the active parameters per layer (within ~15% for Llama 2/3
        # 70B-405B, DeepSeek-V3, Qwen3-235B; 18-32% high for Qwen3-30B-A3B, gpt-oss-120b and gpt-oss-20b, whose
        # active parameters are not 12 d^2 a layer); NULL without layers either.
        _layers=pl.col("layers").cast(pl.Float64),
        _hidden=pl.coalesce(pl.col("hidden_size").cast(pl.Float64),
                            (pl.col("active_params_b") * 1e9 / (12 * pl.col("layers"))).sqrt()),
        _native=pl.col("native_precision").replace_strict(natives, return_dtype=PRECISION),
        _prefill_params_b=pl.coalesce("active_params_in_b", "active_params_b")
        if params.prefill_active == "input" else pl.col("active_params_b"),
        # Expected expert coverage: a MoE without routing geometry is read as if every weight were an expert.
        _route_p=pl.when(routed).then(pl.col("experts_per_token") / pl.col("experts"))
        .when(pl.col("arch") == "moe").then(pl.col("active_params_b") / pl.col("total_params_b"))
        .otherwise(0.0),
        _doubt_model=pl.col("uncertain").fill_null("").str.contains(rf"\b({'|'.join(used)})\b"),
        _routed=routed,
        _moe=pl.col("arch") == "moe",
        _latent_kv=pl.col("attention") == "mla",
    ).with_columns(
        _dense_b=pl.when(pl.col("_routed"))
        .then((pl.col("active_params_b") - pl.col("_route_p") * pl.col("total_params_b")) / (1 - pl.col("_route_p")))
        .when(pl.col("_moe")).then(0.0)
        .otherwise(pl.col("total_params_b")),
    ).with_columns(
        _expert_b=pl.col("total_params_b") - pl.col("_dense_b"),
        _log_keep=(1 - pl.col("_route_p")).log(),
    ).drop("_routed")
