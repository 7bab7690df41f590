"""The columnar vast.ai parse (the fast path) against the record-by-record parse (the reference), whole pipeline.

One replayed run (the sample fixtures, then the real recorded markets) is rebuilt from its archive twice: once
as the pipeline does it (vastai.parse_frame) and once with only the record-by-record `vastai.parse`. Every
table of the warehouse (offers, quarantine, fetches and their notes, unmapped names, every derived table) must
hold the same rows, in any order. The run itself parsed each answer while the fetch went on (ParseAhead):
what it stored must be what the rebuild stores.

The run and the rebuilds export nothing (export format ""): the exports and the report pages are drawn from
the tables compared here, and writing them (a page per catalogue model) was most of this test's time.
Still slow by nature (~10-20 s each): three loads and three derivations of a whole day per replay.
"""

import pytest

from flows import pipeline
from scrapers import vastai
from tests.pipeline_support import serve_fixtures
from tests.sources_support import FIXTURES, SNAPSHOT
from warehouse import db

# The parse is the subject: cost_at_speed is compared at the chat tier alone (every tier is a stream-count search
# over the same offers, most of each derivation's time), every other table whole.
pytestmark = pytest.mark.usefixtures("slim_night")

# Tables the rebuild clears before each load, so equal contents can only come from the parse under test (own_vs_rent
# and cost_at_speed are views of own_hardware, replica_prices and the speed answers of the GPUs listed).
CLEARED = ("offers", "quarantine", "unmapped_gpus", "daily_prices", "rental_ranges", "replica_prices", "own_hardware",
           "price_index", "own_rent_api", "speed_answers")


def every_table() -> dict[str, list[tuple]]:
    with db.connect(read_only=True) as con:
        names = [n for (n,) in con.execute("select table_name from duckdb_tables() where schema_name = 'main'")
                 .fetchall()]
        return {n: con.execute(f'select * from "{n}" order by all').fetchall() for n in sorted(names)}


def rebuilt() -> dict[str, list[tuple]]:
    with db.connect() as con:
        for table in CLEARED:
            con.execute(f"delete from {table}")
    pipeline.rebuild(start=SNAPSHOT, export_format="")
    return every_table()


@pytest.mark.slow
@pytest.mark.parametrize("replay", [FIXTURES, FIXTURES.parent / "real"], ids=["sample", "real"])
def test_the_columnar_parse_stores_what_the_record_parse_stores(monkeypatch, replay):
    with serve_fixtures(monkeypatch, replay):
        pipeline.run(snapshot_date=SNAPSHOT, export_format="", trigger="test")
    parsed_ahead = every_table()
    columnar = rebuilt()
    for table in CLEARED:
        assert parsed_ahead[table] == columnar[table], f"{table}: the run and its rebuild differ"
    reference_calls = []
    record_parse = vastai.parse
    monkeypatch.setattr(vastai, "parse", lambda responses: reference_calls.append(1) or record_parse(responses))
    monkeypatch.delattr(vastai, "parse_frame")  # the loader falls back to the module's record-by-record parse
    reference = rebuilt()
    assert reference_calls, "the record-by-record parse was not used"
    assert columnar.keys() == reference.keys()
    for table in set(CLEARED) - {"unmapped_gpus"}:  # every name in these replays maps
        assert columnar[table], f"{table} is empty: the comparison would prove nothing"
    with db.connect(read_only=True) as con:
        assert con.execute("select count(*) from offers where provider = 'vastai'").fetchall()[0][0]
    for table in columnar:
        assert columnar[table] == reference[table], f"{table} differs between the two parses"
