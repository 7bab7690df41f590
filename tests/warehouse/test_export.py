import json
import socket
from datetime import date

import duckdb
import polars as pl
import pytest

from warehouse import db, export, lake

DAY = date(2026, 11, 27)


@pytest.fixture
def con():
    with db.connect() as con:
        con.execute("""insert into fx_rates values
            ('2026-11-27', 'EUR', 'USD', 1.1171, 'ecb', 'r1', '2026-11-27 16:00'),
            ('2026-11-27', 'EUR', 'CNY', 7.444, 'ecb', 'r1', '2026-11-27 16:00'),
            ('2026-11-26', 'EUR', 'USD', 1.12, 'ecb', 'r0', '2026-11-26 16:00')""")
        yield con


@pytest.fixture(params=["folder", "s3"])
def store(request, tmp_path):
    """The same tests on a folder and on an S3 bucket."""
    if request.param == "folder":
        return lake.open_store(tmp_path / "lake")
    return lake.open_store(request.getfixturevalue("s3") + "/exports")


def test_a_partition_holds_exactly_that_date_behind_its_manifest(con, store):
    manifest = export.export_table(con, "fx_rates", DAY, store, run_id="run-1")
    assert (manifest["table"], manifest["date"], manifest["run_id"], manifest["rows"]) == ("fx_rates", "2026-11-27",
                                                                                       "run-1", 2)
    assert manifest["schema_version"] == db.schema_version()
    _, files = lake.read_partition(store, "fx_rates/date=2026-11-27")
    frame = pl.concat(pl.read_parquet(data) for data in files.values())
    assert frame.height == 2 and set(frame["date"]) == {DAY}


def test_a_rerun_replaces_the_partition_and_leaves_nothing_stale(con, store):
    prefix = "fx_rates/date=2026-11-27"
    store.put(f"{prefix}/part-old.parquet", b"stale")
    first = export.export_table(con, "fx_rates", DAY, store, run_id="run-1")
    con.execute("delete from fx_rates where quote = 'CNY'")
    second = export.export_table(con, "fx_rates", DAY, store, run_id="run-2")
    [new_file] = [entry["file"] for entry in second["files"]]
    assert store.list(prefix) == sorted([f"{prefix}/{new_file}", f"{prefix}/{lake.MANIFEST}"])
    assert new_file != first["files"][0]["file"]  # a new generation never overwrites the one readers may hold
    assert json.loads(store.get(f"{prefix}/{lake.MANIFEST}"))["rows"] == 1


def test_globbing_readers_of_a_folder_see_one_file_per_partition(con, tmp_path):
    store = lake.open_store(tmp_path)
    for _ in range(2):
        export.export_table(con, "fx_rates", DAY, store)
    count = duckdb.sql(f"select count(*) from read_parquet('{tmp_path}/fx_rates/*/*.parquet', "
                       "hive_partitioning=true)").fetchall()[0][0]
    assert count == 2


def test_csv_exports_sit_beside_parquet(con, tmp_path):
    manifest = export.export_table(con, "fx_rates", DAY, lake.open_store(tmp_path), fmt="csv")
    path = tmp_path / "fx_rates" / "date=2026-11-27" / manifest["files"][0]["file"]
    assert path.suffix == ".csv" and path.read_text().startswith("date,base,quote,rate,source")


def test_any_table_dated_by_snapshot_date_or_date_is_exportable(con, tmp_path):
    con.execute("create table index_like (snapshot_date DATE, gpu VARCHAR, usd DOUBLE)")
    con.execute("insert into index_like values ('2026-11-27', 'H100', 2.0), ('2026-11-26', 'H100', 1.0)")
    tables = export.exportable(con)
    assert tables["index_like"] == "snapshot_date" and tables["fx_rates"] == "date" and "gpus" not in tables
    assert export.export_table(con, "index_like", DAY, lake.open_store(tmp_path))["rows"] == 1


@pytest.mark.parametrize("table", ["../../etc", "gpus", "fx_rates/../../x"])
def test_export_paths_cannot_leave_the_export_folder(con, tmp_path, table):
    with pytest.raises(export.ExportError):
        export.export_table(con, table, DAY, lake.open_store(tmp_path / "lake"))
    assert not any(tmp_path.glob("etc*")) and not (tmp_path / "lake").exists()


def test_unknown_formats_are_refused(con, tmp_path):
    with pytest.raises(export.ExportError, match="unknown export format"):
        export.export_table(con, "fx_rates", DAY, lake.open_store(tmp_path), fmt="xlsx")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_store_that_is_down_leaves_the_date_unpublished_until_it_answers(con, s3, s3_server, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    down = export.publish_date(con, DAY, ["fx_rates"], "parquet", "run-1", lake.open_store(s3))
    assert down.status == "unpublished" and s3 in down.error
    assert export.unpublished(con, s3) == [(DAY, "parquet", ["fx_rates"])]
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    up = export.publish_date(con, DAY, ["fx_rates"], "parquet", "run-2", lake.open_store(s3))
    assert up.status == "published" and export.unpublished(con, s3) == []
    assert con.execute("select status, run_id, published_at is not null from publications").fetchall() == [
        ("published", "run-2", True)]
