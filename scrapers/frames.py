"""Listings as one polars frame: the shape a parse hands to transforms/normalise.

A source's parse returns typed `Listing` rows (record by record) or, for a large answer, the same rows built
column by column (vastai.parse_frame); both become this frame.
"""

import json
from dataclasses import fields

import orjson
import polars as pl

from scrapers.base import Listing, loads

LISTING_SCHEMA = {
    "offer_id": pl.String, "price_kind": pl.String, "price_field": pl.String, "native_per_hr": pl.Float64,
    "gpu_raw": pl.String, "gpu_count": pl.Int64, "fetched_at": pl.Datetime("us"), "native_currency": pl.String,
    "gpu_memory_gb": pl.Float64, "max_gpu_count": pl.Int64, "region": pl.String, "country": pl.String,
    "tier": pl.String, "reliability": pl.Float64, "verified": pl.Boolean, "availability": pl.String,
    "extras": pl.String, "provider": pl.String, "reseller": pl.String, "price_basis": pl.String,
    "source_version": pl.String, "record": pl.Object,  # the raw record (or its RecordJSON), JSON when quarantined
}


def json_text(value) -> str | None:
    """How extras and quarantined records are stored: compact JSON, sorted keys, anything unusual as its str().

    orjson: ten times json.dumps's speed, which took 4 s for the extras of a 20,000-offer answer.
    """
    if value is None:
        return None
    try:
        return orjson.dumps(value, default=_plain, option=_SORTED).decode()
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, which a quarantined record may hold
        return json.dumps(value, default=_plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


class RecordJSON:
    """A raw record kept as its JSON text (the bytes it came as, or re-encoded): about a third of the memory of
    its decoded objects, and json_text writes it as it would the record itself (it decodes it again, as the
    answer was decoded, for the few rows that need it)."""

    __slots__ = ("text",)

    def __init__(self, text: bytes | str):
        self.text = text


def record_json(record):
    """The record as RecordJSON: its JSON text (the standard library's where orjson cannot write it: an integer
    beyond 64 bits)."""
    try:
        # orjson over-allocates the bytes it returns; the decoded str has its exact size
        return RecordJSON(orjson.dumps(record).decode())
    except orjson.JSONEncodeError:
        return RecordJSON(json_text(record))


def _plain(value):
    return loads(value.text) if isinstance(value, RecordJSON) else str(value)


def shallow(item) -> dict:
    # dataclasses.asdict deep-copies every nested record, which dominated the load of a large payload
    return {f.name: getattr(item, f.name) for f in fields(item)}


def listings_frame(listings: list[Listing]) -> pl.DataFrame:
    """Listings as a frame; extras become JSON text, the raw record stays an object."""
    rows = [shallow(item) | {"extras": json_text(item.extras)} for item in listings]
    try:
        return pl.DataFrame(rows, schema=LISTING_SCHEMA, orient="row")
    except OverflowError:  # polars looks into a raw record holding an integer beyond a double: kept as its text
        return pl.DataFrame([row | {"record": record_json(row["record"])} for row in rows], schema=LISTING_SCHEMA,
                            orient="row")
