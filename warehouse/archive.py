"""The raw archive: every response body untouched (gzip) with its metadata, under raw/<source>/<date>/<run_id>/.

Layout of one run directory:
    NNNN.body.gz    the body as received (a body holding credentials is stored redacted, and says so)
    NNNN.meta.json  source, method, url (secrets removed), path, status, content_type, headers, fetched_at,
                    sha256 and bytes of the stored body, request_body (POSTs), redacted, note
    fetch.json      the fetch outcome (status, error, requests, notes), written last
Every file is written to a temporary name, flushed and renamed, so a crash never leaves half a file.
"""

import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path

from warehouse import config
from warehouse.records import RawResponse

# gzip's default level 9 took 13 s for a 51 MB vast.ai answer, level 3 1.7 s for a file 40% larger (7.4 MB
# against 5.3 MB): the archive is written while the fetch waits, and read by any gzip reader either way.
GZIP_LEVEL = 3

SUMMARY = "fetch.json"
REDACTION_NOTE = "credentials in this body were replaced with [REDACTED] before archiving; sha256 is of the stored body"


class ArchiveError(RuntimeError):
    """An archive directory that cannot be read back faithfully."""


def run_dir(source: str, snapshot_date: date, run_id: str, root: Path | None = None) -> Path:
    return (root or config.raw_dir()) / source / snapshot_date.isoformat() / run_id


def atomic_write(path: Path, data: bytes) -> None:
    """Write data to path through a temporary file in the same directory and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _json_bytes(data: dict) -> bytes:
    return json.dumps(data, indent=1, sort_keys=True, default=str).encode()


class ArchiveWriter:
    """Appends responses to one run directory, numbered in arrival order; safe to call from one thread."""

    def __init__(self, directory: Path):
        self.directory = directory
        existing = [int(p.name[:4]) for p in directory.glob("[0-9][0-9][0-9][0-9].meta.json")]
        self._next = max(existing, default=0) + 1

    def write(self, raw: RawResponse) -> Path:
        seq = f"{self._next:04d}"
        self._next += 1
        body_path = self.directory / f"{seq}.body.gz"
        atomic_write(body_path, gzip.compress(raw.body, compresslevel=GZIP_LEVEL, mtime=0))
        meta = {
            "source": raw.source,
            "method": raw.method,
            "url": raw.url,
            "path": raw.path,
            "status": raw.status,
            "content_type": raw.headers.get("content-type"),
            "headers": raw.headers,
            "fetched_at": raw.fetched_at.isoformat(),
            "sha256": hashlib.sha256(raw.body).hexdigest(),
            "bytes": len(raw.body),
            "body_file": body_path.name,
            "request_body": raw.request_body,
            "redacted": raw.redacted,
        }
        if raw.redacted:
            meta["note"] = REDACTION_NOTE
        meta_path = self.directory / f"{seq}.meta.json"
        atomic_write(meta_path, _json_bytes(meta))
        return meta_path

    def write_summary(self, summary: dict) -> Path:
        path = self.directory / SUMMARY
        atomic_write(path, _json_bytes(summary))
        return path


def read_metadata(directory: Path) -> list[dict]:
    """The metadata of every archived response in a run directory, in arrival order."""
    metas = []
    for path in sorted(directory.glob("[0-9][0-9][0-9][0-9].meta.json")):
        try:
            meta = json.loads(path.read_text())
        except ValueError as exc:
            raise ArchiveError(f"{path}: unreadable metadata ({exc})") from None
        meta["_dir"] = str(directory)
        metas.append(meta)
    return metas


def newest_metadata(source: str, *, days: int = 14, root: Path | None = None) -> Iterator[dict]:
    """The metadata of a source's archived responses, newest run first, over its newest `days` dates: where a
    source looks for the copy it already holds of a file (the held copy answers a 304)."""
    base = (root or config.raw_dir()) / source
    if not base.is_dir():
        return
    for day in sorted((p for p in base.iterdir() if p.is_dir()), reverse=True)[:days]:
        for run in sorted((p for p in day.iterdir() if p.is_dir()), reverse=True):
            yield from reversed(read_metadata(run))


def read_body(meta: dict) -> bytes:
    """The stored body of one response, checked against its sha256."""
    path = Path(meta["_dir"]) / meta["body_file"]
    try:
        body = gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as exc:
        raise ArchiveError(f"{path}: unreadable body ({exc})") from None
    if hashlib.sha256(body).hexdigest() != meta["sha256"]:
        raise ArchiveError(f"{path}: sha256 does not match its metadata")
    return body


def read_responses(directory: Path, *, ok_only: bool = True) -> Iterator[RawResponse]:
    """Yield the archived responses of a run directory back as RawResponse, for parsing without network."""
    for meta in read_metadata(directory):
        if ok_only and not 200 <= meta["status"] < 300:
            continue
        yield RawResponse(
            source=meta["source"],
            method=meta["method"],
            url=meta["url"],
            status=meta["status"],
            headers=meta.get("headers") or {},
            body=read_body(meta),
            fetched_at=datetime.fromisoformat(meta["fetched_at"]),
            request_body=meta.get("request_body"),
            redacted=meta.get("redacted", False),
        )


def read_summary(directory: Path) -> dict:
    path = directory / SUMMARY
    if not path.exists():
        raise ArchiveError(f"{path}: no fetch summary; the fetch never finished")
    return json.loads(path.read_text())
