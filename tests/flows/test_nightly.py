"""The nightly and rebuild flows under Prefect's test harness, against the replay server."""

import gzip
import re
from datetime import date

import polars as pl
import pytest
from prefect.testing.utilities import prefect_test_harness

from flows import pipeline
from flows.nightly import nightly, nightly_schedule, rebuild
from tests.pipeline_support import CREDENTIALS, serve_fixtures
from tests.sources_support import SNAPSHOT
from warehouse import config, db, derived, queries

pytestmark = pytest.mark.usefixtures("slim_night")  # their subject is neither the report nor the speed tiers

DERIVED = ("daily_prices", "rental_ranges", "cost_per_mtok", "own_vs_rent", "price_index", "own_rent_api",
           "cost_at_speed")


@pytest.fixture(scope="module", autouse=True)
def harness():
    with prefect_test_harness(server_startup_timeout=180):
        yield


def counts(day: date = SNAPSHOT) -> dict[str, int]:
    with db.connect(read_only=True) as con:
        return {t: con.execute(f"select count(*) from {t} where snapshot_date = ?", [day]).fetchall()[0][0]
                for t in DERIVED}


def exported_rows(table: str) -> int:
    """The rows of the table's current version in the lake (its Delta table; a glob would count replaced files too)."""
    return pl.read_delta(str(config.exports_dir() / table)).height


def test_a_nightly_run_publishes_the_day_and_a_rerun_replaces_it(monkeypatch):
    with serve_fixtures(monkeypatch):
        first = nightly(trigger="test")
        after_first = counts()
        second = nightly(trigger="test")
    assert (first["status"], first["quality"], first["snapshot_date"]) == ("ok", "ok", "2026-11-27")
    assert set(first["sources"].values()) == {"ok"}
    assert all(after_first[t] > 0 for t in DERIVED)
    assert counts() == after_first  # a rerun replaces the date's derived rows, never adds to them
    assert second["run_id"] != first["run_id"]
    with db.connect(read_only=True) as con:
        assert con.execute("select count(*), count(distinct run_id) from runs where status = 'ok'").fetchall() == [(2, 2)]
        stored = con.execute("select count(*) from cost_per_mtok").fetchall()[0][0]
        # the views' rows in the run's summary are those the export published, the views' own count
        for summary in (first, second):
            assert {v: summary["derived"][v] for v in derived.VIEWS} == {
                v: con.execute(f"select count(*) from {v}").fetchall()[0][0] for v in derived.VIEWS}
    assert exported_rows("cost_per_mtok") == stored
    assert exported_rows("offers") == after_offers_of_latest_runs()
    # cost_at_speed names the engine on every row, in the lake as in the warehouse: the default's, the one published
    at_speed = pl.read_delta(str(config.exports_dir() / "cost_at_speed"))
    assert at_speed.height == after_first["cost_at_speed"] and set(at_speed["engine"]) == {"trtllm"}
    assert set(at_speed["speed_tier"]) == {"35"}  # the tiers GPULEDGER_SPEED_TIERS names (slim_night), no others


def test_an_unknown_speed_tier_fails_the_run_before_any_fetch(monkeypatch):
    monkeypatch.setenv("GPULEDGER_SPEED_TIERS", "35, 36")
    with pytest.raises(ValueError, match=r"GPULEDGER_SPEED_TIERS: '36' is not a speed tier \(one of 10, 20, .*batch\)"):
        pipeline.run(trigger="test")
    assert not config.raw_dir().exists() and not config.db_path().exists()


def after_offers_of_latest_runs() -> int:
    """The offers the day was derived from: the second run's, not both runs' (the export holds those alone)."""
    with db.connect(read_only=True) as con:
        published = len(queries.published_offers(con, SNAPSHOT).fetchall())
        assert published * 2 == con.execute("select count(*) from offers where snapshot_date = ?",
                                            [SNAPSHOT]).fetchall()[0][0]
        return published


def test_one_failing_source_leaves_a_partial_run_that_still_publishes(monkeypatch):
    with serve_fixtures(monkeypatch, faults={"/api/v0/bundles/": "500*"}):
        state = nightly(trigger="test", return_state=True)
    summary = state.result()
    assert state.is_completed() and state.name == "Partial"
    assert "vastai" in state.message and "HTTP 500" in state.message
    assert summary["status"] == "partial" and summary["sources"]["vastai"] == "failed"
    with db.connect(read_only=True) as con:
        fetch = con.execute("select status, http_status, error from fetches where source = 'vastai'").fetchall()
        providers = {p for (p,) in con.execute("select distinct provider from cost_per_mtok").fetchall()}
        vast_offers = con.execute("select count(*) from offers where provider = 'vastai'").fetchall()[0][0]
    assert fetch[0][0] == "failed" and fetch[0][1] == 500 and "/api/v0/bundles/" in fetch[0][2]
    assert "vastai" not in providers and {"runpod", "verda", "lambda", "oci"} <= providers and vast_offers == 0


def test_rebuild_recomputes_a_day_from_the_archive_without_network(monkeypatch):
    with serve_fixtures(monkeypatch):
        nightly(trigger="test")
    published = counts()
    with db.connect() as con:
        for table in derived.STORED:  # cost_per_mtok is a view of replica_prices
            con.execute(f"delete from {table}")
        con.execute("delete from offers")
    for name in ("GPULEDGER_VASTAI_URL", "GPULEDGER_RUNPOD_URL", "GPULEDGER_VERDA_URL", "GPULEDGER_ECB_URL",
                 "GPULEDGER_OPENROUTER_URL"):
        monkeypatch.setenv(name, "http://203.0.113.1")  # any request would now hit the network guard
    done = rebuild(start=SNAPSHOT)
    assert done["2026-11-27"]["quality"] == "ok"
    assert counts() == published


def test_a_day_that_did_not_reach_the_lake_or_the_mirror_makes_a_partial_state():
    from flows.nightly import _final_state
    from flows.pipeline import RunSummary

    summary = RunSummary("r1", "2026-11-27", "ok", "ok", {"fx": "ok"}, {}, {}, [], "unpublished", "mirrored",
                         ["s3://lake: connection refused"])
    state = _final_state(summary)
    assert state.is_completed() and state.name == "Partial" and "s3://lake: connection refused" in state.message
    assert _final_state(RunSummary("r1", "2026-11-27", "ok", "ok", {}, {}, {}, [], "published")).name == "Completed"


def test_the_schedule_is_nightly_at_two_utc_unless_configured():
    schedule = nightly_schedule()
    assert (schedule.cron, schedule.timezone) == ("0 2 * * *", "UTC")
    assert nightly_schedule("30 4 * * *", "Europe/Berlin").timezone == "Europe/Berlin"


def test_the_nightly_command_prints_each_source_and_exits_non_zero_on_a_failure(monkeypatch):
    from typer.testing import CliRunner

    from flows.cli.app import app

    with serve_fixtures(monkeypatch, faults={"/graphql": "500*"}):
        result = CliRunner().invoke(app, ["nightly", "--format", "csv"])
    assert result.exit_code == 1
    assert "partial" in result.output and "runpod" in result.output and "HTTP 500" in result.output
    assert list((config.exports_dir() / "csv" / "cost_per_mtok").glob("date=2026-11-27/part-*.csv"))


def test_a_provider_echoing_a_credential_leaves_it_nowhere_at_rest_and_its_log_line_is_terminal_safe(
        monkeypatch, caplog):
    """RunPod's keyed catalogue and Verda's token exchange answer an error quoting the request (its Bearer key,
    its client secret) behind terminal escapes: the archive (what the mirror uploads) holds neither credential,
    and the Prefect log line of each failed source prints the body escaped."""
    secrets = {"RUNPOD_API_KEY": "sentinel-runpod-echoed-41d2", "VERDA_CLIENT_SECRET": "sentinel-verda-echoed-9b07"}
    with serve_fixtures(monkeypatch, credentials=CREDENTIALS | secrets,
                        faults={"/v2/catalog/gpus": "echo*", "/v1/oauth2/token": "echo*"}):
        summary = nightly(trigger="test")
    assert summary["sources"]["runpod"] == summary["sources"]["verda"] == "failed"
    archived = [p for p in (config.home() / "raw").rglob("*") if p.is_file()]
    bodies = [gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes() for p in archived]
    assert any(b"bad request" in body and b"[REDACTED]" in body for body in bodies)  # the echo, archived scrubbed
    for secret in secrets.values():
        assert not any(secret.encode() in body for body in bodies)
    failed = [r.getMessage() for r in caplog.records if r.name.startswith("prefect")
              and r.getMessage().startswith(("runpod failed: ", "verda failed: "))]
    assert len(failed) == 2 and all("bad request" in line and "\\x1b]0;" in line for line in failed), failed
    assert not any(re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", r.getMessage()) for r in caplog.records)
