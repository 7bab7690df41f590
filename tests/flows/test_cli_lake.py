"""`gpuledger lake`, `export --as-of` and `sql --lake` on a lake folder: what was published, version by version."""

import json
import time
from datetime import UTC, datetime

import polars as pl
import pytest

from tests.cli_support import invoke
from warehouse import config, db


@pytest.fixture
def two_versions():
    """fx_rates of 2026-11-27 published twice: version 1 with two rates, version 2 with one."""
    invoke("init")
    with db.connect() as con:
        con.execute("insert into fx_rates values ('2026-11-27', 'EUR', 'USD', 1.1171, 'ecb', 'r1', '2026-11-27 16:00'),"
                    " ('2026-11-27', 'EUR', 'CNY', 7.444, 'ecb', 'r1', '2026-11-27 16:00')")
    invoke("export", "--table", "fx_rates", "--date", "2026-11-27")
    with db.connect() as con:
        con.execute("delete from fx_rates where quote = 'CNY'")
    invoke("export", "--table", "fx_rates", "--date", "2026-11-27")


@pytest.mark.usefixtures("two_versions")
def test_history_lists_each_version_with_its_rows():
    versions = json.loads(invoke("lake", "history", "-f", "json").output)
    assert [(v["table"], v["version"], v["operation"], v["rows"], v["replaced_rows"]) for v in versions] == [
        ("fx_rates", 2, "WRITE", 1, 2), ("fx_rates", 1, "WRITE", 2, 0), ("fx_rates", 0, "CREATE TABLE", None, None)]
    assert all(v["run_id"].startswith("export-") for v in versions[:2])
    assert "gpus" in json.loads(versions[0]["catalogues"])  # the catalogues' sha256 the commit was made with
    assert "no lake table offers" in invoke("lake", "history", "--table", "offers", code=1).output


@pytest.mark.usefixtures("two_versions")
def test_export_and_sql_as_of_a_version_read_what_it_held(tmp_path):
    invoke("export", "--as-of", "1", "--table", "fx_rates", "--out", str(tmp_path / "v1"))
    assert sorted(pl.read_parquet(tmp_path / "v1" / "fx_rates.parquet")["quote"]) == ["CNY", "USD"]
    query = "select string_agg(quote, '+' order by quote) as quotes from fx_rates"
    assert invoke("sql", query, "--lake", "fx_rates", "--as-of", "1", "-f", "csv").output.split() == [
        "quotes", "CNY+USD"]
    assert invoke("sql", query, "--lake", "fx_rates", "-f", "csv").output.split() == ["quotes", "USD"]


def test_export_as_of_a_time_without_tables_reads_the_nightly_tables_the_lake_holds(tmp_path):
    """A lake published before it kept replica_prices (here: price_index alone) still exports as of a time."""
    invoke("init")
    with db.connect() as con:
        con.execute("insert into price_index (snapshot_date, gpu, provider, price_kind, listings, min_usd_per_gpu_hr, "
                    "p10_usd_per_gpu_hr, median_usd_per_gpu_hr, max_usd_per_gpu_hr, first_seen_date, "
                    "days_since_first_seen) values ('2026-11-27', 'H100', 'vastai', 'on_demand', 3, 1.5, 1.6, 1.8, 2.2, "
                    "'2026-11-27', 0)")
    invoke("export", "--table", "price_index", "--date", "2026-11-27")
    invoke("export", "--as-of", "2999-01-01", "--out", str(tmp_path / "t"))
    assert [f.name for f in (tmp_path / "t").iterdir()] == ["price_index.parquet"]
    assert pl.read_parquet(tmp_path / "t" / "price_index.parquet")["listings"].to_list() == [3]
    # own_hardware begins later: as of a time before its first commit it is left out, as of later it is read
    between = datetime.now(UTC)
    time.sleep(0.01)  # commit times are milliseconds
    with db.connect() as con:
        con.execute("insert into own_hardware (snapshot_date, gpu, price_kind, gpu_count, usd_low, usd_high, quoted_on, "
                    "years, usd_per_kwh, maintenance_usd_per_month, utilisation, grid_sha256) values ('2026-11-27', "
                    "'H100', 'retail', 8, 250000, 300000, '2026-11-01', 4, 0.15, 500, 0.6, 'g')")
    invoke("export", "--table", "own_hardware", "--date", "2026-11-27")
    invoke("export", "--as-of", between.isoformat(), "--out", str(tmp_path / "before"))
    assert [f.name for f in (tmp_path / "before").iterdir()] == ["price_index.parquet"]
    invoke("export", "--as-of", "2999-01-01", "--out", str(tmp_path / "after"))
    assert sorted(f.name for f in (tmp_path / "after").iterdir()) == ["own_hardware.parquet", "price_index.parquet"]
    assert "no version as of" in invoke("export", "--as-of", between.isoformat(), "--table", "own_hardware",
                                        "--out", str(tmp_path / "x"), code=1).output


@pytest.mark.usefixtures("two_versions")
def test_as_of_mistakes_are_explained():
    for args, says in [
        (["export", "--as-of", "1", "--out", "x"], "belongs to one table"),
        (["export", "--as-of", "yesterday", "--table", "fx_rates", "--out", "x"], "neither a version number"),
        (["export", "--as-of", "9", "--table", "fx_rates", "--out", "x"], "no version as of 9"),
        (["export", "--as-of", "1", "--table", "fx_rates"], "--out"),
        (["sql", "select 1", "--as-of", "1"], "name the tables with --lake"),
    ]:
        assert says in " ".join(invoke(*args, code=1).output.split()), args


@pytest.mark.usefixtures("two_versions")
def test_upkeep_runs_now_and_is_recorded():
    done = json.loads(invoke("lake", "upkeep", "-f", "json").output)
    assert [d["table"] for d in done] == ["fx_rates"]
    with db.connect(read_only=True) as con:
        assert con.execute("select table_name, retention_days from lake_upkeep where location = ?",
                           [config.exports_location()]).fetchall() == [("fx_rates", 30)]


def test_migrate_with_nothing_to_convert_says_so():
    assert "no manifest partition left" in invoke("lake", "migrate").output
