"""Run the whole pipeline with sentinel credentials, then search everything it wrote or printed for them."""

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pipeline_support import serve_fixtures
from tests.sources_support import FAST_ENV
from warehouse import config, db

pytestmark = pytest.mark.usefixtures("slim_night")  # their subject is neither the report nor the speed tiers

SENTINELS = {
    "RUNPOD_API_KEY": "sentinel-runpod-key-1c9e4d7a",
    "VERDA_CLIENT_ID": "sentinel-verda-id-83fa21c0",
    "VERDA_CLIENT_SECRET": "sentinel-verda-secret-5e77b9d2",  # from the owner-only secrets file
    "HF_TOKEN": "hf_sentinelHuggingFaceToken9d41",  # for the gated repositories (the replay's hf_gated)
}


def gpuledger(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], env=env, capture_output=True, text=True,
                          cwd=Path(__file__).parents[2], timeout=600)


def readable(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def warehouse_text() -> str:
    """Every text and JSON value of every table, since DuckDB may store strings compressed on disk."""
    with db.connect(read_only=True) as con:
        columns = con.execute("select table_name, column_name from information_schema.columns "
                              "where data_type in ('VARCHAR', 'JSON')").fetchall()
        return "\n".join(str(v) for table, column in columns
                         for (v,) in con.execute(f'select "{column}" from {table}').fetchall())


@pytest.mark.slow
def test_no_secret_reaches_a_file_a_log_the_warehouse_or_the_output(monkeypatch, tmp_path):
    home = config.home()
    home.mkdir(parents=True)
    secrets_file = home / "secrets.env"
    secrets_file.write_text(f"VERDA_CLIENT_SECRET={SENTINELS['VERDA_CLIENT_SECRET']}\n")
    secrets_file.chmod(0o600)
    with serve_fixtures(monkeypatch, faults={"/v1/locations": "500*"}):  # a failure, so errors get written too
        monkeypatch.delenv("VERDA_CLIENT_SECRET")
        env = dict(os.environ) | FAST_ENV | {"RUNPOD_API_KEY": SENTINELS["RUNPOD_API_KEY"],
                                             "VERDA_CLIENT_ID": SENTINELS["VERDA_CLIENT_ID"],
                                             "HF_TOKEN": SENTINELS["HF_TOKEN"],
                                             "PREFECT_HOME": str(home / "prefect")}  # searched with the rest
        runs = [gpuledger("nightly", env=env), gpuledger("fetch", env=env),
                gpuledger("export", "--format", "csv", env=env), gpuledger("status", env=env),
                gpuledger("table", "--model", "deepseek-v4-flash", "-f", "json", env=env)]
    assert runs[0].returncode == 1 and "verda" in runs[0].stdout  # partial: the 500 on /v1/locations
    assert runs[2].returncode == runs[3].returncode == runs[4].returncode == 0
    printed = "\n".join(r.stdout + r.stderr for r in runs)
    files = [p for root in (home, config.exports_dir()) for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "prefect.db" for p in files) and any(p.suffix == ".gz" for p in files)
    with db.connect(read_only=True) as con:  # the runs really used the keyed APIs
        apis = {a for (a,) in con.execute("select distinct extras->>'api' from offers where provider = 'runpod'").fetchall()}
    assert apis == {"rest_v2"}
    with db.connect(read_only=True) as con:  # the gated configs came with the token
        gated = con.execute("select http_status from model_configs where repo = 'meta-llama/Llama-3.3-70B-Instruct'")
        assert gated.fetchall() in ([(200,)], [(304,)])
    for name, value in SENTINELS.items():
        assert value not in printed, name
        assert value not in warehouse_text(), name
        for path in files:
            if path != secrets_file:
                assert value.encode() not in readable(path), (name, path)
