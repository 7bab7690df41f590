from datetime import date

import polars as pl
import pytest

from tests.transforms.offers_factory import offers
from tests.trends_support import B200, H100, NOV, day_offers
from transforms import trends
from transforms.display import sparkline


def build(days=(1, 2, 4, 8)) -> pl.DataFrame:
    """Each day's index from its offers and the rows before it, in date order, as derive does."""
    index = pl.DataFrame(schema=trends.INDEX_SCHEMA)
    for day in sorted(days):
        index = pl.concat([index, trends.price_index(day_offers(day), index, NOV[day])])
    return index


def row(index: pl.DataFrame, day: int | date, gpu=H100, provider="vastai", kind="on_demand") -> dict:
    found = index.filter((pl.col("snapshot_date") == (NOV[day] if isinstance(day, int) else day)) & (pl.col("gpu") == gpu)
                         & (pl.col("provider") == provider) & (pl.col("price_kind") == kind))
    assert found.height == 1, found
    return found.row(0, named=True)


def test_the_day_distribution_per_provider_and_over_all_providers():
    first = build([1])
    vast, everyone = row(first, 1), row(first, 1, provider="all")
    assert (vast["listings"], vast["min_usd_per_gpu_hr"], vast["median_usd_per_gpu_hr"], vast["max_usd_per_gpu_hr"]) \
        == (2, 2.0, 2.5, 3.0)
    assert vast["p10_usd_per_gpu_hr"] == pytest.approx(2.1)  # linear between 2.0 and 3.0
    assert (everyone["listings"], everyone["min_usd_per_gpu_hr"], everyone["median_usd_per_gpu_hr"]) == (3, 2.0, 2.5)
    assert first.schema == trends.INDEX_SCHEMA
    assert first["first_seen_date"].to_list() == [NOV[1]] * first.height
    assert first.select(trends.CHANGES).null_count().row(0) == (first.height,) * len(trends.CHANGES)


def test_changes_against_one_and_seven_days_before():
    index = build()
    assert row(index, 2)["min_change_1d"] == pytest.approx(0.1)  # 2.0 -> 2.2: 10% dearer
    assert row(index, 2)["median_change_1d"] == pytest.approx(2.6 / 2.5 - 1)
    assert row(index, 8)["min_change_7d"] == pytest.approx(1.8 / 2.0 - 1)
    assert row(index, 8, provider="runpod")["min_change_7d"] == pytest.approx(-0.2)


def test_a_missing_day_leaves_the_change_null_never_interpolated():
    index = build()
    fourth = row(index, 4)
    assert fourth["min_change_1d"] is None and fourth["median_change_1d"] is None  # 3 November has no row
    assert row(index, 8)["min_change_1d"] is None  # nor 7 November
    # the runpod series was gone on the 4th: on the 8th its 7-day change stands (the 1st), its 1-day one does not
    assert row(index, 8, provider="runpod")["min_change_1d"] is None
    assert index.filter(pl.col("snapshot_date") == NOV[3]).height == 0


def test_first_seen_date_and_days_since():
    index = build()
    assert row(index, 2, gpu=B200)["first_seen_date"] == NOV[2]
    assert row(index, 2, gpu=B200)["days_since_first_seen"] == 0
    assert row(index, 8, gpu=B200)["first_seen_date"] == NOV[2]
    assert row(index, 8, gpu=B200)["days_since_first_seen"] == 6
    # a series that was gone and came back keeps the day it was first seen
    assert row(index, 8, provider="runpod")["first_seen_date"] == NOV[1]


def test_thirty_day_change_and_a_first_seen_older_than_the_window():
    december = date(2026, 12, 1)
    later = offers(*(dict(snapshot_date=december, usd_per_gpu_hr=p, gpu=H100) for p in (2.5, 3.0)))
    vast = row(trends.price_index(later, build([1]), december), december)
    assert vast["min_change_30d"] == pytest.approx(0.25) and vast["min_change_1d"] is None
    assert vast["first_seen_date"] == NOV[1] and vast["days_since_first_seen"] == 30


def test_offers_without_a_canonical_gpu_are_left_out():
    day = offers(dict(gpu=None, usd_per_gpu_hr=1.0), dict(gpu="H200 SXM", usd_per_gpu_hr=3.0))
    index = trends.price_index(day, pl.DataFrame(schema=trends.INDEX_SCHEMA), day["snapshot_date"][0])
    assert set(index["gpu"]) == {"H200 SXM"} and index["listings"].to_list() == [1, 1]


def test_appeared_and_gone_between_two_published_days():
    index = build()
    on = {d: index.filter(pl.col("snapshot_date") == NOV[d]) for d in (2, 4, 8)}
    moved = trends.appeared_and_gone(on[4], on[2])
    assert moved.select("change", "gpu", "provider").rows() == [("gone", H100, "runpod")]
    back = trends.appeared_and_gone(on[8], on[4])
    assert back.select("change", "gpu", "provider").rows() == [("back", H100, "runpod")]
    first = trends.appeared_and_gone(on[2], index.filter(pl.col("snapshot_date") == NOV[1]))
    assert first.select("change", "gpu", "provider").rows() == [("first seen", B200, "all"),
                                                                ("first seen", B200, "vastai")]


def test_price_moves_are_the_largest_first_and_skip_still_prices():
    index = build()
    moves = trends.price_moves(index.filter(pl.col("snapshot_date") == NOV[4]),
                               index.filter(pl.col("snapshot_date") == NOV[2]), top=10)
    # B200 5.0 -> 4.0 (-20%) moved most; H100 on vastai: min still, median 2.6 -> 2.75
    assert moves.select("gpu", "provider").rows()[0] == (B200, "all")
    assert moves.row(0, named=True)["min_change"] == pytest.approx(-0.2)
    h100 = moves.filter((pl.col("gpu") == H100) & (pl.col("provider") == "vastai")).row(0, named=True)
    assert h100["min_change"] == 0 and h100["median_change"] == pytest.approx(2.75 / 2.6 - 1)
    assert trends.price_moves(index.filter(pl.col("snapshot_date") == NOV[4]),
                              index.filter(pl.col("snapshot_date") == NOV[4]), top=10).height == 0
    assert trends.price_moves(index.filter(pl.col("snapshot_date") == NOV[4]),
                              index.filter(pl.col("snapshot_date") == NOV[2]), top=1).height == 1


def test_listing_moves_name_sources_that_jumped_fell_or_vanished():
    index = build()
    on = {d: index.filter(pl.col("snapshot_date") == NOV[d]) for d in (1, 2, 4)}
    moved = trends.listing_moves(on[4], on[2], threshold=0.2)
    assert moved.select("provider", "move", "listings_before", "listings_now").rows() == [("runpod", "vanished", 1, 0)]
    jumped = trends.listing_moves(on[2], on[1], threshold=0.2)  # vastai 2 -> 3 listings
    assert jumped.select("provider", "move").rows() == [("vastai", "jumped")]
    assert jumped["change"].to_list() == [pytest.approx(0.5)]
    assert trends.listing_moves(on[2], on[1], threshold=0.6).height == 0


def test_cheapest_per_day_takes_deployable_replicas_only_then_the_cheapest_gpu():
    cost = pl.DataFrame([
        dict(snapshot_date=NOV[1], gpu=H100, provider="vastai", replica_pricing="tp_single_gpu_listings",
             usd_per_mtok=0.5, deployable=False),
        dict(snapshot_date=NOV[1], gpu=H100, provider="runpod", replica_pricing="one_listing", usd_per_mtok=0.9,
             deployable=True),
        dict(snapshot_date=NOV[1], gpu=B200, provider="vastai", replica_pricing="one_listing", usd_per_mtok=0.7,
             deployable=True),
        dict(snapshot_date=NOV[2], gpu=H100, provider="vastai", replica_pricing="one_listing", usd_per_mtok=0.6,
             deployable=True),
        dict(snapshot_date=NOV[2], gpu=B200, provider="vastai", replica_pricing="multi_listing", usd_per_mtok=0.1,
             deployable=False),
    ])
    overall = trends.cheapest_per_day(cost, per_gpu=False)
    assert overall.select("snapshot_date", "gpu", "usd_per_mtok").rows() == [(NOV[1], B200, 0.7),
                                                                             (NOV[2], H100, 0.6)]
    by_gpu = trends.cheapest_per_day(cost, per_gpu=True)
    assert by_gpu.filter(pl.col("gpu") == H100)["usd_per_mtok"].to_list() == [0.9, 0.6]
    assert by_gpu.filter(pl.col("gpu") == B200)["snapshot_date"].to_list() == [NOV[1]]  # no deployable B200 on NOV 2


def test_sparkline_scales_between_low_and_high_and_leaves_gaps():
    assert sparkline([1.0, 2.0, None, 3.0]) == "▁▅ █"
    assert sparkline([2.0, 2.0]) == "▄▄"
    assert sparkline([None, None]) == "  "
