import json
from xml.etree import ElementTree

import pytest

from flows.replay.faults import ABSURD, CONTROL, DEEP_LEVELS, HTML_PAGE, FaultPlan, echoed, edit, redirect
from tests.sources_support import fixture, fixture_json

ECB = {"e": "http://www.ecb.int/vocabulary/2002-08-01/eurofxref"}
RATE_CUBES = "e:Cube/e:Cube/e:Cube"


def edited_json(item: str, name: str):
    body, content_type = edit(item, fixture(name), "application/json")
    assert content_type == "application/json"
    return json.loads(body)


def edited_ecb(item: str) -> list[dict]:
    body, _ = edit(item, fixture("ecb_eurofxref_daily.xml"), "text/xml")
    root = ElementTree.fromstring(body)
    assert root.find("e:Cube/e:Cube[@time]", ECB) is not None  # the dated Cube is no record: it stays
    return [dict(cube.attrib) for cube in root.findall(RATE_CUBES, ECB)]


def test_items_keep_the_case_of_fields_and_unknown_items_are_refused():
    plan = FaultPlan("missing:securePrice, TYPE:text/plain ,huge*")
    assert [plan.next() for _ in range(4)] == ["missing:securePrice", "type:text/plain", "huge", "huge"]
    for spec in ("missing", "rename:", "type:", "sometimes", "drop:x"):
        with pytest.raises(ValueError, match="use an HTTP status"):
            FaultPlan(spec)


VAST = fixture_json("vastai_bundles.json")["offers"]
RUNPOD = fixture_json("runpod_gputypes.json")["data"]
VERDA = fixture_json("verda_instance_types.json")


@pytest.mark.parametrize(("item", "name", "expected"), [
    ("empty", "vastai_bundles.json", lambda d: d == {"offers": []}),
    ("empty", "runpod_gputypes.json",
     lambda d: d["data"] == {"countryCodes": RUNPOD["countryCodes"], "dataCenters": [], "gpuTypes": []}),
    ("empty", "verda_instance_types.json", lambda d: d == []),
    ("dup", "vastai_bundles.json", lambda d: d["offers"] == VAST + VAST),
    ("missing:dph_base", "vastai_bundles.json",
     lambda d: "dph_base" not in d["offers"][0] and d["offers"][1:] == VAST[1:]),
    ("null:securePrice", "runpod_gputypes.json",
     lambda d: d["data"]["gpuTypes"][0]["securePrice"] is None and d["data"]["gpuTypes"][1:] == RUNPOD["gpuTypes"][1:]),
    ("rename:price_per_hour", "verda_instance_types.json",
     lambda d: [t.get("price_per_hour_renamed") for t in d] == [t["price_per_hour"] for t in VERDA]
     and not any("price_per_hour" in t for t in d)),
    ("string:number_of_gpus", "verda_instance_types.json",
     lambda d: [t["gpu"]["number_of_gpus"] for t in d] == [str(t["gpu"]["number_of_gpus"]) for t in VERDA]),
    ("string:EUR", "frankfurter_latest.json", lambda d: d["rates"]["EUR"] == "0.89518"),
])
def test_json_records_are_edited(item, name, expected):
    assert expected(edited_json(item, name))


def test_ecb_rate_cubes_are_the_xml_records():
    original = edited_ecb("type:text/xml")
    assert len(original) == 29 and original[0] == {"currency": "USD", "rate": "1.1171"}
    assert edited_ecb("empty") == []
    assert edited_ecb("dup") == [cube for cube in original for _ in range(2)]
    assert edited_ecb("missing:rate") == [{"currency": "USD"}, *original[1:]]
    assert edited_ecb("null:rate") == [{"currency": "USD", "rate": ""}, *original[1:]]
    assert edited_ecb("rename:currency") == [{"currency_renamed": c["currency"], "rate": c["rate"]} for c in original]


def test_absurd_numbers_and_control_characters_edit_the_first_record_holding_the_field():
    vast = edited_json("absurd:dph_base", "vastai_bundles.json")["offers"]
    assert vast[0]["dph_base"] == ABSURD and vast[1:] == VAST[1:]
    verda = edited_json("absurd:price_per_hour", "verda_instance_types.json")
    assert verda[0]["price_per_hour"] == "1e+308" and verda[1:] == VERDA[1:]  # a string stays a string
    named = edited_json("control:gpu_name", "vastai_bundles.json")["offers"]
    assert named[0]["gpu_name"] == CONTROL[0] + VAST[0]["gpu_name"] + CONTROL[1] and named[1:] == VAST[1:]
    original = edited_ecb("type:text/xml")
    assert edited_ecb("absurd:rate") == [{"currency": "USD", "rate": "1e+308"}, *original[1:]]
    body, _ = edit("control:currency", fixture("ecb_eurofxref_daily.xml"), "text/xml")
    assert f"currency='{CONTROL[0]}USD{CONTROL[1]}'" in body.decode()  # no longer XML: XML forbids these characters
    with pytest.raises(ValueError, match="no record has a text field 'dph_base'"):
        edit("control:dph_base", fixture("vastai_bundles.json"), "application/json")


def test_numbers_beyond_64_bits_or_a_double_edit_the_first_record_holding_the_field():
    vast = edited_json("bigint:num_gpus", "vastai_bundles.json")["offers"]
    assert vast[0]["num_gpus"] == 2**64 + 1 and vast[1:] == VAST[1:]
    verda = edited_json("overflow:price_per_hour", "verda_instance_types.json")
    assert verda[0]["price_per_hour"] == "1e999999" and verda[1:] == VERDA[1:]
    assert edited_ecb("bigint:rate")[0] == {"currency": "USD", "rate": str(2**64 + 1)}
    with pytest.raises(ValueError, match="no record has a numeric field 'gpu_name'"):
        edit("bigint:gpu_name", fixture("vastai_bundles.json"), "application/json")


def test_echo_quotes_the_request_back_behind_terminal_escapes():
    assert FaultPlan("echo").next() == "echo"
    assert echoed("Bearer k", b'{"a": 1}') == (CONTROL[0] + "bad request" + CONTROL[1]
                                              + ': Authorization: Bearer k; body: {"a": 1}').encode()


def test_deep_replaces_the_body_by_nesting_too_deep_for_any_reader():
    assert edit("deep", fixture("vastai_bundles.json"), "application/json")[0] == b"[" * DEEP_LEVELS + b"]" * DEEP_LEVELS
    assert edit("deep", fixture("ecb_eurofxref_daily.xml"), "text/xml")[0].startswith(b"<a><a><a>")


def test_redirect_items_name_a_redirect_status_and_where_it_leads():
    plan = FaultPlan("redirect:307,redirect:301:SAME")
    assert [redirect(plan.next()) for _ in range(3)] == [(307, False), (301, True), None]
    for spec in ("redirect:200", "redirect:307:there", "redirect"):
        with pytest.raises(ValueError, match="redirect:CODE or redirect:CODE:same"):
            FaultPlan(spec)


def test_invalid_html_and_type_need_no_records():
    body = fixture("ecb_eurofxref_daily.xml")
    assert edit("invalid", body, "text/xml") == (body[: len(body) // 2], "text/xml")
    assert edit("html", body, "text/xml") == (HTML_PAGE, "text/html; charset=utf-8")
    assert edit("type:application/json", body, "text/xml") == (body, "application/json")
    assert edit("trickle", body, "text/xml") == (body, "text/xml")  # transport faults leave the payload alone


@pytest.mark.parametrize("item", ["empty", "dup", "rename:dph_base", "null:dph_base"])
def test_a_search_that_found_nothing_is_served_as_it_is(item):
    assert json.loads(edit(item, b'{"offers": []}', "application/json")[0]) == {"offers": []}


@pytest.mark.parametrize(("item", "name", "problem"), [
    ("missing:dph_bsae", "vastai_bundles.json", "no record has field 'dph_bsae'"),
    ("string:gpu_name", "vastai_bundles.json", "no record has a numeric field 'gpu_name'"),
    ("empty", "frankfurter_latest.json", "no array of records"),
    ("string:rate", "ecb_eurofxref_daily.xml", "does not apply to XML"),
    ("null:ratio", "ecb_eurofxref_daily.xml", "no XML record with attribute 'ratio'"),
    ("empty", "verda_pricing_page.html", "no XML record"),
])
def test_an_edit_that_would_change_nothing_is_refused(item, name, problem):
    with pytest.raises(ValueError, match=problem):
        edit(item, fixture(name), "application/json")
