"""The lake on S3 and the raw mirror end to end: nightly runs on the replay with a local S3 server (moto),
an S3 server that stops during a run, and a fresh machine restored from the mirror alone."""

from datetime import date, timedelta

import polars as pl
import pytest
from typer.testing import CliRunner

from flows import pipeline
from flows.cli.app import app
from flows.derive import EXPORTED
from scrapers.sources import SOURCES
from tests.pipeline_support import serve_fixtures
from tests.s3_support import S3Server, point_at
from tests.sources_support import SNAPSHOT
from warehouse import config, db, delta, export, lake, mirror, queries

pytestmark = pytest.mark.usefixtures("slim_night")  # their subject is neither the report nor the speed tiers

NEXT_DAY = SNAPSHOT + timedelta(days=1)


def date_column(table: str) -> str:
    with db.connect(read_only=True) as con:
        return export.exportable(con)[table]


def warehouse_rows(table: str, days: list[date]) -> pl.DataFrame:
    """The rows the lake should hold: offers, the listings each day was derived from; the others, the day's rows."""
    column = date_column(table)
    with db.connect(read_only=True) as con:
        if table == "offers":
            return pl.concat([queries.published_offers(con, day).order("all").pl() for day in days])
        return con.sql(f"select * from {table} where {column} in ? order by all", params=[days]).pl()


def lake_rows(table: str) -> pl.DataFrame:
    """The table's current version as an analyst reads it: polars on the Delta table in the bucket."""
    options = {"AWS_ENDPOINT_URL": lake.s3_endpoint(), "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1"}
    return pl.read_delta(f"{config.exports_location()}/{table}", storage_options=options)


def lake_writes() -> dict[str, list[str]]:
    """Each table's commits that wrote a day, oldest first, by run."""
    return {table: [h["run_id"] for h in reversed(delta.history(delta.open_table(
        delta.table_uri(config.exports_location(), table)))) if h["operation"] == "WRITE"] for table in EXPORTED}


def assert_lake_equals_warehouse(days: list[date]) -> None:
    for table in EXPORTED:
        stored = warehouse_rows(table, days)
        assert stored.height > 0, table
        assert lake_rows(table).select(stored.columns).sort(pl.all()).equals(stored.sort(pl.all())), table


def assert_raw_archive_mirrored() -> None:
    store = lake.open_store(config.raw_mirror())
    local = [p for p in config.raw_dir().rglob("*") if p.is_file() and p.name != mirror.MARKER]
    assert local and mirror.pending(config.raw_dir()) == []
    for path in local:
        assert store.get(path.relative_to(config.raw_dir()).as_posix()) == path.read_bytes(), path


def use_s3(monkeypatch, bucket_url: str) -> None:
    monkeypatch.setenv("GPULEDGER_EXPORTS", f"{bucket_url}/lake")
    monkeypatch.setenv("GPULEDGER_RAW_MIRROR", f"{bucket_url}/raw")


@pytest.mark.slow
def test_nightly_publishes_the_lake_and_mirrors_the_archive_and_a_rerun_is_one_more_version(s3, monkeypatch):
    use_s3(monkeypatch, s3)
    with serve_fixtures(monkeypatch):
        first = pipeline.run(trigger="test")
        assert (first.status, first.publication, first.mirror, first.warnings) == ("ok", "published", "mirrored", [])
        assert_lake_equals_warehouse([SNAPSHOT])
        assert_raw_archive_mirrored()
        second = pipeline.run(trigger="test")
    assert_lake_equals_warehouse([SNAPSHOT])
    assert_raw_archive_mirrored()
    assert lake_writes() == {table: [first.run_id, second.run_id] for table in EXPORTED}
    with db.connect(read_only=True) as con:
        assert con.execute("select publication, mirror from runs order by started_at").fetchall() == [
            ("published", "mirrored")] * 2


@pytest.mark.slow
def test_a_store_down_during_a_run_keeps_the_day_local_and_unpublished_until_the_next_run(monkeypatch):
    server = S3Server().start()
    point_at(monkeypatch, server)
    use_s3(monkeypatch, f"s3://{server.bucket()}")
    server.stop()
    runner = CliRunner()
    try:
        with serve_fixtures(monkeypatch):
            down = runner.invoke(app, ["nightly", "--no-prefect"])
            assert down.exit_code == 1  # every source ok, but the day has not left this machine
            assert ": ok, quality ok, lake unpublished, raw mirror pending" in down.output
            warnings = [line for line in down.output.splitlines() if line.startswith("left for the next run: ")]
            assert len(warnings) == 2
            assert any(f": {config.exports_location()}/" in w and "error sending request" in w for w in warnings)
            assert any(": raw mirror s3://" in w and "Could not connect" in w for w in warnings)
            with db.connect(read_only=True) as con:  # the day is complete on this machine
                assert con.execute("select publication, mirror from runs").fetchall() == [("unpublished", "pending")]
                assert all(con.execute(f"select count(*) from {t}").fetchall()[0][0] > 0 for t in EXPORTED)
            assert len(mirror.pending(config.raw_dir())) == len(SOURCES)  # one run directory per source, none copied
            status = runner.invoke(app, ["status"])
            assert status.exit_code == 0
            assert "not yet mirrored" in status.output and "Days not in the lake yet" in status.output
            assert str(SNAPSHOT) in status.output

            server.start()  # the store is back, on the same address, with its bucket
            up = pipeline.run(snapshot_date=NEXT_DAY, trigger="test")
        assert (up.status, up.publication, up.mirror, up.warnings) == ("ok", "published", "mirrored", [])
        assert_lake_equals_warehouse([SNAPSHOT, NEXT_DAY])  # the earlier day was published by the later run
        assert_raw_archive_mirrored()
        with db.connect(read_only=True) as con:
            assert con.execute("select snapshot_date, status from publications order by 1").fetchall() == [
                (SNAPSHOT, "published"), (NEXT_DAY, "published")]
        status = runner.invoke(app, ["status"])
        assert "every file is mirrored" in status.output and "Days not in the lake yet" not in status.output
    finally:
        server.close()


@pytest.mark.slow
def test_a_fresh_machine_restores_the_warehouse_and_identical_exports_from_the_mirror(s3, monkeypatch, tmp_path):
    use_s3(monkeypatch, s3)
    with serve_fixtures(monkeypatch):
        pipeline.run(trigger="test")
        pipeline.run(snapshot_date=NEXT_DAY, trigger="test")
    days = [SNAPSHOT, NEXT_DAY]
    original = {t: warehouse_rows(t, days) for t in (*EXPORTED, "runs", "fetches")}
    original_lake = {table: lake_rows(table).sort(pl.all()) for table in EXPORTED}

    # A new machine: an empty home, a new lake prefix, the same mirror, no source reachable, another clock.
    monkeypatch.setenv("GPULEDGER_HOME", str(tmp_path / "new-home"))
    monkeypatch.setenv("GPULEDGER_EXPORTS", f"{s3}/restored-lake")
    monkeypatch.setenv("GPULEDGER_NOW", "2027-01-15T03:00:00")
    for name in ("GPULEDGER_VASTAI_URL", "GPULEDGER_RUNPOD_URL", "GPULEDGER_VERDA_URL", "GPULEDGER_ECB_URL",
                 "GPULEDGER_FRANKFURTER_URL"):
        monkeypatch.setenv(name, "http://203.0.113.1")  # any request would hit the network guard
    result = CliRunner().invoke(app, ["rebuild", "--from", str(SNAPSHOT), "--to", str(NEXT_DAY), "--no-prefect"])
    assert result.exit_code == 0, result.output

    for table in EXPORTED:  # every exported table, whatever EXPORTED lists
        assert warehouse_rows(table, days).equals(original[table]), table
    runs = warehouse_rows("runs", days)
    assert runs["run_id"].to_list() == original["runs"]["run_id"].to_list()
    assert runs["status"].to_list() == original["runs"]["status"].to_list()
    same_fetch = pl.all().exclude("archive_dir")  # the archive now lives under the new home
    assert warehouse_rows("fetches", days).select(same_fetch).equals(original["fetches"].select(same_fetch))
    for table in EXPORTED:  # the new lake prefix holds the same rows, committed by the rebuild
        assert lake_rows(table).sort(pl.all()).equals(original_lake[table]), table
    assert all(runs[0].startswith("rebuild-") for runs in lake_writes().values())
