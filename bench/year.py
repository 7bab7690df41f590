"""A year of nights: `gpuledger nightly --no-prefect` night after night on a pinned clock, at today's breadth and at
ten times the models and offers; per night its wall time, peak memory and the bytes each part of the store holds,
then the report of the last night drawn again (the nightly's stage that grows with the catalogue), then the analyst's
queries through the CLI on the last night.

Each night is the whole nightly process against the replay server (pacing off): the bundled recordings, with the
vast.ai answer replaced by OFFERS x breadth offers cloned from the real market's (tests/fixtures/real: every
GPU name and size of a real day; bench/_offers.py) whose prices move
a few percent a night (a random walk per offer, +-3 % a step), and the clock pinned to 22:00 UTC of the night.
At breadth b the catalogue's models are joined by (b - 1) x 58 user models, cloned from the Hugging Face configs
in tests/fixtures/hf_configs under new ids (the same shapes as real models, so the same rows per model).

A year of 365 nights at 10x does not fit a shared 2-core machine in one sitting, so the nights and the breadths
are parameters: GPULEDGER_BENCH_YEAR_NIGHTS ("10,3": 10 nights at the first breadth, 3 at the second),
GPULEDGER_BENCH_YEAR_BREADTH ("1,10"). The year is extrapolated from the nights run: the store's bytes as the
first night's plus 364 times the mean growth of the nights after it, and the extrapolation is printed as such.
The analyst's queries run on the last night, and the sql ones again over a year of days: in a copy
of the warehouse, the last night's replica and hardware prices copied onto the 364 days before the first (cost_per_mtok
and own_vs_rent are views of them, migrations 0025 and 0026), so what a year of history costs a query is measured, not
extrapolated.
With GPULEDGER_BENCH_YEAR_SEED=1 night 365 is measured instead: after the nights run, the nights up to 364 are
seeded from the last of them as a year of nights would have written them (bench/_year_seed.py: the warehouse's
nightly rows copied onto each date with prices moved, the lake published date by date by the nightly's own export
and upkeep, the report's and the raw archive's dated folders hard-linked), then night 365 runs on top: its time, memory
and growth against night 1's in the same run, the store's bytes after 365 nights measured, the queries on night 365.
Baseline, in the same run: the warehouse's tables written as zstd Parquet (the same rows, DuckDB's COPY).
Targets (issue 35): a year <= 3 GB at 1x and <= 20 GB at 10x; a night <= 60 s at 1x and <= 300 s at 10x; the
last night within 10 % of the first; every analyst query < 1 s through the CLI.
"""

import hashlib
import json
import os
import random
import re
import sys
import tempfile
from datetime import date, timedelta
from pathlib import Path

from bench import _offers
from bench._support import GPULEDGER, ROOT, Run, last_json, replay_server, run, verdict

NIGHTS = [int(n) for n in os.environ.get("GPULEDGER_BENCH_YEAR_NIGHTS", "10,3").split(",")]
BREADTHS = [int(b) for b in os.environ.get("GPULEDGER_BENCH_YEAR_BREADTH", "1,10").split(",")]
# GPULEDGER_BENCH_YEAR_SEED=1: after the nights run, the nights up to 364 seeded (bench/_year_seed.py), then night 365 run
SEED = os.environ.get("GPULEDGER_BENCH_YEAR_SEED", "") == "1"
OFFERS = int(os.environ.get("GPULEDGER_BENCH_YEAR_OFFERS", "3000"))  # vast.ai offers a night at 1x (a real day: 3,088)
FIRST_NIGHT = date(2026, 11, 27)
CATALOGUE_MODELS = 58
YEAR = 365
MAX_YEAR_GB = {1: 3.0, 10: 20.0}
MAX_NIGHT_S = {1: 60.0, 10: 300.0}
MAX_DRIFT, MAX_QUERY_S = 0.10, 1.0
# The latest day as `gpuledger sql` gives it, latest_day(): a constant DuckDB pushes below cost_per_mtok's join. A date
# from a subquery (`= (select max(snapshot_date) from cost_per_mtok)`) is joined above the view's computed columns,
# so every day's rows are computed first: 11-45 s over a year at 10x (docs/performance.md).
QUERIES = {
    "sql: the cheapest deployable $/M per model on the last night":
        "select model, min(usd_per_mtok) from cost_per_mtok where snapshot_date = latest_day() and deployable "
        "and method = 'measured' group by model order by 2 limit 20",
    "sql: one model's cheapest $/M per night":
        "select snapshot_date, min(usd_per_mtok) from cost_per_mtok where model = 'llama-3.3-70b' and deployable "
        "group by 1 order by 1",
    "sql: own against rent on the last night":
        "select model, gpu, own_usd_per_mtok, rent_usd_per_mtok from own_vs_rent where snapshot_date = latest_day() "
        "and deployable order by own_usd_per_mtok limit 20",
}


def _parts(home: Path, exports: Path) -> dict[str, int]:
    """Bytes on disk per part of the store: the warehouse, the lake (the exports but the report), the report, the
    raw archive."""
    def size(path: Path) -> int:
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0

    warehouse = sum(p.stat().st_size for p in home.glob("gpuledger.duckdb*"))
    report = size(exports / "report")
    return {"warehouse": warehouse, "lake": size(exports) - report, "report": report, "raw": size(home / "raw")}


def _user_models(home: Path, count: int) -> None:
    """count user models, cloned from the fixture configs under new ids (bench-0000, ...)."""
    configs = sorted((ROOT / "tests" / "fixtures" / "hf_configs").rglob("config.json"))
    (home / "models").mkdir(parents=True, exist_ok=True)
    for i in range(count):
        raw = configs[i % len(configs)].read_bytes()
        entry = {"model_id": f"bench-{i:04d}", "repo": None, "path": str(configs[i % len(configs)]), "url": None,
                 "etag": None, "added_on": FIRST_NIGHT.isoformat(), "added_at": f"{FIRST_NIGHT}T00:00:00Z",
                 "config_sha256": hashlib.sha256(raw).hexdigest(), "config": json.loads(raw)}
        (home / "models" / f"bench-{i:04d}.json").write_text(json.dumps(entry))


def _recordings(directory: Path, offers: list[dict], factors: list[float], night: date) -> Path:
    """The bundled recordings with the night's vast.ai answer and clock."""
    source = ROOT / "tests" / "fixtures" / "sources"
    if not directory.exists():
        directory.mkdir(parents=True)
        for path in source.iterdir():
            if path.is_file():
                (directory / path.name).write_bytes(path.read_bytes())
    moved = [offer | {key: round(offer[key] * f, 6) for key in _offers.PRICED if isinstance(offer.get(key), float | int)}
             for offer, f in zip(offers, factors, strict=True)]
    (directory / "vastai_bundles.json").write_text(json.dumps({"offers": moved}))
    manifest = json.loads((source / "replay.json").read_text()) | {"recorded_on": night.isoformat(),
                                                                  "now": f"{night}T22:00:00"}
    # what the manifest names beside the recordings (../real, ../hf_configs) is read where it is
    manifest["routes"] = [r | {"file": str((source / r["file"]).resolve())} if "/" in r["file"] else r
                          for r in manifest["routes"]]
    manifest |= {k: str((source / manifest[k]).resolve()) for k in ("hf_configs", "hf_api") if manifest.get(k)}
    (directory / "replay.json").write_text(json.dumps(manifest))
    return directory


# Per table of the warehouse: its rows, the 256 KiB blocks its columns use (a block can hold the tail of several
# tables' columns, so this counts a shared block in each) and the same rows as one zstd Parquet file.
BASELINE = """
import duckdb, json, os, sys
con = duckdb.connect(sys.argv[1], read_only=True)
out = {}
for (t,) in con.execute("select table_name from duckdb_tables() where schema_name = 'main' order by 1").fetchall():
    path = os.path.join(sys.argv[2], t + ".parquet")
    con.execute(f"copy {t} to '{path}' (format parquet, compression zstd)")
    rows = con.execute(f"select count(*) from {t}").fetchall()[0][0]
    blocks = con.execute(f"select count(distinct block_id) from pragma_storage_info('{t}') where persistent").fetchall()[0][0]
    out[t] = [rows, blocks * 262144, os.path.getsize(path)]
print(json.dumps(out))
"""


def _baseline(home: Path, out: Path) -> dict[str, list[int]]:
    """Per table: rows, the warehouse's bytes (blocks used) and the bytes of the same rows as zstd Parquet."""
    out.mkdir(parents=True, exist_ok=True)
    return last_json(run([sys.executable, "-c", BASELINE, str(home / "gpuledger.duckdb"), str(out)]))


# The last night's replica prices (moved +-3 %) and hardware prices copied onto the YEAR - 1 days before the first
# night, in a copy of the warehouse: cost_per_mtok and own_vs_rent, views of them (migrations 0025, 0026), then hold a
# year of days to query.
YEAR_OF_PRICES = """
import duckdb, sys
con = duckdb.connect(sys.argv[1])
con.execute("set enable_progress_bar = false")  # its bar went to the printout
con.execute(\"""insert into replica_prices select p.* replace (f.first - i::integer as snapshot_date,
               replica_usd_per_hr * (1 + 0.03 * sin(i)) as replica_usd_per_hr)
               from replica_prices p, (select min(snapshot_date) as first, max(snapshot_date) as last from replica_prices) f,
               range(1, ?) t(i) where p.snapshot_date = f.last\""", [int(sys.argv[2])])
con.execute(\"""insert into own_hardware select h.* replace (f.first - i::integer as snapshot_date)
               from own_hardware h, (select min(snapshot_date) as first, max(snapshot_date) as last from own_hardware) f,
               range(1, ?) t(i) where h.snapshot_date = f.last\""", [int(sys.argv[2])])
print(con.execute("select count(*), count(distinct snapshot_date) from replica_prices").fetchall()[0])
"""


def _year_of_prices(home: Path, copy: Path, env: dict[str, str]) -> list[tuple[str, Run]]:
    """The sql queries over a year of replica and hardware prices (a copy of the warehouse), one run each."""
    copy.mkdir(parents=True, exist_ok=True)
    (copy / "gpuledger.duckdb").write_bytes((home / "gpuledger.duckdb").read_bytes())
    done = run([sys.executable, "-c", YEAR_OF_PRICES, str(copy / "gpuledger.duckdb"), str(YEAR)])
    print(f"    a year of replica prices (a copy of the warehouse; rows, days): {done.stdout.strip()}")
    return [(name, run([*GPULEDGER, "sql", query], env | {"GPULEDGER_HOME": str(copy)}))
            for name, query in QUERIES.items()]


def _seeded_year(home: Path, exports: Path, env: dict[str, str], last: date, night_of) -> float:
    """The nights after `last` up to 364 seeded from it (bench/_year_seed.py, in a child process), then night 365 run
    by night_of; prints what was seeded and the store's bytes after 365 nights; those bytes in GB."""
    first, final = last + timedelta(days=1), FIRST_NIGHT + timedelta(days=YEAR - 2)
    ran = run([sys.executable, "-m", "bench._year_seed", last.isoformat(), first.isoformat(), final.isoformat()], env)
    seeded = last_json(ran)
    before = _parts(home, exports)
    print(f"    nights {first} to {final} SEEDED from night {last} in {ran.wall_s:.0f} s ({seeded['days']} dates; "
          f"bench/_year_seed.py): the warehouse's {len(seeded['warehouse_tables'])} nightly tables copied onto each "
          f"date in date order ({seeded['warehouse_rows']:,} rows, prices moved +-3 % per row, {seeded['warehouse_s']:.0f}"
          f" s); the lake published by the nightly's own export, {seeded['lake_commits']:,} commits (facts every date, "
          f"derived tables from {seeded['lake_derived_from']}), with its upkeep on each date's clock "
          f"({seeded['lake_s']:.0f} s); the report and raw folders of night {last} hard-linked per date "
          f"({seeded['linked_files']:,} links, counted at full size below)", flush=True)
    measured, bytes_ = _night_line(YEAR - 1, 0.0, 0.0, 0.0, before).split("peak", 1)
    print(f"    night {YEAR - 1} (seeded)".ljust(len(measured) + 4) + bytes_)
    night_of(YEAR)
    after = _parts(home, exports)
    print("    night 365 added: " + ", ".join(f"{k} {(after[k] - before[k]) / 1e6:+.2f} MB" for k in after))
    total = sum(after.values())
    print(f"    the store after {YEAR} nights, MEASURED: {total / 1e9:.2f} GB (" +
          ", ".join(f"{k} {v / 1e9:.2f}" for k, v in after.items()) + f" GB; all but nights 1-{(last - FIRST_NIGHT).days + 1} and 365 seeded copies)")
    return total / 1e9


# The nightly command as `gpuledger` runs it, with the pipeline's phase lines (its INFO log) on stdout, timed: where a
# night's time goes, so a phase that grows with history shows.
NIGHTLY = """
import logging, runpy, sys
logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(relativeCreated)d %(name)s: %(message)s")
logging.getLogger("gpuledger.pipeline").setLevel(logging.INFO)
sys.argv = ["gpuledger", "nightly", "--no-prefect"]
runpy.run_module("flows.cli", run_name="__main__", alter_sys=True)
"""
PHASE = re.compile(r"^(\d+) gpuledger\.pipeline: phase (\w+)", re.M)


def _phases(stdout: str) -> dict[str, float]:
    """Seconds per phase of the nightly (from each phase line to the next; `start` is the process before the first)."""
    marks = [(int(ms) / 1000, name) for ms, name in PHASE.findall(stdout)]
    spent = {"start": marks[0][0]} if marks else {}
    for (at, name), (then, _) in zip(marks, marks[1:], strict=False):
        spent[name] = spent.get(name, 0.0) + then - at
    return spent


def _night_line(n: int, wall_s: float, cpu_s: float, peak_mb: float, parts: dict[str, int]) -> str:
    mb = {k: v / 1e6 for k, v in parts.items()}
    return (f"    night {n:3d}  {wall_s:6.1f} s ({cpu_s:6.1f} s CPU)  {peak_mb:6.0f} MB peak   warehouse {mb['warehouse']:7.1f}  "
            f"lake {mb['lake']:7.1f}  report {mb['report']:7.1f}  raw {mb['raw']:6.1f} MB")


class _Nights:
    """Nights of the whole nightly process at one breadth, in a temporary store (tmp): each night's wall time, CPU,
    peak memory and the store's bytes after it, printed as it runs; then what every mode prints after its nights."""

    def __init__(self, tmp: Path, breadth: int):
        self.tmp, self.home, self.exports = tmp, tmp / "home", tmp / "exports"
        self.env = {"GPULEDGER_HOME": str(self.home), "GPULEDGER_EXPORTS": str(self.exports),
                    "PREFECT_HOME": str(self.home / "prefect"), "VERDA_CLIENT_ID": "bench",
                    "VERDA_CLIENT_SECRET": "bench-not-real"}
        self.env |= {f"GPULEDGER_{s.upper()}_MIN_INTERVAL_S": "0" for s in ("fx", "vastai", "runpod", "verda", "openrouter")}
        _user_models(self.home, CATALOGUE_MODELS * (breadth - 1))
        self.offers = _offers.offers(OFFERS * breadth, templates_file=_offers.REAL)
        self.walk = random.Random(breadth)
        self.factors = [1.0] * len(self.offers)
        run([*GPULEDGER, "init"], self.env)
        self.done, self.cpus = [], []  # each night's (wall s, peak MB, bytes per part), and its CPU s

    def night(self, n: int) -> date:
        """Night n, the whole nightly process: its time, memory and the store's bytes after it."""
        night = FIRST_NIGHT + timedelta(days=n - 1)
        recordings = _recordings(self.tmp / "recordings", self.offers, self.factors, night)
        with replay_server(recordings) as replay:
            ran = run([sys.executable, "-c", NIGHTLY], self.env | replay | {"GPULEDGER_NOW": f"{night}T22:00:00"})
        parts = _parts(self.home, self.exports)
        self.done.append((ran.wall_s, ran.peak_rss_mb, parts))
        self.cpus.append(ran.cpu_s)
        print(_night_line(n, ran.wall_s, ran.cpu_s, ran.peak_rss_mb, parts), flush=True)
        print("      phases (wall s): " + ", ".join(f"{k} {v:.1f}" for k, v in _phases(ran.stdout).items()))
        self.factors = [f * (1 + self.walk.uniform(-0.03, 0.03)) for f in self.factors]
        return night

    def baseline(self) -> None:
        tables = _baseline(self.home, self.tmp / "parquet")
        parquet = sum(p for _, _, p in tables.values())
        warehouse = self.done[-1][2]["warehouse"]
        print(f"    baseline: the warehouse's tables as zstd Parquet {parquet / 1e6:.1f} MB; the warehouse file "
              f"{warehouse / 1e6:.1f} MB = {warehouse / parquet:.2f}x; the largest tables (rows, blocks used, Parquet):")
        for table, (rows, used, pq) in sorted(tables.items(), key=lambda t: -t[1][1])[:6]:
            print(f"      {table:16s} {rows:>11,} rows  {used / 1e6:7.1f} MB  Parquet {pq / 1e6:6.1f} MB "
                  f"({used / max(pq, 1):.1f}x)")

    def times(self, compared: float, against: str) -> tuple[float, float]:
        """(the compared night's drift from night 1, the slowest night's wall s), printed with the peak memory."""
        done = self.done
        drift = compared / done[0][0] - 1 if len(done) > 1 else 0.0
        slowest = max(w for w, _, _ in done)
        print(f"    nights: first {done[0][0]:.1f} s, {against} {compared:.1f} s "
              f"({drift:+.0%}), slowest {slowest:.1f} s; peak memory up to {max(p for _, p, _ in done):.0f} MB")
        return drift, slowest

    def report_and_queries(self, nights: int, last: date) -> float:
        """The report of the last night drawn again, then the analyst's queries on it; the slowest query's wall s."""
        # the nightly's report stage alone: what of a night grows with the catalogue (a page per model)
        drawn = run([*GPULEDGER, "report", "--out", str(self.tmp / "report-again")], self.env)
        pages = len(list((self.tmp / "report-again").glob("date=*/*.html")))
        print(f"    the report of night {nights} drawn again (`gpuledger report`, whole process): {pages} pages in "
              f"{drawn.wall_s:.1f} s ({drawn.cpu_s:.1f} s CPU, {drawn.cpu_s / max(pages - 2, 1):.3f} s CPU a model page)")
        print(f"    the analyst's queries on night {nights} ({last}), whole `gpuledger` process, best of 3 (its CPU):")
        asked = {
            "table --model llama-3.3-70b": ["table", "--model", "llama-3.3-70b"],
            "history --gpu 'H100 SXM5 80GB' --days 30": ["history", "--gpu", "H100 SXM5 80GB", "--days", "30"],
            "changes": ["changes"],
            "frontier --model llama-3.3-70b": ["frontier", "--model", "llama-3.3-70b"],
            **{name: ["sql", query] for name, query in QUERIES.items()},
        }
        slowest_query = 0.0
        for name, args in asked.items():
            best = min((run([*GPULEDGER, *args], self.env) for _ in range(3)), key=lambda r: r.wall_s)
            slowest_query = max(slowest_query, best.wall_s)
            print(f"      {best.wall_s:5.2f} s ({best.cpu_s:4.2f} s CPU)  {name}")
        return slowest_query


def _checks(breadth: int, year_how: str, against: str, year_gb: float, slowest: float, drift: float,
            slowest_query: float) -> list[tuple[str, float, float]]:
    return [
        (f"{breadth}x: a year of nights ({year_how}), GB", year_gb, MAX_YEAR_GB.get(breadth, MAX_YEAR_GB[10])),
        (f"{breadth}x: the slowest night, s", slowest, MAX_NIGHT_S.get(breadth, MAX_NIGHT_S[10])),
        (f"{breadth}x: {against} against night 1", abs(drift), MAX_DRIFT),
        (f"{breadth}x: the slowest analyst query through the CLI, s", slowest_query, MAX_QUERY_S),
    ]


def extrapolated_year(year: _Nights, breadth: int, nights: int, last: date) -> list[tuple[str, float, float]]:
    """The year extrapolated from the nights run (the store's growth after night 1), the later nights' median
    against night 1, the queries on the last night and the sql ones again over a year of prices (a copy)."""
    done = year.done
    first_total = sum(done[0][2].values())
    total = sum(done[-1][2].values())
    growth = (total - first_total) / (nights - 1) if nights > 1 else float(first_total)
    year_gb = (first_total + (YEAR - 1) * growth) / 1e9
    per_part = {k: (done[-1][2][k] - done[0][2][k]) / max(nights - 1, 1) / 1e6 for k in done[0][2]}
    print(f"    growth a night (mean of nights 2-{nights}): "
          + ", ".join(f"{k} {v:.2f} MB" for k, v in per_part.items()))
    print(f"    a year, EXTRAPOLATED from {nights} nights: {year_gb:.2f} GB (night 1 {first_total / 1e6:.0f} MB "
          f"+ 364 x {growth / 1e6:.2f} MB)")
    year.baseline()
    later = [w for w, _, _ in done[1:]] or [done[0][0]]
    drift, slowest = year.times(sorted(later)[len(later) // 2], "median of the others")
    slowest_query = year.report_and_queries(nights, last)
    print(f"    the sql queries over {YEAR} nights of replica and hardware prices, one run each:")
    for name, ran in _year_of_prices(year.home, year.tmp / "year", year.env):
        slowest_query = max(slowest_query, ran.wall_s)
        print(f"      {ran.wall_s:5.2f} s ({ran.cpu_s:4.2f} s CPU)  {name}")
    return _checks(breadth, "extrapolated", "the later nights' median", year_gb, slowest, drift, slowest_query)


def seeded_year(year: _Nights, breadth: int, last: date) -> list[tuple[str, float, float]]:
    """The nights after `last` up to 364 seeded, night 365 run on top and measured against night 1 (its wall time
    and CPU; against night 2 too when it ran), the queries on night 365 (the store holds the year's prices)."""
    year_gb = _seeded_year(year.home, year.exports, year.env, last, year.night)
    done, cpus = year.done, year.cpus
    year.baseline()
    drift, slowest = year.times(done[-1][0], "night 365")
    # on a shared machine the CPU a night used moves less with the load than its wall time
    print(f"    CPU (user + system): night 1 {cpus[0]:.1f} s, night 365 {cpus[-1]:.1f} s "
          f"({cpus[-1] / cpus[0] - 1:+.0%})" + (f", night 2 {cpus[1]:.1f} s" if len(cpus) > 2 else ""))
    if len(done) > 2:  # night 1 computes the estimate grid the later nights read back
        print(f"    night 365 against night 2, the first to read the grid back: {done[1][0]:.1f} s -> "
              f"{done[-1][0]:.1f} s ({done[-1][0] / done[1][0] - 1:+.0%}); peak {done[1][1]:.0f} -> {done[-1][1]:.0f} MB")
    slowest_query = year.report_and_queries(YEAR, FIRST_NIGHT + timedelta(days=YEAR - 1))
    return _checks(breadth, "measured, seeded", "night 365", year_gb, slowest, drift, slowest_query)


def breadth_year(breadth: int, nights: int) -> list[tuple[str, float, float]]:
    print(f"  {breadth}x: {OFFERS * breadth:,} vast.ai offers a night (plus the RunPod and Verda recordings), "
          f"{CATALOGUE_MODELS * breadth} models, {nights} nights from {FIRST_NIGHT}")
    with tempfile.TemporaryDirectory(prefix="gpuledger-bench-year-") as tmp:
        year = _Nights(Path(tmp), breadth)
        for n in range(1, nights + 1):
            last = year.night(n)
        return seeded_year(year, breadth, last) if SEED else extrapolated_year(year, breadth, nights, last)


def main() -> None:
    print("year: nightly after nightly on a pinned clock, bytes per part of the store, the analyst's queries")
    checks = []
    for breadth, nights in zip(BREADTHS, NIGHTS, strict=True):
        checks += breadth_year(breadth, nights)
    verdict("year", checks)
