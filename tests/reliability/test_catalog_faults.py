"""The catalog source's column of the fault matrix: a fault at one cloud's file fails that cloud alone.

A night against the replay server with one fault at Lambda's `vms.csv`: the other clouds and every other source
load as on a clean night, the run stays ok, and the day says which cloud is missing and why (catalog_files, the
fetch's notes, the quality verdict). A fault that retrying cures leaves the night as it was.
"""

import pytest

from flows import fetch, pipeline
from flows.replay.server import ReplayServer
from scrapers import skypilot
from tests.reliability.test_fault_matrix import ENV
from tests.sources_support import FIXTURES, SNAPSHOT
from warehouse import db

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("slim_night")]  # its subject is neither the report nor the speed tiers
LAMBDA = skypilot.PATH.format(cloud="lambda")


def night(monkeypatch, faults: dict[str, str], run_id: str):
    with ReplayServer(FIXTURES, hang_s=3.0, faults=faults, retry_after=None) as server:
        for name, value in (server.env() | ENV).items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("RUNPOD_API_KEY", raising=False)
        monkeypatch.setenv("GPULEDGER_NOW", f"{SNAPSHOT}T22:00:00")
        monkeypatch.setattr(fetch, "new_run_id", lambda: run_id)
        pipeline.run(None, SNAPSHOT, export_format="")
    con = db.connect()
    offers = {source: set(con.execute("select offer_id, price_kind, usd_per_hr from offers where run_id = ? "
                                      "and source = ?", [run_id, source]).fetchall())
              for source in ("vastai", "runpod", "verda", "skypilot")}
    files = {cloud: (status, error) for cloud, status, error in con.execute(
        "select cloud, status, error from catalog_files where run_id = ?", [run_id]).fetchall()}
    run = con.execute("select status, quality, quality_reasons from runs where run_id = ?", [run_id]).fetchone()
    notes = con.execute("select notes from fetches where run_id = ? and source = 'skypilot'", [run_id]).fetchone()[0]
    con.close()
    return offers, files, run, notes or ""


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("GPULEDGER_HOME", str(tmp_path_factory.mktemp("catalog-clean") / "home"))
        return night(monkeypatch, {}, "clean")


@pytest.mark.parametrize(("plan", "error"), [
    ("404*", "HTTP 404"), ("503*", "HTTP 503"), ("html*", "header lacks InstanceType"),
    ("redirect:302", "HTTP 302"), ("drop*", None)],
    ids=["missing file", "503 that persists", "HTML page with status 200", "redirect to another origin",
         "connection dropped every time"])
def test_a_fault_at_one_clouds_file_fails_that_cloud_alone(clean, monkeypatch, plan, error):
    offers, files, run, notes = night(monkeypatch, {LAMBDA: plan}, "faulty")
    clean_offers, clean_files, clean_run, _ = clean
    assert clean_run[:2] == ("ok", "ok") and clean_files["lambda"] == ("changed", None)
    assert run[0] == "ok"  # every source loaded
    for source in ("vastai", "runpod", "verda"):
        assert offers[source] == clean_offers[source]
    assert offers["skypilot"] == {o for o in clean_offers["skypilot"] if not o[0].startswith("lambda/")}
    assert {c: f for c, f in files.items() if c != "lambda"} == {c: f for c, f in clean_files.items() if c != "lambda"}
    if error is None:  # no answer at all: no file row, a note, and the day says the cloud fell silent
        assert "lambda" not in files and "skypilot: lambda: " in notes
        assert run[1] == "ok"  # the first day has no earlier read of lambda to miss
    else:
        assert files["lambda"][0] == "failed" and error in files["lambda"][1]
        assert run[1] == "suspect" and "skypilot: lambda failed: " in run[2]


def test_a_fault_retrying_cures_leaves_the_night_as_it_was(clean, monkeypatch):
    offers, files, run, _ = night(monkeypatch, {LAMBDA: "503,truncate"}, "recovered")
    assert (offers, files, run[:2]) == (clean[0], clean[1], clean[2][:2])


def test_every_clouds_file_failing_fails_the_source(monkeypatch):
    faults = {skypilot.PATH.format(cloud=c): "404*" for c in
              ("cudo", "gcp", "hyperbolic", "lambda", "nebius", "oci", "primeintellect", "shadeform")}
    offers, files, run, _ = night(monkeypatch, faults, "all-failed")
    assert run[0] == "partial" and not offers["skypilot"] and offers["vastai"]
    assert "skypilot: no successful fetch" in run[2]
