import json

import httpx
import pytest

from flows.replay.server import vastai_search
from scrapers import vastai
from scrapers.base import SchemaError
from scrapers.settings import Pacing
from tests.sources_support import fast_settings, fetch_with, fixture_json, raw

OFFERS = fixture_json("vastai_bundles.json")["offers"]


def parsed(offers=None, request=None):
    body = json.dumps({"offers": OFFERS if offers is None else offers})
    return vastai.parse([raw("vastai", "POST", vastai.PATH, body, request_body=json.dumps(request or {"limit": 3000}))])


def by_id(result, offer_id):
    return {item.price_kind: item for item in result.listings if item.offer_id == str(offer_id)}


def test_every_offer_has_an_on_demand_listing_and_a_positive_min_bid_an_interruptible_one():
    result = parsed()
    assert result.record_count == len(OFFERS) == 47
    kinds = [(item.offer_id, item.price_kind) for item in result.listings]
    assert sorted(i for i, k in kinds if k == "on_demand") == sorted(str(o["id"]) for o in OFFERS)
    with_bid = [o for o in OFFERS if isinstance(o.get("min_bid"), int | float) and o["min_bid"] > 0]
    assert sorted(i for i, k in kinds if k == "interruptible") == sorted(str(o["id"]) for o in with_bid)
    assert not result.rejected and not result.truncated


def test_dph_base_is_the_whole_offer_price_and_memory_is_per_gpu_in_gb():
    offer = next(o for o in OFFERS if o["num_gpus"] == 8 and o["gpu_name"] == "H200")
    listing = by_id(parsed(), offer["id"])["on_demand"]
    assert listing.native_per_hr == offer["dph_base"] and listing.gpu_count == 8
    assert listing.gpu_memory_gb == pytest.approx(offer["gpu_ram"] / 1024)
    assert listing.extras["dph_total"] == offer["dph_total"] and listing.extras["storage_cost"] == offer["storage_cost"]


def test_quirk_records_are_kept_as_the_fixture_readme_says():
    result = parsed()
    null_cores = next(o for o in OFFERS if o["cpu_cores"] is None)
    assert by_id(result, null_cores["id"])["on_demand"].extras["vcpus"] is None
    fractional = next(o for o in OFFERS if o.get("cpu_cores_effective", 1) < 1)
    assert by_id(result, fractional["id"])["on_demand"].extras["ram_mb"] is None
    for offer in [o for o in OFFERS if not o.get("min_bid")]:  # 0, null or missing
        assert set(by_id(result, offer["id"])) == {"on_demand"}
    no_geo = by_id(result, next(o for o in OFFERS if "geolocation" in o and o["geolocation"] is None)["id"])["on_demand"]
    assert (no_geo.region, no_geo.country) == (None, None)
    bare = by_id(result, next(o for o in OFFERS if o.get("geolocation") == "CZ")["id"])["on_demand"]
    assert (bare.region, bare.country) == (None, "CZ")
    for offer in [o for o in OFFERS if o.get("verification") in ("unverified", "deverified")]:
        assert by_id(result, offer["id"])["on_demand"].verified is False
    sparse = min(OFFERS, key=len)
    listing = by_id(result, sparse["id"])["on_demand"]
    assert listing.native_per_hr == sparse["dph_base"] and listing.tier == "datacenter"
    assert "min_bid" not in listing.extras and listing.reliability == sparse["reliability"]


@pytest.mark.parametrize(("geolocation", "expected"), [
    ("Utah, US", ("Utah", "US")), ("North Holland, NL", ("North Holland", "NL")), ("CZ", (None, "CZ")),
    (None, (None, None)), ("Atlantis", (None, None)), ("Somewhere, Europe", (None, None)), ("", (None, None)),
])
def test_location(geolocation, expected):
    assert vastai.location(geolocation) == expected


def test_a_reserved_price_is_listed_when_a_discount_is_present():
    offer = dict(OFFERS[0], discount_rate=0.2, discounted_dph_total=1.91)
    assert by_id(parsed([offer]), offer["id"])["reserved"].native_per_hr == 1.91
    assert "reserved" not in by_id(parsed([OFFERS[0]]), OFFERS[0]["id"])  # the fixture has no discount


def test_a_record_that_cannot_be_read_is_rejected_alone():
    bad_price = dict(OFFERS[0], dph_base="abc")
    no_id = {k: v for k, v in OFFERS[1].items() if k != "id"}
    result = parsed([bad_price, no_id, OFFERS[2], "not an object"])
    assert [(r.offer_id, r.field) for r in result.rejected] == [
        (str(OFFERS[0]["id"]), "dph_base"), (None, "id"), (None, "offers[]")]
    assert {item.offer_id for item in result.listings} == {str(OFFERS[2]["id"])}


def test_a_changed_payload_is_a_schema_error_naming_path_and_field():
    with pytest.raises(SchemaError, match=r"vastai: /api/v0/bundles/: field 'offers'"):
        vastai.parse([raw("vastai", "POST", vastai.PATH, '{"results": []}')])
    with pytest.raises(SchemaError, match="body is not JSON"):
        vastai.parse([raw("vastai", "POST", vastai.PATH, "<html>")])


@pytest.mark.parametrize("parse", [vastai.parse, vastai.parse_frame])
def test_json_nested_too_deep_to_read_is_a_schema_error(parse):
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(SchemaError, match=r"vastai: /api/v0/bundles/: body is not JSON \(nested too deep to read"):
        parse([raw("vastai", "POST", vastai.PATH, deep)])
    with pytest.raises(SchemaError, match="nested too deep"):
        parse([raw("vastai", "POST", vastai.PATH, '{"offers": [' + deep + "]}")])


def test_truncation_only_counts_full_searches_that_were_not_split():
    bucket = vastai.bucket_queries(10)[0]
    split = vastai.refine(bucket, ["A", "B"])
    assert vastai.truncation([(bucket, 10)])  # full and not split
    assert not vastai.truncation([(bucket, 10)] + [(q, 3) for q in split])
    assert vastai.truncation([(bucket, 10), (split[0], 10)] + [(q, 3) for q in split[1:]])
    assert not vastai.truncation([(bucket, 9)])


def run_fetch(limit, max_requests=40):
    """fetch() against a mock that answers like the API: filters, order and limit applied."""
    settings = fast_settings(vastai_limit=limit).with_pacing(vastai=Pacing(0.0, max_requests))
    done = fetch_with(vastai, settings, lambda request: httpx.Response(
        200, json={"offers": vastai_search(OFFERS, json.loads(request.content))}))
    return done.responses, done.seen, done.client


def test_fetch_splits_by_gpu_count_keyless_and_covers_every_offer():
    responses, seen, _ = run_fetch(3000)
    assert len(seen) == 5 and all("authorization" not in r.headers for r in seen)
    bodies = [json.loads(r.content) for r in seen]
    assert [b["num_gpus"] for b in bodies] == [{"eq": 1}, {"eq": 2}, {"eq": 4}, {"eq": 8}, {"notin": [1, 2, 4, 8]}]
    assert all(b["rentable"] == {"eq": True} and b["rented"] == {"eq": False} and b["limit"] == 3000 for b in bodies)
    result = vastai.parse(responses)
    assert {i.offer_id for i in result.listings} == {str(o["id"]) for o in OFFERS}
    assert not result.truncated


def test_a_full_search_is_split_by_gpu_name_and_the_split_covers_the_market():
    responses, seen, _ = run_fetch(limit=10)
    assert any("gpu_name" in json.loads(r.content) for r in seen)
    result = vastai.parse(responses)
    assert {i.offer_id for i in result.listings} == {str(o["id"]) for o in OFFERS}
    assert not result.truncated


def test_only_an_answer_with_as_many_ids_as_the_limit_can_be_full():
    body = json.dumps({"offers": OFFERS[:3]})
    assert vastai.could_be_full(raw("vastai", "POST", vastai.PATH, body), 3)
    assert not vastai.could_be_full(raw("vastai", "POST", vastai.PATH, body), 4)
    # keys that merely end in "id" do not count: an answer is decoded whenever it may be full
    assert body.count('"id"') == 3 and "machine_id" in body


def test_a_search_still_full_after_splitting_marks_the_fetch_truncated():
    responses, _, _ = run_fetch(limit=2)
    result = vastai.parse(responses)
    assert result.truncated
    assert any("returned 2 offers, its limit" in note for note in result.notes)


def test_a_full_search_the_budget_cannot_split_is_noted_and_truncated():
    responses, seen, client = run_fetch(limit=10, max_requests=6)
    assert len(seen) <= 6
    assert any("request budget cannot split" in note for note in client.notes)
    assert vastai.parse(responses).truncated


def test_the_clis_bare_array_reads_like_the_apis_wrapped_answer():
    bare = vastai.parse([raw("vastai", "POST", vastai.PATH, json.dumps(OFFERS))])
    wrapped = parsed()
    assert [(i.offer_id, i.price_kind, i.native_per_hr) for i in bare.listings] == [
        (i.offer_id, i.price_kind, i.native_per_hr) for i in wrapped.listings]


def test_keys_the_parser_does_not_know_are_ignored():
    newer = [dict(o, avail_vol_ask_id=7, sla_target=0.99, resource_type="gpu") for o in OFFERS]
    assert len(parsed(newer).listings) == len(parsed().listings) and not parsed(newer).rejected
