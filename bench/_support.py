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


def timings(code: str, env: dict[str, str] | None = None) -> tuple[dict, Run]:
    """Run Python code that prints one JSON object as its last line; that object and the run."""
    done = python(code, env)
    return json.loads(done.stdout.strip().splitlines()[-1]), done


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def replay_server(directory: Path) -> Iterator[str]:
    """`gpuledger replay` on the directory in its own process (it never competes with the measured one's GIL)."""
    port = free_port()
    server = subprocess.Popen([*GPULEDGER, "replay", "--dir", str(directory), "--port", str(port)], cwd=ROOT, env=CHILD_ENV,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"the replay server on port {port} did not start")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def verdict(section: str, checks: list[tuple[str, float, float]]) -> None:
    """Print each (what, measured ratio or value, limit) and exit non-zero when any is above its limit."""
    missed = [f"{what} {value:.2f} > {limit:g}" for what, value, limit in checks if value > limit]
    for what, value, limit in checks:
        print(f"  {'ok  ' if value <= limit else 'MISS'} {what}: {value:.2f} (target <= {limit:g})")
    if missed:
        raise SystemExit(f"{section}: " + "; ".join(missed))
