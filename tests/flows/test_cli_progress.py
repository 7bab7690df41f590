"""Live per-source progress: what the fetch layer reports, and the display that only draws on a terminal."""

import io

from rich.console import Console

from flows import fetch, ingest
from flows.cli.progress import live_progress
from tests.pipeline_support import serve_fixtures
from tests.sources_support import SNAPSHOT
from warehouse import db


def test_each_response_then_the_fetch_and_the_load_are_reported_per_source(monkeypatch):
    events: list[fetch.SourceProgress] = []
    with serve_fixtures(monkeypatch), fetch.progress_to(events.append), db.connect() as con:
        results = fetch.fetch_concurrently(["fx", "runpod"], "run-1", SNAPSHOT)
        rows = {name: ingest.load_source(con, results[name]) for name in ("fx", "runpod")}
    for name in ("fx", "runpod"):
        mine = [e for e in events if e.source == name]
        assert [e.stage for e in mine] == ["fetching"] * results[name].requests + ["fetched", "loaded"]
        assert [e.requests for e in mine[:-2]] == list(range(1, results[name].requests + 1))
        assert (mine[-1].records, mine[-1].listings) == (rows[name].record_count, rows[name].offers_loaded)
    assert rows["runpod"].offers_loaded > 0
    assert not fetch._listeners  # the hook is gone after the block


def test_a_failed_source_is_reported_failed(monkeypatch):
    events: list[fetch.SourceProgress] = []
    with serve_fixtures(monkeypatch, faults={"/graphql": "500*"}), fetch.progress_to(events.append):
        fetch.fetch_source("runpod", "run-1", SNAPSHOT)
    assert events[-1].stage == "failed" and events[-1].requests >= 1


def test_on_a_terminal_each_source_gets_a_live_line(monkeypatch):
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=120)
    with serve_fixtures(monkeypatch), live_progress(terminal), db.connect() as con:
        ingest.load_source(con, fetch.fetch_source("runpod", "run-1", SNAPSHOT))
    drawn = screen.getvalue()
    assert "runpod" in drawn and "loaded" in drawn and "requests" in drawn and "records" in drawn


def test_not_a_terminal_stays_quiet_and_installs_no_hook(monkeypatch):
    log = io.StringIO()
    with serve_fixtures(monkeypatch), live_progress(Console(file=log)):
        assert not fetch._listeners
        fetch.fetch_source("runpod", "run-1", SNAPSHOT)
    assert log.getvalue() == ""
