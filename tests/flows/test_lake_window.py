"""The lake keeps its facts for ever and its derived tables for a window (docs/lake.md): a nightly run on the recorded
day, the next day published from the same facts with its prices moved, then the window ($GPULEDGER_LAKE_DERIVED_DAYS=1)
ages the first day out of the derived tables. The documented query over the lake's replica prices and estimates gives
that day's cost_per_mtok back, `gpuledger lake query` each derived table's from the lake's facts alone, and
`gpuledger export --date` writes them again: all equal what was first published."""

import json
import re
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from flows import pipeline
from tests.cli_support import invoke
from tests.pipeline_support import SLIM_NIGHT, serve_fixtures, set_env
from tests.sources_support import SNAPSHOT
from warehouse import config, db, delta, export, lake

NEXT = SNAPSHOT + timedelta(days=1)
DOCS = Path(__file__).parents[2] / "docs" / "lake.md"


@dataclass(frozen=True)
class Aged:
    env: dict[str, str]
    first: dict[str, pl.DataFrame]  # the recorded day's derived tables as the nightly run published them
    removed: dict[str, list[date]]  # what the nightly run's upkeep aged out


def lake_day(table: str, day: date) -> pl.DataFrame:
    published = delta.open_table(delta.table_uri(config.exports_location(), table))
    return pl.from_arrow(delta.read(published, [day])).sort(pl.all())


@pytest.fixture(scope="module")
def aged(tmp_path_factory) -> Aged:
    root = tmp_path_factory.mktemp("window")
    env = {"GPULEDGER_HOME": str(root / "home"), "GPULEDGER_EXPORTS": str(root / "lake"),
           "GPULEDGER_LAKE_DERIVED_DAYS": "1", **SLIM_NIGHT}
    with pytest.MonkeyPatch.context() as patch:
        set_env(patch, env)
        with serve_fixtures(patch):
            assert pipeline.run(trigger="test").publication == "published"
        first = {table: lake_day(table, SNAPSHOT) for table in export.WINDOWED}
        with db.connect() as con:  # the next day: the same market and hardware, every replica 3 % dearer
            con.execute("insert into replica_prices select * replace (snapshot_date + 1 as snapshot_date, "
                        "replica_usd_per_hr * 1.03 as replica_usd_per_hr) from replica_prices")
            con.execute("insert into own_hardware select * replace (snapshot_date + 1 as snapshot_date) from own_hardware")
            export.export_date(con, NEXT, lake.exports_store(), [export.FACTS, "own_hardware", *export.WINDOWED],
                               run_id="next")
            removed = export.age_out(lake.exports_store(), config.lake_derived_days(), "upkeep")
            pipeline.lake_upkeep(con, "again")  # the nightly's upkeep: nothing older is left to age out
    return Aged(env, first, removed)


@pytest.fixture(autouse=True)
def lake_env(aged, monkeypatch) -> None:  # each test reads the module's warehouse and lake
    set_env(monkeypatch, aged.env)


@pytest.mark.slow
def test_the_window_ages_the_old_day_out_of_the_derived_tables_and_keeps_the_facts(aged):
    assert all(frame.height > 0 for frame in aged.first.values())
    assert aged.removed == {table: [SNAPSHOT] for table in export.WINDOWED}
    status = {row["table"]: row for row in json.loads(invoke("lake", "status", "-f", "json").output)}
    for table in export.WINDOWED:
        assert (status[table]["held"], status[table]["keeps"]) == (str(NEXT), "the newest 1 dates"), table
    for table in (export.FACTS, "own_hardware"):
        assert (status[table]["held"], status[table]["keeps"]) == (f"{SNAPSHOT}..{NEXT}", "every date"), table
    for table, key in export.KEYED.items():
        assert (status[table]["partitions"], status[table]["keeps"]) == (1, f"each {key} once"), table
        written = json.loads(invoke("lake", "history", "--table", table, "-f", "json").output)
        assert [v["operation"] for v in written] == ["WRITE", "CREATE TABLE"]  # the next day's was not written again
        assert written[0][key].startswith(status[table]["held"]) and len(written[0][key]) == 64, table
    history = json.loads(invoke("lake", "history", "--table", "cost_per_mtok", "-f", "json").output)
    assert [v["aged_out"] for v in history if v["aged_out"]] == [[SNAPSHOT.isoformat()]]
    shown = invoke("lake", "history", "--table", "cost_at_speed", "--table", "speed_answers").output
    assert f"aged out {SNAPSHOT}" in shown and "speed_sha256 " in shown
    counted = invoke("status").output  # the warehouse's row counts name the new facts
    with db.connect(read_only=True) as con:
        for table in ("speed_answers", "own_hardware"):
            rows = con.execute(f"select count(*) from {table}").fetchall()[0][0]
            assert rows > 0 and re.search(rf"│ {table}\s+│\s+{rows} │", counted), table


@pytest.mark.slow
def test_the_documented_query_over_the_lakes_facts_gives_the_aged_out_day_back(aged):
    [sql] = [block for block in re.findall(r"```sql\n(.*?)```", DOCS.read_text(), re.S) if "replica_prices" in block]
    sql = re.sub(r"delta_scan\('s3://bucket/lake/(\w+)'\)", r"\1", sql).replace("2026-11-27", SNAPSHOT.isoformat())
    con = duckdb.connect()
    for table in (export.FACTS, export.GRIDS):
        con.register(table, delta.open_table(delta.table_uri(config.exports_location(), table)).to_pyarrow_dataset())
    computed = con.sql(sql).pl()
    assert computed.columns == aged.first["cost_per_mtok"].columns
    assert computed.sort(pl.all()).equals(aged.first["cost_per_mtok"])
    # the same query through `gpuledger sql --lake`, as docs/lake.md says
    counted = invoke("sql", f"select count(*) as n from ({sql.strip().rstrip(';')})", "--lake", export.FACTS,
                     "--lake", export.GRIDS, "-f", "csv").output.split()
    assert counted == ["n", str(aged.first["cost_per_mtok"].height)]


def lake_alone(table: str, day: date) -> pl.DataFrame:
    """The day's rows of a derived table computed by `gpuledger lake query` over the lake's facts, nothing else."""
    sql = invoke("lake", "query", table).output
    con = duckdb.connect()
    for name in (export.FACTS, "own_hardware", *export.KEYED):
        con.register(name, delta.open_table(delta.table_uri(config.exports_location(), name)).to_pyarrow_dataset())
    return con.sql(f"select * from ({sql}) where snapshot_date = ?", params=[day]).pl().sort(pl.all())


@pytest.mark.slow
@pytest.mark.parametrize("table", export.WINDOWED)
def test_lake_query_computes_an_aged_out_day_from_the_lakes_facts_alone(aged, table):
    assert lake_day(table, SNAPSHOT).height == 0  # aged out of the lake
    assert lake_alone(table, SNAPSHOT).equals(aged.first[table])  # the same columns, types, rows and doubles
    assert not lake_alone(table, NEXT).equals(aged.first[table])  # the next day's is its own (dearer rentals)
    sql = invoke("lake", "query", table).output  # and through `gpuledger sql --lake`, as docs/lake.md says
    counted = invoke("sql", f"select count(*) as n from ({sql}) where snapshot_date = DATE '{SNAPSHOT}'", "--lake",
                     export.FACTS, "--lake", "own_hardware", *(f"--lake={t}" for t in export.KEYED), "-f", "csv")
    assert counted.output.split() == ["n", str(aged.first[table].height)]


def test_lake_query_names_the_tables_it_computes():
    assert "speed_answers" in invoke("lake", "query", "cost_at_speed").output
    assert "cost_per_mtok, own_vs_rent, cost_at_speed" in invoke("lake", "query", "offers", code=1).output


@pytest.mark.slow
def test_export_of_a_named_date_writes_the_aged_out_day_again_whatever_the_window(aged):
    windowed = [f"--table={table}" for table in export.WINDOWED]
    assert all(lake_day(table, SNAPSHOT).height == 0 for table in export.WINDOWED)
    invoke("export", "--date", SNAPSHOT.isoformat(), *windowed)
    for table in export.WINDOWED:
        assert lake_day(table, SNAPSHOT).equals(aged.first[table]), table
    invoke("lake", "upkeep", "--table", "cost_per_mtok", "--table", "estimates")
    assert lake_day("cost_per_mtok", SNAPSHOT).height == 0  # the window applies at the next upkeep
    assert lake_day("own_vs_rent", SNAPSHOT).equals(aged.first["own_vs_rent"])  # of the tables named
    invoke("export", "--date", SNAPSHOT.isoformat(), *windowed)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GPULEDGER_LAKE_DERIVED_DAYS", "all")
        invoke("lake", "upkeep")
    for table in export.WINDOWED:  # `all`: every date stays
        assert lake_day(table, SNAPSHOT).equals(aged.first[table]), table
