"""The source interface: raw responses in, typed rows out, and the errors that name source, path and field."""

import gc
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from warehouse.bounded import loads
from warehouse.records import RawResponse


class SourceError(RuntimeError):
    """A source that could not be fetched or read; the message names the source and the URL path."""


class SchemaError(SourceError):
    """A payload whose shape is not what the source's API documents."""

    def __init__(self, source: str, path: str, problem: str, field: str | None = None):
        where = f"{source}: {path}" + (f": field '{field}'" if field else "")
        super().__init__(f"{where}: {problem}")
        self.source, self.path, self.field = source, path, field


class RecordError(ValueError):
    """One record that cannot be read; it is quarantined, the rest of the payload stands."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"field '{field}': {reason}")
        self.field, self.reason = field, reason


# Plausibility bounds on the counts a record states, checked where they enter (integer's maximum): beyond them
# the record is quarantined naming the field, so no count reaches a 64-bit (or narrower) column.
INT64_MAX = 2**63 - 1
MAX_GPU_COUNT = 1024  # GPUs in one listing; the largest single offers are clusters of a few hundred
MAX_CONTEXT_TOKENS = 10**9  # a model's context; the longest listed are about ten million tokens


def json_body(raw: RawResponse) -> Any:
    """The body's JSON: orjson (about 3x faster on a 50 MB answer), the standard library for what orjson refuses
    but Python accepts (NaN, integers beyond 64 bits), so both read the same values; SchemaError otherwise.

    The cyclic garbage collector is paused meanwhile: it would rescan the new dicts of a large answer again and
    again (measured: twice the decode time); nothing decoded here can form a cycle.
    """
    try:
        with gc_paused():
            return loads(raw.body)
    except ValueError as exc:
        served = raw.headers.get("content-type", "no content type")
        raise SchemaError(raw.source, raw.path, f"body is not JSON ({exc}; served as {served})") from None


@contextmanager
def gc_paused() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


# The tier of a listing the provider sells as one cluster: nodes joined by a scale-out fabric (InfiniBand/RoCE),
# so one replica may span them (docs/deployability.md). Its max_gpu_count is the most GPUs one cluster takes.
CLUSTER_TIER = "cluster"


@dataclass(frozen=True)
class Listing:
    """One priced listing and price kind as the provider quotes it; normalise turns it into an `offers` row."""

    offer_id: str
    price_kind: str  # on_demand | interruptible | reserved | dynamic | savings_1m | ...
    price_field: str  # the provider field the price came from, named in quarantine
    native_per_hr: float | None  # the whole listing (gpu_count GPUs), in native_currency
    gpu_raw: str
    gpu_count: int | None
    fetched_at: datetime
    native_currency: str = "USD"
    gpu_memory_gb: float | None = None  # per GPU
    max_gpu_count: int | None = None
    region: str | None = None
    country: str | None = None
    tier: str | None = None
    reliability: float | None = None
    verified: bool | None = None
    availability: str | None = None
    extras: dict = field(default_factory=dict)
    record: dict | None = None  # the raw record, kept for quarantine
    # Who runs the machine when it is not the source itself (a catalog lists many clouds), and who resells it
    provider: str | None = None
    reseller: str | None = None
    price_basis: str = "listing"  # listing (a market's live listing) | catalog (a cloud's list price)
    source_version: str | None = None  # the version of the file the price was read from (a catalog's ETag)


@dataclass(frozen=True)
class Rejection:
    """A record the parser refused (bad type, non-numeric price string, missing id): goes to quarantine."""

    offer_id: str | None
    field: str
    reason: str
    record: Any
    price_kind: str | None = None

    @classmethod
    def of(cls, offer_id: Any, exc: Exception, record: Any) -> "Rejection":
        """The rejection of a record whose reading raised exc: a RecordError names its field; anything else a
        record made the parse raise is that record's reason too (the unit of failure is the record), named as
        unexpected so a bug still shows."""
        offer_id = None if offer_id is None else str(offer_id)[:200]
        if isinstance(exc, RecordError):
            return cls(offer_id, exc.field, exc.reason, record)
        return cls(offer_id, "record", f"unexpected {type(exc).__name__} reading it: {str(exc)[:200]}", record)


@dataclass(frozen=True)
class FxRate:
    date: date
    base: str
    quote: str
    rate: float  # units of quote per 1 base
    source: str
    fetched_at: datetime


@dataclass(frozen=True)
class ApiPrice:
    """One per-token API price tier of one listed model, in USD per million tokens."""

    api_model_id: str  # as listed, with its variant suffix (`openai/gpt-oss-20b:free`)
    price_kind: str  # standard | free | batch | another variant's name
    tier: str  # base | prompt>=N (long context) | utc HHMM-HHMM (time of day)
    usd_per_mtok_input: float
    usd_per_mtok_output: float
    usd_per_mtok_cache_read: float | None
    fetched_at: datetime
    response_sha256: str  # the archived response the price was read from (its metadata's sha256)
    hugging_face_id: str | None = None
    name: str | None = None
    context_length: int | None = None
    min_prompt_tokens: int | None = None
    utc_start: int | None = None  # HHMM
    utc_end: int | None = None  # HHMM; before utc_start when the window wraps midnight


@dataclass(frozen=True)
class ApiAlias:
    """An id that stands for another listed model (`~deepseek/deepseek-v4-flash-latest`), not an offer."""

    alias_id: str
    target_id: str | None
    fetched_at: datetime
    response_sha256: str


@dataclass(frozen=True)
class ModelConfig:
    """One repository's config.json as Hugging Face answered for it: the config (200), unchanged since the ETag
    sent (304), or refused (401, 404, ...)."""

    repo: str  # owner/name, as the URL asked for it
    http_status: int
    fetched_at: datetime
    etag: str | None = None
    config: Any = None  # the parsed JSON of a 200 (a dict when it is a config)
    config_sha256: str | None = None  # of the body of a 200
    error: str | None = None  # why a 200's body is no config (not JSON, not an object); else what the Hub said
    safetensors: dict | None = None  # the model API's count of the weights: {"parameters": {dtype: n}, "total": n}


@dataclass(frozen=True)
class CatalogFile:
    """One file of a catalog source (one cloud's price list) as this run read it, or why it could not."""

    cloud: str
    http_status: int
    status: str  # changed (a body came) | unchanged (304: the held copy was read) | failed
    fetched_at: datetime
    version: str | None = None  # its ETag, else the first 16 hex digits of its sha256
    sha256: str | None = None
    rows: int | None = None
    listings: int | None = None
    error: str | None = None


@dataclass
class ParseResult:
    listings: list[Listing] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    fx_rates: list[FxRate] = field(default_factory=list)
    api_prices: list[ApiPrice] = field(default_factory=list)
    api_aliases: list[ApiAlias] = field(default_factory=list)
    model_configs: list[ModelConfig] = field(default_factory=list)
    files: list[CatalogFile] = field(default_factory=list)  # a catalog source's files, one per cloud
    record_count: int = 0
    truncated: bool = False  # a query came back full: the market may be larger than what was captured
    notes: list[str] = field(default_factory=list)
    frame: Any = None  # the listings as one polars frame (scrapers/frames.py) when the parse builds it by columns


class Source(Protocol):
    """A source module: NAME, an async fetch returning the raw responses, and a pure parse of them."""

    NAME: str

    async def fetch(self, client, settings) -> list[RawResponse]: ...

    def parse(self, responses: list[RawResponse]) -> ParseResult: ...


def check_records(source: str, path: str, records: list, container: str | None, required: Iterable[str]) -> None:
    """Fail the source on an empty result, or on a required field that no record carries (renamed or removed).

    A market never has nothing to sell, so an empty result is an error, not an empty success. A field missing
    from one record is that record's problem (quarantined); missing from every record, it is the API's.
    """
    if not records:
        raise SchemaError(source, path, "empty result: no records", field=container)
    objects = [r for r in records if isinstance(r, dict)]
    for name in required:
        if objects and all(name not in r for r in objects):
            raise SchemaError(source, path, f"absent from all {len(objects)} records (renamed or removed?)", field=name)


def number(value: Any, field: str, *, allow_none: bool = True) -> float | None:
    """A finite number from a JSON number or a numeric string (Decimal-checked); RecordError otherwise."""
    if value is None:
        if allow_none:
            return None
        raise RecordError(field, "missing")
    if isinstance(value, bool):
        raise RecordError(field, f"expected a number, got {value!r}")
    if isinstance(value, int | float):
        try:
            result = float(value)
        except OverflowError:  # an integer beyond a double
            raise RecordError(field, f"not a finite number: {_digits(value)}") from None
    elif isinstance(value, str):
        try:
            result = float(Decimal(value.strip()))
        except (InvalidOperation, ValueError):
            raise RecordError(field, f"non-numeric string {value[:40]!r}") from None
    else:
        raise RecordError(field, f"expected a number, got {type(value).__name__}")
    if not math.isfinite(result):
        raise RecordError(field, f"not a finite number: {value!r}")
    return result


def integer(value: Any, field: str, maximum: int = INT64_MAX) -> int | None:
    """A whole number (JSON int, or a float with no fraction) no larger than maximum (a 64-bit integer at most);
    RecordError otherwise."""
    result = number(value, field)
    if result is None:
        return None
    if result != int(result):
        raise RecordError(field, f"expected a whole number, got {value!r}")
    whole = value if type(value) is int else int(result)  # a float beyond 2**53 is read as the int it came as
    if not -INT64_MAX <= whole <= maximum:
        raise RecordError(field, f"implausible: {_digits(whole)} is above {maximum:,}" if whole > 0
                          else f"implausible: {_digits(whole)} is below {-INT64_MAX:,}")
    return whole


def _digits(value: int) -> str:
    """An integer as an error quotes it: its first digits and how many there are (Python refuses to write an
    integer beyond 4,300 digits as text)."""
    if abs(value) < 10**30:
        return f"{value:,}" if isinstance(value, int) else repr(value)
    return f"an integer of {value.bit_length()} bits"


def text(value: Any, field: str, *, required: bool = False) -> str | None:
    if value is None or value == "":
        if required:
            raise RecordError(field, "missing")
        return None
    if not isinstance(value, str):
        raise RecordError(field, f"expected a string, got {type(value).__name__}")
    return value


def positive(value: float | None) -> bool:
    return value is not None and value > 0
