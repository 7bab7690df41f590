import json

import httpx
import pytest

from scrapers import runpod
from scrapers.base import CLUSTER_TIER, SchemaError, SourceError
from tests.sources_support import FIXTURES, fast_settings, fetch_with, fixture, fixture_json, raw

TYPES = fixture_json("runpod_gputypes.json")["data"]["gpuTypes"]


def graphql(body=None):
    return runpod.parse([raw("runpod", "POST", "/graphql", body or fixture("runpod_gputypes.json"))])


def listings_of(result, gpu_id):
    return {(i.tier, i.price_kind): i for i in result.listings if i.offer_id.startswith(gpu_id + ":")}


def test_one_per_gpu_listing_per_cloud_and_price_kind():
    result = graphql()
    assert result.record_count == 20 and not result.rejected
    got = {(i.offer_id, i.price_kind) for i in result.listings}
    expected = {(f"{t['id']}:secure", "on_demand") for t in TYPES if t["securePrice"]}
    expected |= {(f"{t['id']}:community", "on_demand") for t in TYPES if t["communityPrice"]}
    for kind, key in runpod.SAVINGS:
        expected |= {(f"{t['id']}:secure", kind) for t in TYPES if t[key]}
    assert got == expected
    assert len(got) == len(result.listings) == 39
    assert all(i.gpu_count == 1 and i.native_currency == "USD" for i in result.listings)


def test_prices_are_per_gpu_with_the_max_gpu_count_of_the_cloud():
    h100_pcie = listings_of(graphql(), "NVIDIA H100 PCIe")
    assert h100_pcie["secure", "on_demand"].native_per_hr == 2.49
    assert h100_pcie["secure", "on_demand"].max_gpu_count == 8
    assert h100_pcie["community", "on_demand"].native_per_hr == 2.09
    assert h100_pcie["community", "on_demand"].max_gpu_count == 4
    assert h100_pcie["community", "on_demand"].availability == "low"


def test_null_lowest_price_keeps_the_list_price_with_its_stock_status():
    b300 = listings_of(graphql(), "NVIDIA B300 SXM6 AC")
    assert set(b300) == {("secure", "on_demand")}
    assert b300["secure", "on_demand"].availability == "none"
    assert b300["secure", "on_demand"].extras["stockStatus"] is None


def test_zero_spot_prices_and_clouds_not_offered_give_no_listing():
    l40 = listings_of(graphql(), "NVIDIA L40")
    assert set(l40) == {("secure", "on_demand"), ("community", "on_demand")}  # spot 0.0: none
    assert set(listings_of(graphql(), "NVIDIA H200")) == {("secure", k) for k in (
        "on_demand", "savings_1m", "savings_3m", "savings_6m")}


def test_the_mig_slice_is_its_own_listing():
    mig = listings_of(graphql(), "NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb")
    assert mig["secure", "on_demand"].gpu_raw == "NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb"
    assert mig["secure", "on_demand"].extras["displayName"] == "PRO 6000 MIG 24GB"
    assert mig["secure", "on_demand"].gpu_memory_gb == 24


def test_a_null_price_on_an_offered_cloud_is_listed_for_quarantine():
    body = json.dumps({"data": {"gpuTypes": [dict(TYPES[2], communityPrice=None)]}})
    assert listings_of(graphql(body), TYPES[2]["id"])["community", "on_demand"].native_per_hr is None


def test_a_zero_price_means_not_offered_even_on_an_offered_cloud():
    body = json.dumps({"data": {"gpuTypes": [dict(TYPES[2], communityPrice=0)]}})
    assert ("community", "on_demand") not in listings_of(graphql(body), TYPES[2]["id"])


def test_a_cloud_flagged_as_not_offered_gives_no_listing_whatever_its_placeholder_price():
    # the real feed of 2025-06-21 prices B200 on the community cloud it does not offer at 0.50
    body = json.dumps({"data": {"gpuTypes": [dict(TYPES[2], communityCloud=False, communityPrice=0.5,
                                                  communitySpotPrice=0.3)]}})
    assert {tier for tier, _ in listings_of(graphql(body), TYPES[2]["id"])} == {"secure"}


def test_graphql_errors_and_changed_shapes_fail_loudly():
    with pytest.raises(SourceError, match="runpod: /graphql: GraphQL error: Something broke"):
        graphql('{"errors": [{"message": "Something broke"}], "data": null}')
    with pytest.raises(SchemaError, match="runpod: /graphql: field 'data.gpuTypes'"):
        graphql('{"data": {"gpus": []}}')
    result = graphql(json.dumps({"data": {"gpuTypes": [dict(TYPES[0], securePrice="n/a"), TYPES[1]]}}))
    assert [(r.offer_id, r.field) for r in result.rejected] == [("NVIDIA H200", "securePrice")]


def test_rest_v2_catalogue():
    result = runpod.parse([raw("runpod", "GET", "/v2/catalog/gpus?include=AVAILABILITY&product=POD",
                               fixture("runpod_catalog_gpus_v2.json"))])
    got = {(i.offer_id, i.native_per_hr, i.max_gpu_count, i.availability) for i in result.listings}
    assert got == {
        ("NVIDIA H200:secure", 3.89, 8, "high"),  # community 0.0 and not offered: no listing
        ("NVIDIA GeForce RTX 4090:secure", 0.59, 8, "medium"),
        ("NVIDIA GeForce RTX 4090:community", 0.34, 8, "medium"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition:community", 1.49, 4, "low"),
    }
    assert {i.gpu_raw for i in result.listings} == {
        "NVIDIA H200", "NVIDIA GeForce RTX 4090", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"}


def run_fetch(**settings):
    def answer(request):
        name = "runpod_catalog_gpus_v2.json" if request.url.path == runpod.REST_PATH else "runpod_gputypes.json"
        return httpx.Response(200, content=fixture(name))

    done = fetch_with(runpod, fast_settings(**settings), answer)
    return done.responses, done.seen


def test_keyless_fetch_posts_the_graphql_query_without_credentials():
    responses, seen = run_fetch()
    assert [(r.method, r.url.path) for r in seen] == [("POST", "/graphql")]
    assert "authorization" not in seen[0].headers
    sent = json.loads(seen[0].content)
    assert "lowestPrice(input: $lowestPriceInput)" in sent["query"] and sent["variables"] == runpod.VARIABLES
    assert runpod.parse(responses).record_count == 20


def test_with_a_key_the_rest_v2_catalogue_is_used_and_the_key_is_never_archived():
    key = "rpa_sentinel_key_0123456789"
    responses, seen = run_fetch(runpod_api_key=key)
    assert [(r.method, r.url.path) for r in seen] == [("GET", "/v2/catalog/gpus")]
    assert seen[0].url.params["include"] == "AVAILABILITY" and seen[0].url.params["product"] == "POD"
    assert seen[0].headers["authorization"] == f"Bearer {key}"
    assert all(key not in r.url and key.encode() not in r.body for r in responses)


def test_graphql_can_be_forced_with_a_key_and_rest_refuses_to_run_without_one():
    _, seen = run_fetch(runpod_api_key="rpa_sentinel_key_0123456789", runpod_api="graphql")
    assert seen[0].url.path == "/graphql" and seen[0].headers["authorization"].startswith("Bearer ")
    with pytest.raises(SourceError, match="REST v2 catalogue needs RUNPOD_API_KEY"):
        run_fetch(runpod_api="rest")


def test_a_type_with_cluster_datacenters_is_also_sold_as_an_instant_cluster():
    real = runpod.parse([raw("runpod", "POST", "/graphql",
                             (FIXTURES.parent / "real" / "runpod_gputypes_2025-06-21.json").read_bytes())])
    clusters = {i.offer_id: i for i in real.listings if i.tier == CLUSTER_TIER}
    # the real feed of 2025-06-21 names cluster datacenters for three types; every other price is one pod
    assert set(clusters) == {"NVIDIA A100-SXM4-80GB:cluster", "NVIDIA H100 80GB HBM3:cluster", "NVIDIA H200:cluster"}
    h100 = clusters["NVIDIA H100 80GB HBM3:cluster"]
    assert (h100.native_per_hr, h100.price_kind, h100.gpu_count, h100.max_gpu_count, h100.region) == (
        3.588, "on_demand", 1, 64, "CA-MTL-1,EUR-IS-3")
    assert h100.extras["pod_gpus"] == 8
    assert not [i for i in graphql().listings if i.tier == CLUSTER_TIER]  # the demo recording has no cluster fields


def test_no_cluster_without_datacenters_or_price():
    base = dict(TYPES[2], clusterPrice=3.0, nodeGroupDatacenters=[{"id": "CA-MTL-1"}])
    sold = listings_of(graphql(json.dumps({"data": {"gpuTypes": [base]}})), TYPES[2]["id"])
    assert sold[CLUSTER_TIER, "on_demand"].max_gpu_count == runpod.CLUSTER_PODS_MAX * 8
    for changed in (dict(nodeGroupDatacenters=[]), dict(clusterPrice=0), dict(nodeGroupDatacenters=None)):
        body = json.dumps({"data": {"gpuTypes": [base | changed]}})
        assert (CLUSTER_TIER, "on_demand") not in listings_of(graphql(body), TYPES[2]["id"])


def test_the_query_asks_for_the_cluster_fields():
    assert "clusterPrice" in runpod.QUERY and "nodeGroupDatacenters { id }" in runpod.QUERY
