import dataclasses

import polars as pl
import pytest

from tests.reference_pages import observed
from transforms import estimator, presets
from transforms.display import (
    PAGE_000_PRECISION,
    compact_label,
    integer_label,
    kw_label,
    pct_label,
    usd_label,
)
from transforms.estimator import make_grid
from transforms.presets import CALCULATOR, CEILING

V4_FLASH, V41_FLASH = "deepseek-v4-flash", "deepseek-v4.1-flash"


def page_001_grid(gpus: list[str], context: int = 32768, streams: int = 32) -> pl.DataFrame:
    return make_grid([V4_FLASH], gpus, ["int4"], [context], [streams])


@pytest.fixture(scope="module")
def page000(models, ceiling_gpus) -> pl.DataFrame:
    page = observed("seed000_table")
    mine = estimator.estimate(models, ceiling_gpus, make_grid([V41_FLASH], page["catalog_key"].to_list()), CEILING)
    return page.join(mine, left_on="catalog_key", right_on="gpu", suffix="_mine", maintain_order="left")


@pytest.fixture(scope="module")
def page001(models, calculator_gpus) -> pl.DataFrame:
    page = observed("seed001_table")
    mine = estimator.estimate(models, calculator_gpus, page_001_grid(page["catalog_key"].to_list()), CALCULATOR)
    return page.join(mine, left_on="catalog_key", right_on="gpu", suffix="_mine", maintain_order="left")


def mismatches(df: pl.DataFrame, shown, expected: str) -> dict[str, tuple[str, str]]:
    """Rows where the estimate, displayed like the page, differs from what the page shows."""
    out = {}
    for row in df.iter_rows(named=True):
        mine, page = shown(row), row[expected] or ""
        if mine != page:
            out[row["catalog_key"]] = (mine, page)
    return out


# Page 000: the ceiling method, DeepSeek V4.1 Flash, precision chosen by the page's rule.

def test_page_000_has_all_18_parts(page000):
    assert page000.height == 18 and page000["tp"].null_count() == 0


@pytest.mark.parametrize(("shown", "expected"), [
    (lambda r: PAGE_000_PRECISION[r["precision_mine"]], "precision"),
    (lambda r: str(r["tp"]), "gpus"),
    (lambda r: integer_label(r["single_stream_tok_s"]), "decode_tok_s"),
    (lambda r: integer_label(r["agg_tok_s"]), "batched_out_tok_s"),
    (lambda r: integer_label(r["prefill_tok_s"]), "batched_in_tok_s"),
])
def test_page_000_matches_all_18_parts_as_displayed(page000, shown, expected):
    page = page000.with_columns(pl.col(c).cast(pl.Int64).map_elements(lambda v: f"{v:,}", return_dtype=pl.String)
                                for c in ("decode_tok_s", "batched_out_tok_s", "batched_in_tok_s"))
    assert mismatches(page, shown, expected) == {}


def test_page_000_parts_beyond_one_node_are_multi_node(page000):
    assert page000["multi_node"].to_list() == [int(g) > 8 for g in page000["gpus"]]


def test_page_000_penalises_exactly_the_pcie_parts(page000):
    penalised = page000.filter(pl.col("agg_tok_s") < 1.7 * pl.col("single_stream_tok_s") - 1e-9)
    assert set(penalised["catalog_key"]) == set(page000.filter(pl.col("pcie_penalty") == "True")["catalog_key"])


# Page 001: the calculator method, DeepSeek-V4-Flash at INT4/FP4, 32 streams x 32,768 tokens.

def test_page_001_has_all_105_parts(page001):
    assert page001.height == 105 and page001["agg_tok_s_mine"].null_count() == 0


def test_page_001_tp_105_of_105(page001):
    assert mismatches(page001, lambda r: str(r["tp_mine"]), "tp") == {}


def test_page_001_memory_differs_only_on_the_two_a100_40gb_rows(page001):
    # ESTIMATOR.md: the page shows 57 % where its own formula gives 58 % for these two parts.
    shown = mismatches(page001, lambda r: pct_label(r["memory_used_pct"]).rstrip("%"), "mem_used_pct")
    assert shown == {"A100 PCIe 40GB": ("58", "57"), "A100 SXM4 40GB": ("58", "57")}


def test_page_001_aggregate_tok_s_105_of_105_with_the_estimated_fp4_marks(page001):
    assert mismatches(page001, lambda r: compact_label(r["agg_tok_s_mine"], approx=r["fp4_estimated"]), "agg_tok_s") == {}


def test_page_001_per_stream_tok_s_105_of_105(page001):
    assert mismatches(page001, lambda r: compact_label(r["per_stream_tok_s"]), "single_tok_s") == {}


def test_page_001_power_105_of_105(page001):
    shown = mismatches(page001, lambda r: "" if r["power_kw_mine"] is None else compact_label(r["power_kw_mine"]), "power_kw")
    assert shown == {}


def test_page_001_usd_per_mtok_within_one_cent_on_all_38_priced_parts(page001, page001_prices):
    mine = page001.select("usd_per_m", gpu="catalog_key", tp="tp_mine", agg_tok_s="agg_tok_s_mine")
    priced = estimator.with_costs(mine, page001_prices).filter(pl.col("usd_per_m").is_not_null())
    off = priced.filter((pl.col("usd_per_mtok") - pl.col("usd_per_m").cast(pl.Float64)).abs() > 0.01)
    assert priced.height == 38 and off.select("gpu", "usd_per_mtok", "usd_per_m").to_dicts() == []


@pytest.mark.parametrize("card", observed("seed001_cards").to_dicts(), ids=lambda c: c["card"])
def test_page_001_cards(models, calculator_gpus, page001_prices, card):
    table = observed("seed001_table")["catalog_key"].to_list()
    grid = page_001_grid(table, int(card["context_tokens"]), int(card["streams"]))
    priced = estimator.with_costs(estimator.estimate(models, calculator_gpus, grid, CALCULATOR), page001_prices)
    if card["card"] == "bare_minimum":
        pick = estimator.bare_minimum(priced, page001_prices)
    else:
        column = "usd_per_hr" if card["card"] == "cheapest_per_hour" else "usd_per_mtok"
        pick = priced.drop_nulls(column).sort(column).head(1)
    row = pick.row(0, named=True)
    assert (row["gpu"], str(row["tp"])) == (card["catalog_key"], card["gpus"])
    assert compact_label(row["agg_tok_s"]) == card["tok_s"]
    assert (usd_label(row["usd_per_hr"]), usd_label(row["usd_per_mtok"])) == (card["usd_hr"], card["usd_per_m"])
    assert pct_label(row["memory_used_pct"]) == card["memory_used"]


def test_page_001_memory_fills_at_six_of_six(models, calculator_gpus):
    page = observed("seed001_fills")
    fills = estimator.memory_fills_at(models, calculator_gpus, V4_FLASH, page["catalog_key"].to_list(), "int4", 32768,
                                      CALCULATOR)
    assert fills.select(pl.col("tp").cast(pl.String), pl.col("max_streams").cast(pl.String)).rows() == page.select(
        "gpus", "users").rows()


def test_page_001_fleet_what_if_rows(models, calculator_gpus, page001_prices):
    page = observed("seed001_fleet")
    estimates = estimator.estimate(models, calculator_gpus, page_001_grid(page["catalog_key"].to_list()), CALCULATOR)
    fleets = page.select(gpu=pl.col("catalog_key"), gpu_count=pl.col("gpu_count").cast(pl.Int64))
    shown = [
        (f"{r['replicas']} x TP{r['tp']}", str(r["idle_gpus"]), f"{compact_label(r['agg_tok_s'])} tok/s",
         usd_label(r["usd_per_hr"]), kw_label(r["power_kw"]), usd_label(r["usd_per_mtok"]))
        for r in estimator.fleet_whatif(estimates, fleets, page001_prices, calculator_gpus).iter_rows(named=True)
    ]
    assert shown == page.select("replicas", "idle", "tok_s", "usd_hr", "power", "usd_per_m").rows()


def test_page_001_size_for_a_target(models, calculator_gpus, page001_prices):
    page = observed("seed001_sizing")
    target, context, streams = (int(page[c][0]) for c in ("target_tok_s", "context_tokens", "streams"))
    estimates = estimator.estimate(models, calculator_gpus, page_001_grid(page["catalog_key"].to_list(), context, streams),
                                   CALCULATOR)
    sized = estimator.size_for_target(estimates, target, page001_prices, calculator_gpus)
    assert [(r["gpu"], str(r["gpu_count"]), usd_label(r["usd_per_hr"])) for r in sized.iter_rows(named=True)] == (
        page.select("catalog_key", "gpus", "usd_hr").rows()
    )


# Beyond the pages: every model, GPU, precision, context and stream count.

@pytest.mark.parametrize("params", [CEILING, CALCULATOR], ids=lambda p: p.name)
def test_every_catalogue_model_and_gpu_runs_at_the_extremes(frames, params):
    gpus = estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], params.name)
    grid = make_grid(frames["models"]["model_id"].to_list(), gpus["name"].to_list(), list(presets.PRECISIONS),
                     [1, estimator.CONTEXT_TOKENS_MAX], [1, estimator.STREAMS_MAX])
    out = estimator.estimate(frames["models"], gpus, grid, params)
    assert out.height == grid.height
    assert out["tp"].null_count() == 0 and all(tp & (tp - 1) == 0 for tp in out["tp"].unique())
    no_compute = out.filter(pl.col("compute_tflops").is_null())
    assert no_compute.height > 0 and no_compute["prefill_tok_s"].null_count() == no_compute.height
    known = out.filter(pl.col("compute_tflops").is_not_null())
    assert known["agg_tok_s"].null_count() == 0 and known["agg_tok_s"].is_finite().all()
    assert (out["multi_node"] == (out["tp"] > params.node_gpus)).all()


def test_a_part_without_tflops_or_tdp_gives_nulls_not_a_crash(models, frames):
    # The catalogue has no compute figure for TPU 8t; page 001 supplies one only through its overlay.
    out = estimator.estimate(models, frames["gpus"], page_001_grid(["TPU 8t"]), CALCULATOR).row(0, named=True)
    assert out["tp"] == 1 and out["memory_used_pct"] > 0 and out["max_streams"] > 32
    assert out["agg_tok_s"] is None and out["prefill_tok_s"] is None and out["bound"] is None and out["power_kw"] is None
    assert out["per_stream_tok_s"] > 0  # bandwidth alone is known


def test_the_overlay_keeps_vendor_values_as_the_default(frames):
    b200 = frames["gpus"].filter(pl.col("name") == "B200 SXM")
    by_preset = {p: estimator.apply_overlay(b200, frames["gpu_overlays"], p)["bandwidth_gbs"][0]
                 for p in ("vendor", "ceiling", "calculator")}
    assert by_preset == {"vendor": 8000, "ceiling": 8000, "calculator": 7700}
    gb300 = estimator.apply_overlay(frames["gpus"].filter(pl.col("name") == "GB300 NVL72 GPU"), frames["gpu_overlays"],
                                    "calculator")
    assert gb300["tdp_w"][0] is None and gb300["overlay_fields"][0].to_list() == ["tdp_w"]


def test_every_overlay_names_its_page(frames):
    overlays = frames["gpu_overlays"]
    page = {"ceiling": "page 000", "calculator": "page 001"}
    assert overlays.height > 0
    assert all(source.startswith(page[preset]) and note for preset, source, note in overlays.select(
        "preset", "source", "note").rows())


def test_calculator_without_a_precision_uses_the_model_native_one(models, calculator_gpus):
    grid = make_grid([V4_FLASH, "llama-3.1-8b", "deepseek-v3"], ["H200 SXM"])
    assert estimator.estimate(models, calculator_gpus, grid, CALCULATOR)["precision"].to_list() == ["int4", "bf16", "fp8"]


def test_moe_reads_the_active_weights_for_one_stream_and_all_of_them_for_many(models, calculator_gpus):
    bare = presets.with_overrides(CALCULATOR, {"kv_read_factor": "0", "attention_flops_factor": "0",
                                              "bandwidth_efficiency": "1", "tp_derate": "0"})
    grid = make_grid([V4_FLASH], ["GB300 NVL72 GPU"], ["int4"], [1024], [1, estimator.STREAMS_MAX])
    one, many = estimator.estimate(models, calculator_gpus, grid.with_columns(tp=pl.lit(1)), bare).rows(named=True)
    weights_gb = lambda params_b: params_b * CALCULATOR.bytes_int4  # noqa: E731
    assert one["per_stream_tok_s"] == pytest.approx(8000 / weights_gb(13.8))
    assert many["per_stream_tok_s"] == pytest.approx(8000 / weights_gb(290.94), rel=1e-6)


def test_a_moe_without_routing_geometry_still_reads_its_active_weights_first(models, calculator_gpus):
    assert models.filter(pl.col("model_id") == V41_FLASH)["experts"][0] is None
    bare = presets.with_overrides(CALCULATOR, {"kv_read_factor": "0", "attention_flops_factor": "0",
                                              "bandwidth_efficiency": "1", "tp_derate": "0"})
    grid = make_grid([V41_FLASH], ["B200 SXM"], ["int4"], [1024], [1]).with_columns(tp=pl.lit(4))
    out = estimator.estimate(models, calculator_gpus, grid, bare).row(0, named=True)
    assert out["single_stream_tok_s"] == pytest.approx(7700 * 4 / (16 * CALCULATOR.bytes_int4))


def test_windowed_layers_hold_and_read_at_most_their_window(models, calculator_gpus):
    """Llama 4 Scout's 36 chunked layers attend to at most 8192 tokens: below that a stream holds its whole context
    of their KV, beyond it the window; a model without windows (null columns) holds none of it."""
    per_token = 36 * 2 * 8 * 128 * 2
    scout = models.filter(pl.col("model_id") == "llama-4-scout")
    assert (scout["window_tokens"][0], scout["window_kv_bytes_per_token"][0]) == (8192, per_token)
    pair = pl.concat([scout, scout.with_columns(window_tokens=pl.lit(None, pl.Int64), model_id=pl.lit("unwindowed"),
                                                window_kv_bytes_per_token=pl.lit(None, pl.Float64))])
    for context, held in ((2048, 2048), (32768, 8192)):
        grid = make_grid(["llama-4-scout", "unwindowed"], ["H200 SXM"], ["bf16"], [context], [16]).with_columns(
            tp=pl.lit(4))
        windowed, without = estimator.estimate(pair, calculator_gpus, grid, CALCULATOR).rows(named=True)
        assert windowed["memory_used_gb"] - without["memory_used_gb"] == pytest.approx(
            16 * CALCULATOR.kv_memory_factor * held * per_token * 1e-9)
        assert windowed["max_streams"] < without["max_streams"]
        assert windowed["per_stream_tok_s"] < without["per_stream_tok_s"]


def test_a_recurrent_state_is_held_and_read_whatever_the_context(models, calculator_gpus):
    """Qwen3-Next's Gated DeltaNet layers keep a fixed state per stream: each stream holds it in memory and reads it
    every decode step, at any context, beside the KV of the layers that grow."""
    qwen = models.filter(pl.col("model_id") == "qwen3-next-80b-a3b")
    state_bytes = qwen["state_bytes_per_stream"][0]
    pair = pl.concat([qwen, qwen.with_columns(state_bytes_per_stream=pl.lit(None, pl.Float64),
                                              model_id=pl.lit("stateless"))])
    for context in (1024, 65536):
        grid = make_grid(["qwen3-next-80b-a3b", "stateless"], ["H200 SXM"], ["bf16"], [context], [16]).with_columns(
            tp=pl.lit(4))
        with_state, without = estimator.estimate(pair, calculator_gpus, grid, CALCULATOR).rows(named=True)
        assert with_state["memory_used_gb"] - without["memory_used_gb"] == pytest.approx(
            16 * CALCULATOR.kv_memory_factor * state_bytes * 1e-9)
        assert with_state["per_stream_tok_s"] < without["per_stream_tok_s"]


def test_uncertain_follows_the_inputs_used(models, ceiling_gpus, calculator_gpus):
    ceiling = estimator.estimate(models, ceiling_gpus, make_grid([V41_FLASH], ["H20 96GB", "H200 SXM", "Arc Pro B70 32GB"]),
                                 CEILING)
    # H20: vendor values throughout; H200: page 000's 989 TFLOPS overlay; Arc Pro B70: values solved from a page.
    assert ceiling["uncertain"].to_list() == [False, True, True]
    calculator = estimator.estimate(models, calculator_gpus, page_001_grid(["H20 96GB"]), CALCULATOR)
    assert calculator["uncertain"].to_list() == [True]  # V4-Flash's KV size is page 001's estimate


def test_the_curve_climbs_bends_where_compute_binds_and_stops_where_memory_fills(models, calculator_gpus):
    points = estimator.curve(models, calculator_gpus, V4_FLASH, "H20 96GB", "int4", 4096, CALCULATOR)
    agg = points["agg_tok_s"].to_list()
    assert points["streams"][0] == 1 and points["streams"][-1] == points["max_streams"][0]
    assert all(b >= a for a, b in zip(agg, agg[1:], strict=False))
    bounds = points["bound"].to_list()
    assert bounds[0] == "memory" and bounds[-1] == "compute" and bounds == sorted(bounds, key=["memory", "compute"].index)
    gains = [(b - a) / (s - r) for a, b, r, s in zip(agg, agg[1:], points["streams"], points["streams"][1:], strict=False)]
    assert gains[-1] < gains[0] / 10
    assert points["memory_used_pct"][-1] <= 100


def test_the_curve_keeps_the_replica_and_requests_it_is_given_and_refuses_one_that_cannot_hold_the_model(
        models, calculator_gpus):
    points = estimator.curve(models, calculator_gpus, V4_FLASH, "H20 96GB", "int4", 4096, CALCULATOR, tp=8, streams=50)
    assert set(points["tp"]) == {8} and points["streams"][-1] == 50 and points["max_streams"][0] > 50
    alone = estimator.curve(models, calculator_gpus, V4_FLASH, "H20 96GB", "int4", 4096, CALCULATOR)
    assert set(alone["tp"]) == {2} and alone["max_streams"][0] < points["max_streams"][0]  # sized for one stream
    with pytest.raises(estimator.EstimatorError, match=r"^TP 1 cannot hold deepseek-v4-flash \(int4\) on H20 96GB: "
                                                       r"1 x 96 GB fill before one stream of 4,096 tokens"):
        estimator.curve(models, calculator_gpus, V4_FLASH, "H20 96GB", "int4", 4096, CALCULATOR, tp=1)


def test_the_ceiling_curve_runs_to_the_stream_limit(models, ceiling_gpus):
    points = estimator.curve(models, ceiling_gpus, V41_FLASH, "H200 SXM", None, 8192, CEILING)
    assert points["streams"][-1] == estimator.STREAMS_MAX and points["max_streams"].null_count() == points.height
    assert points["agg_tok_s"].max() == pytest.approx(CEILING.batch_gain_max * points["agg_tok_s"][0])


@pytest.mark.parametrize(("change", "message"), [
    ({"model": "gpt-5"}, "unknown model gpt-5"),
    ({"gpu": "H300"}, "unknown GPU H300"),
    ({"context_tokens": 0}, "context_tokens must be between 1 and"),
    ({"streams": 5000}, "streams must be between 1 and 4096"),
    ({"precision": "fp2"}, "unknown precision 'fp2'"),
    ({"tp": 4, "pipeline_stages": 3}, "pipeline_stages must divide tp"),
    ({"pipeline_stages": 2}, "pipeline_stages must divide tp"),  # stages of an unsized group
])
def test_a_bad_grid_is_refused_with_a_clear_message(models, calculator_gpus, change, message):
    grid = page_001_grid(["H200 SXM"]).with_columns(pl.lit(v).alias(k) for k, v in change.items())
    with pytest.raises(ValueError, match=message):
        estimator.estimate(models, calculator_gpus, grid, CALCULATOR)


def test_estimate_keeps_the_grid_order(models, calculator_gpus):
    grid = make_grid(models["model_id"].to_list(), calculator_gpus["name"].to_list(), [None, "int4"], [4096, 32768],
                     [1, 32]).sample(fraction=1.0, shuffle=True, seed=7)
    keys = ["model", "gpu", "context_tokens", "streams"]
    out = estimator.estimate(models, calculator_gpus, grid, CALCULATOR)
    assert out.select(keys).equals(grid.select(keys).with_columns(pl.col("model", "gpu").cast(pl.String)))
    as_text = grid.with_columns(pl.col("model", "gpu", "precision").cast(pl.String))  # a grid built by hand
    assert estimator.estimate(models, calculator_gpus, as_text, CALCULATOR).equals(out)


def test_a_measured_replica_wider_than_one_node_pays_its_pipeline_boundaries(frames):
    gpus = estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], "measured")
    grid = make_grid(["deepseek-r1"], ["H100 SXM5 80GB"], ["bf16"], [4096], [32]).join(
        pl.DataFrame({"tp_": [8, 16, 32]}), how="cross").with_columns(tp=pl.col("tp_")).drop("tp_")
    paid = estimator.estimate(frames["models"], gpus, grid, presets.MEASURED)
    free = estimator.estimate(frames["models"], gpus, grid, dataclasses.replace(
        presets.MEASURED, pp_hop_s=0.0, pp_hop_s_per_stream=0.0))
    extra = (1 / paid["per_stream_tok_s"] - 1 / free["per_stream_tok_s"]).to_list()
    hop = presets.MEASURED.pp_hop_s + 32 * presets.MEASURED.pp_hop_s_per_stream
    # one node: no boundary; 16 GPUs: two nodes, one boundary; 32: four nodes, three boundaries
    assert extra == pytest.approx([0.0, hop, 3 * hop], abs=1e-12)
    assert (CEILING.pp_hop_s, CALCULATOR.pp_hop_s, CALCULATOR.pp_hop_s_per_stream) == (0.0, 0.0, 0.0)


def test_speculative_decoding_checks_its_drafts_and_keeps_what_it_is_told(frames):
    """A step that checks a draft per stream reads the same weights and KV and computes twice the tokens: kept at
    one token a step (every draft refused) it is slower than plain decoding; kept at A tokens a step, each stream
    decodes A times as fast as then. A memory-bound stream (Llama 3.3 70B alone on two B200s) gains almost A."""
    gpus = estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], "measured")
    grid = make_grid(["llama-3.3-70b"], ["B200 SXM"], ["fp8"], [2500], [1, 64]).with_columns(
        tp=pl.lit(2, dtype=pl.Int64), input_tokens=pl.lit(2000, dtype=pl.Int64),
        output_tokens=pl.lit(500, dtype=pl.Int64))

    def per_stream(**settings):
        params = presets.with_overrides(presets.MEASURED, {k: str(v) for k, v in settings.items()})
        return estimator.estimate(frames["models"], gpus, grid, params)["per_stream_tok_s"].to_numpy()

    plain, refused, kept = per_stream(), per_stream(draft_tokens=1), per_stream(draft_tokens=1, tokens_per_step=1.85)
    assert (refused < plain).all()
    assert kept == pytest.approx(1.85 * refused, rel=1e-12)
    assert 1.7 * plain[0] < kept[0] < 1.85 * plain[0]
    assert (presets.MEASURED.draft_tokens, presets.MEASURED.tokens_per_step) == (0, 1.0)  # never unless stated


@pytest.mark.parametrize(("interconnect", "gbs"), [
    ("NVLink 4 (900 GB/s)", 450.0),  # NVIDIA's per-GPU figure sums both directions
    ("NVLink 5 (1.8 TB/s)", 900.0),
    ("NVLink (400 GB/s, China)", 200.0),
    ("PCIe 4 (no NVLink)", 32.0),
    ("PCIe 5 + NVLink bridge", 64.0),  # the bridge joins pairs only: a wider ring crosses PCIe
    ("PCIe 5 x8", 32.0),
    ("PCIe 3", 16.0),
    ("NVLink 5", None),  # a generation says nothing of how many links the part has
    ("Infinity Fabric (153.6 GB/s links)", None),
    ("shared PCIe 5 of the parent card", None),
    ("PCIe", None),
])
def test_the_link_is_read_from_the_catalogue_interconnect_and_never_guessed(interconnect, gbs):
    read = pl.select(estimator.link_gbs(pl.lit(interconnect, dtype=pl.String))).item()
    assert read == gbs


# Llama 3.3 70B's hidden_size (its config.json: 8192); a row stating none falls back to d from 12 d^2 parameters a
# layer: sqrt(70.55e9 / (12 x 80)) = 8,573 (5% wide of it).
@pytest.mark.parametrize(("hidden_size", "hidden"), [(8192, 8192.0), (None, (70.55e9 / (12 * 80)) ** 0.5)],
                         ids=["stated", "fallback"])
def test_a_pcie_tensor_parallel_group_is_slower_than_an_nvlink_one_by_its_all_reduce_transfer(frames, hidden_size,
                                                                                                hidden):
    """The same part over PCIe 5 (64 GB/s a direction) and over NVLink 4 (450): each decode step of a TP4 group moves
    2 all-reduces x layers x streams x hidden x 2 bytes x 2(4-1)/4 per GPU over the link, at link_efficiency of it;
    a single GPU or a group run as four pipeline stages all-reduces nothing. The hidden size is the row's, else
    estimated from its active parameters per layer."""
    models = frames["models"].with_columns(hidden_size=pl.when(pl.col("model_id") == "llama-3.3-70b")
                                           .then(pl.lit(hidden_size, pl.Int64)).otherwise("hidden_size"))
    nvlink = frames["gpus"].filter(pl.col("name") == "H100 SXM5 80GB")
    pcie = nvlink.with_columns(name=pl.lit("H100 over PCIe"), fabric=pl.lit("PCIe"), interconnect=pl.lit("PCIe 5"))
    gpus = estimator.apply_overlay(pl.concat([nvlink, pcie]), frames["gpu_overlays"], "measured")
    model = models.filter(pl.col("model_id") == "llama-3.3-70b").row(0, named=True)
    assert (model["layers"], model["active_params_b"]) == (80, 70.55)
    grid = make_grid(["llama-3.3-70b"], ["H100 SXM5 80GB", "H100 over PCIe"], ["bf16"], [4096], [32]).join(
        pl.DataFrame({"tp_": [1, 4, 4], "stages": [None, None, 4]}, schema={"tp_": pl.Int64, "stages": pl.Int64}),
        how="cross").with_columns(tp=pl.col("tp_"), pipeline_stages=pl.col("stages")).drop("tp_", "stages")
    out = estimator.estimate(models, gpus, grid, presets.MEASURED)
    step = (1 / out["per_stream_tok_s"]).to_list()
    gb = 2 * 80 * 32 * hidden * 2 * (2 * 3 / 4) * 1e-9
    transfer = gb * (1 / 64 - 1 / 450) / presets.MEASURED.link_efficiency
    assert transfer > 0.001  # 2 ms a step at 32 streams: not a rounding error beside a ~10 ms step
    nvlink_steps, pcie_steps = step[:3], step[3:]
    assert [p - n for p, n in zip(pcie_steps, nvlink_steps, strict=True)] == pytest.approx([0.0, transfer, 0.0], abs=1e-12)


def test_the_hidden_width_fallback_is_as_far_off_as_its_comment_and_the_docs_say(models):
    """d = sqrt(active / (12 x layers)), the estimate a row without hidden_size falls back to: within 15% on Llama 3
    70B-405B, DeepSeek-V3 and Qwen3-235B; 18-32% high on the mixtures of experts whose active parameters are not
    12 d^2 a layer (catalogue.py's comment, migration 0027's, docs/estimator.md)."""
    from transforms.estimator.catalogue import _model_table

    estimate = _model_table(models.with_columns(hidden_size=pl.lit(None, pl.Int64)), CALCULATOR)
    stated = dict(zip(models["model_id"], models["hidden_size"], strict=True))
    off = {m: 100 * (d / stated[m] - 1) for m, d in zip(estimate["model"], estimate["_hidden"], strict=True)
           if d is not None and stated[m]}
    assert all(abs(off[m]) < 15 for m in ("llama-3.3-70b", "llama-3.1-405b", "deepseek-v3", "qwen3-235b-a22b"))
    assert {m: round(off[m]) for m in ("qwen3-30b-a3b", "gpt-oss-120b", "gpt-oss-20b")} == {
        "qwen3-30b-a3b": 18, "gpt-oss-120b": 26, "gpt-oss-20b": 32}
