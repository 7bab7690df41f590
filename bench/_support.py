"""What the benchmark sections share: timed child processes with their peak memory, a replay server, verdicts."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPULEDGER = [sys.executable, "-m", "flows.cli"]
# Children run as a user's Python does: writing and reusing bytecode caches (a CI or sandbox may disable it,
# which makes every import compile its module again: seconds for Prefect or httpx).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@dataclass(frozen=True)
class Run:
    wall_s: float
    peak_rss_mb: float
    stdout: str


def run(args: list[str], env: dict[str, str] | None = None, check: bool = True) -> Run:
    """Run a child process; its wall time and peak resident memory (from its own rusage)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(args, stdout=out, stderr=err, cwd=ROOT, env={**CHILD_ENV, **(env or {})})
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if check and child.returncode:
        raise SystemExit(f"{' '.join(args)} exited {child.returncode}: {stderr[-2000:] or stdout[-2000:]}")
    return Run(wall, usage.ru_maxrss / 1024, stdout)


def best(args: list[str], times: int, env: dict[str, str] | None = None) -> Run:
    """The fastest of several runs: the machine is shared, the minimum is the least disturbed one."""
    return min((run(args, env) for _ in range(times)), key=lambda r: r.wall_s)


def python(code: str, env: dict[str, str] | None = None) -> Run:
    return run([sys.executable, "-c", code], env)


def last_json(done: Run) -> dict:
    """The JSON object a child printed as its last line."""
    return json.loads(done.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def replay_server(directory: Path) -> Iterator[dict[str, str]]:
    """The replay server on the directory, in this process's threads (the measured commands run in children,
    so they never share its GIL); yields the environment that points gpuledger at it."""
    from flows.replay import ReplayServer

    with ReplayServer(directory) as server:
        yield server.env()


def verdict(section: str, checks: list[tuple[str, float, float]]) -> None:
    """Print each (what, measured ratio or value, limit) and exit non-zero when any is above its limit."""
    missed = [f"{what} {value:.2f} > {limit:g}" for what, value, limit in checks if value > limit]
    for what, value, limit in checks:
        print(f"  {'ok  ' if value <= limit else 'MISS'} {what}: {value:.2f} (target <= {limit:g})")
    if missed:
        raise SystemExit(f"{section}: " + "; ".join(missed))
