import duckdb
import pytest

from warehouse import config, db


def add_migration(monkeypatch, migration):
    """Pretend the code knows one migration more than the file has."""
    known = db.migrations()
    monkeypatch.setattr(db, "migrations", lambda: (*known, migration))


def test_first_connect_creates_the_file_with_every_table():
    with db.connect() as con:
        tables = {t for (t,) in con.execute("select table_name from information_schema.tables").fetchall()}
    assert config.db_path().exists()
    for table in ("runs", "fetches", "offers", "unmapped_gpus", "quarantine", "fx_rates", "gpus", "gpu_aliases",
                  "models", "hardware_prices", "daily_prices", "estimates", "cost_per_mtok", "schema_migrations"):
        assert table in tables


def test_an_older_file_is_upgraded(monkeypatch):
    with db.connect():
        pass  # a file at the current version
    extra = (db.schema_version() + 1, "add_note", "alter table runs add column note VARCHAR;")
    add_migration(monkeypatch, extra)
    with db.connect() as con:
        versions = [v for (v,) in con.execute("select version from schema_migrations order by 1").fetchall()]
        columns = [c for (c,) in con.execute("select column_name from information_schema.columns "
                                             "where table_name = 'runs'").fetchall()]
    assert versions[-1] == extra[0]
    assert "note" in columns


def test_a_failed_migration_leaves_the_file_as_it_was(gpuledger_home):
    with db.connect():
        pass
    broken = (db.schema_version() + 1, "broken", "alter table runs add column x INTEGER; select * from nowhere;")
    with pytest.MonkeyPatch.context() as patch:  # undone alone: the test's own GPULEDGER_HOME stays set
        add_migration(patch, broken)
        with pytest.raises(duckdb.Error):
            db.connect()
    assert db.migrations()[-1] != broken and config.db_path().is_relative_to(gpuledger_home)
    with db.connect() as con:
        columns = [c for (c,) in con.execute("select column_name from information_schema.columns "
                                             "where table_name = 'runs'").fetchall()]
    assert "x" not in columns


def test_a_file_from_a_newer_version_is_refused():
    with db.connect() as con:
        con.execute("insert into schema_migrations values (999, 'future', now())")
    with pytest.raises(db.WarehouseError, match="schema version 999, newer than this gpuledger knows"):
        db.connect()
    with pytest.raises(db.WarehouseError, match="newer"):
        db.connect(read_only=True)


def test_read_only_needs_an_existing_current_file(monkeypatch):
    with pytest.raises(db.WarehouseError, match="run `gpuledger init` first"):
        db.connect(read_only=True)
    with db.connect():
        pass
    extra = (db.schema_version() + 1, "later", "select 1;")
    add_migration(monkeypatch, extra)
    with pytest.raises(db.WarehouseError, match="older schema"):
        db.connect(read_only=True)


def test_read_only_notices_a_missing_migration_below_the_newest():
    with db.connect() as con:
        con.execute("delete from schema_migrations where version = 1")
    with pytest.raises(db.WarehouseError, match="older schema"):
        db.connect(read_only=True)


def test_read_only_connections_cannot_write():
    with db.connect():
        pass
    with db.connect(read_only=True) as con, pytest.raises(duckdb.Error, match="read-only"):
        con.execute("delete from gpus")


def test_the_duckdb_shell_can_read_the_warehouse():
    import subprocess
    import sys
    from pathlib import Path

    with db.connect():
        pass
    shell = Path(sys.executable).parent / "duckdb"  # from duckdb-cli, a test dependency
    out = subprocess.run([shell, "-readonly", "-csv", str(config.db_path()), "-c", "select count(*) from schema_migrations"],
                         capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[1] == str(len(db.migrations()))


def test_writes_go_in_small_row_groups_that_the_duckdb_shell_reads():
    # a checkpoint rewrites the row group a load appended to: small ones keep its memory small
    import subprocess
    import sys
    from pathlib import Path

    with db.connect() as con:
        con.execute("create table numbers as select range as n from range(40000)")
        con.execute("checkpoint")
        groups = con.execute("select count(distinct row_group_id) from pragma_storage_info('numbers')").fetchall()
    assert groups == [(-(-40000 // db.ROW_GROUP_SIZE),)] and db.ROW_GROUP_SIZE < 40000
    shell = Path(sys.executable).parent / "duckdb"
    out = subprocess.run([shell, "-readonly", "-csv", str(config.db_path()), "-c", "select sum(n) from numbers"],
                         capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[1] == str(sum(range(40000)))


def test_what_a_writer_spills_goes_beside_the_warehouse_not_into_the_working_directory():
    with db.connect() as con:
        assert con.execute("select current_setting('temp_directory')").fetchall() == [(f"{config.db_path()}.tmp",)]


def test_migration_0012_keeps_the_offers_and_drops_their_index(monkeypatch):
    known = db.migrations()
    monkeypatch.setattr(db, "migrations", lambda: tuple(m for m in known if m[0] < 12))
    row = ("2026-11-27", "2026-11-27 22:00:00", "run-1", "vastai", "42", "H100 SXM", "H100 SXM", 1, None, 80.0,
           "on_demand", 2.0, 2.0, "USD", 2.0, "Texas", "US", "datacenter", 0.99, True, "available", '{"vcpus": 8}',
           None, None, None)
    with db.connect() as con:
        con.execute(f"insert into offers values ({', '.join('?' * len(row))})", list(row))
    monkeypatch.setattr(db, "migrations", lambda: known)
    with db.connect() as con:
        kept = con.execute("select offer_id, extras->>'vcpus', usd_per_gpu_hr from offers").fetchall()
        constraints = con.execute("select constraint_type from duckdb_constraints() where table_name = 'offers' "
                                  "and constraint_type != 'NOT NULL'").fetchall()
        first = [d[0] for d in con.execute("select * from offers limit 0").description][:len(row)]  # later migrations add more
        con.execute(f"insert into offers ({', '.join(first)}) values ({', '.join('?' * len(row))})", list(row))  # the key is load's job
    assert kept == [("42", "8", 2.0)] and constraints == []


def test_migration_0025_keeps_the_days_stored_before_the_cost_view_and_a_derive_replaces_them(monkeypatch):
    """cost_per_mtok became a view of replica prices and estimate grids; the days stored before read as they were."""
    import polars as pl

    from warehouse import derived

    known = db.migrations()
    monkeypatch.setattr(db, "migrations", lambda: tuple(m for m in known if m[0] < 25))
    row = {"snapshot_date": "2026-11-26", "model": "llama-3.3-70b", "gpu": "H100 SXM5 80GB", "precision": "bf16",
           "context_tokens": 4096, "streams": 32, "provider": "vastai", "price_kind": "on_demand",
           "replica_pricing": "one_listing", "method": "measured", "estimator_version": "1.6.0", "tp": 2,
           "agg_tok_s": 1234.5, "replica_usd_per_hr": 4.2, "usd_per_mtok": 0.945068, "offer_ids": "42",
           "price_observed_at": "2026-11-26 22:00:00", "native_currency": "USD", "fx_rate": None, "fx_date": None,
           "fx_source": None, "quality": "ok", "usd_per_mtok_low": 0.8, "usd_per_mtok_high": 1.1, "input_tokens": 3072,
           "output_tokens": 1024, "deployable": True, "not_deployable_reason": None, "engine": "trtllm"}
    insert = f"insert into cost_per_mtok ({', '.join(row)}) values ({', '.join('?' * len(row))})"
    with db.connect() as con:
        con.execute(insert, list(row.values()))
        con.execute(insert, list((row | {"snapshot_date": "2026-11-27"}).values()))
        con.execute("insert into estimates (model, gpu, precision, context_tokens, streams, method, estimator_version, "
                    "tp, multi_node, uncertain, computed_at) values "
                    "('m', 'g', 'bf16', 4096, 1, 'measured', '1.6.0', 1, false, false, now())")
        columns = con.execute("select column_name, data_type from information_schema.columns "
                              "where table_name = 'cost_per_mtok' order by ordinal_position").fetchall()
        before = con.execute("select * from cost_per_mtok order by snapshot_date").fetchall()
    monkeypatch.setattr(db, "migrations", lambda: known)
    with db.connect() as con:
        assert con.execute("select table_type from information_schema.tables where table_name = 'cost_per_mtok'"
                           ).fetchall() == [("VIEW",)]
        assert con.execute("select column_name, data_type from information_schema.columns "
                           "where table_name = 'cost_per_mtok' order by ordinal_position").fetchall() == columns
        assert con.execute("select * from cost_per_mtok order by snapshot_date").fetchall() == before
        assert con.execute("select count(*) from estimates").fetchall() == [(0,)]  # a grid without a key backs no day
        # deriving 2026-11-27 again replaces its stored rows by its replica prices (none here); 2026-11-26 stays
        prices = pl.DataFrame(schema={"snapshot_date": pl.Date, "gpu": pl.String, "provider": pl.String,
                                      "price_kind": pl.String, "tp": pl.Int64, "replica_pricing": pl.String})
        derived.replace_for_date(con, before[1][0], {"replica_prices": prices})
        assert con.execute("select * from cost_per_mtok").fetchall() == before[:1]


def test_migration_0026_keeps_the_days_stored_before_the_speed_and_own_views_and_a_derive_replaces_them(monkeypatch):
    """cost_at_speed and own_vs_rent became views of per-night facts and stored answers; the days stored before read
    as they were, with the same columns and types, until a derive of the day replaces them."""
    import polars as pl

    from warehouse import derived

    known = db.migrations()
    monkeypatch.setattr(db, "migrations", lambda: tuple(m for m in known if m[0] < 26))
    speed = {"snapshot_date": "2026-11-26", "model": "llama-3.3-70b", "gpu": "H100 SXM5 80GB", "provider": "vastai",
             "price_kind": "on_demand", "precision": "bf16", "speed_tier": "35", "min_user_tok_s": 35.0,
             "max_ttft_s": 2.0, "input_tokens": 3072, "output_tokens": 1024, "tp": 2, "streams": 12,
             "stopped_by": "target", "user_tok_s": 36.5, "ttft_s": 0.4, "agg_tok_s": 438.0,
             "replica_pricing": "one_listing", "replica_usd_per_hr": 4.2, "usd_per_mtok": 2.66, "offer_ids": "42",
             "deployable": True, "method": "measured", "engine": "trtllm", "estimator_version": "1.9.0"}
    own = {"snapshot_date": "2026-11-26", "model": "llama-3.3-70b", "gpu": "H100 SXM5 80GB", "precision": "bf16",
           "context_tokens": 4096, "streams": 32, "method": "measured", "price_kind": "market", "gpu_count": 8, "tp": 2,
           "replicas": 4, "hardware_usd": 2.5e5, "quoted_on": "2026-09-16", "years": 3.0, "usd_per_kwh": 0.1,
           "maintenance_usd_per_month": 500.0, "utilisation": 0.5, "own_usd_per_hr": 10.5, "power_unknown": False,
           "estimator_version": "1.9.0", "deployable": True}
    shapes, before = {}, {}
    with db.connect() as con:
        for table, row in (("cost_at_speed", speed), ("own_vs_rent", own)):
            insert = f"insert into {table} ({', '.join(row)}) values ({', '.join('?' * len(row))})"
            con.execute(insert, list(row.values()))
            con.execute(insert, list((row | {"snapshot_date": "2026-11-27"}).values()))
            shapes[table] = con.execute("select column_name, data_type, ordinal_position from information_schema.columns "
                                        "where table_name = ? order by ordinal_position", [table]).fetchall()
            before[table] = con.execute(f"select * from {table} order by snapshot_date").fetchall()
    monkeypatch.setattr(db, "migrations", lambda: known)
    with db.connect() as con:
        for table in ("cost_at_speed", "own_vs_rent"):
            assert con.execute("select table_type from information_schema.tables where table_name = ?", [table]
                               ).fetchall() == [("VIEW",)]
            assert con.execute("select column_name, data_type, ordinal_position from information_schema.columns "
                               "where table_name = ? order by ordinal_position", [table]).fetchall() == shapes[table]
            assert con.execute(f"select * from {table} order by snapshot_date").fetchall() == before[table]
        # deriving 2026-11-27 again replaces its stored rows by its facts (none here); 2026-11-26 stays
        day = before["own_vs_rent"][1][0]
        prices = pl.DataFrame(schema={"snapshot_date": pl.Date, "gpu": pl.String, "provider": pl.String,
                                      "price_kind": pl.String, "tp": pl.Int64, "replica_pricing": pl.String})
        hardware = pl.DataFrame(schema={"snapshot_date": pl.Date, "gpu": pl.String, "price_kind": pl.String,
                                        "gpu_count": pl.Int64})
        derived.replace_for_date(con, day, {"replica_prices": prices, "own_hardware": hardware})
        for table in ("cost_at_speed", "own_vs_rent"):
            assert con.execute(f"select * from {table}").fetchall() == before[table][:1]


def test_migration_0027_gives_the_models_a_hidden_size_the_catalogue_fills_and_older_derived_rows_leave_empty(
        monkeypatch):
    """A derived row stored before 0027 keeps its fields and has no hidden size (the estimator falls back to its
    estimate) until its config is read again; the curated catalogue, loaded again, states its rows'."""
    from warehouse import catalog

    known = db.migrations()
    monkeypatch.setattr(db, "migrations", lambda: tuple(m for m in known if m[0] < 27))
    with db.connect() as con:
        con.execute("insert into models (model_id, name, vendor, arch, total_params_b, active_params_b, layers, "
                    "native_precision, source, origin) values ('old-derived', 'old', 'someone', 'dense', 1.0, 1.0, "
                    "16, 'bf16', 'derived from someone/old config.json', 'derived')")
    monkeypatch.setattr(db, "migrations", lambda: known)
    with db.connect() as con:
        assert con.execute("select layers, hidden_size from models where model_id = 'old-derived'").fetchall() == [
            (16, None)]
        catalog.load_catalogs(con)
        stated = dict(con.execute("select model_id, hidden_size from models where origin = 'curated'").fetchall())
    assert stated["llama-3.3-70b"] == 8192 and stated["gpt-oss-120b"] == 2880
    assert stated["deepseek-v4.1-flash"] is None  # no config.json and no source states it
