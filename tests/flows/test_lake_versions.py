"""The published lake on S3, as its readers get it: a nightly run to a local S3 server, then a rebuild of the same day
that changes the estimates. Each table's current version is the warehouse; the first version, `lake history`,
`export --as-of` and `sql --lake --as-of` still give back what the nightly run published; a Dask cluster whose
workers are separate processes reads every table."""

from dataclasses import dataclass
from datetime import UTC, datetime

import polars as pl
import pytest
from typer.testing import CliRunner

from flows import pipeline
from flows.cli.app import app
from flows.derive import EXPORTED
from tests.pipeline_support import SLIM_NIGHT, serve_fixtures, set_env
from tests.sources_support import SNAPSHOT
from warehouse import db, delta, export

runner = CliRunner()


@dataclass(frozen=True)
class Published:
    env: dict[str, str]
    run_id: str  # the nightly run's
    first: dict[str, pl.DataFrame]  # each table's rows as the nightly run published them
    versions: dict[str, int]  # each table's version the nightly run made
    between: datetime  # a moment after the nightly run's commits and before the rebuild's

    def uri(self, table: str) -> str:
        return f"{self.env['GPULEDGER_EXPORTS']}/{table}"

    def storage_options(self) -> dict[str, str]:
        """What an analyst's reader is given to reach the store (here the local S3 server over http)."""
        return {"AWS_ENDPOINT_URL": self.env["AWS_ENDPOINT_URL"], "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
                "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


def warehouse_rows(table: str) -> pl.DataFrame:
    with db.connect(read_only=True) as con:
        return con.sql(f"select * from {table} where snapshot_date = ?", params=[SNAPSHOT]).pl().sort(pl.all())


def same_rows(found: pl.DataFrame, expected: pl.DataFrame) -> bool:
    return found.select(expected.columns).sort(pl.all()).equals(expected)


@pytest.fixture(scope="module")
def published(s3_server, tmp_path_factory) -> Published:
    root = tmp_path_factory.mktemp("published")
    env = {"GPULEDGER_HOME": str(root / "home"), "GPULEDGER_EXPORTS": f"s3://{s3_server.bucket()}/lake",
           "GPULEDGER_LAKE_UPKEEP_DAYS": "0", **s3_server.env(),  # upkeep due at once: the nightly run does it
           **SLIM_NIGHT}  # neither the report nor the speed tiers are this module's subject
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
            patch.delenv(name, raising=False)
        set_env(patch, env)
        with serve_fixtures(patch):
            nightly = pipeline.run(trigger="test")
            assert (nightly.status, nightly.publication) == ("ok", "published")
            first = {table: warehouse_rows(table) for table in EXPORTED}
            versions = {table: delta.open_table(f"{env['GPULEDGER_EXPORTS']}/{table}").version() for table in EXPORTED}
            between = datetime.now(UTC)
            patch.setenv("GPULEDGER_INPUT_PER_OUTPUT", "1")  # the rebuild prices other requests: other numbers
            assert pipeline.rebuild(SNAPSHOT)[SNAPSHOT.isoformat()]["publication"] == "published"
    return Published(env, nightly.run_id, first, versions, between)


@pytest.fixture
def lake_env(published, monkeypatch) -> Published:
    """This test reads the published warehouse and lake."""
    set_env(monkeypatch, published.env)
    return published


@pytest.mark.slow
def test_each_tables_current_version_is_the_warehouse_and_the_nightly_version_reads_the_nightly_numbers(lake_env):
    options = lake_env.storage_options()
    for table in EXPORTED:
        current = pl.read_delta(lake_env.uri(table), storage_options=options)
        assert same_rows(current, warehouse_rows(table)), table
        nightly = pl.read_delta(lake_env.uri(table), version=lake_env.versions[table], storage_options=options)
        assert same_rows(nightly, lake_env.first[table]), table
    assert not warehouse_rows("cost_per_mtok").equals(lake_env.first["cost_per_mtok"])  # the rebuild changed them
    with db.connect(read_only=True) as con:  # the nightly run found every table's upkeep due, and did it
        upkept = con.execute("select table_name from lake_upkeep where done_at is not null order by 1").fetchall()
    assert [t for (t,) in upkept] == sorted([*EXPORTED, *export.KEYED])  # and of the answers written once per key


@pytest.mark.slow
def test_history_and_as_of_give_back_what_was_published_before_the_rebuild(lake_env, tmp_path):
    listed = runner.invoke(app, ["lake", "history", "--table", "cost_per_mtok", "-f", "json"])
    assert listed.exit_code == 0, listed.output
    writes = [v for v in pl.read_json(listed.output.encode()).to_dicts() if v["operation"] == "WRITE"]
    assert [w["run_id"] for w in writes][-1] == lake_env.run_id and writes[0]["run_id"].startswith("rebuild-")
    assert all(w["date"] == SNAPSHOT.isoformat() and w["quality"] and w["estimator_version"] for w in writes)
    assert writes[0]["replaced_rows"] == writes[-1]["rows"] == lake_env.first["cost_per_mtok"].height

    version = str(lake_env.versions["cost_per_mtok"])
    one = runner.invoke(app, ["export", "--as-of", version, "--table", "cost_per_mtok", "--out", str(tmp_path / "v")])
    assert one.exit_code == 0, one.output
    assert same_rows(pl.read_parquet(tmp_path / "v" / "cost_per_mtok.parquet"), lake_env.first["cost_per_mtok"])

    every = runner.invoke(app, ["export", "--as-of", lake_env.between.isoformat(), "--out", str(tmp_path / "t")])
    assert every.exit_code == 0, every.output
    for table in EXPORTED:
        assert same_rows(pl.read_parquet(tmp_path / "t" / f"{table}.parquet"), lake_env.first[table]), table

    query = "select count(*) as n, sum(usd_per_mtok) as usd from cost_per_mtok"
    then = runner.invoke(app, ["sql", query, "--lake", "cost_per_mtok", "--as-of", version, "-f", "json"])
    assert then.exit_code == 0, then.output
    first = lake_env.first["cost_per_mtok"]
    assert pl.read_json(then.output.encode()).row(0) == pytest.approx((first.height, first["usd_per_mtok"].sum()))


@pytest.fixture(scope="module")
def dask_client():
    """A local Dask cluster whose two workers are separate processes, as on a cluster of machines."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


@pytest.mark.slow
def test_a_dask_cluster_reads_every_published_table_as_the_warehouse_holds_it(lake_env, dask_client):
    import dask
    import dask_deltatable
    import pandas as pd

    options = lake_env.storage_options()
    s3fs_options = {"key": "testing", "secret": "testing", "endpoint_url": options["AWS_ENDPOINT_URL"]}
    # s3a://: dask-deltatable 0.4 adds delta-rs settings to the fsspec options of an s3:// path, which s3fs
    # refuses (AioSession: unexpected keyword AWS_S3_ALLOW_UNSAFE_RENAME); the s3a alias reaches the same bucket.
    frames = [dask_deltatable.read_deltalake(lake_env.uri(table).replace("s3://", "s3a://", 1),
                                             delta_storage_options=options, storage_options=s3fs_options,
                                             pyarrow_to_pandas={"types_mapper": pd.ArrowDtype})  # keeps int nulls
              for table in EXPORTED]
    assert all(frame.npartitions >= 1 for frame in frames)
    for table, computed in zip(EXPORTED, dask.compute(*frames), strict=True):  # one graph over the workers
        read, stored = pl.from_pandas(computed), warehouse_rows(table)
        for day in stored["snapshot_date"].unique():  # every date the warehouse holds, as a whole
            expected = stored.filter(pl.col("snapshot_date") == day)
            found = read.filter(pl.col("snapshot_date") == day).select(stored.columns).cast(dict(stored.schema))
            assert same_rows(found, expected), (table, day)
