from datetime import datetime, timedelta

import polars as pl

from tests.transforms.offers_factory import DAY, offers
from transforms import quality

RULES = quality.QualityRules()
AT = datetime(2026, 11, 27, 3)


def test_a_price_ten_times_off_its_gpus_median_is_quarantined_with_the_reason():
    market = offers(*(dict(usd_per_gpu_hr=p) for p in (2.0, 2.2, 2.4, 2.5, 30.0)))
    kept, quarantine = quality.price_outliers(market, RULES, AT)
    assert sorted(kept["usd_per_gpu_hr"]) == [2.0, 2.2, 2.4, 2.5]
    row = quarantine.row(0, named=True)
    assert row["offer_id"] == "o4" and row["stage"] == "quality" and row["field"] == "usd_per_gpu_hr"
    assert "12.5x away from the median 2.4 of H200 SXM on_demand" in row["reason"]
    assert '"usd_per_gpu_hr": 30.0' in row["record"]


def test_prices_outside_the_configured_bounds_are_quarantined_even_alone():
    kept, quarantine = quality.price_outliers(offers(dict(usd_per_gpu_hr=0.001), dict(usd_per_gpu_hr=2.0)), RULES, AT)
    assert kept.height == 1 and "below the bound" in quarantine["reason"][0]


def test_two_listings_are_not_enough_to_call_one_an_outlier():
    kept, quarantine = quality.price_outliers(offers(dict(usd_per_gpu_hr=1.0), dict(usd_per_gpu_hr=20.0)), RULES, AT)
    assert kept.height == 2 and quarantine.height == 0


def test_interruptible_prices_are_judged_against_their_own_kind():
    rows = [dict(usd_per_gpu_hr=3.0)] * 3 + [dict(usd_per_gpu_hr=0.25, price_kind="interruptible")] * 3
    kept, quarantine = quality.price_outliers(offers(*rows), RULES, AT)
    assert quarantine.height == 0


def history(*counts: int) -> pl.DataFrame:
    return pl.DataFrame({"snapshot_date": [DAY - timedelta(days=i + 1) for i in range(len(counts))],
                         "source": ["vastai"] * len(counts), "listings": list(counts)})


def test_a_source_that_lost_more_than_half_its_listings_is_flagged():
    today = pl.DataFrame({"source": ["vastai"], "listings": [20]})
    assert quality.volume_flags(today, history(50, 48, 52, 47), DAY, RULES) == [
        "vastai: 20 listings, under 0.5 of its 7-day median of 49"]
    assert quality.volume_flags(today.with_columns(listings=pl.lit(30)), history(50, 48, 52, 47), DAY, RULES) == []


def test_too_little_history_judges_nothing():
    assert quality.volume_flags(pl.DataFrame({"source": ["vastai"], "listings": [1]}), history(50, 48), DAY, RULES) == []


def test_old_days_fall_out_of_the_window():
    old = history(50, 50, 50, 50, 50, 50, 50, 5, 5, 5)  # days 8-10 back are outside the 7 days
    assert quality.volume_flags(pl.DataFrame({"source": ["vastai"], "listings": [20]}), old, DAY, RULES) != []


def test_one_new_card_flags_the_day_with_its_name_and_count():
    market = offers(dict(usd_per_gpu_hr=1.0, gpu=None, gpu_raw="RTX 6090"), *[dict(usd_per_gpu_hr=1.0)] * 999)
    assert quality.unknown_share_flags(market, RULES) == [
        "vastai: 1 of 1000 listings (0.1%) have an unknown GPU name: RTX 6090 (1)"]


def test_a_market_the_catalogue_covers_passes():
    assert quality.unknown_share_flags(offers(*[dict(usd_per_gpu_hr=1.0)] * 4), RULES) == []


def test_the_verdict_is_suspect_exactly_when_a_gate_gave_a_reason():
    assert quality.verdict([]).quality == "ok"
    verdict = quality.verdict(quality.quarantined_share_flags(10, 100, RULES))
    assert (verdict.quality, verdict.text) == ("suspect", "price sanity quarantined 10 of 100 listings (10%)")
    assert quality.quarantined_share_flags(1, 100, RULES) == []


def test_quarantine_rows_fit_the_table():
    from warehouse import db

    _, quarantine = quality.price_outliers(offers(dict(usd_per_gpu_hr=500.0)), RULES, AT)
    with db.connect() as con:
        con.register("q", quarantine)
        con.execute("insert into quarantine by name select * from q")
        assert con.execute("select stage, provider from quarantine").fetchall() == [("quality", "vastai")]


def test_a_provider_without_listings_is_named():
    assert quality.missing_provider_flags(offers(dict(usd_per_gpu_hr=1.0)), ("vastai", "runpod"), DAY) == [
        "runpod: no successful fetch on 2026-11-27"]


def test_absurd_api_prices_the_fetch_refused_flag_the_day_naming_model_and_field():
    quarantined = pl.DataFrame({
        "provider": ["openrouter", "openrouter", "vastai"], "offer_id": ["b/model", "a/model", "123"],
        "field": ["usd_per_mtok_output", "usd_per_mtok_input", "dph_base"],
        "reason": ["absurd price: ...", "absurd price: ...", "absurd price: ..."]})
    assert quality.absurd_api_price_flags(quarantined) == [
        "openrouter: 2 API price(s) above 1000 USD per million tokens quarantined: a/model (usd_per_mtok_input), "
        "b/model (usd_per_mtok_output)"]
    assert quality.absurd_api_price_flags(quarantined.filter(pl.col("provider") == "vastai")) == []


def catalog_files(*rows: dict) -> pl.DataFrame:
    base = dict(source="skypilot", status="changed", changed_on=DAY, error=None)
    return pl.DataFrame([base | r for r in rows], schema={"source": pl.String, "cloud": pl.String,
                                                          "status": pl.String, "changed_on": pl.Date,
                                                          "error": pl.String})


def test_a_catalog_cloud_that_failed_fell_silent_or_stopped_changing_flags_the_day():
    rules = quality.QualityRules(catalog_stale_days=3)
    files = catalog_files(dict(cloud="lambda"), dict(cloud="oci", status="failed", changed_on=None, error="HTTP 404"),
                          dict(cloud="gcp", status="unchanged", changed_on=DAY - timedelta(days=4)),
                          dict(cloud="aws", status="unchanged", changed_on=DAY - timedelta(days=3)))
    earlier = pl.DataFrame({"source": ["skypilot"] * 3, "cloud": ["lambda", "nebius", "gcp"]})
    assert quality.catalog_file_flags(files, DAY, rules, earlier) == [
        "skypilot: oci failed: HTTP 404",
        "skypilot: nebius gave no answer on 2026-11-27",
        "skypilot: gcp catalog stale: unchanged since 2026-11-23 (more than 3 days)"]
    assert quality.catalog_file_flags(catalog_files(dict(cloud="lambda")), DAY, rules) == []


def test_a_market_listing_is_judged_against_listings_not_against_catalog_list_prices():
    catalog = [dict(usd_per_gpu_hr=1.275, provider="oci", source="skypilot", price_basis="catalog")] * 3
    market = offers(dict(gpu="Tesla P100 16GB", usd_per_gpu_hr=0.10),
                    *(dict(gpu="Tesla P100 16GB", offer_id=f"c{i}", **c) for i, c in enumerate(catalog)))
    kept, quarantine = quality.price_outliers(market, RULES, AT)
    assert quarantine.is_empty() and kept.height == 4
