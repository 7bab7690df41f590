import polars as pl
import pytest

from tests.transforms.offers_factory import DAY, offers
from transforms.costs import (
    MULTI_LISTING,
    ONE_LISTING,
    SINGLE_GPU_LISTINGS,
    OwnershipParams,
    cost_per_mtok,
    own_vs_rent,
    replica_prices,
)

PARTS = pl.DataFrame({"name": ["H200 SXM"], "form_factor": ["SXM5"]})


def by_pricing(prices: pl.DataFrame, tp: int) -> dict[str, float]:
    rows = prices.filter(pl.col("tp") == tp)
    return dict(zip(rows["replica_pricing"], rows["replica_usd_per_hr"], strict=True))


def test_a_replica_is_priced_from_one_host_or_from_single_gpu_listings():
    prices = replica_prices(offers(
        dict(offer_id="big", gpu_count=8, usd_per_gpu_hr=2.0),
        dict(offer_id="one", gpu_count=1, usd_per_gpu_hr=1.5),
        dict(offer_id="four", gpu_count=4, usd_per_gpu_hr=2.5),
    ), tps=[2, 4, 8])
    # TP2 in the 8-GPU box runs four replicas at 2 × $2.00; single-GPU listings give 2 × $1.50, flagged
    assert by_pricing(prices, 2) == {ONE_LISTING: 4.0, SINGLE_GPU_LISTINGS: 3.0}
    assert by_pricing(prices, 8) == {ONE_LISTING: 16.0, SINGLE_GPU_LISTINGS: 12.0}
    tp4 = prices.filter((pl.col("tp") == 4) & (pl.col("replica_pricing") == ONE_LISTING)).row(0, named=True)
    assert (tp4["replica_usd_per_hr"], tp4["offer_ids"]) == (8.0, "big")


def test_multi_node_replicas_sum_the_cheapest_distinct_nodes():
    prices = replica_prices(offers(*(dict(offer_id=f"n{p}", gpu_count=8, usd_per_gpu_hr=p) for p in (3.0, 1.0, 2.0))),
                            tps=[16, 32])
    row = prices.filter(pl.col("tp") == 16).row(0, named=True)
    assert (row["replica_pricing"], row["replica_usd_per_hr"], row["offer_ids"]) == (MULTI_LISTING, 24.0, "n1.0,n2.0")
    assert prices.filter(pl.col("tp") == 32).height == 0


def test_per_gpu_listings_price_any_group_their_pods_hold_and_flag_groups_across_pods():
    prices = replica_prices(offers(dict(provider="runpod", max_gpu_count=2, usd_per_gpu_hr=3.0)), tps=[2, 4])
    assert by_pricing(prices, 2) == {ONE_LISTING: 6.0}
    four = prices.filter(pl.col("tp") == 4).row(0, named=True)
    assert (four["replica_pricing"], four["deployable"]) == (MULTI_LISTING, False)


def estimates(**overrides) -> pl.DataFrame:
    row = dict(model="m", gpu="H200 SXM", precision="int4", context_tokens=32768, streams=32, method="calculator",
               engine=None, estimator_version="1", tp=2, agg_tok_s=1000.0, agg_tok_s_low=None, agg_tok_s_high=None, input_tokens=None, output_tokens=None, power_kw=1.4)
    return pl.DataFrame([{**row, **overrides}], schema_overrides={
        "engine": pl.String, "tp": pl.Int64, "agg_tok_s_low": pl.Float64, "agg_tok_s_high": pl.Float64, "input_tokens": pl.Int64,
        "output_tokens": pl.Int64})


def test_cost_per_million_tokens_follows_price_and_throughput():
    prices = replica_prices(offers(dict(gpu_count=2, usd_per_gpu_hr=1.8)), tps=[2])
    table = cost_per_mtok(estimates(), prices)
    assert table["usd_per_mtok"].to_list() == [pytest.approx(3.6 * 1e6 / (1000 * 3600))]
    assert table["offer_ids"].to_list() == ["o0"]


def test_a_measured_estimate_is_priced_as_a_band_and_a_reference_one_as_a_point():
    prices = replica_prices(offers(dict(gpu_count=2, usd_per_gpu_hr=1.8)), tps=[2])
    measured = cost_per_mtok(estimates(method="measured", agg_tok_s_low=500.0, agg_tok_s_high=2000.0), prices)
    row = measured.row(0, named=True)
    assert row["method"] == "measured"
    # the most tokens/s is the least $/M
    assert (row["usd_per_mtok_low"], row["usd_per_mtok"], row["usd_per_mtok_high"]) == (
        pytest.approx(3.6e6 / (2000 * 3600)), pytest.approx(3.6e6 / (1000 * 3600)), pytest.approx(3.6e6 / (500 * 3600)))
    reference = cost_per_mtok(estimates(), prices).row(0, named=True)
    assert reference["method"] == "calculator" and reference["usd_per_mtok_low"] is None


def test_owning_breaks_even_against_the_cheapest_rental():
    prices = replica_prices(offers(dict(gpu_count=8, usd_per_gpu_hr=2.0)), tps=[8])
    costs = cost_per_mtok(estimates(tp=8), prices)
    hardware = pl.DataFrame([dict(gpu="H200 SXM", price_kind="market", gpu_count=8, usd_low=200_000.0,
                                  usd_high=240_000.0, quoted_on=DAY, fx_rate=6.66, fx_date=DAY, fx_source="ecb",
                                  snapshot_date=DAY)])
    params = OwnershipParams(years=3, usd_per_kwh=0.1, maintenance_usd_per_month=500, utilisation=0.5)
    row = own_vs_rent(estimates(tp=8, power_kw=5.6), hardware, costs, params, PARTS).row(0, named=True)
    own_per_hr = 220_000 / (3 * 12 * 730) + 5.6 * 0.1 + 500 / 730
    assert row["own_usd_per_hr"] == pytest.approx(own_per_hr)
    assert row["own_usd_per_mtok"] == pytest.approx(own_per_hr * 1e6 / (1000 * 0.5 * 3600))
    assert row["rent_usd_per_mtok"] == pytest.approx(16.0 * 1e6 / (1000 * 3600))
    assert row["breakeven_mtok_per_month"] == pytest.approx(own_per_hr * 730 / row["rent_usd_per_mtok"])
    assert row["breakeven_mtok_per_month"] <= row["capacity_mtok_per_month"]
