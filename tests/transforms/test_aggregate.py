import polars as pl
import pytest

from tests.transforms.offers_factory import offers
from transforms.aggregate import daily_prices, rental_ranges


def test_daily_prices_give_the_distribution_per_listing_shape():
    table = daily_prices(offers(
        dict(usd_per_gpu_hr=2.0), dict(usd_per_gpu_hr=3.0), dict(usd_per_gpu_hr=4.0), dict(usd_per_gpu_hr=10.0),
        dict(usd_per_gpu_hr=2.5, gpu_count=8),
        dict(usd_per_gpu_hr=1.0, gpu=None, gpu_raw="RTX 9090"),
    ))
    single = table.filter(pl.col("gpu_count") == 1).row(0, named=True)
    assert (single["listings"], single["min_usd_per_gpu_hr"], single["median_usd_per_gpu_hr"],
            single["max_usd_per_gpu_hr"]) == (4, 2.0, 3.5, 10.0)
    assert single["p25_usd_per_gpu_hr"] == pytest.approx(2.75)
    eight = table.filter(pl.col("gpu_count") == 8).row(0, named=True)
    assert (eight["listings"], eight["min_usd_per_hr"]) == (1, 20.0)
    assert table.height == 2  # the unmapped listing has no GPU to aggregate under


def test_rental_range_for_eight_gpus_uses_whole_eight_gpu_listings():
    ranges = rental_ranges(offers(
        dict(gpu_count=8, usd_per_gpu_hr=3.0), dict(gpu_count=8, usd_per_gpu_hr=4.5),
        dict(gpu_count=1, usd_per_gpu_hr=1.0),  # one GPU never stands in for eight
    ))
    eight = ranges.filter(pl.col("n_gpus") == 8).row(0, named=True)
    assert (eight["min_usd_per_hr"], eight["max_usd_per_hr"], eight["listings"]) == (24.0, 36.0, 2)
    assert ranges.filter(pl.col("n_gpus") == 2).height == 0


def test_sixteen_gpus_take_two_distinct_eight_gpu_listings():
    ranges = rental_ranges(offers(*(dict(gpu_count=8, usd_per_gpu_hr=p) for p in (1.0, 2.0, 3.0))))
    sixteen = ranges.filter(pl.col("n_gpus") == 16).row(0, named=True)
    assert (sixteen["min_usd_per_hr"], sixteen["max_usd_per_hr"], sixteen["listings_per_group"]) == (24.0, 40.0, 2)
    assert ranges.filter(pl.col("n_gpus") == 32).height == 0  # four listings needed, three exist


def test_per_gpu_listings_scale_up_to_their_pod_size():
    ranges = rental_ranges(offers(dict(provider="runpod", max_gpu_count=4, usd_per_gpu_hr=2.0)))
    assert dict(zip(ranges["n_gpus"], ranges["min_usd_per_hr"], strict=True)) == {
        1: 2.0, 2: 4.0, 4: 8.0, 16: 32.0, 32: 64.0}
    assert set(ranges["composition"]) == {"per_gpu"}


def test_every_count_a_host_offers_is_a_rental_size_served_only_by_such_a_host():
    ranges = rental_ranges(offers(
        dict(gpu_count=3, usd_per_gpu_hr=1.0), dict(gpu_count=3, usd_per_gpu_hr=2.0),
        dict(gpu_count=10, usd_per_gpu_hr=1.5), dict(gpu_count=1, usd_per_gpu_hr=0.5),
        dict(gpu_count=1, usd_per_gpu_hr=0.6), dict(gpu_count=1, usd_per_gpu_hr=0.7),
    ))
    by_n = {r["n_gpus"]: r for r in ranges.iter_rows(named=True)}
    assert (by_n[3]["min_usd_per_hr"], by_n[3]["max_usd_per_hr"], by_n[3]["listings"]) == (3.0, 6.0, 2)
    assert (by_n[10]["min_usd_per_hr"], by_n[10]["listings_per_group"]) == (15.0, 1)  # one 10-GPU host
    assert set(by_n) == {1, 3, 10}  # three 1-GPU hosts never make ×2 or ×3


def test_sixteen_gpus_take_the_cheaper_of_one_sixteen_gpu_host_and_two_eight_gpu_hosts():
    ranges = rental_ranges(offers(dict(gpu_count=16, usd_per_gpu_hr=1.0),
                                  *(dict(gpu_count=8, usd_per_gpu_hr=p) for p in (0.5, 3.0))))
    sixteen = ranges.filter(pl.col("n_gpus") == 16).row(0, named=True)
    assert (sixteen["min_usd_per_hr"], sixteen["max_usd_per_hr"], sixteen["listings"]) == (16.0, 28.0, 3)
