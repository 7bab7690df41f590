"""flows/views.py: what a day's views share between the models asked of them."""

import polars as pl

from flows import views
from tests.transforms.offers_factory import DAY, offers
from tests.transforms.test_tables import GPUS
from transforms import costs


def a_day(listed: pl.DataFrame) -> views.Day:
    empty = pl.DataFrame()
    return views.Day(DAY, empty, GPUS.with_columns(form_factor=pl.lit("SXM")), empty, empty, empty, listed, empty,
                     "ok", empty)


def test_a_days_replica_prices_are_computed_once_a_tp_and_read_as_one_call_gives_them():
    listed = offers(dict(offer_id="node", gpu_count=8, usd_per_gpu_hr=2.0),
                    dict(offer_id="pair", gpu="B200 SXM", gpu_count=2, usd_per_gpu_hr=5.0),
                    dict(offer_id="one", gpu_count=1, usd_per_gpu_hr=1.5, provider="runpod"),
                    *(dict(offer_id=f"n{i}", gpu_count=8, usd_per_gpu_hr=2.0 + i) for i in range(2)))
    day = a_day(listed)
    assert day.replica_prices([1, 2]).equals(costs.replica_prices(listed, [1, 2], day.gpus))
    asked = day.replica_prices([2, 16, 4])  # 2 was computed above, 4 and 16 now
    assert asked.equals(costs.replica_prices(listed, [4, 16, 2], day.gpus))
    assert sorted(day._prices) == [1, 2, 4, 16] and asked.filter(pl.col("tp") == 16).height
    assert day.replica_prices([]).equals(costs.replica_prices(listed, [], day.gpus))
    assert day.capacity is day.capacity  # computed once a day
