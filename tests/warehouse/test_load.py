from datetime import date

import duckdb
import polars as pl
import pytest

from scrapers.base import FxRate, Listing
from tests.sources_support import NOW, SNAPSHOT
from transforms import gpu_names
from transforms.normalise import fx_rates_frame, listings_frame, normalise, rejections_frame
from warehouse import catalog, db
from warehouse.load import Batch, FetchRow, finish_run, load_batch, start_run

CATALOGUES = catalog.read_all()


@pytest.fixture
def con():
    with db.connect() as con:
        yield con


def count(con, sql, *params):
    return con.execute(sql, list(params)).fetchall()[0][0]


def batch(source="vastai", run_id="run-1", offers=2, status="ok", error=None, rates=()):
    listings = [Listing(offer_id=str(i), price_kind="on_demand", price_field="dph_base", native_per_hr=1.0 + i,
                        gpu_raw="H100 SXM" if i else "Mystery GPU", gpu_count=1, fetched_at=NOW)
                for i in range(offers)] + [Listing(offer_id="z", price_kind="on_demand", price_field="dph_base",
                                                   native_per_hr=0.0, gpu_raw="H100 SXM", gpu_count=1, fetched_at=NOW)]
    names = gpu_names.catalogue(CATALOGUES["gpus"], CATALOGUES["gpu_aliases"], source)
    n = normalise(listings_frame(listings), rejections_frame([]), names, None, provider=source, run_id=run_id,
                  snapshot_date=SNAPSHOT, quarantined_at=NOW)
    row = FetchRow(run_id=run_id, source=source, snapshot_date=SNAPSHOT, started_at=NOW, status=status, error=error,
                   record_count=offers + 1, notes=["a note", "another"])
    if status != "ok":
        return Batch(row)
    return Batch(row, n.offers, n.quarantine, n.unmapped, fx_rates_frame(list(rates)))


def test_a_batch_loads_offers_quarantine_unmapped_and_its_fetch_row(con):
    row = load_batch(con, batch())
    assert (row.offers_loaded, row.quarantined, row.unmapped) == (2, 1, 1)
    assert count(con, "select count(*) from offers where run_id = 'run-1' and provider = 'vastai'") == 2
    assert count(con, "select count(*) from quarantine") == 1
    assert con.execute("select gpu_raw, listings from unmapped_gpus").fetchall() == [("Mystery GPU", 1)]
    assert con.execute("select status, offers_loaded, notes from fetches").fetchall() == [("ok", 2, "a note\nanother")]
    assert count(con, "select json_extract_string(extras, '$') is null from offers limit 1") is False


def test_reloading_the_same_run_and_source_replaces_instead_of_duplicating(con):
    load_batch(con, batch(offers=3))
    load_batch(con, batch(offers=2))
    assert count(con, "select count(*) from offers") == 2
    assert count(con, "select count(*) from quarantine") == 1
    assert count(con, "select count(*) from fetches") == 1
    load_batch(con, batch(source="runpod"))
    assert count(con, "select count(*) from offers") == 4  # another source's rows are left alone


def test_a_failed_source_gets_its_fetch_row_and_no_data_rows(con):
    load_batch(con, batch())
    load_batch(con, batch(status="failed", error="vastai: POST /api/v0/bundles/: HTTP 500 after 3 attempts"))
    assert count(con, "select count(*) from offers") == 0
    assert con.execute("select status, error, offers_loaded from fetches").fetchall() == [
        ("failed", "vastai: POST /api/v0/bundles/: HTTP 500 after 3 attempts", None)]


def test_a_load_that_fails_midway_leaves_nothing_behind(con):
    load_batch(con, batch(offers=2))
    broken = batch(offers=3)
    bad_row = broken.offers.head(1).with_columns(offer_id=pl.lit("late"), usd_per_hr=pl.lit(None, pl.Float64))
    broken.offers = pl.concat([broken.offers, bad_row])  # a NOT NULL violation after good rows
    with pytest.raises(duckdb.ConstraintException):
        load_batch(con, broken)
    assert count(con, "select count(*) from offers") == 2  # the earlier load, untouched
    assert con.execute("select offers_loaded from fetches").fetchall() == [(2,)]


def test_a_batch_repeating_an_offer_and_price_kind_is_refused_before_anything_is_written(con):
    load_batch(con, batch(offers=2))
    broken = batch(offers=3)
    broken.offers = pl.concat([broken.offers, broken.offers.head(1)])
    with pytest.raises(duckdb.ConstraintException, match="repeat"):
        load_batch(con, broken)
    assert count(con, "select count(*) from offers") == 2


def test_fx_rates_already_stored_keep_their_first_value(con):
    first = [FxRate(SNAPSHOT, "EUR", "USD", 1.1171, "ecb", NOW), FxRate(SNAPSHOT, "EUR", "USD", 1.1171, "ecb", NOW)]
    load_batch(con, batch(source="fx", offers=0, rates=first))
    load_batch(con, batch(source="fx", run_id="run-2", offers=0, rates=[
        FxRate(SNAPSHOT, "EUR", "USD", 9.99, "ecb", NOW), FxRate(date(2026, 11, 28), "EUR", "USD", 1.12, "ecb", NOW)]))
    assert con.execute("select date, rate, run_id from fx_rates order by date").fetchall() == [
        (SNAPSHOT, 1.1171, "run-1"), (date(2026, 11, 28), 1.12, "run-2")]


def test_runs_finish_ok_partial_or_failed_from_their_fetch_rows(con):
    start_run(con, "run-1", SNAPSHOT, "test", ["fx", "vastai"])
    assert con.execute("select status, sources, code_version is not null from runs").fetchall() == [
        ("running", "fx,vastai", True)]
    load_batch(con, batch(source="fx", offers=0))
    assert finish_run(con, "run-1") == "partial"
    assert con.execute("select source_status from runs").fetchall() == [("fx=ok,vastai=missing",)]
    load_batch(con, batch())
    assert finish_run(con, "run-1") == "ok"
    load_batch(con, batch(status="failed", error="boom"))
    load_batch(con, batch(source="fx", status="failed", error="boom"))
    assert finish_run(con, "run-1") == "failed"
    assert finish_run(con, "run-1", error="the flow crashed") == "failed"
    assert con.execute("select error, finished_at is not null from runs").fetchall() == [("the flow crashed", True)]
    with pytest.raises(KeyError):
        finish_run(con, "nope")
