import json

import httpx
import pytest

from scrapers import verda
from scrapers.base import SchemaError
from scrapers.settings import from_env
from tests.sources_support import fast_settings, fetch_with, fixture, fixture_json, raw

TYPES = fixture_json("verda_instance_types.json")
CLIENT_ID, CLIENT_SECRET = "verda-sentinel-client-id-42", "verda-sentinel-client-secret-42"
TOKEN = fixture_json("verda_token.json")["access_token"]


def api_responses(types=None):
    return [
        raw("verda", "GET", "/v1/instance-types?currency=usd", json.dumps(types) if types else fixture(
            "verda_instance_types.json")),
        raw("verda", "GET", "/v1/locations", fixture("verda_locations.json")),
        raw("verda", "GET", "/v1/instance-availability", fixture("verda_instance_availability.json")),
    ]


def by_type(result, instance_type):
    return {i.price_kind: i for i in result.listings if i.offer_id == instance_type}


def test_string_prices_cover_the_whole_instance_and_each_kind_is_listed_once():
    result = verda.parse(api_responses())
    assert result.record_count == len(TYPES) == 21 and not result.rejected
    gpu_types = [t for t in TYPES if t["gpu"]["number_of_gpus"]]
    expected = {(t["instance_type"], "on_demand", float(t["price_per_hour"])) for t in gpu_types}
    expected |= {(t["instance_type"], "interruptible", float(t["spot_price"])) for t in gpu_types
                 if float(t["spot_price"]) > 0}
    expected |= {(t["instance_type"], "dynamic", float(t["dynamic_price"])) for t in gpu_types
                 if t.get("dynamic_price") is not None and float(t["dynamic_price"]) > 0}
    assert {(i.offer_id, i.price_kind, i.native_per_hr) for i in result.listings} == expected
    b300x8 = by_type(result, "8B300.240V")["on_demand"]
    assert (b300x8.native_per_hr, b300x8.gpu_count, b300x8.gpu_memory_gb) == (49.52, 8, 268)
    assert b300x8.gpu_raw == "B300 SXM6 268GB" and b300x8.tier == "datacenter" and b300x8.native_currency == "USD"


def test_cpu_only_types_give_no_listing():
    result = verda.parse(api_responses())
    assert not by_type(result, "CPU.32V.128G")
    assert any("CPU-only" in note for note in result.notes)


def test_availability_region_and_country_come_from_the_locations():
    result = verda.parse(api_responses())
    available = by_type(result, "1B300.30V")["on_demand"]
    assert (available.availability, available.region, available.country) == ("available", "FIN-03", "FI")
    h200x4 = by_type(result, "4H200.141S.176V")["on_demand"]
    assert h200x4.region == "FIN-03"
    missing = by_type(result, "2B200.62V")["on_demand"]
    assert (missing.availability, missing.region, missing.country) == ("unavailable", None, None)


def test_a_non_numeric_price_string_rejects_that_record_only():
    types = [dict(TYPES[0], price_per_hour="call us"), TYPES[1], dict(TYPES[2], spot_price=None),
             dict(TYPES[17], dynamic_price=0.78)]
    result = verda.parse(api_responses(types))
    assert [(r.offer_id, r.field) for r in result.rejected] == [(TYPES[0]["instance_type"], "price_per_hour")]
    assert "non-numeric string 'call us'" in result.rejected[0].reason
    assert set(by_type(result, TYPES[2]["instance_type"])) == {"on_demand", "dynamic"}
    assert by_type(result, TYPES[17]["instance_type"])["dynamic"].native_per_hr == 0.78  # numbers work too


def test_a_changed_payload_is_a_schema_error():
    with pytest.raises(SchemaError, match="verda: /v1/instance-types: expected a bare array"):
        verda.parse([raw("verda", "GET", "/v1/instance-types", '{"data": []}')])


def run_fetch(settings):
    routes = {verda.TOKEN_PATH: "verda_token.json", verda.TYPES_PATH: "verda_instance_types.json",
              verda.LOCATIONS_PATH: "verda_locations.json", verda.AVAILABILITY_PATH: "verda_instance_availability.json",
              "/products": "verda_pricing_page.html"}
    done = fetch_with(verda, settings, lambda request: httpx.Response(200, content=fixture(routes[request.url.path])))
    return done.responses, done.seen, done.client


def test_oauth_then_three_calls_with_the_bearer_token_and_nothing_secret_archived():
    responses, seen, _ = run_fetch(fast_settings(verda_client_id=CLIENT_ID, verda_client_secret=CLIENT_SECRET))
    assert [r.url.path for r in seen] == [verda.TOKEN_PATH, verda.TYPES_PATH, verda.LOCATIONS_PATH,
                                         verda.AVAILABILITY_PATH]
    assert json.loads(seen[0].content) == {"grant_type": "client_credentials", "client_id": CLIENT_ID,
                                           "client_secret": CLIENT_SECRET}
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in seen[1:])
    assert seen[1].url.params["currency"] == "usd"
    token_response = responses[0]
    assert token_response.redacted and json.loads(token_response.body)["token_type"] == "Bearer"
    for response in responses:
        stored = response.body + (response.request_body or "").encode() + response.url.encode()
        assert TOKEN.encode() not in stored and CLIENT_SECRET.encode() not in stored and CLIENT_ID.encode() not in stored
    assert len(verda.parse(responses).listings) == 56


def test_datacrunch_variables_are_accepted():
    settings = from_env({"DATACRUNCH_CLIENT_ID": "a-client-id-1", "DATACRUNCH_CLIENT_SECRET": "a-client-secret-1"})
    assert (settings.verda_client_id, settings.verda_client_secret) == ("a-client-id-1", "a-client-secret-1")
    preferred = from_env({"VERDA_CLIENT_ID": "v", "DATACRUNCH_CLIENT_ID": "d"})
    assert preferred.verda_client_id == "v"


def test_without_credentials_the_pricing_page_is_read():
    responses, seen, client = run_fetch(fast_settings())
    assert [r.url.path for r in seen] == ["/products"]
    assert any("pricing page" in note for note in client.notes)
    result = verda.parse(responses)
    got = {(i.offer_id, i.price_kind, i.native_per_hr, i.gpu_count, i.gpu_raw, i.native_currency)
           for i in result.listings}
    assert got == {
        ("1B300.30V", "on_demand", 6.19, 1, "B300 SXM6 268GB", "USD"),
        ("1B300.30V", "interruptible", 2.48, 1, "B300 SXM6 268GB", "USD"),
        ("8H200.141S.176V", "on_demand", 27.12, 8, "H200 SXM5 141GB", "USD"),
        ("8H200.141S.176V", "interruptible", 10.88, 8, "H200 SXM5 141GB", "USD"),
        ("1H100.80S.30V", "on_demand", 2.29, 1, "H100 SXM5 80GB", "USD"),
        ("1H100.80S.30V", "interruptible", 0.92, 1, "H100 SXM5 80GB", "USD"),
        ("1A100.40S.22V", "on_demand", 0.72, 1, "A100 SXM4 40GB", "USD"),  # spot "-": none
    }  # the CPU row (GPU "-") is skipped


def page(rows: str, header="<tr><th>Instance</th><th>GPU</th><th>Price</th></tr>") -> bytes:
    return f"<html><body><table>{header}{rows}</table></body></html>".encode()


def test_a_page_without_prices_fails_loudly():
    for body in (b"<html><body><h1>Pricing moved</h1></body></html>",
                 page("", header="<tr><th>Model</th><th>Cost</th></tr><tr><td>H100</td><td>$2</td></tr>"),
                 page("<tr><td>CPU.1</td><td>-</td><td>$1/h</td></tr>")):
        with pytest.raises(SchemaError, match="verda: /products: no prices found on the pricing page"):
            verda.parse([raw("verda", "GET", "/products", body)])


def test_a_page_price_without_currency_is_rejected_and_euros_are_euros():
    result = verda.parse([raw("verda", "GET", "/products", page(
        "<tr><td>1H100</td><td>1x H100 SXM5 80GB</td><td>2.29</td></tr>"
        "<tr><td>1L40S</td><td>1x L40S 48GB</td><td>€0.80/h</td></tr>"))])
    assert [(r.offer_id, r.field) for r in result.rejected] == [("1H100", "price")]
    assert [(i.offer_id, i.native_per_hr, i.native_currency) for i in result.listings] == [("1L40S", 0.8, "EUR")]
