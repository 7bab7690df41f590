"""parse_frame (columns) against parse (record by record, the reference): the same listings, row for row.

Inputs: the synthetic fixture with its quirks; the trimmed real answer of 2024-11-05 (tests/fixtures/real/,
min_bid above dph_base, discount_rate null or 0.0, odd GPU counts), wrapped and as a bare array; records with
malformed fields; and generated records with any JSON value in the fields the parse reads.
"""

import json
import math
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapers import vastai
from scrapers.base import SchemaError
from scrapers.frames import json_text, listings_frame
from tests.sources_support import fixture_json, raw

OFFERS = fixture_json("vastai_bundles.json")["offers"]
REAL = json.loads((Path(__file__).parents[1] / "fixtures" / "real" / "vastai_bundles_2024-11-05.json")
                  .read_text())["offers"]


def responses(*searches: list, text: str | None = None) -> list:
    return [raw("vastai", "POST", vastai.PATH, text or json.dumps({"offers": offers}),
                request_body=json.dumps({"limit": 3000, "num_gpus": {"eq": i}})) for i, offers in enumerate(searches)]


def comparable(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.Series("record", [json_text(r) for r in frame["record"]], dtype=pl.String))


def assert_same(answers: list) -> tuple:
    reference, columnar = vastai.parse(answers), vastai.parse_frame(answers)
    assert columnar.frame.schema == listings_frame([]).schema
    assert comparable(columnar.frame).equals(comparable(listings_frame(reference.listings)))
    assert columnar.rejected == reference.rejected and not columnar.listings
    assert (columnar.record_count, columnar.notes, columnar.truncated) == (
        reference.record_count, reference.notes, reference.truncated)
    return reference, columnar


def test_the_fixture_and_a_real_answer_give_the_same_rows_in_the_same_order():
    _, columnar = assert_same(responses(OFFERS[:30], OFFERS[30:], REAL))
    assert columnar.frame.height > len(OFFERS) + len(REAL)  # interruptible rows too


def test_a_bare_array_answer_gives_the_same_rows():
    _, columnar = assert_same(responses([], text=json.dumps(REAL)))
    assert columnar.record_count == len(REAL)


def test_malformed_records_keep_their_place_and_their_rejection():
    odd = [dict(OFFERS[0], dph_base="n/a"), dict(OFFERS[1], id=None), dict(OFFERS[2], id=22.0),
           dict(OFFERS[3], num_gpus="8"), dict(OFFERS[4], min_bid=True), "not an object",
           dict(OFFERS[5], gpu_name=""), dict(OFFERS[6], reliability="0.99")]
    reference, columnar = assert_same(responses([*OFFERS[10:14], *odd, OFFERS[14], OFFERS[14]]))
    assert len(reference.rejected) == 5


def test_a_non_finite_number_read_by_the_standard_library_is_rejected_the_same_way():
    text = json.dumps({"offers": [OFFERS[0], dict(OFFERS[1], dph_base=math.nan)]})
    _, columnar = assert_same(responses([], text=text))
    assert [r.field for r in columnar.rejected] == ["dph_base"]


def test_a_place_that_is_not_text_is_unknown_in_both_parses():
    # a list here once failed the whole columnar parse (unhashable): hypothesis found it below
    _, columnar = assert_same(responses([dict(OFFERS[0], geolocation=[1]), dict(OFFERS[1], geolocation={"c": "US"})]))
    assert set(columnar.frame["country"]) == set(columnar.frame["region"]) == {None}


def test_numbers_orjson_reads_differently_give_the_same_rows_as_the_whole_answer_read():
    # beyond 64 bits orjson reads an integer as a float, the fields decoder as an integer: such an answer is read
    # whole, at the top of a field or inside it
    _, columnar = assert_same(responses([dict(OFFERS[0], machine_id=10**30), dict(OFFERS[1], geolocation=[10**30])]))
    assert json.loads(columnar.frame["extras"][0])["machine_id"] == 1e30
    # beyond a double, in a field no listing keeps: orjson refuses the answer, the standard library reads it
    text = json.dumps({"offers": [dict(OFFERS[0], unkept=1.5)]}).replace("1.5", "1e400")
    _, columnar = assert_same(responses([], text=text))
    assert columnar.frame.height and "1e400" in str(columnar.frame["record"][0].text)


def test_an_answer_that_is_not_utf8_fails_as_the_whole_answer_read_fails():
    # the fields decoder does not check the text of the fields it skips: alone, it would accept this answer
    body = json.dumps({"offers": [dict(OFFERS[0], unkept="caf-e")]}).encode().replace(b"caf-e", b"caf\xe9")
    answer = raw("vastai", "POST", vastai.PATH, body, request_body="{}")
    with pytest.raises(SchemaError, match="not JSON") as columnar:
        vastai.parse_frame([answer])
    with pytest.raises(SchemaError) as reference:
        vastai.parse([answer])
    assert str(columnar.value) == str(reference.value)


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 2**60), st.floats(-1e6, 1e6),
                   st.sampled_from([0, 1, 1.0, 0.0, 1.5, -1]),
                   st.sampled_from(["", "verified", "1.5", "Texas, US", "US", "x"]), st.just([1]))
FIELDS = ("id", "num_gpus", "gpu_name", "gpu_ram", "dph_base", "min_bid", "discount_rate", "discounted_dph_total",
          "reliability", "cpu_cores", "cpu_cores_effective", "cpu_ram", "geolocation", "verification", "rentable",
          "rented", "dph_total")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(FIELDS), VALUES), min_size=1, max_size=6), st.data())
def test_any_values_in_the_fields_read_give_the_same_rows(edits, data):
    records = [dict(data.draw(st.sampled_from(OFFERS)), **edit) for edit in edits]
    assert_same(responses(records))
