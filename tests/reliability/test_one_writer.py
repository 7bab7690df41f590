"""One writer at a time: concurrent runs never interleave, and readers get in or get a clear message."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.pipeline_support import serve_fixtures
from warehouse import catalog, config, db

pytestmark = pytest.mark.usefixtures("slim_night")  # their subject is neither the report nor the speed tiers

PARTS = catalog.read_all()["gpus"].height  # the GPU catalogue's size

ROOT = Path(__file__).parents[2]
HOLD = """
import sys, time
from warehouse import db
from warehouse.lock import writer_lock
with writer_lock("test holder"):
    con = db.connect() if sys.argv[1] == "warehouse" else None
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def gpuledger(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "flows.cli", *args], cwd=ROOT, env=env or dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def hold(what: str, seconds: float) -> subprocess.Popen:
    """A process holding the writer lock (and, with what='warehouse', the DuckDB file) for a while."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, what, str(seconds)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.mark.slow
def test_two_runs_started_together_run_one_after_the_other(monkeypatch):
    with serve_fixtures(monkeypatch):
        first, second = gpuledger("nightly", "--no-prefect"), gpuledger("nightly", "--no-prefect")
        outputs = [p.communicate(timeout=300) for p in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], outputs
    with db.connect(read_only=True) as con:
        runs = con.execute("select run_id, started_at, finished_at from runs order by started_at").fetchall()
        fetched = con.execute("select run_id, min(started_at), max(finished_at) from fetches group by run_id").fetchall()
    (run_a, start_a, end_a), (run_b, start_b, end_b) = runs
    assert start_b >= end_a  # the second began only when the first had finished
    windows = {run: (start, end) for run, start, end in runs}
    for run, fetch_start, fetch_end in fetched:  # no run wrote inside the other's window
        assert windows[run][0] <= fetch_start and fetch_end <= windows[run][1]


def test_a_run_that_cannot_wait_says_who_holds_the_warehouse():
    holder = hold("lock", 20)
    try:
        proc = gpuledger("nightly", "--no-prefect", env=dict(os.environ) | {"GPULEDGER_RUN_WAIT_S": "0.5"})
        _, err = proc.communicate(timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 1
    assert f"being written by pid {holder.pid} (test holder" in err


def test_readers_wait_for_a_write_to_finish_or_say_why_they_cannot():
    with db.connect() as con:
        catalog.load_catalogs(con)
    holder = hold("warehouse", 8)  # longer than a CLI takes to start
    try:
        impatient = gpuledger("sql", "select count(*) from gpus", "-f", "csv",
                              env=dict(os.environ) | {"GPULEDGER_LOCK_WAIT_S": "0.2"})
        patient = gpuledger("sql", "select count(*) from gpus", "-f", "csv",
                            env=dict(os.environ) | {"GPULEDGER_LOCK_WAIT_S": "30"})
        impatient_out, impatient_err = impatient.communicate(timeout=60)
        patient_out, _ = patient.communicate(timeout=60)
    finally:
        holder.wait()
    assert impatient.returncode == 1 and "in use by another process" in impatient_err
    assert patient.returncode == 0 and patient_out.splitlines()[1] == str(PARTS)


def test_the_duckdb_shell_reads_while_a_run_fetches():
    """A run holds the warehouse file only while it writes; during its long fetch phase any reader gets in."""
    with db.connect() as con:
        catalog.load_catalogs(con)
    holder = hold("lock", 10)
    try:
        started = time.monotonic()
        shell = Path(sys.executable).parent / "duckdb"
        out = subprocess.run([shell, "-readonly", "-csv", str(config.db_path()), "-c", "select count(*) from gpus"],
                             capture_output=True, text=True, timeout=30)
    finally:
        holder.kill()
        holder.wait()
    assert out.returncode == 0 and out.stdout.splitlines()[1] == str(PARTS)
    assert time.monotonic() - started < 5
