"""What the benchmark sections share: timed child processes with their peak memory, a replay server, verdicts."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
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
    cpu_s: float = 0.0  # user + system time: on a shared machine, what the command itself cost


# The measured command runs under this small launcher, which reports the command's wall time and peak memory.
# Measured from this process directly, a child's peak memory would include this process's own (Linux counts the
# parent's pages in a child's peak when it forks and execs), and this process holds the generated answers.
LAUNCH = """
import json, os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as out:
    json.dump({"wall_s": time.perf_counter() - start, "peak_rss_mb": usage.ru_maxrss / 1024,
               "cpu_s": usage.ru_utime + usage.ru_stime, "code": os.waitstatus_to_exitcode(status)}, out)
"""


def run(args: list[str], env: dict[str, str] | None = None, check: bool = True) -> Run:
    """Run a child process; its wall time and peak resident memory (from its own rusage)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r", suffix=".json") as measured:
        subprocess.run([sys.executable, "-c", LAUNCH, measured.name, *args], stdout=out, stderr=err, cwd=ROOT,
                       env={**CHILD_ENV, **(env or {})}, check=False)
        result = json.load(measured)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if check and result["code"]:
        raise SystemExit(f"{' '.join(args)} exited {result['code']}: {stderr[-2000:] or stdout[-2000:]}")
    return Run(result["wall_s"], result["peak_rss_mb"], stdout, result["cpu_s"])


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
    from flows.replay.server import ReplayServer

    with ReplayServer(directory) as server:
        yield server.env()


def verdict(section: str, checks: list[tuple[str, float, float]]) -> None:
    """Print each (what, measured ratio or value, limit) and exit non-zero when any is above its limit."""
    missed = [f"{what} {value:.2f} > {limit:g}" for what, value, limit in checks if value > limit]
    for what, value, limit in checks:
        print(f"  {'ok  ' if value <= limit else 'MISS'} {what}: {value:.2f} (target <= {limit:g})")
    if missed:
        raise SystemExit(f"{section}: " + "; ".join(missed))
