"""A night's derivation (`flows/derive.derive_date`) on the bundled recordings, against one estimate of its grid.

The recordings are fetched and loaded once (the replay server, no derive); each round then derives the day on a
fresh copy of that warehouse, in this process, timed in CPU seconds (every thread's: the machine is shared, so
CPU time moves less than wall time under load; both are printed), best of ROUNDS:

- baseline: `derive.estimate_grid`, the estimator over the plan's grid (every model x GPU x precision x context x
  streams, three methods): the one computation a night cannot do without, measured in the same run;
- first night: the grid computed and stored, every speed tier priced (what a fresh warehouse derives);
- next night: the grid read back under its key, every tier;
- slim night: first night at the chat tier alone (GPULEDGER_SPEED_TIERS=35), what most end-to-end tests derive.

Targets (ratios to the baseline): a first night within 20x, a next night within 16x, a slim night within 12x
(2026-12-05, on main before the speed search shared its estimates and ran Erlang C once per row, measured
with this section: 34x, 32x, 15x; after: 10x, 8x, 7x).
"""

import os
import shutil
import tempfile
import time
from pathlib import Path

from bench._support import ROOT, verdict

ROUNDS = 3
MAX_FIRST, MAX_NEXT, MAX_SLIM = 20.0, 16.0, 12.0
CREDENTIALS = {"VERDA_CLIENT_ID": "bench-client", "VERDA_CLIENT_SECRET": "bench-secret-not-real"}


def _timed(fn) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    from flows.replay.demo import FAST
    from flows.replay.server import ReplayServer

    print("derive: a night's derived tables on the bundled recordings, in-process, CPU seconds (wall)")
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="gpuledger-bench-") as tmp:
        os.environ.update({"GPULEDGER_HOME": str(Path(tmp) / "home"), "GPULEDGER_EXPORTS": str(Path(tmp) / "exports")})
        try:
            with ReplayServer(ROOT / "tests" / "fixtures" / "sources") as server:
                os.environ.update(server.env() | FAST | CREDENTIALS)
                from flows import derive, pipeline
                from warehouse import config, db

                fetched = pipeline.run(derive=False, trigger="bench")
            if fetched.status != "ok":
                raise SystemExit(f"derive: the recordings did not load: {fetched.errors}")
            day, loaded = config.utc_today(), Path(tmp) / "loaded.duckdb"
            shutil.copy(config.db_path(), loaded)

            def night(tiers: str | None, nights: int) -> list[tuple[float, float]]:
                """CPU and wall seconds of each of `nights` derives of the day on a fresh copy of the warehouse."""
                os.environ.pop("GPULEDGER_SPEED_TIERS", None)
                if tiers:
                    os.environ["GPULEDGER_SPEED_TIERS"] = tiers
                copy = Path(tmp) / "night.duckdb"
                shutil.copy(loaded, copy)
                with db.connect(copy) as con:
                    return [_timed(lambda: derive.derive_date(con, day)) for _ in range(nights)]

            with db.connect(loaded, read_only=True) as con:
                cats = derive.catalogues(con)
            rounds = [(_timed(lambda: derive.estimate_grid(cats, derive.DerivePlan())), *night(None, 2),
                       night("35", 1)[0]) for _ in range(ROUNDS)]
        finally:
            os.environ.clear()
            os.environ.update(saved)
    base, first, following, slim = (min((r[i] for r in rounds), key=lambda t: t[0]) for i in range(4))
    for what, (cpu, wall) in (("baseline: the plan's estimate grid", base), ("first night (grid computed, 9 tiers)", first),
                              ("next night (grid read back, 9 tiers)", following), ("slim night (1 tier)", slim)):
        print(f"  {what:40s} {cpu:6.2f} s CPU ({wall:5.2f} s wall)  {cpu / base[0]:5.1f}x")
    verdict("derive", [("first night / grid", first[0] / base[0], MAX_FIRST),
                       ("next night / grid", following[0] / base[0], MAX_NEXT),
                       ("slim night / grid", slim[0] / base[0], MAX_SLIM)])
