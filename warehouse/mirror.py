"""The raw archive's copy off the machine ($GPULEDGER_RAW_MIRROR): the same files under the same keys.

`raw/<source>/<date>/<run_id>/<file>` is copied to `<mirror>/<source>/<date>/<run_id>/<file>`. Each local run
directory's `mirrored.json` lists the files the mirror holds (it is never copied itself), so a copy that
failed is retried by the next sync, the local file is never touched, and `gpuledger status` can list what
lives only on this machine. Within a run directory `fetch.json` goes last, both ways: a directory with its
summary is complete, on the mirror and after a restore.
"""

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from warehouse import archive, lake

MARKER = "mirrored.json"


@dataclass(frozen=True)
class SyncResult:
    copied: int
    pending: int  # files still only on this machine
    error: str | None = None


def _order(name: str) -> tuple[bool, str]:
    return name == archive.SUMMARY, name


def _archived(run_dir: Path) -> list[str]:
    """The run directory's archived files (no marker, no temporary file), fetch.json last."""
    names = [p.name for p in run_dir.iterdir() if p.is_file() and p.name != MARKER and not p.name.startswith(".")]
    return sorted(names, key=_order)


def _marked(run_dir: Path) -> set[str]:
    try:
        return set(json.loads((run_dir / MARKER).read_text()))
    except (FileNotFoundError, ValueError):  # an unreadable marker only means copying again
        return set()


def _mark(run_dir: Path, names: set[str]) -> None:
    archive.atomic_write(run_dir / MARKER, json.dumps(sorted(names, key=_order), indent=1).encode())


def _key(raw_root: Path, run_dir: Path, name: str) -> str:
    return f"{run_dir.relative_to(raw_root).as_posix()}/{name}"


def pending(raw_root: Path) -> list[tuple[Path, list[str]]]:
    """Every run directory with files the mirror does not hold yet, and those files."""
    found = []
    for run_dir in sorted(p for p in raw_root.glob("*/*/*") if p.is_dir()):
        done = _marked(run_dir)
        missing = [n for n in _archived(run_dir) if n not in done]
        if missing:
            found.append((run_dir, missing))
    return found


def sync(store: lake.Store, raw_root: Path) -> SyncResult:
    """Copy every archived file the mirror lacks; stop at the first failure, which the next sync retries."""
    todo = pending(raw_root)
    copied = 0
    for run_dir, names in todo:
        done = _marked(run_dir)
        try:
            for name in names:
                store.put(_key(raw_root, run_dir, name), (run_dir / name).read_bytes())
                done.add(name)
                copied += 1
        except OSError as exc:
            left = sum(len(n) for _, n in todo) - copied
            return SyncResult(copied, left, f"raw mirror {store.url}: {exc}")
        finally:
            _mark(run_dir, done)
    return SyncResult(copied, 0)


def restore(store: lake.Store, raw_root: Path, day: date, sources) -> int:
    """Copy the day's run directories of the given sources from the mirror where this machine lacks them."""
    restored = 0
    for source in sources:
        by_run: dict[str, list[str]] = {}
        for key in store.list(f"{source}/{day.isoformat()}"):
            parts = key.split("/")
            if len(parts) == 4:  # source/date/run_id/file
                by_run.setdefault(parts[2], []).append(parts[3])
        for run_id, names in sorted(by_run.items()):
            run_dir = archive.run_dir(source, day, run_id, raw_root)
            done = _marked(run_dir) if run_dir.is_dir() else set()
            for name in sorted(names, key=_order):
                if not (run_dir / name).exists():
                    archive.atomic_write(run_dir / name, store.get(_key(raw_root, run_dir, name)))
                    restored += 1
                done.add(name)
            _mark(run_dir, done)
    return restored
