"""The unit of failure is the record (issue 30): any field of a record set to a hostile value (an integer beyond
64 bits or beyond a double, a list or an object where a scalar belongs, a price "1e999999") costs at most that
record, never the parse of its source. Each field of each source's first record, at any depth, in turn."""

import copy
import json

import pytest

from scrapers import openrouter, runpod, vastai, verda
from scrapers.base import Rejection
from tests.sources_support import fixture_json, raw

HOSTILE = (2**70, 10**400, [1], {"a": 1}, "1e999999")
VERDA = ("verda_instance_types.json", "verda_locations.json", "verda_instance_availability.json")


def first_record_fields(data, records):
    """(object, key) of every field of the first record (objects nested in it included)."""
    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                yield node, key
                yield from walk(value)
        elif isinstance(node, list):
            for value in node[:2]:
                yield from walk(value)
    yield from walk(records(data)[0])


def parsed_with_each_field_hostile(name, records, parse):
    """Each (field, value) whose parse raised, and the count of parses; the parse is left to its record."""
    raised, parses = [], 0
    fields = list(first_record_fields(fixture_json(name), records))
    for index in range(len(fields)):
        for value in HOSTILE:
            data = fixture_json(name)
            holder, key = list(first_record_fields(data, records))[index]
            holder[key] = copy.deepcopy(value)
            try:
                result = parse(json.dumps(data))
            except Exception as exc:  # the finding: one field took the whole source down
                raised.append((key, repr(value)[:20], f"{type(exc).__name__}: {exc}"[:120]))
            else:
                assert all(isinstance(item, Rejection) for item in result.rejected)
            parses += 1
    return raised, parses


def vast(body):
    return vastai.parse_frame([raw("vastai", "POST", vastai.PATH, body, request_body=json.dumps({"limit": 1000}))])


def vast_by_record(body):
    return vastai.parse([raw("vastai", "POST", vastai.PATH, body, request_body=json.dumps({"limit": 1000}))])


def verda_with(which: str):
    def parse(body):
        bodies = {name: body if name == which else json.dumps(fixture_json(name)) for name in VERDA}
        paths = dict(zip(VERDA, (verda.TYPES_PATH, verda.LOCATIONS_PATH, verda.AVAILABILITY_PATH), strict=True))
        return verda.parse([raw("verda", "GET", paths[name], bodies[name]) for name in VERDA])
    return parse


CASES = {
    "vastai by columns": ("vastai_bundles.json", lambda d: d["offers"], vast),
    "vastai by records": ("vastai_bundles.json", lambda d: d["offers"], vast_by_record),
    "openrouter": ("openrouter_models_2026-08-19.json", lambda d: d["data"][1:],
                   lambda body: openrouter.parse([raw("openrouter", "GET", openrouter.PATH, body)])),
    "runpod graphql": ("runpod_gputypes.json", lambda d: d["data"]["gpuTypes"],
                       lambda body: runpod.parse([raw("runpod", "POST", runpod.GRAPHQL_PATH, body)])),
    "runpod rest": ("runpod_catalog_gpus_v2.json", lambda d: d["gpus"],
                    lambda body: runpod.parse([raw("runpod", "GET", runpod.REST_PATH, body)])),
    **{f"verda {name}": (name, lambda d: d, verda_with(name)) for name in VERDA},
}


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_field_costs_its_record_never_the_source(case):
    name, records, parse = CASES[case]
    raised, parses = parsed_with_each_field_hostile(name, records, parse)
    assert parses > len(HOSTILE) and raised == []
