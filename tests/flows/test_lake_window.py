"""The lake keeps its facts for ever and its derived tables for a window (docs/lake.md): a nightly run on the recorded
day, the next day published from the same facts with its prices moved, then the window ($GPULEDGER_LAKE_DERIVED_DAYS=1)
ages the first day out of the derived tables. The documented query over the lake's replica prices and estimates gives
that day's cost_per_mtok back, and `gpuledger export --date` writes it again: both equal what was first published."""

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
    first: pl.DataFrame  # the recorded day's cost_per_mtok as the nightly run published it
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
        first = lake_day("cost_per_mtok", SNAPSHOT)
        with db.connect() as con:  # the next day: the same market, every replica 3 % dearer
            con.execute("insert into replica_prices select * replace (snapshot_date + 1 as snapshot_date, "
                        "replica_usd_per_hr * 1.03 as replica_usd_per_hr) from replica_prices")
            for table in ("own_vs_rent", "cost_at_speed"):
                con.execute(f"insert into {table} select * replace (snapshot_date + 1 as snapshot_date) from {table}")
            export.export_date(con, NEXT, lake.exports_store(), ["replica_prices", *export.WINDOWED], run_id="next")
            removed = export.age_out(lake.exports_store(), config.lake_derived_days(), "upkeep")
            pipeline.lake_upkeep(con, "again")  # the nightly's upkeep: nothing older is left to age out
    return Aged(env, first, removed)


@pytest.fixture(autouse=True)
def lake_env(aged, monkeypatch) -> None:  # each test reads the module's warehouse and lake
    set_env(monkeypatch, aged.env)


@pytest.mark.slow
def test_the_window_ages_the_old_day_out_of_the_derived_tables_and_keeps_the_facts(aged):
    assert aged.first.height > 0
    assert aged.removed == {table: [SNAPSHOT] for table in export.WINDOWED}
    status = {row["table"]: row for row in json.loads(invoke("lake", "status", "-f", "json").output)}
    for table in export.WINDOWED:
        assert (status[table]["held"], status[table]["keeps"]) == (str(NEXT), "the newest 1 dates"), table
    assert (status["replica_prices"]["held"], status["replica_prices"]["keeps"]) == (
        f"{SNAPSHOT}..{NEXT}", "every date")
    assert (status["estimates"]["partitions"], status["estimates"]["keeps"]) == (1, "each grid once")
    history = json.loads(invoke("lake", "history", "--table", "cost_per_mtok", "-f", "json").output)
    assert [v["aged_out"] for v in history if v["aged_out"]] == [[SNAPSHOT.isoformat()]]
    grids = json.loads(invoke("lake", "history", "--table", "estimates", "-f", "json").output)
    assert [v["operation"] for v in grids] == ["WRITE", "CREATE TABLE"]  # the next day's grid was not written again
    shown = invoke("lake", "history", "--table", "cost_per_mtok").output
    assert f"aged out {SNAPSHOT}" in shown


@pytest.mark.slow
def test_the_documented_query_over_the_lakes_facts_gives_the_aged_out_day_back(aged):
    [sql] = [block for block in re.findall(r"```sql\n(.*?)```", DOCS.read_text(), re.S) if "replica_prices" in block]
    sql = re.sub(r"delta_scan\('s3://bucket/lake/(\w+)'\)", r"\1", sql).replace("2026-11-27", SNAPSHOT.isoformat())
    con = duckdb.connect()
    for table in (export.FACTS, export.GRIDS):
        con.register(table, delta.open_table(delta.table_uri(config.exports_location(), table)).to_pyarrow_dataset())
    computed = con.sql(sql).pl()
    assert computed.columns == aged.first.columns
    assert computed.sort(pl.all()).equals(aged.first)
    # the same query through `gpuledger sql --lake`, as docs/lake.md says
    counted = invoke("sql", f"select count(*) as n from ({sql.strip().rstrip(';')})", "--lake", export.FACTS,
                     "--lake", export.GRIDS, "-f", "csv").output.split()
    assert counted == ["n", str(aged.first.height)]


@pytest.mark.slow
def test_export_of_a_named_date_writes_the_aged_out_day_again_whatever_the_window(aged):
    assert lake_day("cost_per_mtok", SNAPSHOT).height == 0
    invoke("export", "--date", SNAPSHOT.isoformat(), "--table", "cost_per_mtok")
    assert lake_day("cost_per_mtok", SNAPSHOT).equals(aged.first)
    invoke("lake", "upkeep", "--table", "cost_per_mtok", "--table", "estimates")
    assert lake_day("cost_per_mtok", SNAPSHOT).height == 0  # the window applies at the next upkeep
    invoke("export", "--date", SNAPSHOT.isoformat(), "--table", "cost_per_mtok")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GPULEDGER_LAKE_DERIVED_DAYS", "all")
        invoke("lake", "upkeep")
    assert lake_day("cost_per_mtok", SNAPSHOT).equals(aged.first)  # `all`: every date stays
