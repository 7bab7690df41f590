"""The commands given hostile or absurd input (issue 30, low items): each ends in a clear error or a sound result,
never a traceback, and nothing is written outside the lake or the folder asked for.

One nightly is shared by the module: a day without listings (every GPU provider answered 500), published with
its API prices, FX rates and the report.
"""

import json
import re
import shutil
from datetime import date
from pathlib import Path

import pytest

from flows import pipeline
from flows.replay.faults import CONTROL
from tests.cli_support import invoke
from tests.pipeline_support import serve_fixtures
from tests.sources_support import SNAPSHOT
from warehouse import config, db

PROVIDERS_DOWN = {"/api/v0/bundles/": "500*", "/graphql": "500*", "/v1/oauth2/token": "500*"}
MODEL = "llama-3.3-70b"


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    base = tmp_path_factory.mktemp("cli-hostile")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULEDGER_HOME", str(base / "home"))
        mp.setenv("GPULEDGER_EXPORTS", str(base / "exports"))
        mp.setenv("GPULEDGER_REPORT_MODELS", MODEL)
        with serve_fixtures(mp, faults=PROVIDERS_DOWN) as server:
            mp.setenv("GPULEDGER_NOW", server.now)
            summary = pipeline.run(None, SNAPSHOT, export_format="parquet", trigger="test")
    assert summary.status == "partial" and {summary.sources[s] for s in ("vastai", "runpod", "verda")} == {"failed"}
    return base


@pytest.fixture
def home(night, monkeypatch):
    monkeypatch.setenv("GPULEDGER_HOME", str(night / "home"))
    monkeypatch.setenv("GPULEDGER_EXPORTS", str(night / "exports"))
    monkeypatch.setenv("GPULEDGER_NOW", f"{SNAPSHOT}T23:00:00")
    return night


def test_the_report_of_a_day_without_listings_is_written(home, tmp_path):
    page = home / "exports" / "report" / f"date={SNAPSHOT}" / f"{MODEL}.html"
    assert page.is_file()  # by the nightly: the model page crashed on a day with nothing to price
    output = invoke("report", "--model", MODEL, "--out", str(tmp_path / "site")).output
    # the market page, the models index and the model page
    assert "3 pages" in output and (tmp_path / "site" / f"date={SNAPSHOT}" / "models.html").is_file()
    assert (tmp_path / "site" / f"date={SNAPSHOT}" / f"{MODEL}.html").is_file()


@pytest.mark.parametrize("out", ["a" * 300, "~nosuchuser/x", f"{'b' * 300}/report"])
def test_report_out_that_cannot_be_a_folder_is_a_clear_error(home, out):
    output = invoke("report", "--out", out, code=1).output
    assert output.startswith("error: --out ") and "Traceback" not in output


def test_sql_csv_writes_nested_and_blob_columns(home):
    output = invoke("sql", "select [1, 2] as l, {'a': 'x'} as s, 'abc'::blob as b, 'y' as t", "-f", "csv").output
    assert output.splitlines() == ["l,s,b,t", '"[1, 2]","{""a"": ""x""}",b\'abc\',y']


def test_markdown_keeps_a_cell_with_a_newline_in_its_row(home):
    output = invoke("sql", "select 'two\nlines|piped' as name, 1 as n", "-f", "markdown").output
    assert output.splitlines() == ["| name | n |", "|---|---|", "| two<br>lines\\|piped | 1 |"]


def test_a_date_beyond_tomorrow_is_refused_by_every_command_and_the_nightly(home):
    for args in (["export", "--date", "9999-12-31", "--days", "36500"], ["table", "--model", MODEL, "--date",
                 "9999-01-01"], ["report", "--date", "9999-12-31"], ["nightly", "--no-prefect", "--date", "9999-12-31"]):
        output = invoke(*args, code=1).output
        assert "is after 2026-11-28 (tomorrow, UTC)" in output, (args, output)
    with pytest.raises(ValueError, match="snapshot date 9999-12-31 is after"):
        pipeline.run(["fx"], date(9999, 12, 31), derive=False)


def test_a_long_export_range_commits_only_the_days_held(home):
    invoke("export", "--days", "36500", "--table", "price_index")
    versions = json.loads(invoke("lake", "history", "--table", "price_index", "-f", "json").output)
    assert len(versions) == 3  # created and the nightly's day, then this export's one day: not 36,500 commits
    assert "nothing to export for 2026-11-20" in invoke("export", "--date", "2026-11-20", code=1).output


def test_a_stored_year_9999_snapshot_does_not_hide_the_latest_day(home, tmp_path, monkeypatch):
    held = config.db_path().read_bytes()
    monkeypatch.setenv("GPULEDGER_HOME", str(tmp_path / "home"))
    config.home().mkdir()
    config.db_path().write_bytes(held)
    with db.connect() as con:  # as a warehouse written before dates were bounded may hold
        con.execute("insert into runs select * replace ('far' as run_id, '9999-12-31'::date as snapshot_date) "
                    "from runs limit 1")
    assert str(SNAPSHOT) in invoke("table", "--model", MODEL).output
    assert f"date={SNAPSHOT}" in invoke("report", "--model", MODEL, "--out", str(tmp_path / "site")).output


def test_export_as_of_never_reads_a_delta_table_beside_the_lake_nor_writes_beside_out(home, tmp_path):
    outside = tmp_path / "outside"  # a Delta table that is not the lake's: ../outside from the lake
    shutil.copytree(home / "exports" / "price_index", outside)
    lake_path = tmp_path / "lake"
    shutil.copytree(home / "exports", lake_path)
    out = tmp_path / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULEDGER_EXPORTS", str(lake_path))
        output = invoke("export", "--as-of", "2026-11-28T00:00:00", "--table", "../outside", "--out", str(out),
                        code=1).output
    assert "no lake table ../outside" in output
    assert not (tmp_path / "outside.parquet").exists() and not out.exists()


@pytest.mark.parametrize("args", [
    ["export", "--as-of", "2026-11-28T00:00:00", "--table", "../..", "--out", "{out}"],
    ["export", "--table", "../..", "--date", str(SNAPSHOT)],
    ["lake", "history", "--table", "../.."],
    ["lake", "upkeep", "--table", "../.."],
])
def test_a_table_named_as_a_path_is_refused_and_nothing_is_written_outside(home, tmp_path, args):
    before = {p for p in Path(home).rglob("*")}
    output = invoke(*[a.format(out=tmp_path / "out") for a in args], code=1).output
    assert re.search(r"no lake table|cannot export", output), output
    assert {p for p in Path(home).rglob("*")} == before and not (tmp_path / "out").exists()


def test_a_run_refuses_parameters_a_served_flow_could_be_sent(home):
    for change, says in (({"export_format": "../../x"}, "unknown export format"),
                         ({"trigger": CONTROL[0]}, "trigger"), ({"sources": ["../x"]}, "unknown source")):
        with pytest.raises(ValueError, match=says):
            pipeline.run(**{"sources": ["fx"], "snapshot_date": SNAPSHOT, "derive": False} | change)


@pytest.mark.slow
def test_the_local_prefect_server_serve_starts_answers_only_with_its_credential(monkeypatch, tmp_path):
    """`serve`'s server: bound to 127.0.0.1, and without the credential made for this start no flow run of the
    served nightly (with any parameters) can be created through its API."""
    import socket

    import httpx

    from flows import prefect_env

    for name in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING"):  # start_local_server sets them: undone after the test
        monkeypatch.setenv(name, "")  # recorded as unset or as it was, so the undo removes what the server set
        monkeypatch.delenv(name)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = prefect_env.start_local_server(port)
    try:
        url, auth = prefect_env.os.environ["PREFECT_API_URL"], prefect_env.os.environ["PREFECT_API_AUTH_STRING"]
        assert url == f"http://127.0.0.1:{port}/api" and len(auth) > 40
        attempt = {"parameters": {"snapshot_date": "9999-12-31", "export_format": "../x"}}
        refused = httpx.post(f"{url}/deployments/00000000-0000-0000-0000-000000000000/create_flow_run", json=attempt)
        assert refused.status_code == 401
        assert httpx.post(f"{url}/flows/filter", json={}, auth=tuple(auth.split(":", 1))).status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
