import polars as pl
import pytest

from tests.transforms.offers_factory import DAY, offers
from transforms import tables
from transforms.costs import ONE_LISTING, SINGLE_GPU_LISTINGS, replica_prices


def estimates(*rows: dict) -> pl.DataFrame:
    base = dict(model="m", precision="int4", context_tokens=32768, streams=32, method="calculator",
                estimator_version="1", multi_node=False, memory_used_pct=50.0, per_stream_tok_s=10.0, max_streams=64,
                power_kw=1.0, fp4_estimated=False, uncertain=False, single_stream_tok_s=50.0, prefill_tok_s=1000.0,
                agg_tok_s_low=None, agg_tok_s_high=None)
    return pl.DataFrame([base | r for r in rows], schema_overrides={
        "tp": pl.Int64, "agg_tok_s_low": pl.Float64, "agg_tok_s_high": pl.Float64})


GPUS = pl.DataFrame({"name": ["H200 SXM", "B200 SXM"], "vendor": ["NVIDIA", "NVIDIA"], "label_000": ["H200 141GB", None],
                     "memory_gb": [141.0, 180.0], "bandwidth_gbs": [4800.0, 8000.0]})


def test_a_replica_on_one_host_is_preferred_to_cheaper_single_gpu_listings():
    prices = replica_prices(offers(dict(offer_id="node", gpu_count=8, usd_per_gpu_hr=2.0),
                                   dict(offer_id="single", gpu_count=1, usd_per_gpu_hr=1.0)), tps=[2])
    chosen = tables.cheapest_replicas(prices).row(0, named=True)
    assert (chosen["replica_pricing"], chosen["replica_usd_per_hr"], chosen["usd_per_gpu_hr"]) == (ONE_LISTING, 4.0, 2.0)
    alone = tables.cheapest_replicas(replica_prices(offers(dict(gpu_count=1, usd_per_gpu_hr=1.0)), tps=[2]))
    assert alone["replica_pricing"].to_list() == [SINGLE_GPU_LISTINGS]


def test_the_calculator_view_ranks_priced_parts_by_cost_then_the_rest_by_speed():
    est = estimates(dict(gpu="H200 SXM", tp=2, agg_tok_s=800.0), dict(gpu="B200 SXM", tp=1, agg_tok_s=1500.0))
    replicas = tables.cheapest_replicas(replica_prices(offers(dict(gpu_count=2, usd_per_gpu_hr=2.0)), tps=[1, 2]))
    view = tables.calculator_view(est, GPUS, replicas)
    assert view["gpu"].to_list() == ["H200 SXM", "B200 SXM"] and view["rank"].to_list() == [1, 2]
    assert view["usd_per_mtok"][0] == pytest.approx(4.0 * 1e6 / (800 * 3600)) and view["usd_per_mtok"][1] is None


def test_the_estimate_view_joins_rentals_of_its_own_group_size_and_converted_hardware():
    est = estimates(dict(gpu="H200 SXM", tp=8, agg_tok_s=4080.0))
    ranges = pl.DataFrame([dict(snapshot_date=DAY, gpu="H200 SXM", n_gpus=n, provider=p, price_kind="on_demand",
                                min_usd_per_hr=lo, max_usd_per_hr=hi, listings=1, deployable_min_usd_per_hr=lo,
                                deployable_max_usd_per_hr=hi, not_deployable_reason=None)
                           for n, p, lo, hi in ((8, "vastai", 17.52, 21.52), (8, "verda", 27.12, 27.12),
                                                (1, "vastai", 2.0, 2.0))])
    hardware = pl.DataFrame([dict(gpu="H200 SXM", price_kind="market", gpu_count=8, usd_low=225_000.0,
                                  usd_high=234_000.0)])
    row = tables.estimate_view(est, GPUS, ranges, hardware).row(0, named=True)
    assert (row["rental_min_usd_per_hr"], row["rental_max_usd_per_hr"], row["rental_providers"]) == (
        17.52, 27.12, "vastai,verda")
    assert row["market_usd_low"] == 225_000.0 and row["list_usd_low"] is None
    assert row["usd_per_mtok"] == pytest.approx(17.52 * 1e6 / (4080 * 3600))


def test_grouped_tables_and_cards_are_each_groups_own_in_one_pass():
    # two models (a group each) on the same replicas: by=("model",) gives what a call per model gives
    one = estimates(dict(gpu="H200 SXM", tp=2, agg_tok_s=800.0), dict(gpu="B200 SXM", tp=1, agg_tok_s=1500.0))
    other = estimates(dict(gpu="H200 SXM", tp=1, agg_tok_s=300.0), dict(gpu="B200 SXM", tp=2, agg_tok_s=2500.0)
                      ).with_columns(model=pl.lit("n"))
    replicas = tables.cheapest_replicas(replica_prices(offers(dict(gpu_count=2, usd_per_gpu_hr=2.0),
                                                              dict(gpu="B200 SXM", gpu_count=2, usd_per_gpu_hr=5.0)),
                                                       tps=[1, 2]))
    both = pl.concat([one, other])
    view = tables.calculator_view(both, GPUS, replicas, by=("model",))
    cards = tables.calculator_cards(view, both, replicas, by=("model",))
    for model, est in (("m", one), ("n", other)):
        alone = tables.calculator_view(est, GPUS, replicas)
        assert view.filter(pl.col("model") == model).drop("model").equals(alone)
        assert cards.filter(pl.col("model") == model).drop("model").equals(tables.calculator_cards(alone, est, replicas))
    assert view.filter(pl.col("model") == "n")["rank"].to_list() == [1, 2]
    assert cards.filter(pl.col("model") == "n")["card"].to_list()[:3] == [
        "bare minimum (1 stream)", "cheapest per hour (1 stream)", "cheapest per M tokens"]
