import io
import socket
from datetime import date, datetime, timedelta

import polars as pl
import pytest

from warehouse import config, db, delta, export, lake

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


def lake_rows(store: lake.Store, table: str, version: int | None = None) -> pl.DataFrame:
    published = delta.open_table(delta.table_uri(store.url, table), version)
    return pl.from_arrow(delta.read(published)).sort(pl.all())


def test_a_date_is_one_commit_to_the_tables_delta_table_saying_what_made_it(con, store):
    con.execute("insert into catalog_versions values ('gpus', 'abc123', 1, '2026-11-27 01:00')")
    written = export.export_table(con, "fx_rates", DAY, store, run_id="run-1", made_by={"estimator_version": "9.9"})
    assert (written.version, written.rows, written.location) == (1, 2, f"{store.url}/fx_rates")
    stored = con.sql("select * from fx_rates where date = ?", params=[DAY]).pl()
    assert lake_rows(store, "fx_rates").select(stored.columns).equals(stored.sort(pl.all()))
    [commit] = [h for h in delta.history(delta.open_table(written.location)) if h["operation"] == "WRITE"]
    assert (commit["run_id"], commit["date"], commit["rows"], commit["estimator_version"], commit["catalogues"]) == (
        "run-1", "2026-11-27", 2, "9.9", {"gpus": "abc123"})


def test_a_rerun_is_a_new_version_and_the_first_still_reads_as_published(con, store):
    first = export.export_table(con, "fx_rates", DAY, store, run_id="run-1")
    con.execute("delete from fx_rates where quote = 'CNY'")
    second = export.export_table(con, "fx_rates", DAY, store, run_id="run-2")
    assert second.version == first.version + 1
    assert lake_rows(store, "fx_rates")["quote"].to_list() == ["USD"]
    assert lake_rows(store, "fx_rates", first.version)["quote"].to_list() == ["CNY", "USD"]


def test_each_commit_names_the_quality_its_day_was_judged(con, tmp_path):
    con.execute("insert into runs (run_id, snapshot_date, started_at, status, trigger, sources, quality) values "
                "('run-1', '2026-11-27', '2026-11-27 02:00', 'ok', 'test', 'fx', 'suspect')")
    store = lake.open_store(tmp_path)
    export.export_table(con, "fx_rates", DAY, store)
    export.export_table(con, "fx_rates", DAY, store, made_by={"quality": "ok"})  # what a run just judged wins
    qualities = [h["quality"] for h in delta.history(delta.open_table(f"{tmp_path}/fx_rates")) if h["run_id"]]
    assert qualities == ["ok", "suspect"]


def test_csv_exports_are_per_date_folders_outside_the_delta_tables(con, tmp_path):
    written = export.export_table(con, "fx_rates", DAY, lake.open_store(tmp_path), fmt="csv")
    [path] = [tmp_path / key for key in written.files]
    assert path.parent == tmp_path / "csv" / "fx_rates" / "date=2026-11-27"
    assert path.suffix == ".csv" and path.read_text().startswith("date,base,quote,rate,source")
    assert not (tmp_path / "fx_rates").exists()


def test_any_table_dated_by_snapshot_date_or_date_is_exportable(con, tmp_path):
    con.execute("create table index_like (snapshot_date DATE, gpu VARCHAR, usd DOUBLE)")
    con.execute("insert into index_like values ('2026-11-27', 'H100', 2.0), ('2026-11-26', 'H100', 1.0)")
    tables = export.exportable(con)
    assert tables["index_like"] == "snapshot_date" and tables["fx_rates"] == "date" and "gpus" not in tables
    assert export.export_table(con, "index_like", DAY, lake.open_store(tmp_path)).rows == 1


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


def test_upkeep_is_due_a_period_after_the_first_publication_then_after_each_upkeep(con, tmp_path):
    store = lake.open_store(tmp_path)
    export.export_table(con, "fx_rates", DAY, store)
    first = datetime(2026, 11, 27, 3)
    assert export.upkeep_due(con, store.url, ["fx_rates"], first, every_days=7) == []  # its clock starts
    assert export.upkeep_due(con, store.url, ["fx_rates"], first + timedelta(days=7), every_days=7) == ["fx_rates"]
    [done] = export.upkeep(con, store, ["fx_rates", "offers"], retention_days=30)  # offers was never published
    assert done.table == "fx_rates"
    later = config.utc_now()
    assert export.upkeep_due(con, store.url, ["fx_rates"], later + timedelta(days=6), every_days=7) == []
    assert export.upkeep_due(con, store.url, ["fx_rates"], later + timedelta(days=7), every_days=7) == ["fx_rates"]


def old_lake(con, store: lake.Store, table: str, day: date, fmt: str = "parquet") -> None:
    """A partition as gpuledger wrote it before the Delta tables: the rows behind a manifest."""
    frame = con.sql(f"select * from {table} where {export.exportable(con)[table]} = ? order by all", params=[day]).pl()
    buffer = io.BytesIO()
    if fmt == "parquet":
        frame.write_parquet(buffer)
    else:
        frame.write_csv(buffer)
    lake.replace_partition(store, f"{table}/date={day}", [(buffer.getvalue(), frame.height)], fmt, f"old-{day}",
                           table=table, date=day.isoformat())


def test_migrate_turns_a_manifest_lake_into_delta_tables_keeping_every_date(con, store):
    con.execute("insert into fx_rates values ('2026-11-25', 'EUR', 'USD', 1.13, 'ecb', 'r0', '2026-11-25 16:00')")
    old_lake(con, store, "fx_rates", date(2026, 11, 25), "csv")
    old_csv = store.get(next(k for k in store.list("fx_rates/date=2026-11-25") if k.endswith(".csv")))
    for day in (date(2026, 11, 26), DAY):
        old_lake(con, store, "fx_rates", day)
    con.execute("delete from fx_rates where quote = 'CNY'")
    export.export_table(con, "fx_rates", DAY, store)  # published again after the upgrade: newer than the old lake

    migrated = export.migrate(store, retention_days=30)
    assert [(m.day.isoformat(), m.outcome) for m in migrated] == [
        ("2026-11-25", "csv"), ("2026-11-26", "committed"), ("2026-11-27", "superseded")]
    stored = con.sql("select * from fx_rates where date >= '2026-11-26'").pl()
    assert lake_rows(store, "fx_rates").select(stored.columns).equals(stored.sort(pl.all()))
    [commit] = [h for h in delta.history(delta.open_table(f"{store.url}/fx_rates")) if h["migrated_from"]]
    assert (commit["date"], commit["run_id"]) == ("2026-11-26", "old-2026-11-26")  # the old run, kept
    assert commit["migrated_from"] == f"{store.url}/fx_rates/date=2026-11-26/{lake.MANIFEST}"
    assert export.manifest_partitions(store) == []
    [csv] = [k for k in store.list("csv/fx_rates/date=2026-11-25") if k.endswith(".csv")]
    assert store.get(csv) == old_csv
    assert export.migrate(store, retention_days=30) == []  # once: nothing is left to convert


def test_a_day_read_span_by_span_comes_in_the_order_of_one_sort_of_the_whole_day(con, monkeypatch):
    """own_vs_rent is read in spans of GPUs (its first lake-order column), each sorted alone: the same rows in the same
    order as the whole day sorted at once, whatever the spans' size. (The rows are a day's as stored before own_vs_rent
    became a view, migration 0026: the view reads them as it reads the days it computes.)"""
    con.execute("""insert into own_vs_rent_stored by name select ?::date as snapshot_date, 'model-' || (i % 7) as model,
        ['H100 SXM5 80GB', 'A100 SXM4 80GB', 'L40S 48GB', 'B200 SXM 180GB'][i % 4 + 1] as gpu, 'int4' as precision,
        4096 as context_tokens, 1 + i % 3 as streams, 'measured' as method, ['on_demand', 'interruptible'][i // 4 % 2 + 1]
        as price_kind, 8 as gpu_count, 1 << (i // 8 % 4) as tp, 1 as replicas, 1e5 + i as hardware_usd,
        ?::date as quoted_on, 5.0 as years, 0.1 as usd_per_kwh, 100.0 as maintenance_usd_per_month,
        0.7 as utilisation, 2.0 + i / 7 as own_usd_per_hr, false as power_unknown, '1.0' as estimator_version
        from range(200) t(i)""", [DAY, DAY])
    whole = export._day_rows(con, "own_vs_rent", DAY, "parquet")[0].pl()
    for rows, spans in ((16, 4), (100, 2), (1000, 1)):  # 50 rows a GPU: a GPU with more rows is a span alone
        monkeypatch.setattr(export, "BATCH_ROWS", rows)
        assert len(export._spans(con, "own_vs_rent", "snapshot_date", DAY)[0]) == spans
        batches, column = export._batches(con, "own_vs_rent", DAY, "parquet")
        assert column == "snapshot_date" and batches.num_rows == 200
        assert pl.from_arrow(batches.read().read_all()).equals(whole)


def test_the_window_ages_out_only_dates_whose_facts_the_lake_holds(tmp_path):
    store = lake.open_store(tmp_path / "lake")
    days = [DAY + timedelta(days=n) for n in range(3)]

    def day_of(table: str, day: date, **columns) -> None:
        rows = pl.DataFrame({"snapshot_date": [day], "usd": [1.0]} | {k: [v] for k, v in columns.items()},
                            schema_overrides={k: pl.String for k in columns}).to_arrow()
        delta.publish_day(delta.table_uri(store.url, table), table, "snapshot_date", day, rows, {}, 30)

    for day in days:
        day_of("cost_per_mtok", day)
        day_of("cost_at_speed", day)
        day_of("own_vs_rent", day)
    # the first day was published before the lake kept replica prices; the second before they named speed answers
    day_of("replica_prices", days[1], grid_sha256="g", speed_sha256=None)
    day_of("replica_prices", days[2], grid_sha256="g", speed_sha256="s")
    day_of("own_hardware", days[2], grid_sha256="g")  # own_hardware begins on the third day
    assert export.age_out(store, None, "upkeep") == {}  # `all`: nothing leaves
    assert export.age_out(store, 1, "upkeep") == {"cost_per_mtok": [days[1]]}
    held = {table: delta.held(delta.open_table(delta.table_uri(store.url, table))) for table in export.WINDOWED}
    assert held == {"cost_per_mtok": {days[0], days[2]},  # days[0] stays: nothing in the lake could compute it again
                    "cost_at_speed": set(days), "own_vs_rent": set(days)}
    day_of("own_hardware", days[1], grid_sha256="g")
    assert export.age_out(store, 1, "upkeep", ["own_vs_rent", "cost_at_speed"]) == {"own_vs_rent": [days[1]]}


def test_a_lake_without_the_key_column_holds_no_date_of_its_facts(tmp_path):
    store = lake.open_store(tmp_path / "lake")
    rows = pl.DataFrame({"snapshot_date": [DAY], "usd": [1.0]}).to_arrow()  # replica prices as published before 0026
    delta.publish_day(delta.table_uri(store.url, "replica_prices"), "replica_prices", "snapshot_date", DAY, rows, {}, 30)
    assert not export.fact_holds(store, "replica_prices", "speed_sha256")(DAY)
    assert not export.fact_holds(store, "own_hardware", "grid_sha256")(DAY)  # no such table yet
    later = DAY + timedelta(days=1)  # the next night's prices add the column: the old date reads it as NULL
    rows = pl.DataFrame({"snapshot_date": [later], "usd": [1.0], "speed_sha256": ["s"]}).to_arrow()
    delta.publish_day(delta.table_uri(store.url, "replica_prices"), "replica_prices", "snapshot_date", later, rows, {},
                      30)
    holds = export.fact_holds(store, "replica_prices", "speed_sha256")
    assert [holds(day) for day in (DAY, later, later + timedelta(days=1))] == [False, True, False]


def test_the_days_held_by_a_view_are_the_days_of_what_it_is_computed_from(con):
    """own_vs_rent's days are those of own_hardware (the facts it is computed from) and of own_vs_rent_stored (the days
    derived before it was a view); the view is never computed to find them."""
    con.execute("""insert into own_hardware (snapshot_date, gpu, price_kind, gpu_count, usd_low, usd_high, quoted_on,
        years, usd_per_kwh, maintenance_usd_per_month, utilisation, grid_sha256)
        values ('2026-11-20', 'H100 SXM5 80GB', 'list', 8, 2e5, 3e5, '2026-09-16', 3, 0.1, 500, 0.5, 'no-such-grid')""")
    con.execute("""insert into own_vs_rent_stored (snapshot_date, model, gpu, precision, context_tokens, streams, method,
        price_kind, gpu_count, tp, replicas, hardware_usd, quoted_on, years, usd_per_kwh, maintenance_usd_per_month,
        utilisation, own_usd_per_hr, power_unknown, estimator_version) values ('2026-11-18', 'm', 'g', 'bf16', 4096, 1,
        'measured', 'list', 8, 1, 8, 1e5, '2026-09-16', 3, 0.1, 500, 0.5, 5, false, '1')""")
    assert con.execute("select count(*) from own_vs_rent").fetchall() == [(1,)]  # the grid named holds no estimate
    assert export.held_days(con, ["own_vs_rent"], date(2026, 11, 1), date(2026, 11, 19)) == [date(2026, 11, 18)]
    assert export.held_days(con, ["own_vs_rent"], date(2026, 11, 1), DAY) == [date(2026, 11, 20), date(2026, 11, 18)]
