from datetime import date, datetime

import polars as pl
import pytest

from warehouse import db, derived, queries

DAY = date(2026, 11, 27)


def ranges(day: date, price: float) -> pl.DataFrame:
    return pl.DataFrame([dict(snapshot_date=day, gpu="H200 SXM", n_gpus=8, provider="vastai", price_kind="on_demand",
                              min_usd_per_hr=price, max_usd_per_hr=price, listings=1, listings_per_group=1,
                              composition="fixed_listings", observed_at=datetime(2026, 11, 27, 2))])


def test_replacing_a_date_twice_keeps_one_copy_and_other_dates():
    with db.connect() as con:
        derived.replace_for_date(con, date(2026, 11, 26), {"rental_ranges": ranges(date(2026, 11, 26), 20.0)})
        derived.replace_for_date(con, DAY, {"rental_ranges": ranges(DAY, 24.0)})
        derived.replace_for_date(con, DAY, {"rental_ranges": ranges(DAY, 25.0)})
        rows = con.sql("select snapshot_date, min_usd_per_hr from rental_ranges order by 1").fetchall()
    assert rows == [(date(2026, 11, 26), 20.0), (DAY, 25.0)]


def test_a_frame_with_rows_of_another_date_is_refused_before_anything_changes():
    with db.connect() as con:
        derived.replace_for_date(con, DAY, {"rental_ranges": ranges(DAY, 24.0)})
        with pytest.raises(ValueError, match="not dated"):
            derived.replace_for_date(con, DAY, {"rental_ranges": ranges(date(2026, 11, 26), 1.0)})
        assert con.sql("select min_usd_per_hr from rental_ranges").fetchall() == [(24.0,)]


def test_a_failed_insert_rolls_back_every_table():
    bad = ranges(DAY, 1.0).with_columns(pl.lit(None, dtype=pl.String).alias("gpu"))
    with db.connect() as con:
        derived.replace_for_date(con, DAY, {"rental_ranges": ranges(DAY, 24.0)})
        with pytest.raises(Exception, match="NOT NULL"):
            derived.replace_for_date(con, DAY, {"rental_ranges": bad})
        assert con.sql("select min_usd_per_hr from rental_ranges").fetchall() == [(24.0,)]


def test_the_dates_offers_come_from_each_providers_latest_successful_fetch():
    with db.connect() as con:
        for run, hour, status in (("r1", 2, "ok"), ("r2", 3, "failed"), ("r3", 4, "ok")):
            con.execute("insert into fetches (run_id, source, snapshot_date, started_at, status) values (?, ?, ?, ?, ?)",
                        [run, "vastai", DAY, datetime(2026, 11, 27, hour), status])
        for run in ("r1", "r3"):
            con.execute("""insert into offers (snapshot_date, fetched_at, run_id, provider, source, offer_id, gpu_raw,
                           gpu_count, price_kind, usd_per_hr, usd_per_gpu_hr, native_currency, native_per_hr)
                           values (?, now(), ?, 'vastai', 'vastai', 'o1', 'H200', 1, 'on_demand', 2, 2, 'USD', 2)""",
                        [DAY, run])
        assert queries.offers_for_date(con, DAY)["run_id"].to_list() == ["r3"]


def test_the_rows_a_price_index_day_needs_are_the_last_30_days_and_each_series_first_row():
    def index(day: date, gpu: str) -> pl.DataFrame:
        return pl.DataFrame([dict(snapshot_date=day, gpu=gpu, provider="all", price_kind="on_demand", listings=1,
                                  min_usd_per_gpu_hr=1.0, p10_usd_per_gpu_hr=1.0, median_usd_per_gpu_hr=1.0,
                                  max_usd_per_gpu_hr=1.0, first_seen_date=date(2026, 9, 1), days_since_first_seen=0)])

    with db.connect() as con:
        for day, gpu in ((date(2026, 9, 1), "H200 SXM"), (date(2026, 9, 2), "H200 SXM"), (date(2026, 10, 28), "H200 SXM"),
                         (date(2026, 10, 27), "B200 SXM"), (DAY, "H200 SXM")):
            derived.replace_for_date(con, day, {"price_index": index(day, gpu)})
        needed = queries.price_index_before(con, DAY).sort("snapshot_date")
    # 2 September is neither within 30 days nor H200's first row; the 27 October is 31 days before, B200's first
    assert needed.select("snapshot_date", "gpu").rows() == [
        (date(2026, 9, 1), "H200 SXM"), (date(2026, 10, 27), "B200 SXM"), (date(2026, 10, 28), "H200 SXM")]
