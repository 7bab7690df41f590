import json
from datetime import date, datetime

import polars as pl
import pytest

from scrapers.base import CatalogFile, Listing, Rejection
from tests.sources_support import NOW, SNAPSHOT
from transforms import gpu_names
from transforms.api_prices import API_PRICE_SCHEMA
from transforms.normalise import (
    MAX_USD_PER_GPU_HR,
    MAX_USD_PER_MTOK,
    OFFER_COLUMNS,
    absurd_api_prices,
    catalog_files_frame,
    listings_frame,
    normalise,
    rejections_frame,
)
from warehouse import catalog

CATALOGUES = catalog.read_all()


def listing(offer_id="1", gpu_raw="H100 SXM", gpu_count=1, price=2.0, kind="on_demand", memory=80.0, **extra):
    return Listing(offer_id=offer_id, price_kind=kind, price_field="dph_base", native_per_hr=price, gpu_raw=gpu_raw,
                   gpu_count=gpu_count, fetched_at=NOW, gpu_memory_gb=memory, record={"id": offer_id}, **extra)


def run(listings, rejected=(), rates=None, provider="vastai"):
    names = gpu_names.catalogue(CATALOGUES["gpus"], CATALOGUES["gpu_aliases"], provider)
    return normalise(listings_frame(list(listings)), rejections_frame(list(rejected)), names, rates,
                     provider=provider, run_id="run-1", snapshot_date=SNAPSHOT, quarantined_at=NOW)


def test_offers_rows_have_the_table_columns_and_a_per_gpu_price():
    result = run([listing(gpu_count=8, price=16.0, extras={"dph_total": 16.01})])
    row = result.offers.row(0, named=True)
    assert tuple(result.offers.columns) == OFFER_COLUMNS
    assert (row["usd_per_hr"], row["usd_per_gpu_hr"], row["native_per_hr"], row["native_currency"]) == (
        16.0, 2.0, 16.0, "USD")
    assert (row["gpu"], row["run_id"], row["provider"], row["snapshot_date"]) == (
        "H100 SXM5 80GB", "run-1", "vastai", SNAPSHOT)
    assert json.loads(row["extras"]) == {"dph_total": 16.01}
    assert (row["fx_rate"], row["fx_date"], row["fx_source"]) == (None, None, None)


@pytest.mark.parametrize(("memory", "expected"), [
    (40.0, "A100 SXM4 40GB"), (80.0, "A100 SXM4 80GB"), (81559 / 1024, "A100 SXM4 80GB"), (37.5, "A100 SXM4 40GB"),
    (43.9, None), (60.0, None), (None, None),
])
def test_a_name_covering_two_sizes_maps_by_memory_within_the_ecc_allowance(memory, expected):
    result = run([listing(gpu_raw="A100 SXM4", memory=memory)])
    assert result.offers["gpu"].to_list() == [expected]


def test_unknown_names_are_kept_with_gpu_null_and_counted_once_per_listing():
    result = run([listing("1", gpu_raw="RTX 9999 Quantum", memory=48.0),
                  listing("1", gpu_raw="RTX 9999 Quantum", kind="interruptible", price=1.0, memory=48.0),
                  listing("2", gpu_raw="RTX 9999 Quantum", memory=48.0), listing("3")])
    assert result.offers.filter(pl.col("gpu").is_null()).height == 3
    assert result.unmapped.select("provider", "gpu_raw", "gpu_memory_gb", "listings").rows() == [
        ("vastai", "RTX 9999 Quantum", 48.0, 2)]


def test_the_provider_decides_which_aliases_apply():
    assert run([listing(gpu_raw="NVIDIA H200", memory=141.0)], provider="runpod").offers["gpu"].to_list() == [
        "H200 SXM"]
    assert run([listing(gpu_raw="NVIDIA H200", memory=141.0)], provider="vastai").offers["gpu"].to_list() == [None]


def test_the_mig_slice_maps_to_its_own_part():
    result = run([listing(gpu_raw="NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb", memory=24.0)],
                 provider="runpod")
    assert result.offers["gpu"].to_list() == ["RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb"]


def test_records_that_cannot_be_priced_go_to_quarantine_with_the_field_and_reason():
    result = run([
        listing("zero-gpus", gpu_count=0), listing("no-count", gpu_count=None), listing("no-price", price=None),
        listing("free", price=0.0), listing("absurd", price=MAX_USD_PER_GPU_HR * 8 + 8, gpu_count=8),
        listing("fine", gpu_count=8, price=MAX_USD_PER_GPU_HR * 8),
    ], rejected=[Rejection("bad", "price_per_hour", "non-numeric string 'x'", {"id": "bad"})])
    assert result.offers["offer_id"].to_list() == ["fine"]
    got = {r["offer_id"]: (r["field"], r["reason"]) for r in result.quarantine.iter_rows(named=True)}
    assert got["zero-gpus"] == ("gpu_count", "zero GPUs: cannot be priced per GPU")
    assert got["no-count"] == ("gpu_count", "missing GPU count")
    assert got["no-price"] == ("dph_base", "missing price")
    assert got["free"] == ("dph_base", "zero or negative price: 0.0")
    assert got["absurd"][0] == "dph_base" and got["absurd"][1] == "absurd price: 101.0 USD per GPU-hour, above 100"
    assert got["bad"] == ("price_per_hour", "non-numeric string 'x'")
    row = result.quarantine.filter(pl.col("offer_id") == "free").row(0, named=True)
    assert json.loads(row["record"]) == {"id": "free"} and row["quarantined_at"] == NOW and row["run_id"] == "run-1"


def test_a_duplicate_offer_id_and_kind_is_one_listing_the_first():
    result = run([listing("7", price=2.0), listing("7", price=3.0), listing("7", kind="interruptible", price=1.0)])
    assert sorted(result.offers.select("price_kind", "usd_per_hr").rows()) == [("interruptible", 1.0),
                                                                               ("on_demand", 2.0)]
    assert result.duplicates == 1


def test_other_currencies_are_converted_with_the_rate_of_the_fetch_day_or_before():
    rates = pl.DataFrame({"date": [date(2026, 11, 26)] * 2, "base": ["EUR"] * 2, "quote": ["USD", "GBP"],
                          "rate": [1.25, 0.8], "source": ["ecb"] * 2})
    result = run([listing("eur", price=10.0, native_currency="eur"), listing("gbp", price=6.4, native_currency="GBP"),
                  listing("jpy", price=300.0, native_currency="JPY"), listing("usd", price=2.0)], rates=rates)
    got = {r["offer_id"]: r for r in result.offers.iter_rows(named=True)}
    assert got["eur"]["usd_per_hr"] == pytest.approx(12.5) and got["eur"]["native_currency"] == "EUR"
    assert (got["eur"]["fx_rate"], got["eur"]["fx_date"], got["eur"]["fx_source"]) == (
        pytest.approx(0.8), date(2026, 11, 26), "ecb")
    assert got["gbp"]["usd_per_hr"] == pytest.approx(6.4 / (0.8 / 1.25))
    assert got["usd"]["fx_rate"] is None
    assert result.quarantine.select("offer_id", "field").rows() == [("jpy", "native_currency")]
    assert "no USD rate for JPY on or before 2026-11-27" in result.quarantine["reason"][0]


def test_without_rates_a_non_usd_price_is_quarantined_not_guessed():
    result = run([listing("eur", native_currency="EUR")])
    assert result.offers.is_empty() and result.quarantine["field"].to_list() == ["native_currency"]


def test_empty_input_gives_empty_frames():
    result = run([])
    assert result.offers.is_empty() and result.quarantine.is_empty() and result.unmapped.is_empty()
    assert isinstance(result.offers["fetched_at"].dtype, pl.Datetime)


def test_an_api_price_above_the_bound_is_a_rejection_naming_the_column_and_the_other_tiers_stay():
    def tier(model, tier, usd_in, usd_out, cached=None):
        return {"api_model_id": model, "price_kind": "standard", "tier": tier, "usd_per_mtok_input": usd_in,
                "usd_per_mtok_output": usd_out, "usd_per_mtok_cache_read": cached, "fetched_at": NOW}

    prices = pl.DataFrame([tier("a/ok", "base", 0.1, MAX_USD_PER_MTOK), tier("a/big", "base", 0.5, 1e9),
                           tier("a/big", "prompt>=200000", 0.5, 2.0), tier("a/cache", "base", 0.5, 2.0, 5e3)],
                          schema=API_PRICE_SCHEMA, orient="row")
    kept, rejected = absurd_api_prices(prices)
    assert kept["api_model_id"].to_list() == ["a/ok", "a/big"] and kept["tier"].to_list()[1] == "prompt>=200000"
    assert rejected.select("offer_id", "price_kind", "field").rows() == [
        ("a/big", "standard", "usd_per_mtok_output"), ("a/cache", "standard", "usd_per_mtok_cache_read")]
    assert rejected["reason"][0] == "absurd price: 1000000000.0 USD per million tokens, above 1000"
    assert json.loads(rejected["record"][0])["tier"] == "base"
    assert rejected.columns == list(rejections_frame([]).columns)


def test_a_catalog_file_read_again_at_its_version_keeps_the_day_that_version_came():
    at = datetime(2026, 11, 27, 22)
    files = [CatalogFile("lambda", 304, "unchanged", at, '"l1"'), CatalogFile("oci", 200, "changed", at, '"o2"'),
             CatalogFile("gcp", 200, "changed", at, '"g1"'), CatalogFile("aws", 404, "failed", at, error="HTTP 404")]
    held = {"lambda": ('"l1"', date(2026, 11, 20)), "oci": ('"o1"', date(2026, 11, 20))}
    frame = catalog_files_frame(files, held, source="skypilot", run_id="r2", snapshot_date=date(2026, 11, 27))
    assert dict(frame.select("cloud", "changed_on").rows()) == {
        "lambda": date(2026, 11, 20), "oci": date(2026, 11, 27), "gcp": date(2026, 11, 27), "aws": None}
    assert set(frame["run_id"]) == {"r2"} and set(frame["source"]) == {"skypilot"}
