"""Own, rent or call the API: mapping API listings to models, the comparison, and page 002's scenario redone."""

from datetime import date, datetime

import polars as pl
import pytest

from tests.transforms.offers_factory import DAY, offers
from transforms import api_prices
from transforms.costs import HOURS_PER_MONTH, OwnershipParams, cost_per_mtok, own_vs_rent, replica_prices
from transforms.presets import DEFAULT_COST_METHOD

FETCHED = datetime(2026, 8, 19, 6, 0)
PARTS = pl.DataFrame({"name": ["H200 SXM", "SM100"], "form_factor": ["SXM5", "SXM"]})  # what own_vs_rent reads
MODELS = pl.DataFrame({
    "model_id": ["deepseek-v4-flash", "llama-3.1-8b", "deepseek-v4.1-flash"],
    "hf_repo": ["deepseek-ai/DeepSeek-V4-Flash", "meta-llama/Llama-3.1-8B-Instruct", None],
    "hf_ids": [None, None, None],
    "api_ids": [None, "meta-llama/llama-3.1-8b-instruct", "deepseek/deepseek-flash other/flash"],
}, schema_overrides={"hf_ids": pl.String})


def listing(api_model_id: str, out: float, inp: float, *, kind="standard", tier="base", hf=None, **extra) -> dict:
    return dict(api_provider="openrouter", api_model_id=api_model_id, price_kind=kind, tier=tier, hugging_face_id=hf,
                usd_per_mtok_input=inp, usd_per_mtok_output=out, usd_per_mtok_cache_read=None, fetched_at=FETCHED,
                run_id="r1", **extra)


def frame(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows))


def test_listings_map_by_hugging_face_repository_then_by_listed_ids():
    mapped = api_prices.map_models(frame(
        listing("deepseek/deepseek-v4-flash", 0.16, 0.08, hf="deepseek-ai/DeepSeek-V4-Flash"),
        listing("deepseek/deepseek-v4-flash:free", 0, 0, kind="free", hf="DEEPSEEK-AI/deepseek-v4-flash"),
        listing("deepseek/deepseek-v4-flash-0731", 0.28, 0.14, hf="deepseek-ai/DeepSeek-V4-Flash-0731"),
        listing("meta-llama/llama-3.1-8b-instruct", 0.08, 0.05, hf="meta-llama/Meta-Llama-3.1-8B-Instruct"),
        listing("meta-llama/llama-3.1-8b-instruct:batch", 0.04, 0.02, kind="batch"),
        listing("deepseek/deepseek-flash", 1.2, 0.3),
        listing("someone/else", 1.0, 1.0),
    ), MODELS)
    assert dict(zip(mapped["api_model_id"], mapped["model"], strict=True)) == {
        "deepseek/deepseek-v4-flash": "deepseek-v4-flash",
        "deepseek/deepseek-v4-flash:free": "deepseek-v4-flash",  # the repository, whatever its case
        "deepseek/deepseek-v4-flash-0731": None,  # a dated variant maps only when listed
        "meta-llama/llama-3.1-8b-instruct": "llama-3.1-8b",  # an old repository name: through the listed id
        "meta-llama/llama-3.1-8b-instruct:batch": "llama-3.1-8b",  # a variant of a listed id
        "deepseek/deepseek-flash": "deepseek-v4.1-flash",
        "someone/else": None,
    }
    assert api_prices.unmapped(mapped)["api_model_id"].to_list() == ["deepseek/deepseek-v4-flash-0731", "someone/else"]


def test_a_listing_of_another_checkpoint_maps_through_hf_ids():
    """An FP8 checkpoint or a dated variant of a catalogue model is that model when its row lists it in hf_ids."""
    models = MODELS.with_columns(hf_ids=pl.Series([
        "deepseek-ai/DeepSeek-V4-Flash-0731 nvidia/DeepSeek-V4-Flash-NVFP4", None, None]))
    mapped = api_prices.map_models(frame(
        listing("deepseek/deepseek-v4-flash-0731", 0.28, 0.14, hf="deepseek-ai/DeepSeek-V4-Flash-0731"),
        listing("someone/flash-fp4", 0.1, 0.05, hf="NVIDIA/deepseek-v4-flash-nvfp4"),
        listing("someone/flash-fp8", 0.1, 0.05, hf="nvidia/DeepSeek-V4-Flash-FP8"),
        listing("meta-llama/llama-3.1-8b-instruct", 0.08, 0.05, hf="meta-llama/Llama-3.1-8B-Instruct"),
    ), models)
    assert mapped["model"].to_list() == ["deepseek-v4-flash", "deepseek-v4-flash", None, "llama-3.1-8b"]


def test_the_cheapest_api_is_a_standard_listing_at_its_unconditional_price():
    api = api_prices.cheapest_api(frame(
        listing("a/flash", 0.16, 0.08, model="m"),
        listing("b/flash", 0.20, 0.02, model="m"),  # dearer out, cheaper at 3:1: (3 × 0.02 + 0.20) / 4 = 0.065
        listing("a/flash:free", 0.0, 0.0, kind="free", model="m"),
        listing("a/flash", 0.01, 0.01, tier="utc 1600-0030", utc_start=1600, utc_end=30, model="m"),
        listing("c/other", 0.5, 0.1, model=None),
    ))
    assert api.select("model", "api_model_id", "usd_per_mtok_blended").rows() == [("m", "b/flash", pytest.approx(0.065))]


def test_the_api_line_names_price_provider_and_fetch_date_in_the_currency():
    api = api_prices.cheapest_api(frame(listing("deepseek/deepseek-v4-flash", 0.1596, 0.0798, model="deepseek-v4-flash")))
    assert api_prices.api_line(api, "deepseek-v4-flash") == "API: $0.16/M out (openrouter, 2026-08-19)"
    assert api_prices.api_line(api, "deepseek-v4-flash", rate=0.9, symbol="€") == "API: €0.14/M out (openrouter, 2026-08-19)"
    assert api_prices.api_line(api, "kimi-k2") is None


def grid(**overrides) -> pl.DataFrame:
    row = dict(model="m", gpu="H200 SXM", precision="int4", context_tokens=32768, streams=32, method=DEFAULT_COST_METHOD,
               engine="trtllm", estimator_version="1", tp=2, agg_tok_s=1000.0, agg_tok_s_low=None, agg_tok_s_high=None, input_tokens=None, output_tokens=None,
               prefill_tok_s=9000.0, power_kw=1.4)
    return pl.DataFrame([{**row, **overrides}], schema_overrides={
        "tp": pl.Int64, "agg_tok_s_low": pl.Float64, "agg_tok_s_high": pl.Float64, "input_tokens": pl.Int64,
        "output_tokens": pl.Int64})


def hardware(gpu: str, gpu_count: int, usd: float) -> pl.DataFrame:
    return pl.DataFrame([dict(gpu=gpu, price_kind="list", gpu_count=gpu_count, usd_low=usd, usd_high=usd,
                              quoted_on=date(2026, 9, 16), fx_rate=1.0, fx_date=DAY, fx_source="ecb", snapshot_date=DAY)])


def test_rent_own_and_api_side_by_side_with_the_volumes_where_each_wins():
    estimates = grid()
    cost = cost_per_mtok(estimates, replica_prices(offers(dict(gpu_count=2, usd_per_gpu_hr=1.8)), tps=[2]))
    own = own_vs_rent(estimates, hardware("H200 SXM", 8, 262_800.0), cost, OwnershipParams(), PARTS)
    api = api_prices.cheapest_api(frame(listing("x/m", 2.0, 0.4, model="m")))
    (row,) = api_prices.own_rent_api(cost, own, estimates, api).to_dicts()
    # renting: $3.60/hr for 1,000 out tok/s; at 3:1 a replica spends 1/1000 + 3/9000 s per output token and its inputs
    mix_tok_s = 4 / (1 / 1000 + 3 / 9000)
    assert row["rent_usd_per_mtok"] == pytest.approx(1.0)
    assert row["rent_usd_per_mtok_blended"] == pytest.approx(3.6 / 3600 * 1e6 / mix_tok_s)
    assert row["api_usd_per_mtok_blended"] == pytest.approx((3 * 0.4 + 2.0) / 4)
    # one replica rented all month ($2,628) beats the API from 3,285 M tokens a month (within its 7,884 M)
    assert row["rent_beats_api_mtok_per_month"] == pytest.approx(3.6 * HOURS_PER_MONTH / 0.8)
    assert row["rent_capacity_mtok_per_month"] == pytest.approx(mix_tok_s * 3600 * HOURS_PER_MONTH / 1e6)
    # owning 8 GPUs (4 replicas): $262,800 over 36 months, 8 × 0.7 kW at $0.10, $500 maintenance
    monthly = 262_800 / 36 + 0.7 * 8 * 0.1 * HOURS_PER_MONTH + 500
    assert row["own_usd_per_month"] == pytest.approx(monthly)
    assert row["own_beats_api_mtok_per_month"] == pytest.approx(monthly / 0.8)
    assert (row["rent_provider"], row["own_gpu_count"], row["api_model_id"], row["input_per_output"]) == (
        "vastai", 8, "x/m", 3.0)


def test_a_measured_request_is_blended_at_its_own_mix_with_its_prefill_counted_once():
    """A measured estimate's tokens/s already pays for its prompts: 3,000 in + 1,000 out at 1,000 out tok/s is
    4,000 tokens a second, and the API is blended at the same 3:1 whatever the argument says."""
    estimates = grid(input_tokens=3000, output_tokens=1000)
    cost = cost_per_mtok(estimates, replica_prices(offers(dict(gpu_count=2, usd_per_gpu_hr=1.8)), tps=[2]))
    own = own_vs_rent(estimates, hardware("H200 SXM", 8, 262_800.0), cost, OwnershipParams(), PARTS)
    api = api_prices.cheapest_api(frame(listing("x/m", 2.0, 0.4, model="m")))
    (row,) = api_prices.own_rent_api(cost, own, estimates, api, input_per_output=1.0).to_dicts()
    assert (cost["input_tokens"][0], cost["output_tokens"][0]) == (3000, 1000)
    assert row["input_per_output"] == 3.0
    assert row["rent_usd_per_mtok_blended"] == pytest.approx(3.6 / 3600 * 1e6 / 4000)
    assert row["rent_usd_per_mtok_blended"] == pytest.approx(row["rent_usd_per_mtok"] / 4)
    assert row["api_usd_per_mtok_blended"] == pytest.approx((3 * 0.4 + 2.0) / 4)


def test_never_is_null_and_the_blend_is_settable():
    estimates = grid()
    cost = cost_per_mtok(estimates, replica_prices(offers(dict(gpu_count=2, usd_per_gpu_hr=1.8)), tps=[2]))
    own = own_vs_rent(estimates, hardware("H200 SXM", 8, 262_800.0), cost, OwnershipParams(), PARTS)
    api = api_prices.cheapest_api(frame(listing("x/m", 0.2, 0.05, model="m")), input_per_output=1.0)
    (row,) = api_prices.own_rent_api(cost, own, estimates, api, input_per_output=1.0).to_dicts()
    assert row["api_usd_per_mtok_blended"] == pytest.approx(0.125)
    assert row["rent_beats_api_mtok_per_month"] is None and row["own_beats_api_mtok_per_month"] is None


def test_page_002_comparison_recomputed_from_our_tables_with_its_inputs():
    """Page 002: 4 × SM100 for $150,000 over 3 years, 3 kW at $0.10/kWh, $500/month, 1,000 tokens/s (input and
    output alike), against DeepSeek's API ($0.30 in / $1.20 out at peak, half off-peak) at 100 M tokens a month."""
    estimates = grid(model="deepseek-v4.1-flash", gpu="SM100", tp=4, agg_tok_s=1000.0, prefill_tok_s=1000.0,
                     power_kw=3.0)
    no_rentals = cost_per_mtok(estimates, replica_prices(offers(dict(gpu="H100 SXM5 80GB", usd_per_gpu_hr=2.0)), tps=[4]))
    own = own_vs_rent(estimates, hardware("SM100", 4, 150_000.0), no_rentals, OwnershipParams(), PARTS)
    deepseek = [
        dict(listing("deepseek-flash", 1.20, 0.30, model="deepseek-v4.1-flash"), api_provider="deepseek"),
        dict(listing("deepseek-flash", 0.60, 0.15, tier="utc 1000-0100", utc_start=1000, utc_end=100,
                     model="deepseek-v4.1-flash"), api_provider="deepseek"),
    ]
    api = api_prices.cheapest_api(frame(*deepseek))
    (row,) = api_prices.own_rent_api(no_rentals, own, estimates, api).to_dicts()

    assert row["own_usd_per_month"] == pytest.approx(150_000 / 36 + 0.10 * 3 * 730 + 500)  # $4,885.67
    # the page's $4,883 is the same sum with power for 720 h a month where we count 730
    assert row["own_usd_per_month"] - 0.10 * 3 * (730 - 720) == pytest.approx(4_883, abs=0.5)
    # 1,000 tokens/s for a month is 2,628 M tokens (page: 2,592 M at 720 h), so a million costs $1.86 at full
    # use and $3.72 at 50 %: the page's $0.0019 and $0.015 are a thousand times too low
    assert row["own_capacity_mtok_per_month"] == pytest.approx(2_628.0)
    assert row["own_usd_per_month"] / row["own_capacity_mtok_per_month"] == pytest.approx(1.859, abs=0.001)
    assert row["own_usd_per_mtok_blended"] == pytest.approx(3.718, abs=0.001)
    # 100 M tokens at 3:1 through the API at peak: $0.525 per M, $52.50 a month (off-peak $26.25), against
    # $4,885.67 owning; owning would need 9,306 M tokens a month, beyond its 2,628 M: it never wins, where the
    # page says local hosting pays from 10 M tokens a month
    assert row["api_usd_per_mtok_blended"] == pytest.approx(0.525)
    assert 100 * row["api_usd_per_mtok_blended"] == pytest.approx(52.5)
    assert row["own_usd_per_month"] / row["api_usd_per_mtok_blended"] == pytest.approx(9_306.0, abs=1)
    assert row["own_beats_api_mtok_per_month"] is None
    assert row["rent_usd_per_mtok"] is None and row["api_provider"] == "deepseek"
