"""vast.ai: keyless `POST /api/v0/bundles/`, split by GPU count (and by GPU name when a split comes back full).

The API has no pagination: each search returns at most `limit` offers. One search per GPU count (1, 2, 4, 8
and every other count) covers the market; a search that still comes back full is split by the GPU names it
returned plus one search for every other name. A full search that could not be split marks the fetch
truncated. Prices: `dph_base` is the whole offer's GPU price without storage (on_demand), `min_bid` the
interruptible price when above 0, `discounted_dph_total` the reserved price when a discount is present
(vast's reserved view; it includes the allocated storage, like `dph_total`).
"""

import json
import math
import re
from collections.abc import Iterable
from typing import Any

import msgspec
import polars as pl

from scrapers.base import (
    MAX_GPU_COUNT,
    Listing,
    ParseResult,
    RecordError,
    Rejection,
    SchemaError,
    check_records,
    gc_paused,
    integer,
    json_body,
    loads,
    number,
    positive,
    text,
)
from scrapers.frames import LISTING_SCHEMA, RecordJSON, json_text, listings_frame, record_json
from warehouse.records import RawResponse

NAME = "vastai"
PATH = "/api/v0/bundles/"
COUNT_BUCKETS = (1, 2, 4, 8)
# Sent explicitly: whether the server applies its documented defaults when they are omitted is unknown.
BASE_QUERY = {"rentable": {"eq": True}, "rented": {"eq": False}, "type": "on-demand", "order": [["dph_total", "asc"]]}
EXTRA_KEYS = (
    "dph_base", "dph_total", "storage_cost", "storage_total_cost", "min_bid", "discount_rate", "discounted_dph_total",
    "credit_discount_max", "machine_id", "host_id", "hosting_type", "geolocation", "verification", "reliability2",
    "gpu_ram", "cpu_cores", "cpu_cores_effective", "cpu_ram", "disk_space", "inet_up_cost", "inet_down_cost",
    "cuda_max_good", "compute_cap", "duration",
)
_COUNTRY = re.compile(r"[A-Z]{2}")
REQUIRED = ("id", "gpu_name", "num_gpus", "dph_base")
TIERS = {1: "datacenter", 0: "community"}


def tier(hosting_type) -> str | None:
    """The tier of a `hosting_type` (1 or 0); None for anything else, a list or an object included."""
    return TIERS.get(hosting_type) if type(hosting_type) is int else None


def bucket_queries(limit: int) -> list[dict]:
    """One search per GPU count, plus one for every other count: together they cover the market."""
    queries = [{**BASE_QUERY, "num_gpus": {"eq": n}, "limit": limit} for n in COUNT_BUCKETS]
    return queries + [{**BASE_QUERY, "num_gpus": {"notin": list(COUNT_BUCKETS)}, "limit": limit}]


def refine(query: dict, names: list[str]) -> list[dict]:
    """Split a full search by GPU name: one search per name it returned, one for every other name."""
    return [{**query, "gpu_name": {"eq": n}} for n in names] + [{**query, "gpu_name": {"notin": names}}]


def describe(query: dict) -> str:
    return ", ".join(f"{k} {op} {v}" for k in ("num_gpus", "gpu_name") for op, v in query.get(k, {}).items())


def _quota(raw: RawResponse) -> str | None:
    # The SDK treats this JSON 429 as a daily quota that resets at UTC midnight: retrying cannot help.
    return "daily search quota exceeded" if b"search_quota_exceeded" in raw.body else None


def offers_of(raw: RawResponse) -> list:
    """The offers of one answer: the API wraps them as {"offers": [...]}; the CLI's --raw output is the bare list."""
    data = json_body(raw)
    if isinstance(data, list):
        return data
    if not isinstance(data, dict) or not isinstance(data.get("offers"), list):
        raise SchemaError(NAME, raw.path, "expected an object with a list of offers", field="offers")
    return data["offers"]


async def fetch(client, settings) -> list[RawResponse]:
    url = settings.vastai_url.rstrip("/") + PATH
    buckets = bucket_queries(settings.vastai_limit)
    for i, query in enumerate(buckets):
        raw = await client.request("POST", url, json_body=query, give_up=_quota)
        if not could_be_full(raw, query["limit"]):
            continue
        offers = offers_of(raw)
        if len(offers) < query["limit"]:
            continue
        names = sorted({o["gpu_name"] for o in offers if isinstance(o, dict) and isinstance(o.get("gpu_name"), str)})
        subqueries = refine(query, names)
        if client.remaining - (len(buckets) - i - 1) < len(subqueries):  # never at the cost of the other counts
            client.note(f"search {describe(query)} came back full; the request budget cannot split it")
            continue
        for sub in subqueries:
            await client.request("POST", url, json_body=sub, give_up=_quota)
    return client.responses


def could_be_full(raw: RawResponse, limit: int) -> bool:
    """Whether an answer may hold `limit` offers. Every offer carries the key "id", so an answer with fewer
    "id" keys cannot: it is not decoded here (0.3 s for a 51 MB answer; the parse reads every answer anyway,
    and reports a malformed one). An offer without an id is rejected by the parse, which also notes a search
    that came back full."""
    return raw.body.count(b'"id"') >= limit


def truncation(queries: list[tuple[dict, int]]) -> list[str]:
    """The searches that came back full and were not split further: the market may be larger there."""

    def without_name(q: dict) -> str:
        return json.dumps({k: v for k, v in q.items() if k != "gpu_name"}, sort_keys=True)

    split = {without_name(q) for q, _ in queries if "notin" in q.get("gpu_name", {})}
    return [
        f"search {describe(q)} returned {n} offers, its limit: the market may be larger"
        for q, n in queries
        if "limit" in q and n >= q["limit"] and ("gpu_name" in q or without_name(q) not in split)
    ]


def _searches(responses: list[RawResponse], result: ParseResult) -> list[tuple[RawResponse, list]]:
    """Each response with its offers; sets the result's record count, truncation notes and the schema checks."""
    searches = [(raw, offers_of(raw)) for raw in responses]
    every_offer = [offer for _, offers in searches for offer in offers]
    _summarise(result, every_offer, [_query(raw, offers) for raw, offers in searches])
    return searches


def _query(raw: RawResponse, offers: list) -> tuple[dict, int]:
    return json.loads(raw.request_body) if raw.request_body else {}, len(offers)


def _summarise(result: ParseResult, every_offer: list, queries: list[tuple[dict, int]]) -> None:
    """The schema checks over every offer of the fetch, the record count and the truncation notes."""
    check_records(NAME, PATH, every_offer, "offers", REQUIRED)  # one search may be empty, not all of them
    result.record_count = len(every_offer)
    result.notes = truncation(queries)
    result.truncated = bool(result.notes)


def _record_listings(record, raw: RawResponse, result: ParseResult) -> list[Listing]:
    """`listings` of one record; a record that cannot be read is added to the result's rejections."""
    try:
        return listings(record, raw)
    except Exception as exc:  # whatever one record raises is its reason
        result.rejected.append(Rejection.of(record.get("id") if isinstance(record, dict) else None, exc, record))
        return []


def parse(responses: list[RawResponse]) -> ParseResult:
    """Record by record into `Listing` rows: the mapping stated plainly, and the reference parse_frame is tested
    against (tests/scrapers/test_vastai_frame.py)."""
    result = ParseResult()
    for raw, offers in _searches(responses, result):
        for record in offers:
            result.listings.extend(_record_listings(record, raw, result))
    return result


# The fields `listings` reads as numbers: a record where each is a JSON number (or null) is read column-wise.
NUMBERS = ("gpu_ram", "reliability", "dph_base", "min_bid", "discount_rate", "discounted_dph_total", "cpu_cores",
           "cpu_cores_effective", "cpu_ram")
# Every field `listings` reads; with EXTRA_KEYS, all a listing keeps of its record (the rest stays in the archive).
READ_KEYS = ("id", "gpu_name", "num_gpus", "geolocation", "hosting_type", "verification", "rentable", "rented",
             *NUMBERS)
_EXACT = range(-(2**53), 2**53)  # `integer` reads through a float: beyond this, leave it to `listings`
_COUNTS = range(MAX_GPU_COUNT + 1)  # a count `integer` would refuse (or normalise quarantine): left to `listings`


def _number(value) -> bool:
    kind = type(value)
    return value is None or (kind is int and value in _EXACT) or (kind is float and math.isfinite(value))


def well_formed(record) -> bool:
    """A record whose every field `listings` reads has its documented JSON type: parse_frame reads those column
    by column; any other record (a string price, a float id, not an object...) goes through `listings`."""
    if type(record) is not dict or type(record.get("id")) is not int or record["id"] not in _EXACT:
        return False
    name, count = record.get("gpu_name"), record.get("num_gpus")
    if type(name) is not str or not name or not (count is None or (type(count) is int and count in _COUNTS)):
        return False
    return all(_number(record.get(key)) for key in NUMBERS)


KINDS = ("on_demand", "interruptible", "reserved")  # a record's listings, in the order `listings` makes them
PRICE_FIELDS = {"on_demand": "dph_base", "interruptible": "min_bid", "reserved": "discounted_dph_total"}


def parse_frame(responses: Iterable[RawResponse]) -> ParseResult:
    """The listings `parse` returns, as one frame built column by column (result.frame, listings left empty).

    Only the fields a listing keeps are decoded (_kept_fields). Well-formed records (all of them in practice)
    are read as columns: no Listing object, and each raw record kept as its JSON text (what quarantine stores),
    not as decoded objects. The others are decoded whole and go through `listings`, record by record, and every
    row keeps its place: the order of the answer, then on_demand, interruptible, reserved. One response is
    decoded at a time and dropped before the next, so `responses` may be a generator over the archive.
    """
    result = ParseResult()
    frames, odd, odd_order, queries = [], [], [], []
    present, objects, sequence = set(), 0, 0  # what the schema checks read: the required keys any object has
    for raw in responses:
        offers, texts = _kept_fields(raw) or (offers_of(raw), None)
        queries.append(_query(raw, offers))
        dicts = [record for record in offers if isinstance(record, dict)]
        present.update(key for key in REQUIRED if key not in present and any(key in record for record in dicts))
        objects += len(dicts)
        clean, clean_texts, clean_order = [], [], []
        for i, record in enumerate(offers):
            if well_formed(record):
                clean.append(record)
                clean_texts.append(RecordJSON(texts[i]) if texts else record_json(record))
                clean_order.append(sequence)
            else:  # read whole, as `listings` reads it, and kept whole where rejected or quarantined
                found = _record_listings(loads(texts[i]) if texts else record, raw, result)
                odd += found
                odd_order += [sequence + KINDS.index(item.price_kind) for item in found]
            sequence += len(KINDS)
        if clean:
            frames.append(_columns(clean, clean_texts, raw).with_columns(_order=pl.Series(clean_order, dtype=pl.Int64)))
        del offers, texts, clean, clean_texts, dicts
    # Stand-ins for the schema checks: as many objects, each with the required keys some object had.
    stand_in = dict.fromkeys(present)
    _summarise(result, [stand_in] * objects + [None] * (sequence // len(KINDS) - objects), queries)
    frames.append(listings_frame(odd).with_columns(_order=pl.Series(odd_order, dtype=pl.Int64)))
    odd_rows = frames.pop().select(*LISTING_SCHEMA, "_order")
    priced = [_priced(frame, kind) for frame in frames for kind in KINDS] + [odd_rows]
    result.frame = pl.concat(priced).sort("_order").select(list(LISTING_SCHEMA))
    return result


# An answer as its records' JSON texts, unread; a record as the fields a listing keeps (absent ones left out).
_ANSWER = msgspec.json.Decoder(msgspec.defstruct("Answer", [("offers", list[msgspec.Raw])]) | list[msgspec.Raw])
_KEPT = msgspec.json.Decoder(msgspec.defstruct(
    "Kept", [(key, Any, msgspec.UNSET) for key in sorted({*READ_KEYS, *EXTRA_KEYS})]))
_INT64 = range(-(2**63), 2**64)  # the integers orjson reads as integers (beyond them, as floats)


def _kept_fields(raw: RawResponse) -> tuple[list[dict], list[bytes]] | None:
    """The offers of a plain answer as dicts of the fields a listing keeps, and each record's JSON text.

    Decoding only those fields (30 of the 86 a real record has) takes a third of the time of decoding the whole
    answer, and each record's text comes as it was sent instead of being encoded again. None where the answer
    is not plain JSON in the documented shape (not UTF-8, a record that is not an object, a number orjson reads
    differently...): it is then read whole (offers_of), so both ways give the same values and the same errors.
    """
    if not raw.body.isascii():
        try:
            raw.body.decode()  # msgspec does not check the text of the fields it skips
        except UnicodeDecodeError:
            return None
    try:
        with gc_paused():
            answer = _ANSWER.decode(raw.body)
            texts = answer if isinstance(answer, list) else answer.offers
            records = [msgspec.to_builtins(_KEPT.decode(t)) for t in texts]
    except (msgspec.DecodeError, RecursionError):  # also a ValidationError: a record that is not an object, a
        return None  # number out of range; RecursionError: nested too deep (offers_of says so)
    if not all((kind := type(v)) is not int and kind is not list and kind is not dict or _read_alike(v)
               for record in records for v in record.values()):
        return None
    return records, [bytes(t) for t in texts]


def _read_alike(value) -> bool:
    """Whether orjson reads this value as msgspec did (it reads integers beyond 64 bits as floats)."""
    kind = type(value)
    if kind is int:
        return value in _INT64
    if kind is list:
        return all(map(_read_alike, value))
    return all(map(_read_alike, value.values())) if kind is dict else True


def _columns(records: list[dict], texts: list[RecordJSON], raw: RawResponse):
    """One row per well-formed record: every Listing field but the price, and the three price candidates."""

    def column(key: str) -> list:
        return [record.get(key) for record in records]

    known: dict = {}  # a few hundred places among thousands of offers
    places = [(known[g] if g in known else known.setdefault(g, location(g))) if isinstance(g, str) else (None, None)
              for g in column("geolocation")]
    gpu_ram = column("gpu_ram")
    frame = pl.DataFrame({
        "offer_id": [str(i) for i in column("id")],
        "gpu_raw": column("gpu_name"),
        "gpu_count": pl.Series(column("num_gpus"), dtype=pl.Int64),
        "fetched_at": pl.Series([raw.fetched_at] * len(records), dtype=pl.Datetime("us")),
        "native_currency": "USD",
        "gpu_memory_gb": pl.Series([m / 1024 if m else None for m in gpu_ram], dtype=pl.Float64),
        "max_gpu_count": pl.Series([None] * len(records), dtype=pl.Int64),
        "region": pl.Series([p[0] for p in places], dtype=pl.String),
        "country": pl.Series([p[1] for p in places], dtype=pl.String),
        "tier": pl.Series([tier(h) for h in column("hosting_type")], dtype=pl.String),
        "reliability": pl.Series([float(r) if r is not None and 0 <= r <= 1 else None for r in column("reliability")],
                                 dtype=pl.Float64),
        "verified": pl.Series([v == "verified" if isinstance(v, str) else None for v in column("verification")],
                              dtype=pl.Boolean),
        "availability": pl.Series([None if r.get("rentable") is None else
                                   "available" if r["rentable"] and not r.get("rented") else "unavailable"
                                   for r in records], dtype=pl.String),
        "extras": [json_text({k: r[k] for k in EXTRA_KEYS if k in r} | _share(r)) for r in records],
        "record": pl.Series(texts, dtype=pl.Object),
        **{key: pl.Series([None] * len(records), dtype=pl.String) for key in ("provider", "reseller", "source_version")},
        "price_basis": "listing",
        **{key: pl.Series(column(key), dtype=pl.Float64) for key in ("dph_base", "min_bid", "discount_rate",
                                                                    "discounted_dph_total")},
    })
    return frame


def _priced(frame, kind: str):
    """The rows of one price kind: on_demand always (normalise quarantines a zero price), the others when priced."""
    field = PRICE_FIELDS[kind]
    if kind == "interruptible":
        frame = frame.filter(pl.col("min_bid") > 0)
    elif kind == "reserved":
        frame = frame.filter((pl.col("discount_rate") > 0) & (pl.col("discounted_dph_total") > 0))
    return frame.with_columns(price_kind=pl.lit(kind), price_field=pl.lit(field), native_per_hr=pl.col(field),
                              _order=pl.col("_order") + KINDS.index(kind)).select(*LISTING_SCHEMA, "_order")


def location(geolocation) -> tuple[str | None, str | None]:
    """(region, ISO country) from "Region, CC"; a bare two-letter code is a country; anything else is unknown."""
    if not isinstance(geolocation, str):
        return None, None
    head, comma, tail = geolocation.rpartition(",")
    country = tail.strip()
    if not _COUNTRY.fullmatch(country):
        return None, None
    return (head.strip() or None) if comma else None, country


def _share(record: dict) -> dict:
    """vCPUs and RAM (MB) that come with the offer; unknown when the machine's cores are null or the share is below 1."""
    try:
        cores = number(record.get("cpu_cores"), "cpu_cores")
        effective = number(record.get("cpu_cores_effective"), "cpu_cores_effective")
        ram_mb = number(record.get("cpu_ram"), "cpu_ram")
    except RecordError:
        return {"vcpus": None, "ram_mb": None}
    if not positive(cores) or effective is None or effective < 1:
        return {"vcpus": None, "ram_mb": None}
    return {"vcpus": effective, "ram_mb": ram_mb * effective / cores if ram_mb is not None else None}


def listings(record, raw: RawResponse) -> list[Listing]:
    """The listings of one offer: on_demand always (normalise quarantines a zero price), the others when priced."""
    if not isinstance(record, dict):
        raise RecordError("offers[]", f"expected an object, got {type(record).__name__}")
    offer_id = integer(record.get("id"), "id")
    if offer_id is None:
        raise RecordError("id", "missing")
    gpu_ram_mib = number(record.get("gpu_ram"), "gpu_ram")
    region, country = location(record.get("geolocation"))
    reliability = number(record.get("reliability"), "reliability")
    verification = record.get("verification")
    rentable = record.get("rentable")
    common = dict(
        offer_id=str(offer_id),
        gpu_raw=text(record.get("gpu_name"), "gpu_name", required=True),
        gpu_count=integer(record.get("num_gpus"), "num_gpus", MAX_GPU_COUNT),
        fetched_at=raw.fetched_at,
        gpu_memory_gb=gpu_ram_mib / 1024 if gpu_ram_mib else None,  # gpu_ram is MiB in practice
        region=region,
        country=country,
        tier=tier(record.get("hosting_type")),
        reliability=reliability if reliability is not None and 0 <= reliability <= 1 else None,
        verified=verification == "verified" if isinstance(verification, str) else None,
        availability=None if rentable is None else ("available" if rentable and not record.get("rented") else "unavailable"),
        extras={k: record[k] for k in EXTRA_KEYS if k in record} | _share(record),
        record=record,
    )
    out = [Listing(price_kind="on_demand", price_field="dph_base",
                   native_per_hr=number(record.get("dph_base"), "dph_base"), **common)]
    min_bid = number(record.get("min_bid"), "min_bid")
    if positive(min_bid):
        out.append(Listing(price_kind="interruptible", price_field="min_bid", native_per_hr=min_bid, **common))
    discounted = number(record.get("discounted_dph_total"), "discounted_dph_total")
    if positive(number(record.get("discount_rate"), "discount_rate")) and positive(discounted):
        out.append(Listing(price_kind="reserved", price_field="discounted_dph_total", native_per_hr=discounted, **common))
    return out
