"""Start-up: how long the everyday commands take, whole process, on a warehouse holding one replayed day.

Baseline: a Python process that imports DuckDB and answers `select 1` (what any DuckDB client pays).
Every command runs once to warm the bytecode caches, then the best of five counts. `python -X importtime`
names the slowest imports of `gpuledger --help`.
Targets: --help, sql "select 1", status, models, gpus within 0.5 s; table and frontier within 1 s.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

from bench._support import CHILD_ENV, GPULEDGER, ROOT, best, replay_server, run, verdict

TIMES = 5
QUICK_S, TABLE_S = 0.5, 1.0
COMMANDS = {
    "--help": ["--help"],
    "sql 'select 1'": ["sql", "select 1"],
    "status": ["status"],
    "models": ["models"],
    "gpus": ["gpus"],
    "table": ["table", "--model", "deepseek-v4-flash"],
    "frontier": ["frontier", "--model", "llama-3.3-70b", "--format", "csv"],
}
PRICED = ("table", "frontier")  # commands that load the day and price it: TABLE_S
BASELINE = "import duckdb; print(duckdb.sql('select 1').fetchall())"


def slowest_imports(env: dict[str, str], top: int = 5) -> list[tuple[str, float]]:
    """The modules with the largest cumulative import time in `gpuledger --help`, as `-X importtime` says."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-m", "flows.cli", "--help"], cwd=ROOT,
                         env=env, capture_output=True, text=True).stderr
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line.split("|")
            if not name.startswith("  "):  # top-level imports only
                rows.append((name.strip(), int(cumulative) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:top]


def main() -> None:
    from flows.replay.demo import DEMO_ENV, FAST

    print("startup: whole-process wall of each command (best of 5), one replayed day in the warehouse")
    with tempfile.TemporaryDirectory(prefix="gpuledger-bench-") as tmp:
        env = {"GPULEDGER_HOME": str(Path(tmp) / "home"), "GPULEDGER_EXPORTS": str(Path(tmp) / "exports")}
        with replay_server(ROOT / "tests" / "fixtures" / "sources") as replay:
            run([*GPULEDGER, "nightly", "--no-prefect", "--format", "none"], env | replay | DEMO_ENV | FAST)
        env |= {"GPULEDGER_NOW": replay["GPULEDGER_NOW"]}
        baseline = best([sys.executable, "-c", BASELINE], TIMES)
        walls = {}
        for name, args in COMMANDS.items():
            run([*GPULEDGER, *args], env)  # warm the bytecode caches
            walls[name] = best([*GPULEDGER, *args], TIMES, env).wall_s
        imports = slowest_imports(CHILD_ENV | env)
    print(f"  baseline (python + duckdb, select 1): {baseline.wall_s:.2f}s")
    for name, wall in walls.items():
        print(f"  gpuledger {name:<16} {wall:5.2f}s  ({wall / baseline.wall_s:4.1f}x the baseline)")
    print("  slowest imports of gpuledger --help: " + ", ".join(f"{n} {s:.2f}s" for n, s in imports))
    verdict("startup", [(f"gpuledger {name} wall s", wall, TABLE_S if name in PRICED else QUICK_S)
                        for name, wall in walls.items()])
