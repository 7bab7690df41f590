"""vast.ai: keyless `POST /api/v0/bundles/`, split by GPU count (and by GPU name when a split comes back full).

The API has no pagination: each search returns at most `limit` offers. One search per GPU count (1, 2, 4, 8
and every other count) covers the market; a search that still comes back full is split by the GPU names it
returned plus one search for every other name. A full search that could not be split marks the fetch
truncated. Prices: `dph_base` is the whole offer's GPU price without storage (on_demand), `min_bid` the
interruptible price when above 0, `discounted_dph_total` the reserved price when a discount is present
(vast's reserved view; it includes the allocated storage, like `dph_total`).
"""

import json
import re

from scrapers.base import (
    Listing,
    ParseResult,
    RawResponse,
    RecordError,
    Rejection,
    SchemaError,
    check_records,
    integer,
    number,
    positive,
    text,
)

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
    data = raw.json()
    if isinstance(data, list):
        return data
    if not isinstance(data, dict) or not isinstance(data.get("offers"), list):
        raise SchemaError(NAME, raw.path, "expected an object with a list of offers", field="offers")
    return data["offers"]


async def fetch(client, settings) -> list[RawResponse]:
    url = settings.vastai_url.rstrip("/") + PATH
    buckets = bucket_queries(settings.vastai_limit)
    for i, query in enumerate(buckets):
        offers = offers_of(await client.request("POST", url, json_body=query, give_up=_quota))
        if len(offers) < query["limit"]:
            continue
        names = sorted({o["gpu_name"] for o in offers if isinstance(o, dict) and isinstance(o.get("gpu_name"), str)})
        subqueries = refine(query, names)
        if client.remaining - (len(buckets) - i - 1) < len(subqueries):  # never at the cost of the other counts
            client.note(f"search {describe(query)} came back full; the request budget cannot split it")
            continue
        for sub in subqueries:
            offers_of(await client.request("POST", url, json_body=sub, give_up=_quota))
    return client.responses


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


def parse(responses: list[RawResponse]) -> ParseResult:
    result = ParseResult()
    queries, every_offer = [], []
    for raw in responses:
        offers = offers_of(raw)
        every_offer += offers
        queries.append((json.loads(raw.request_body) if raw.request_body else {}, len(offers)))
        for record in offers:
            result.record_count += 1
            try:
                result.listings.extend(listings(record, raw))
            except RecordError as exc:
                offer_id = record.get("id") if isinstance(record, dict) else None
                result.rejected.append(Rejection(None if offer_id is None else str(offer_id), exc.field, exc.reason, record))
    check_records(NAME, PATH, every_offer, "offers", REQUIRED)  # one search may be empty, not all of them
    result.notes = truncation(queries)
    result.truncated = bool(result.notes)
    return result


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
        gpu_count=integer(record.get("num_gpus"), "num_gpus"),
        fetched_at=raw.fetched_at,
        gpu_memory_gb=gpu_ram_mib / 1024 if gpu_ram_mib else None,  # gpu_ram is MiB in practice
        region=region,
        country=country,
        tier={1: "datacenter", 0: "community"}.get(record.get("hosting_type")),
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
