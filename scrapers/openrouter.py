"""OpenRouter: per-token API prices from the keyless `GET /api/v1/models`, one call for every model it routes.

Prices are strings in USD per token (`"0.0000001596"`); they become USD per million tokens through Decimal, an
exact shift of six places, rounded half-even to 9 decimal places (a billionth of a dollar per million tokens),
then the nearest double, so `"0.0000001596"` is stored as 0.1596 and never 0.15960000000000002.

Per model id: the plain listing is price kind `standard`, `:free` variants `free`, `:batch` variants `batch`, any
other `:variant` suffix keeps its name as the kind. `~…-latest` ids are aliases of another id (`alias_target`),
recorded as aliases, never as offers. A price of `"-1"` marks a router with a variable price (`openrouter/auto`):
no price, skipped with a note. Every `pricing.overrides` entry is a tier of its own, with its condition:
`min_prompt_tokens` (long context) or `utc_start`/`utc_end` (HHMM, time of day; a window may wrap midnight); a
price the override does not name stays the listing's. Models that take or give anything but text at the token
prices (image or audio output, embeddings) are ignored, and so are pricing keys the product does not use
(`request`, `image`, `web_search`, cache writes, ...).
"""


import hashlib
from decimal import ROUND_HALF_EVEN, Decimal, DecimalException, InvalidOperation
from typing import Any

from scrapers import base
from scrapers.base import ApiAlias, ApiPrice, ParseResult, RecordError, Rejection, SchemaError
from warehouse.records import RawResponse

NAME = "openrouter"
PATH = "/api/v1/models"
REQUIRED = ("id", "pricing")
PRICE_FIELDS = (("usd_per_mtok_input", "prompt"), ("usd_per_mtok_output", "completion"),
                ("usd_per_mtok_cache_read", "input_cache_read"))
KINDS = {"": "standard", "free": "free", "batch": "batch"}
ROUTER_PRICE = Decimal(-1)
PER_MILLION = 6  # decimal places between USD per token and USD per million tokens
QUANTUM = Decimal("1e-9")  # the one rounding step: to a billionth of a dollar per million tokens
BASE_TIER = "base"


async def fetch(client, settings) -> list[RawResponse]:
    await client.request("GET", settings.openrouter_url.rstrip("/") + PATH)
    return client.responses


def usd_per_mtok(value: Any, field: str) -> float | None:
    """USD per token (a string, as OpenRouter sends it, or a JSON number) -> USD per million tokens; a price too
    large to hold at that step (from about 1e13 USD per token) is refused like any unreadable price."""
    decimal = _decimal(value, field)
    if decimal is None:
        return None
    try:
        return float(decimal.scaleb(PER_MILLION).quantize(QUANTUM, ROUND_HALF_EVEN))
    except DecimalException:  # InvalidOperation past the step's precision, Overflow past Decimal's exponent
        raise RecordError(field, f"price {str(value)[:40]!r} USD per token is out of range") from None


def _decimal(value: Any, field: str) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RecordError(field, f"expected a price string, got {type(value).__name__}")
    try:
        decimal = Decimal(value.strip() if isinstance(value, str) else str(value))
    except InvalidOperation:
        raise RecordError(field, f"non-numeric string {str(value)[:40]!r}") from None
    if not decimal.is_finite():
        raise RecordError(field, f"not a finite number: {value!r}")
    if decimal < 0 and decimal != ROUTER_PRICE:
        raise RecordError(field, f"negative price {value!r}")
    return decimal


def parse(responses: list[RawResponse]) -> ParseResult:
    result = ParseResult()
    routers, non_text, duplicates = [], 0, 0
    for raw in responses:
        if not raw.path.endswith(PATH):
            raise SchemaError(NAME, raw.path, "not an OpenRouter models response")
        records = _records(raw)
        sha256 = hashlib.sha256(raw.body).hexdigest()
        seen = set()
        for record in records:
            result.record_count += 1
            model_id = record.get("id") if isinstance(record, dict) else None
            model_id = model_id if isinstance(model_id, str) else None  # not an id: the record is quarantined
            if model_id in seen and model_id is not None:
                duplicates += 1
                continue
            seen.add(model_id)
            try:
                kind = _kind_of(record)
                if kind == "alias":
                    result.api_aliases.append(_alias(record, raw, sha256))
                elif kind == "router":
                    routers.append(model_id)
                elif kind == "non_text":
                    non_text += 1
                else:
                    result.api_prices.extend(_prices(record, raw, sha256))
            except Exception as exc:  # whatever one record raises is its reason
                result.rejected.append(Rejection.of(model_id, exc, record))
    if routers:
        result.notes.append(f"{len(routers)} router(s) with a variable price (\"-1\") skipped: {', '.join(routers)}")
    if non_text:
        result.notes.append(f"{non_text} model(s) with non-text input or output ignored")
    if duplicates:
        result.notes.append(f"{duplicates} duplicate model(s) (same id) kept once")
    return result


def _records(raw: RawResponse) -> list:
    data = base.json_body(raw)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise SchemaError(NAME, raw.path, "missing or not a list", field="data")
    records = data["data"]
    base.check_records(NAME, raw.path, records, "data", REQUIRED)
    pricing = [r["pricing"] for r in records if isinstance(r, dict) and isinstance(r.get("pricing"), dict)]
    base.check_records(NAME, raw.path, pricing, "data[].pricing", ())
    for name in ("prompt", "completion"):
        if all(name not in p for p in pricing):
            raise SchemaError(NAME, raw.path, f"absent from all {len(pricing)} records (renamed or removed?)",
                              field=f"pricing.{name}")
    return records


def _kind_of(record) -> str:
    """alias | router | non_text | priced."""
    if not isinstance(record, dict):
        raise RecordError("data[]", f"expected an object, got {type(record).__name__}")
    model_id = base.text(record.get("id"), "id", required=True)
    if model_id.startswith("~"):
        return "alias"
    pricing = record.get("pricing")
    if not isinstance(pricing, dict):
        raise RecordError("pricing", "missing" if pricing is None else f"expected an object, got {type(pricing).__name__}")
    if any(_decimal(pricing.get(key), f"pricing.{key}") == ROUTER_PRICE for key in ("prompt", "completion")):
        return "router"
    architecture = record.get("architecture")
    if isinstance(architecture, dict):
        inputs, outputs = architecture.get("input_modalities"), architecture.get("output_modalities")
        if isinstance(outputs, list) and (set(outputs) != {"text"} or isinstance(inputs, list) and "text" not in inputs):
            return "non_text"
    return "priced"


def _alias(record: dict, raw: RawResponse, sha256: str) -> ApiAlias:
    target = record.get("alias_target")
    slug = target.get("slug") if isinstance(target, dict) else None
    return ApiAlias(alias_id=record["id"], target_id=base.text(slug, "alias_target.slug"), fetched_at=raw.fetched_at,
                    response_sha256=sha256)


def _tier_prices(pricing: dict, where: str, listed: dict | None = None) -> dict:
    prices = {}
    for column, key in PRICE_FIELDS:
        if key in pricing:
            prices[column] = usd_per_mtok(pricing[key], f"{where}.{key}")
        else:  # an override that does not name a price leaves the listing's
            prices[column] = (listed or {}).get(column)
    for column in ("usd_per_mtok_input", "usd_per_mtok_output"):
        if prices[column] is None:
            raise RecordError(f"{where}.{dict(PRICE_FIELDS)[column]}", "missing")
    return prices


def _condition(override: dict, where: str) -> dict | None:
    """The tier's name and condition; None for a condition this product does not know (the tier is left out)."""
    if "min_prompt_tokens" in override:
        tokens = base.integer(override["min_prompt_tokens"], f"{where}.min_prompt_tokens", base.MAX_CONTEXT_TOKENS)
        return {"tier": f"prompt>={tokens}", "min_prompt_tokens": tokens}
    if "utc_start" in override or "utc_end" in override:
        start, end = (_hhmm(override.get(k), f"{where}.{k}") for k in ("utc_start", "utc_end"))
        return {"tier": f"utc {start:04d}-{end:04d}", "utc_start": start, "utc_end": end}
    return None


def _hhmm(value, field: str) -> int:
    number = base.integer(value, field)
    if number is None or not (0 <= number <= 2400 and number % 100 < 60):
        raise RecordError(field, f"not a UTC time as HHMM: {value!r}")
    return number


def _prices(record: dict, raw: RawResponse, sha256: str) -> list[ApiPrice]:
    model_id = record["id"]
    variant = model_id.partition(":")[2]
    pricing = record["pricing"]
    common = dict(
        api_model_id=model_id,
        price_kind=KINDS.get(variant, variant),
        hugging_face_id=base.text(record.get("hugging_face_id"), "hugging_face_id"),
        name=base.text(record.get("name"), "name"),
        context_length=base.integer(record.get("context_length"), "context_length", base.MAX_CONTEXT_TOKENS),
        fetched_at=raw.fetched_at,
        response_sha256=sha256,
    )
    listed = _tier_prices(pricing, "pricing")
    rows = [ApiPrice(tier=BASE_TIER, **common, **listed)]
    overrides = pricing.get("overrides") or []
    if not isinstance(overrides, list):
        raise RecordError("pricing.overrides", f"expected a list, got {type(overrides).__name__}")
    tiers = {BASE_TIER}
    for index, override in enumerate(overrides):
        where = f"pricing.overrides[{index}]"
        if not isinstance(override, dict):
            raise RecordError(where, f"expected an object, got {type(override).__name__}")
        condition = _condition(override, where)
        if condition is None or condition["tier"] in tiers:
            continue
        tiers.add(condition["tier"])
        rows.append(ApiPrice(**common, **condition, **_tier_prices(override, where, listed)))
    return rows
