"""SIGKILL the pipeline at many points of fetch, archive, load, derive and export; every rerun must heal."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from flows.derive import EXPORTED
from tests.pipeline_support import serve_fixtures
from tests.sources_support import SNAPSHOT
from warehouse import archive, config, db, delta, derived, queries

pytestmark = pytest.mark.usefixtures("slim_night")  # their subject is neither the report nor the speed tiers

# (phase marker, seconds after it): spread over every step; the fetch phase also archives as it goes.
KILL_POINTS = [("fetch", d) for d in (0.0, 0.03, 0.06, 0.1, 0.2, 0.3)] + [
    (f"load {s}", d) for s in ("fx", "vastai", "runpod", "verda", "skypilot") for d in (0.0, 0.02)] + [
    ("derive", d) for d in (0.0, 0.1, 0.25, 0.4)] + [("export", d) for d in (0.0, 0.03, 0.06, 0.1)]


class Runner:
    """The forking runner subprocess, driven line by line."""

    def __init__(self, env: dict[str, str]):
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.reliability.crash_runner"], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1,
                                     cwd=Path(__file__).parents[2])

    def line(self) -> str:
        return self.proc.stdout.readline().strip()

    def run(self, kill_at: tuple[str, float] | None = None) -> tuple[int, list[str]]:
        """One pipeline run; with kill_at, SIGKILL it that long after its phase marker. Returns exit code, lines."""
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        pid = int(self.line().removeprefix("pid "))
        seen = []
        while True:
            line = self.line()
            if line.startswith("exit "):
                return int(line.removeprefix("exit ")), seen
            seen.append(line)
            if kill_at and line.startswith(f"phase {kill_at[0]}"):
                time.sleep(kill_at[1])
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def day_counts(con) -> dict[str, int]:
    return {t: con.execute(f"select count(*) from {t} where snapshot_date = ?", [SNAPSHOT]).fetchall()[0][0]
            for t in derived.BY_DATE}


def assert_healed(reference: dict[str, int]) -> None:
    """The warehouse opens; no partial, duplicate or orphaned rows; the lake matches; the archive is whole."""
    with db.connect(read_only=True) as con:
        assert day_counts(con) == reference
        assert con.execute("select count(*) from runs where status = 'running'").fetchall() == [(0,)]
        partial = con.execute("""
            select o.run_id, o.source, count(*), any_value(f.status), any_value(f.offers_loaded)
            from offers o left join fetches f on f.run_id = o.run_id and f.source = o.source
            group by o.run_id, o.source
            having any_value(f.status) is distinct from 'ok' or count(*) != any_value(f.offers_loaded)""").fetchall()
        assert partial == []
        orphans = con.execute("select count(*) from fetches where run_id not in (select run_id from runs)").fetchall()
        assert orphans == [(0,)]
        for table in EXPORTED:  # the lake's current version holds the day whole (a killed commit left no version)
            # offers: the listings the day was derived from, never a killed run's left beside them
            rows = (queries.published_offers(con, SNAPSHOT) if table == "offers"
                    else con.sql(f"select * from {table} where snapshot_date = ?", params=[SNAPSHOT]))
            stored = len(rows.fetchall())
            published = delta.open_table(delta.table_uri(config.exports_location(), table))
            assert delta.read(published, [SNAPSHOT]).num_rows == stored, table
        # Per source, one run's whole fetch (the runs share the pinned clock, so which run is the day's is a tie)
        offers = delta.read(delta.open_table(delta.table_uri(config.exports_location(), "offers")), [SNAPSHOT])
        exported = duckdb.from_arrow(offers).aggregate("source, run_id, count(*)").fetchall()
        assert len({source for source, _, _ in exported}) == len(exported)
        for source, run_id, count in exported:
            assert con.execute("select status, offers_loaded from fetches where run_id = ? and source = ?",
                               [run_id, source]).fetchone() == ("ok", count)
    for run_dir in (p for p in config.raw_dir().glob("*/*/*") if (p / archive.SUMMARY).exists()):
        responses = list(archive.read_responses(run_dir, ok_only=False))  # checks every body's sha256
        assert len(responses) == len(list(run_dir.glob("*.meta.json")))
    leftovers = [p for p in config.home().rglob("*") if p.name.startswith(".tmp")]
    assert leftovers == []


@pytest.mark.slow
def test_sigkill_anywhere_then_a_rerun_heals(monkeypatch):
    with serve_fixtures(monkeypatch):
        runner = Runner(dict(os.environ))
        try:
            code, _ = runner.run()
            assert code == 0
            with db.connect(read_only=True) as con:
                reference = day_counts(con)
            killed = []
            for point in KILL_POINTS:
                code, seen = runner.run(kill_at=point)
                if code == -signal.SIGKILL:
                    killed.append((point, seen[-1] if seen else "before any phase"))
                rerun, seen = runner.run()
                assert rerun == 0, seen
                assert_healed(reference)
        finally:
            runner.close()
    assert len(killed) >= 20, killed
    phases = {point[0].split()[0] for point, _ in killed}
    assert phases == {"fetch", "load", "derive", "export"}
