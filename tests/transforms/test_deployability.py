"""Only replicas someone could deploy are priced as the answer: one rule per test (docs/deployability.md)."""

import polars as pl
import pytest

from tests.transforms.offers_factory import DAY, offers
from transforms import deployability, tables
from transforms.aggregate import rental_ranges
from transforms.costs import (
    MULTI_LISTING,
    ONE_LISTING,
    PROVIDER_CLUSTER,
    SINGLE_GPU_LISTINGS,
    OwnershipParams,
    cost_per_mtok,
    own_vs_rent,
    replica_prices,
)

H100, RTX_3090 = "H100 SXM5 80GB", "GeForce RTX 3090 24GB"
GPUS = pl.DataFrame({"name": [H100, RTX_3090], "form_factor": ["SXM5", "PCIe consumer"], "vendor": ["NVIDIA"] * 2})


def rows(prices: pl.DataFrame, tp: int) -> dict[str, dict]:
    return {r["replica_pricing"]: r for r in prices.filter(pl.col("tp") == tp).iter_rows(named=True)}


def cluster(gpu: str, usd_per_gpu_hr: float, max_gpu_count: int = 64) -> dict:
    """A provider cluster as the RunPod scraper lists it: priced per GPU, up to max_gpu_count GPUs."""
    return dict(provider="runpod", offer_id=f"{gpu}:cluster", gpu=gpu, tier="cluster", max_gpu_count=max_gpu_count,
                usd_per_gpu_hr=usd_per_gpu_hr)


def test_tensor_parallelism_within_one_host_is_deployable_and_a_bigger_host_is_paid_in_full():
    prices = replica_prices(offers(dict(offer_id="eight", gpu=H100, gpu_count=8, usd_per_gpu_hr=2.0),
                                   dict(offer_id="ten", gpu=H100, gpu_count=10, usd_per_gpu_hr=1.5)), [4, 8], GPUS)
    eight = rows(prices, 8)[ONE_LISTING]
    # the 10-GPU host runs one TP8 replica and pays for all ten: $15.00 against $16.00 for the 8-GPU host
    assert (eight["deployable"], eight["replica_usd_per_hr"], eight["offer_ids"]) == (True, 15.0, "ten")
    assert eight["not_deployable_reason"] is None
    assert rows(prices, 4)[ONE_LISTING]["replica_usd_per_hr"] == 7.5  # two TP4 replicas on the 10-GPU host


def test_a_provider_cluster_with_a_fabric_holds_a_replica_wider_than_one_host():
    market = offers(dict(gpu=H100, gpu_count=8, usd_per_gpu_hr=2.0), dict(gpu=H100, gpu_count=8, usd_per_gpu_hr=2.1),
                    cluster(H100, 3.0))
    prices = replica_prices(market, [16, 32, 128], GPUS)
    sixteen = rows(prices, 16)
    assert (sixteen[PROVIDER_CLUSTER]["deployable"], sixteen[PROVIDER_CLUSTER]["replica_usd_per_hr"]) == (True, 48.0)
    # two separately rented 8-GPU hosts are cheaper ($32.80) and no replica
    assert (sixteen[MULTI_LISTING]["deployable"], sixteen[MULTI_LISTING]["replica_usd_per_hr"]) == (False, 32.8)
    assert sixteen[MULTI_LISTING]["not_deployable_reason"] == (
        "TP 16 across separately rented hosts, which form no tensor-parallel group")
    assert PROVIDER_CLUSTER not in rows(prices, 128)  # beyond the cluster's 64 GPUs
    cheapest = tables.cheapest_replicas(prices).filter(pl.col("tp") == 16).row(0, named=True)
    assert (cheapest["replica_pricing"], cheapest["provider"]) == (PROVIDER_CLUSTER, "runpod")


def test_a_consumer_card_at_tp_16_is_not_deployable_and_says_why():
    market = offers(*(dict(gpu=RTX_3090, gpu_count=8, usd_per_gpu_hr=0.2) for _ in range(2)),
                    dict(gpu=RTX_3090, gpu_count=1, usd_per_gpu_hr=0.15), cluster(RTX_3090, 0.3))
    prices = replica_prices(market, [16], GPUS)
    found = rows(prices, 16)
    assert set(found) == {MULTI_LISTING, SINGLE_GPU_LISTINGS, PROVIDER_CLUSTER}
    assert not any(r["deployable"] for r in found.values())
    missing = ("needs 16 GPUs on one host; the largest GeForce RTX 3090 24GB host that day offers 8 "
               "(a consumer or workstation card: never across hosts)")
    assert found[MULTI_LISTING]["not_deployable_reason"] == (
        f"TP 16 across separately rented hosts, which form no tensor-parallel group; {missing}")
    assert found[PROVIDER_CLUSTER]["not_deployable_reason"] == f"TP 16 across the nodes of a cluster; {missing}"


def test_a_datacenter_part_without_a_cluster_says_what_is_missing():
    prices = replica_prices(offers(*(dict(gpu=H100, gpu_count=8, usd_per_gpu_hr=2.0) for _ in range(2))), [16], GPUS)
    assert rows(prices, 16)[MULTI_LISTING]["not_deployable_reason"].endswith(
        "needs 16 GPUs on one host; the largest H100 SXM5 80GB host that day offers 8, and no provider sells a "
        "H100 SXM5 80GB cluster with a scale-out fabric")


def estimates(**overrides) -> pl.DataFrame:
    row = dict(model="m", gpu=H100, precision="bf16", context_tokens=4096, streams=32, method="measured",
               engine="trtllm", estimator_version="1", tp=16, agg_tok_s=1000.0, agg_tok_s_low=500.0, agg_tok_s_high=2000.0,
               input_tokens=3072, output_tokens=1024, power_kw=11.2, multi_node=True, prefill_tok_s=None)
    return pl.DataFrame([{**row, **overrides}], schema_overrides={"tp": pl.Int64, "prefill_tok_s": pl.Float64})


def test_cost_rows_keep_the_fiction_flagged_and_owning_rents_only_what_deploys():
    market = offers(*(dict(gpu=H100, gpu_count=8, usd_per_gpu_hr=2.0) for _ in range(2)), cluster(H100, 3.0))
    cost = cost_per_mtok(estimates(), replica_prices(market, [16], GPUS))
    assert dict(zip(cost["replica_pricing"], cost["deployable"], strict=True)) == {MULTI_LISTING: False,
                                                                                  PROVIDER_CLUSTER: True}
    hardware = pl.DataFrame([dict(gpu=H100, price_kind="market", gpu_count=8, usd_low=240_000.0, usd_high=260_000.0,
                                  quoted_on=DAY, fx_rate=7.0, fx_date=DAY, fx_source="ecb", snapshot_date=DAY)])
    own = own_vs_rent(estimates(), hardware, cost, OwnershipParams(), GPUS).row(0, named=True)
    # two 8-GPU servers for one TP16 replica: no switch or NICs priced, so not deployable; the rent side is the
    # cluster, never the cheaper pair of separate hosts
    assert (own["gpu_count"], own["replicas"], own["hardware_usd"], own["deployable"]) == (16, 1, 500_000.0, False)
    assert own["not_deployable_reason"] == ("a replica of 16 GPUs spans 2 servers of 8: needs a scale-out fabric "
                                            "(switch and NICs), which the hardware prices leave out")
    assert own["rent_replica_pricing"] == PROVIDER_CLUSTER
    assert own["rent_usd_per_mtok"] == pytest.approx(48.0 * 1e6 / (1000 * 3600))


def test_rental_ranges_keep_page_000s_range_and_price_only_one_host_or_a_cluster():
    ranges = rental_ranges(offers(dict(gpu=RTX_3090, gpu_count=8, usd_per_gpu_hr=0.2),
                                  dict(gpu=RTX_3090, gpu_count=8, usd_per_gpu_hr=0.3),
                                  dict(gpu=H100, gpu_count=16, usd_per_gpu_hr=2.5),
                                  *(dict(gpu=H100, gpu_count=8, usd_per_gpu_hr=2.0) for _ in range(2))), gpus=GPUS)
    by = {(r["gpu"], r["n_gpus"]): r for r in ranges.filter(pl.col("n_gpus") == 16).iter_rows(named=True)}
    rtx = by[RTX_3090, 16]
    assert (rtx["min_usd_per_hr"], rtx["deployable_min_usd_per_hr"]) == (4.0, None)
    assert rtx["not_deployable_reason"].startswith("16 GPUs only from 2 separately rented hosts; needs 16 GPUs on one")
    h100 = by[H100, 16]  # two 8-GPU hosts at $32 make the range's low end; the 16-GPU host at $40 the price
    assert (h100["min_usd_per_hr"], h100["deployable_min_usd_per_hr"], h100["not_deployable_reason"]) == (
        32.0, 40.0, None)


def test_bought_servers_hold_a_wider_replica_only_for_a_part_that_spans_hosts():
    frame = pl.DataFrame({"gpu": [RTX_3090, H100, H100], "tp": [16, 16, 8]}).join(
        deployability.part_classes(GPUS), on="gpu", how="left", maintain_order="left")
    def rule(fabric: bool) -> pl.DataFrame:
        deployable, why = deployability.server_replica(pl.col("tp"), fabric=fabric)
        return frame.select(deployable.alias("deployable"), why.alias("why"))

    assert rule(fabric=True)["deployable"].to_list() == [False, True, True]
    owned = rule(fabric=False)
    assert owned["deployable"].to_list() == [False, False, True]
    assert owned["why"][0] == "a replica of 16 GPUs spans 2 servers of 8: a consumer or workstation card never spans hosts"
