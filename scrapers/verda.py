"""Verda (ex-DataCrunch): OAuth2 client credentials, then instance types, locations and availability.

Prices arrive as strings and cover the whole instance (all its GPUs): `price_per_hour` (on_demand),
`spot_price` (interruptible, when above 0) and `dynamic_price` (dynamic, when above 0). One listing per
instance type; `region` lists the location codes where it is available, `country` is set when they share one.
A CPU-only type gives no listing. A non-numeric price string quarantines that record.

The token response is archived with its tokens replaced, and the token request with the client id and
secret replaced. Without credentials the public pricing page is read instead (PRICING PAGE below).

PRICING PAGE: no copy of the real page was available, so the parser expects this layout and fails when it
finds no price. One or more <table>s; the first row holds the header cells (th or td). Columns are found by
header text, case-insensitive: "instance" (optional) the instance type code; "gpu" (not "gpu ram"/"gpu
memory") the GPU description, e.g. "1x H100 SXM5 80GB"; "on-demand" or "price" (not "spot") the whole
instance's hourly price; "spot" (optional) the spot price. A price cell holds a currency ($, €, £, USD, EUR)
and a decimal number, e.g. "$2.29/h". Rows with an empty or "-" GPU cell (CPU nodes) are skipped. A table
nested in a cell is a table of its own; the page is read in one walk, within MAX_PAGE_NODES.
"""

import re
from urllib.parse import urlsplit

from selectolax.lexbor import LexborHTMLParser

from scrapers.base import (
    MAX_GPU_COUNT,
    Listing,
    ParseResult,
    RecordError,
    Rejection,
    SchemaError,
    check_records,
    integer,
    json_body,
    number,
    positive,
    text,
)
from warehouse.records import RawResponse

NAME = "verda"
TOKEN_PATH = "/v1/oauth2/token"
TYPES_PATH = "/v1/instance-types"
LOCATIONS_PATH = "/v1/locations"
AVAILABILITY_PATH = "/v1/instance-availability"
TOKEN_SECRETS = ("client_id", "client_secret", "access_token", "refresh_token")
_COUNT_PREFIX = re.compile(r"(\d+)\s*x\s+(.+)")
_PRICE = re.compile(r"(?P<cur>[$€£]|USD|EUR|GBP)\s*(?P<num>\d+(?:\.\d+)?)|(?P<num2>\d+(?:\.\d+)?)\s*(?P<cur2>[$€£]|USD|EUR|GBP)")
_CURRENCY = {"$": "USD", "€": "EUR", "£": "GBP", "USD": "USD", "EUR": "EUR", "GBP": "GBP"}


async def fetch(client, settings) -> list[RawResponse]:
    if not (settings.verda_client_id and settings.verda_client_secret):
        client.note("no VERDA_CLIENT_ID/VERDA_CLIENT_SECRET: read the public pricing page instead of the API")
        await client.request("GET", settings.verda_pricing_url)
        return client.responses
    base = settings.verda_url.rstrip("/")
    token_response = await client.request(
        "POST", base + TOKEN_PATH, redact_keys=TOKEN_SECRETS,
        json_body={"grant_type": "client_credentials", "client_id": settings.verda_client_id,
                   "client_secret": settings.verda_client_secret})
    data = json_body(token_response)
    token = data.get("access_token") if isinstance(data, dict) else None
    if not isinstance(token, str) or not token:
        raise SchemaError(NAME, TOKEN_PATH, "missing", field="access_token")
    client.secrets.add(token)
    headers = {"Authorization": f"Bearer {token}"}
    await client.request("GET", base + TYPES_PATH, params={"currency": "usd"}, headers=headers)
    await client.request("GET", base + LOCATIONS_PATH, headers=headers)
    await client.request("GET", base + AVAILABILITY_PATH, headers=headers)
    return client.responses


def parse(responses: list[RawResponse]) -> ParseResult:
    by_path = {raw.path.rstrip("/"): raw for raw in responses}
    types = _find(by_path, TYPES_PATH)
    if types is None:
        if len(responses) != 1:
            raise SchemaError(NAME, TYPES_PATH, "no instance-types response and no single pricing page to read")
        return parse_pricing_page(responses[0])
    countries = dict(_locations(by_path))
    available = _availability(by_path)
    records = json_body(types)
    if not isinstance(records, list):
        raise SchemaError(NAME, types.path, "expected a bare array of instance types")
    check_records(NAME, types.path, records, None, ("instance_type", "gpu", "price_per_hour"))
    result = ParseResult()
    cpu_only = 0
    for record in records:
        result.record_count += 1
        try:
            found = instance_listings(record, types, available, countries)
        except Exception as exc:  # whatever one record raises is its reason
            offer_id = record.get("instance_type") if isinstance(record, dict) else None
            result.rejected.append(Rejection.of(offer_id, exc, record))
            continue
        cpu_only += not found
        result.listings.extend(found)
    if cpu_only:
        result.notes.append(f"{cpu_only} CPU-only instance type(s): no GPU listing")
    return result


def _find(by_path: dict, suffix: str) -> RawResponse | None:
    return next((raw for path, raw in by_path.items() if path.endswith(suffix)), None)


def _locations(by_path: dict) -> list[tuple[str, str | None]]:
    raw = _find(by_path, LOCATIONS_PATH)
    if raw is None:
        return []
    data = json_body(raw)
    if not isinstance(data, list):
        raise SchemaError(NAME, raw.path, "expected a bare array of locations")
    return [(loc["code"], loc.get("country_code")) for loc in data
            if isinstance(loc, dict) and isinstance(loc.get("code"), str) and loc["code"]]


def _availability(by_path: dict) -> dict[str, list[str]] | None:
    """Instance type -> location codes where it can be launched; None when availability was not fetched."""
    raw = _find(by_path, AVAILABILITY_PATH)
    if raw is None:
        return None
    data = json_body(raw)
    if not isinstance(data, list):
        raise SchemaError(NAME, raw.path, "expected a bare array of {location_code, availabilities}")
    where: dict[str, list[str]] = {}
    entries = [e for e in data if isinstance(e, dict) and isinstance(e.get("availabilities"), list)]
    if data and not entries:  # one location's entry unread is that location's; none read, the answer's
        raise SchemaError(NAME, raw.path, "expected a list", field="availabilities")
    for entry in entries:
        for instance_type in entry["availabilities"]:
            if isinstance(instance_type, str) and isinstance(entry.get("location_code"), str):  # else no place
                where.setdefault(instance_type, []).append(entry.get("location_code"))
    return where


def split_description(description: str) -> tuple[int | None, str]:
    """'8x H200 SXM5 141GB' -> (8, 'H200 SXM5 141GB'): the raw GPU name is the description without its count."""
    match = _COUNT_PREFIX.fullmatch(description.strip())
    return (int(match[1]), match[2].strip()) if match else (None, description.strip())


def instance_listings(record, raw: RawResponse, available: dict | None, countries: dict) -> list[Listing]:
    if not isinstance(record, dict):
        raise RecordError("instance_types[]", f"expected an object, got {type(record).__name__}")
    instance_type = text(record.get("instance_type"), "instance_type", required=True)
    gpu = record.get("gpu")
    if not isinstance(gpu, dict):
        raise RecordError("gpu", "expected an object")
    gpu_count = integer(gpu.get("number_of_gpus"), "gpu.number_of_gpus", MAX_GPU_COUNT)
    description = text(gpu.get("description"), "gpu.description") or ""
    if not gpu_count and not description.strip():
        return []
    memory = record.get("gpu_memory") if isinstance(record.get("gpu_memory"), dict) else {}
    memory_total_gb = number(memory.get("size_in_gigabytes"), "gpu_memory.size_in_gigabytes")
    prices = {key: number(record.get(key), key) for key in ("price_per_hour", "spot_price", "dynamic_price",
                                                             "max_dynamic_price")}
    locations = sorted(available.get(instance_type, [])) if available is not None else []
    location_countries = {countries.get(code) for code in locations}
    common = dict(
        offer_id=instance_type,
        gpu_raw=split_description(description)[1],
        gpu_count=gpu_count,
        fetched_at=raw.fetched_at,
        native_currency=(text(record.get("currency"), "currency") or "usd").upper(),
        gpu_memory_gb=memory_total_gb / gpu_count if memory_total_gb and gpu_count else None,  # the API gives the total
        region=",".join(locations) or None,
        country=location_countries.pop() if len(location_countries) == 1 else None,
        tier="datacenter",
        availability=None if available is None else ("available" if locations else "unavailable"),
        extras={
            "instance_type": instance_type, "id": record.get("id"), "model": record.get("model"),
            "name": record.get("name"), "locations": locations, "vcpus": (record.get("cpu") or {}).get("number_of_cores"),
            "memory_gb": (record.get("memory") or {}).get("size_in_gigabytes"),
            "storage": (record.get("storage") or {}).get("description"), "p2p": record.get("p2p"),
            "deploy_warning": record.get("deploy_warning"), **prices,
        },
        record=record,
    )
    out = [Listing(price_kind="on_demand", price_field="price_per_hour", native_per_hr=prices["price_per_hour"],
                   **common)]
    for kind, key in (("interruptible", "spot_price"), ("dynamic", "dynamic_price")):
        if positive(prices[key]):
            out.append(Listing(price_kind=kind, price_field=key, native_per_hr=prices[key], **common))
    return out


def _price_cell(cell: str, field: str) -> tuple[float, str] | None:
    """(amount, currency) from a cell like "$2.29/h"; None for an empty or "-" cell; RecordError otherwise."""
    cell = cell.strip()
    if cell in ("", "-", "–", "—"):
        return None
    if len(cell) > MAX_PRICE_CELL:  # the search backtracks over a run of digits: quadratic in a long cell
        raise RecordError(field, f"a price cell of {len(cell):,} characters, above {MAX_PRICE_CELL}: {cell[:40]!r}")
    match = _PRICE.search(cell)
    if not match:
        raise RecordError(field, f"no currency and amount in {cell[:40]!r}")
    return float(match["num"] or match["num2"]), _CURRENCY[match["cur"] or match["cur2"]]


def _columns(header: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for i, name in enumerate(h.lower() for h in header):
        if "spot" in name:
            found.setdefault("spot", i)
        elif "gpu" in name and "ram" not in name and "memory" not in name:
            found.setdefault("gpu", i)
        elif "on-demand" in name or "on demand" in name or "price" in name:
            found.setdefault("price", i)
        elif "instance" in name:
            found.setdefault("instance", i)
    return found


# Bounds on the work one pricing page may cost: the walk visits each node once, and a page of more nodes than
# this (a real pricing page has a few thousand) is refused rather than read.
MAX_PAGE_NODES = 200_000
MAX_PRICE_CELL = 200  # characters: "$2.29/h", "€ 1.234,50 per hour"
_CELLS = ("th", "td")


def page_tables(page: LexborHTMLParser, source_path: str) -> list[list[list[str]]]:
    """Each table's own rows, each row its own cells' text: one walk over the document, every node visited once.

    A table nested in a cell is a table of its own: its rows are not its parent's, and its text is not the
    cell's. (Selecting every table's rows, then every row's cells and their text, read a nested table once per
    table around it: ~n^3.9 on nested tables, 205 s for 44 KB.) A cell's text is its text nodes, each stripped,
    joined, as selectolax's text(strip=True). SchemaError past MAX_PAGE_NODES."""
    tables: list[list[list[str]]] = []
    # (node, its table's rows, its row's cells, its cell's text pieces): the context a node inherits
    stack = [(page.root, None, None, None)]
    visited = 0
    while stack:
        node, rows, cells, pieces = stack.pop()
        visited += 1
        if visited > MAX_PAGE_NODES:
            raise SchemaError(NAME, source_path, f"the pricing page has more than {MAX_PAGE_NODES:,} nodes: "
                                                 "not read (a pricing page has a few thousand)")
        tag = node.tag
        if tag == "-text":
            if pieces is not None:
                pieces.append(node.text_content.strip())
            continue
        if tag == "table":
            rows, cells, pieces = [], None, None
            tables.append(rows)
        elif tag == "tr" and rows is not None:
            cells, pieces = [], None
            rows.append(cells)
        elif tag in _CELLS and cells is not None:
            pieces = []
            cells.append(pieces)
        children = []
        child = node.child
        while child is not None:
            children.append((child, rows, cells, pieces))
            child = child.next
        stack.extend(reversed(children))  # document order
    return [[["".join(cell) for cell in row] for row in rows] for rows in tables]


def parse_pricing_page(raw: RawResponse) -> ParseResult:
    """Listings from the public pricing page in the layout described in this module's docstring."""
    result = ParseResult(notes=["prices read from the public pricing page (no API credentials)"])
    path = urlsplit(raw.url).path or "/"
    for rows in page_tables(LexborHTMLParser(raw.body), path):
        if not rows:
            continue
        columns = _columns(rows[0])
        if "gpu" not in columns or "price" not in columns:
            continue
        for cells in rows[1:]:
            if len(cells) <= max(columns.values()):
                continue
            record = dict(zip(rows[0], cells, strict=False))
            gpu_count, gpu_raw = split_description(cells[columns["gpu"]])
            if gpu_raw in ("", "-"):
                continue
            result.record_count += 1
            offer_id = cells[columns["instance"]] if "instance" in columns else cells[columns["gpu"]]
            try:
                priced = [(kind, _price_cell(cells[columns[key]], key))
                          for kind, key in (("on_demand", "price"), ("interruptible", "spot")) if key in columns]
            except Exception as exc:  # whatever one row raises is its reason
                result.rejected.append(Rejection.of(offer_id, exc, record))
                continue
            for kind, price in priced:
                if price is None:
                    continue
                amount, currency = price
                result.listings.append(Listing(
                    offer_id=offer_id, price_kind=kind, price_field=f"page:{kind}", native_per_hr=amount,
                    gpu_raw=gpu_raw, gpu_count=gpu_count, fetched_at=raw.fetched_at, native_currency=currency,
                    tier="datacenter", extras={"source": "pricing_page", "instance_type": offer_id}, record=record))
    if not result.listings:
        raise SchemaError(NAME, path, "no prices found on the pricing page: its layout is not the one expected "
                                      "(see scrapers/verda.py)")
    return result
