from datetime import date

import duckdb
import polars as pl
import pytest

from warehouse import db, export

DAY = date(2026, 11, 27)


@pytest.fixture
def con():
    with db.connect() as con:
        con.execute("""insert into fx_rates values
            ('2026-11-27', 'EUR', 'USD', 1.1171, 'ecb', 'r1', '2026-11-27 16:00'),
            ('2026-11-27', 'EUR', 'CNY', 7.444, 'ecb', 'r1', '2026-11-27 16:00'),
            ('2026-11-26', 'EUR', 'USD', 1.12, 'ecb', 'r0', '2026-11-26 16:00')""")
        yield con


def test_a_partition_holds_exactly_that_date(con, tmp_path):
    path = export.export_table(con, "fx_rates", DAY, tmp_path)
    assert path == tmp_path / "fx_rates" / "date=2026-11-27" / "data.parquet"
    frame = pl.read_parquet(path)
    assert frame.height == 2 and set(frame["date"]) == {DAY}


def test_a_rerun_replaces_the_partition_and_leaves_nothing_stale(con, tmp_path):
    folder = tmp_path / "fx_rates" / "date=2026-11-27"
    folder.mkdir(parents=True)
    (folder / "part-old.parquet").write_bytes(b"stale")
    (folder / ".tmp-crashed").write_bytes(b"half")
    export.export_table(con, "fx_rates", DAY, tmp_path)
    con.execute("delete from fx_rates where quote = 'CNY'")
    export.export_table(con, "fx_rates", DAY, tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == ["data.parquet"]
    count = duckdb.sql(f"select count(*) from read_parquet('{tmp_path}/fx_rates/*/*.parquet', "
                       "hive_partitioning=true)").fetchall()[0][0]
    assert count == 1


def test_csv_exports_sit_beside_parquet(con, tmp_path):
    path = export.export_table(con, "fx_rates", DAY, tmp_path, fmt="csv")
    assert path.name == "data.csv" and path.read_text().startswith("date,base,quote,rate,source")


@pytest.mark.parametrize("table", ["../../etc", "gpus", "fx_rates/../../x"])
def test_export_paths_cannot_leave_the_export_folder(con, tmp_path, table):
    with pytest.raises(export.ExportError):
        export.export_table(con, table, DAY, tmp_path)
    assert not any(tmp_path.parent.glob("etc*"))


def test_unknown_formats_are_refused(con, tmp_path):
    with pytest.raises(export.ExportError, match="unknown export format"):
        export.export_table(con, "fx_rates", DAY, tmp_path, fmt="xlsx")
