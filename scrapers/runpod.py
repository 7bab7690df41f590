"""RunPod: GraphQL `gpuTypes` with `lowestPrice` (keyless), or the REST v2 catalogue `GET /v2/catalog/gpus` (key).

Prices are per GPU-hour, so each listing is one GPU (`gpu_count` 1) with `max_gpu_count` the most one pod
takes. One listing per GPU type and cloud (`offer_id` "<type id>:secure|community", the same for both APIs);
`gpu_raw` is the type id, the vendor's full name (`NVIDIA RTX PRO 6000 Blackwell Workstation Edition`), since
display names drop what tells variants apart (`RTX PRO 6000`). A cloud flagged as not offered gives no
listing whatever its price says (the real feed puts 0 or a 0.5 placeholder there), and a price of 0 means
"not offered" on any cloud (REST v2 writes 0.0 there); a null price on a cloud the type is offered in goes to
quarantine. The `unknown` pseudo-type offers nothing, so it gives no listing. Savings-plan prices
(`oneMonthPrice`, ...) are secure-cloud per-GPU-hour prices.

A type that lists `nodeGroupDatacenters` (the datacenters hosting Instant Clusters: pods joined by dedicated
high-bandwidth inter-node interfaces) at a `clusterPrice` above 0 is also sold as a cluster: one more listing,
"<type id>:cluster", tier `cluster`, priced per GPU-hour, up to CLUSTER_PODS_MAX pods of `maxGpuCount` GPUs.
Every other RunPod listing is one pod, one machine. The REST v2 catalogue of pods (`product=POD`) lists no cluster. GraphQL is announced to retire in early 2027:
with RUNPOD_API_KEY set, the REST v2 catalogue is used (GPULEDGER_RUNPOD_API=graphql|rest overrides).
"""

from scrapers.base import (
    CLUSTER_TIER,
    MAX_GPU_COUNT,
    Listing,
    ParseResult,
    RecordError,
    Rejection,
    SchemaError,
    SourceError,
    check_records,
    integer,
    json_body,
    number,
    positive,
    text,
)
from warehouse.records import RawResponse

NAME = "runpod"
GRAPHQL_PATH = "/graphql"
REST_PATH = "/v2/catalog/gpus"
QUERY = """query GpuTypes($lowestPriceInput: GpuLowestPriceInput) {
  countryCodes
  dataCenters { id name listed }
  gpuTypes {
    id displayName manufacturer memoryInGb maxGpuCount maxGpuCountSecureCloud maxGpuCountCommunityCloud
    secureCloud communityCloud securePrice communityPrice secureSpotPrice communitySpotPrice
    oneWeekPrice oneMonthPrice threeMonthPrice sixMonthPrice clusterPrice nodeGroupDatacenters { id }
    lowestPrice(input: $lowestPriceInput) { minimumBidPrice uninterruptablePrice minVcpu minMemory stockStatus compliance countryCode maxUnreservedGpuCount availableGpuCounts }
  }
}"""
VARIABLES = {"lowestPriceInput": {"gpuCount": 1}}
GRAPHQL_REQUIRED = ("id", "secureCloud", "communityCloud", "securePrice", "communityPrice")
REST_REQUIRED = ("id", "price")
SAVINGS = (("savings_1w", "oneWeekPrice"), ("savings_1m", "oneMonthPrice"), ("savings_3m", "threeMonthPrice"),
           ("savings_6m", "sixMonthPrice"))
# Pods an Instant Cluster takes: the API does not say; 2 to 8 for every type (dstackai/gpuhunt, providers/runpod.py).
CLUSTER_PODS_MAX = 8
# (tier, offered flag, on-demand price, spot price, max GPUs) in the GraphQL schema
CLOUDS = (
    ("secure", "secureCloud", "securePrice", "secureSpotPrice", "maxGpuCountSecureCloud"),
    ("community", "communityCloud", "communityPrice", "communitySpotPrice", "maxGpuCountCommunityCloud"),
)


def use_rest(settings) -> bool:
    return settings.runpod_api == "rest" or (settings.runpod_api == "auto" and bool(settings.runpod_api_key))


async def fetch(client, settings) -> list[RawResponse]:
    key = settings.runpod_api_key
    headers = {"Authorization": f"Bearer {key}"} if key else None
    base = settings.runpod_url.rstrip("/")
    if use_rest(settings):
        if not key:
            raise SourceError(f"{NAME}: GET {REST_PATH}: the REST v2 catalogue needs RUNPOD_API_KEY")
        await client.request("GET", base + REST_PATH, params={"include": "AVAILABILITY", "product": "POD"},
                             headers=headers)
    else:
        await client.request("POST", base + GRAPHQL_PATH, json_body={"query": QUERY, "variables": VARIABLES},
                             headers=headers)
    return client.responses


def parse(responses: list[RawResponse]) -> ParseResult:
    result = ParseResult()
    for raw in responses:
        if raw.path.endswith(REST_PATH):
            records, make = _records(raw, "gpus"), _rest_listings
        elif raw.path.endswith(GRAPHQL_PATH):
            records, make = _graphql_records(raw), _graphql_listings
        else:
            raise SchemaError(NAME, raw.path, "not a RunPod catalogue response")
        for record in records:
            result.record_count += 1
            try:
                result.listings.extend(make(record, raw))
            except Exception as exc:  # whatever one record raises is its reason
                offer_id = record.get("id") if isinstance(record, dict) else None
                result.rejected.append(Rejection.of(offer_id, exc, record))
    return result


def _records(raw: RawResponse, key: str) -> list:
    data = json_body(raw)
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise SchemaError(NAME, raw.path, "missing or not a list", field=key)
    check_records(NAME, raw.path, data[key], key, REST_REQUIRED)
    return data[key]


def _graphql_records(raw: RawResponse) -> list:
    data = json_body(raw)
    if isinstance(data, dict) and data.get("errors"):
        first = data["errors"][0]
        message = first.get("message") if isinstance(first, dict) else first
        raise SourceError(f"{NAME}: {raw.path}: GraphQL error: {str(message)[:200]}")
    if not isinstance(data, dict) or not isinstance(data.get("data"), dict):
        raise SchemaError(NAME, raw.path, "missing or not an object", field="data")
    types = data["data"].get("gpuTypes")
    if not isinstance(types, list):
        raise SchemaError(NAME, raw.path, "missing or not a list", field="data.gpuTypes")
    check_records(NAME, raw.path, types, "data.gpuTypes", GRAPHQL_REQUIRED)
    return types


def _priced(offered: bool | None, price: float | None) -> bool:
    """Listed unless the cloud is flagged as not offered or the price is 0; a null price where offered is quarantined."""
    if offered is False or price == 0:
        return False
    return offered is True or positive(price)


def _cluster_listing(record: dict, raw: RawResponse, common: dict, extras: dict) -> list[Listing]:
    """The type's Instant Cluster, when it has one: pods of maxGpuCount GPUs in its nodeGroupDatacenters."""
    sites = record.get("nodeGroupDatacenters")
    price = number(record.get("clusterPrice"), "clusterPrice")
    if not isinstance(sites, list) or not sites or not positive(price):
        return []
    ids = [site.get("id") for site in sites if isinstance(site, dict) and isinstance(site.get("id"), str)]
    pod = integer(record.get("maxGpuCountSecureCloud"), "maxGpuCountSecureCloud", MAX_GPU_COUNT) or integer(
        record.get("maxGpuCount"), "maxGpuCount")
    if not ids or not pod:
        raise RecordError("nodeGroupDatacenters", "a cluster without datacenter ids or pod size")
    return [_listing(record, raw, CLUSTER_TIER, price_kind="on_demand", price_field="clusterPrice",
                     native_per_hr=price, max_gpu_count=CLUSTER_PODS_MAX * pod, region=",".join(ids),
                     extras=extras | {"nodeGroupDatacenters": ids, "pod_gpus": pod}, **common)]


def _listing(record: dict, raw: RawResponse, tier: str, **fields) -> Listing:
    return Listing(
        offer_id=f"{record['id']}:{tier}",
        gpu_count=1,
        fetched_at=raw.fetched_at,
        native_currency="USD",
        tier=tier,
        record=record,
        **fields,
    )


def _graphql_listings(record, raw: RawResponse) -> list[Listing]:
    if not isinstance(record, dict):
        raise RecordError("gpuTypes[]", f"expected an object, got {type(record).__name__}")
    text(record.get("id"), "id", required=True)
    lowest = record.get("lowestPrice") or {}
    if not isinstance(lowest, dict):
        raise RecordError("lowestPrice", f"expected an object, got {type(lowest).__name__}")
    stock = lowest.get("stockStatus")
    common = dict(
        gpu_raw=text(record.get("id"), "id", required=True),
        gpu_memory_gb=number(record.get("memoryInGb"), "memoryInGb"),
        availability=stock.lower() if isinstance(stock, str) else "none",  # null stockStatus: out of stock
    )
    extras = {
        "api": "graphql",
        "displayName": record.get("displayName"),
        "manufacturer": record.get("manufacturer"),
        "stockStatus": stock,
        "maxGpuCount": record.get("maxGpuCount"),
        "lowestPrice": lowest or None,
    }
    out = []
    for tier, flag, price_key, spot_key, max_key in CLOUDS:
        offered = record.get(flag) if isinstance(record.get(flag), bool) else None
        max_count = integer(record.get(max_key), max_key, MAX_GPU_COUNT)
        fields = dict(common, max_gpu_count=max_count or integer(record.get("maxGpuCount"), "maxGpuCount", MAX_GPU_COUNT),
                      extras=extras | {flag: record.get(flag)})
        kinds = [("on_demand", price_key), ("interruptible", spot_key)]
        kinds += list(SAVINGS) if tier == "secure" else []
        for kind, key in kinds:
            price = number(record.get(key), key)
            if _priced(offered, price) if kind == "on_demand" else offered is not False and positive(price):
                out.append(_listing(record, raw, tier, price_kind=kind, price_field=key, native_per_hr=price, **fields))
    return out + _cluster_listing(record, raw, common, extras)


def _rest_listings(record, raw: RawResponse) -> list[Listing]:
    if not isinstance(record, dict):
        raise RecordError("gpus[]", f"expected an object, got {type(record).__name__}")
    text(record.get("id"), "id", required=True)
    prices, max_counts = record.get("price") or {}, record.get("maxCount") or {}
    if not isinstance(prices, dict) or not isinstance(max_counts, dict):
        raise RecordError("price", "expected objects for price and maxCount")
    availability = record.get("availability")
    common = dict(
        gpu_raw=text(record.get("id"), "id", required=True),
        gpu_memory_gb=number(record.get("memory"), "memory"),
        availability=availability.lower() if isinstance(availability, str) else None,
    )
    extras = {"api": "rest_v2", "name": record.get("name"), "manufacturer": record.get("manufacturer"),
              "pool": record.get("pool"), "availability": availability, "dataCenters": record.get("dataCenters")}
    out = []
    for tier in ("secure", "community"):
        offered = record.get(tier) if isinstance(record.get(tier), bool) else None
        price = number(prices.get(tier), f"price.{tier}")
        if _priced(offered, price):
            out.append(_listing(
                record, raw, tier, price_kind="on_demand", price_field=f"price.{tier}", native_per_hr=price,
                max_gpu_count=integer(max_counts.get(tier), f"maxCount.{tier}", MAX_GPU_COUNT),
                extras=extras | {tier: record.get(tier)}, **common))
    return out
