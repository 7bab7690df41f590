"""One writer at a time: an exclusive lock file beside the warehouse, held for a whole run."""

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from warehouse import config


class WriterBusy(RuntimeError):
    """Another gpuledger process holds the writer lock."""


def lock_path() -> Path:
    return config.home() / "writer.lock"


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return "another gpuledger process"
    return f"pid {info.get('pid')} ({info.get('what')}, since {info.get('since')})"


@contextmanager
def writer_lock(what: str, wait_s: float = 0.0, poll_s: float = 0.2) -> Iterator[None]:
    """Hold the writer lock while the block runs; wait up to wait_s for it, then raise WriterBusy."""
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WriterBusy(
                        f"the warehouse is being written by {_holder(path)}; waited {wait_s:g} s. "
                        "Try again when it finishes."
                    ) from None
                time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "what": what, "since": config.utc_now().isoformat()}).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the flock; the kernel also releases it when the process dies
