import json
import threading
import time

import httpx
import pytest
from typer.testing import CliRunner

from flows.cli.app import app
from flows.replay.faults import FaultPlan, parse_faults
from flows.replay.server import ReplayServer, git_etag, vastai_search
from tests.sources_support import FIXTURES, fixture, fixture_json, raw
from warehouse import archive

OFFERS = fixture_json("vastai_bundles.json")["offers"]


@pytest.fixture
def server():
    with ReplayServer(FIXTURES, hang_s=1.0) as server:
        yield server


def test_recordings_are_served_at_the_real_paths_on_loopback(server):
    assert server.url.startswith("http://127.0.0.1:")
    response = httpx.get(server.url + "/stats/eurofxref/eurofxref-daily.xml")
    assert response.status_code == 200 and response.content == fixture("ecb_eurofxref_daily.xml")
    assert response.headers["content-type"] == "text/xml"
    assert httpx.post(server.url + "/graphql", json={}).json() == fixture_json("runpod_gputypes.json")
    assert httpx.get(server.url + "/nowhere").status_code == 404


def test_bearer_routes_refuse_requests_without_a_token(server):
    assert httpx.get(server.url + "/v1/locations").status_code == 401
    ok = httpx.get(server.url + "/v1/locations", headers={"Authorization": "Bearer x"})
    assert ok.json() == fixture_json("verda_locations.json")
    assert [(r.path, r.authorized, r.served) for r in server.log] == [("/v1/locations", False, "401"),
                                                                       ("/v1/locations", True, "ok")]


def test_hugging_face_configs_are_served_with_their_etag_and_304_once_held(server):
    path = "/Qwen/Qwen3-8B/resolve/main/config.json"
    body = (FIXTURES.parent / "hf_configs" / "Qwen" / "Qwen3-8B" / "config.json").read_bytes()
    first = httpx.get(server.url + path)
    assert first.status_code == 200 and first.content == body and first.headers["etag"] == git_etag(body)
    again = httpx.get(server.url + path, headers={"If-None-Match": first.headers["etag"]})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", first.headers["etag"])
    assert httpx.get(server.url + path, headers={"If-None-Match": '"other"'}).status_code == 200
    server.set_fault(path, "missing:num_hidden_layers")  # an edited config is another file: another ETag
    edited = httpx.get(server.url + path, headers={"If-None-Match": first.headers["etag"]})
    assert edited.status_code == 200 and "num_hidden_layers" not in edited.json()
    gated = "/meta-llama/Llama-3.3-70B-Instruct/resolve/main/config.json"  # hf_gated in the manifest
    assert httpx.get(server.url + gated).status_code == 401
    assert httpx.get(server.url + gated, headers={"Authorization": "Bearer x"}).status_code == 200
    assert httpx.get(server.url + "/nobody/nothing/resolve/main/config.json").status_code == 404


def test_env_points_every_source_at_the_server_and_pins_the_recording_time(server):
    env = server.env()
    assert env["GPULEDGER_VASTAI_URL"] == env["GPULEDGER_FRANKFURTER_URL"] == server.url
    assert env["GPULEDGER_VERDA_PRICING_URL"] == server.url + "/products"
    assert env["GPULEDGER_NOW"] == "2026-11-27T22:00:00"


def test_fault_sequences_then_normal_service(server):
    server.set_fault("/v1/latest", "429,503,200,500")
    got = [httpx.get(server.url + "/v1/latest") for _ in range(5)]
    assert [r.status_code for r in got] == [429, 503, 200, 500, 200]
    assert got[0].headers["retry-after"] == "1" and got[1].headers["retry-after"] == "1"
    server.set_fault("/v1/latest", "500*")
    assert {httpx.get(server.url + "/v1/latest").status_code for _ in range(3)} == {500}
    server.clear_faults()
    assert httpx.get(server.url + "/v1/latest").status_code == 200


def test_a_truncated_body_breaks_the_connection_midway(server):
    server.set_fault("/v1/latest", "truncate")
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(server.url + "/v1/latest")


def test_a_timeout_hangs_past_the_clients_timeout(server):
    server.set_fault("/v1/latest", "timeout")
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(server.url + "/v1/latest", timeout=0.2)
    assert time.monotonic() - started < 1.0


def test_a_dropped_connection_gets_no_answer_then_service_resumes(server):
    server.set_fault("/v1/latest", "drop")
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        httpx.get(server.url + "/v1/latest")
    assert httpx.get(server.url + "/v1/latest").status_code == 200


def test_a_trickle_sends_the_whole_body_in_pieces_over_hang_s():
    with ReplayServer(FIXTURES, hang_s=0.4, faults={"/v1/latest": "trickle"}) as server:
        started, pieces = time.monotonic(), []
        with httpx.stream("GET", server.url + "/v1/latest") as response:
            pieces = list(response.iter_raw())
    assert time.monotonic() - started >= 0.4 and len(pieces) > 5
    assert b"".join(pieces) == fixture("frankfurter_latest.json")


def test_a_huge_body_is_streamed_without_a_length_so_only_a_size_cap_stops_it(server):
    server.set_fault("/v1/latest", "huge")
    received = 0
    with httpx.stream("GET", server.url + "/v1/latest") as response:
        assert "content-length" not in response.headers and response.headers["transfer-encoding"] == "chunked"
        for chunk in response.iter_raw():
            received += len(chunk)
            if received > 4 * 2**20:
                break
    assert received > 4 * 2**20
    assert httpx.get(server.url + "/v1/latest").json() == fixture_json("frankfurter_latest.json")


def test_payload_faults_are_served_with_the_recordings_status_and_a_fault_that_cannot_apply_is_a_500(server):
    server.set_fault("/graphql", "empty")
    assert httpx.post(server.url + "/graphql", json={}).json()["data"]["gpuTypes"] == []
    server.set_fault("/v1/latest", "missing:nope")
    refused = httpx.get(server.url + "/v1/latest")
    assert refused.status_code == 500 and "fault 'missing:nope' cannot apply" in refused.text
    assert [r.served for r in server.log] == ["empty", "500"]


def test_latency_and_no_retry_after_when_asked():
    with ReplayServer(FIXTURES, latency_s=0.3, retry_after=None, faults={"/v1/latest": "429"}) as server:
        started = time.monotonic()
        response = httpx.get(server.url + "/v1/latest")
    assert time.monotonic() - started >= 0.3
    assert response.status_code == 429 and "retry-after" not in response.headers


@pytest.mark.parametrize("spec", ["", "429,soon", "999", "*"])
def test_bad_fault_specs_are_refused(spec):
    with pytest.raises(ValueError):
        FaultPlan(spec)
    with pytest.raises(ValueError, match="expected PATH=SPEC"):
        parse_faults(["no-path-here"])


def test_fault_plans_consume_one_item_per_request():
    plan = FaultPlan("429, timeout ,ok,truncate*")
    assert [plan.next() for _ in range(6)] == ["429", "timeout", "ok", "truncate", "truncate", "truncate"]


def test_the_vast_search_applies_filters_order_and_limit(server):
    query = {"num_gpus": {"eq": 8}, "gpu_name": {"in": ["H200", "B200"]}, "verified": {"eq": True},
             "order": [["dph_total", "asc"]], "limit": 2}
    offers = httpx.post(server.url + "/api/v0/bundles/", json=query).json()["offers"]
    expected = sorted((o for o in OFFERS if o["num_gpus"] == 8 and o["gpu_name"] in ("H200", "B200")),
                      key=lambda o: o["dph_total"])[:2]
    assert [o["id"] for o in offers] == [o["id"] for o in expected]
    assert len(vastai_search(OFFERS, {"num_gpus": {"notin": [1, 2, 4, 8]}})) == 0
    assert len(vastai_search(OFFERS, {"dph_base": {"gt": 10}, "rentable": {"eq": True}})) == len(
        [o for o in OFFERS if o["dph_base"] > 10])


def test_an_archive_directory_is_served_matching_request_bodies(tmp_path):
    directory = tmp_path / "raw" / "vastai" / "2026-11-27" / "run-1"
    writer = archive.ArchiveWriter(directory)
    for n, offers in ((1, OFFERS[:1]), (2, OFFERS[1:2])):
        writer.write(raw("vastai", "POST", "/api/v0/bundles/", json.dumps({"offers": offers}),
                         request_body=json.dumps({"num_gpus": {"eq": n}, "limit": 5})))
    writer.write_summary({"status": "ok"})
    with ReplayServer(tmp_path / "raw") as server:
        second = httpx.post(server.url + "/api/v0/bundles/", json={"limit": 5, "num_gpus": {"eq": 2}}).json()
        merged = httpx.post(server.url + "/api/v0/bundles/", json={"limit": 5}).json()
    assert second == {"offers": OFFERS[1:2]}
    assert [o["id"] for o in merged["offers"]] == [OFFERS[0]["id"], OFFERS[1]["id"]]  # no exact match: filtered union


def test_a_started_server_entered_as_a_context_serves_from_one_thread_that_stop_ends():
    """`with serve_fixtures(...)` enters a server that is already serving: a second serving thread would outlive
    stop() and spin on the closed socket for the rest of the process (every later test ran several times slower)."""
    before = set(threading.enumerate())
    with ReplayServer(FIXTURES).start() as server:
        serving = [t for t in set(threading.enumerate()) - before if t.name == "replay"]
        assert httpx.get(server.url + "/stats/eurofxref/eurofxref-daily.xml").status_code == 200
    assert len(serving) == 1
    serving[0].join(timeout=5)
    assert not serving[0].is_alive()


def test_a_directory_with_nothing_to_serve_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no replay.json and no archived responses"):
        ReplayServer(tmp_path)


def test_the_cli_refuses_a_bad_fault_before_serving():
    result = CliRunner().invoke(app, ["replay", "--dir", str(FIXTURES), "--fault", "/graphql=sometimes"])
    assert result.exit_code == 2 and "use an HTTP status" in result.output


def test_a_started_server_used_with_with_serves_once_and_stops_for_good():
    server = ReplayServer(FIXTURES).start()
    with server:
        assert httpx.get(server.url + "/v1/latest").status_code == 200
    time.sleep(0.2)
    assert not [t for t in threading.enumerate() if t.name == "replay" and t.is_alive()]
