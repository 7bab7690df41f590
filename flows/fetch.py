"""Fetching the sources: each in its own thread with its own client and event loop, every answer archived as it
arrives (and parsed ahead for the load that follows), progress reported to whoever listens.

fetch_source never raises for a source failure: the failure is returned and written to the archive's fetch.json,
so a rebuild can tell how each archived fetch went. flows/ingest.py loads what was fetched.
"""

import asyncio
import logging
import queue
import secrets
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime

from scrapers import sources
from scrapers.base import ParseResult, SourceError
from scrapers.http import SourceClient
from scrapers.settings import Settings, from_env
from warehouse import archive, config
from warehouse.records import RawResponse

log = logging.getLogger("gpuledger.fetch")

class ParseAhead:
    """A source's parse on a thread of its own, fed each response once it is archived: the parse of one answer
    overlaps the wait for the next (the transfer, vast's pacing) instead of starting after the last. It reads
    the response in memory, the bytes just written (the archive stores the body as the response carries it),
    not the file read back: decompressing and checking 51 MB again took 0.12 s of CPU, on the two cores the
    fetch shares. The parse is the same pure function over the same responses, so its result, or its error, is
    the one load_source would get by parsing the archive afterwards (tests/flows/test_fetch.py)."""

    def __init__(self, module):
        self._archived: queue.SimpleQueue[RawResponse | None] = queue.SimpleQueue()
        self._result: Future | None = Future()
        threading.Thread(target=self._parse, args=(module,), name=f"parse-{module.NAME}", daemon=True).start()

    def archived(self, raw: RawResponse) -> None:
        self._archived.put(raw)

    def close(self) -> None:
        """No more responses: the parse finishes with what it was given."""
        self._archived.put(None)

    def take(self) -> ParseResult:
        """The parse, once finished (or its error, raised); handed over once, so the load alone holds it."""
        result, self._result = self._result, None
        if result is None:
            raise RuntimeError("this parse was already taken")
        return result.result()

    def _parse(self, module) -> None:
        result = self._result
        successful = (raw for raw in iter(self._archived.get, None) if raw.ok)  # until close(); as read_responses
        try:
            result.set_result(module.parse_frame(successful))
        except BaseException as exc:  # raised again in load_source, which records it as it would its own
            result.set_exception(exc)


@dataclass
class FetchResult:
    """The outcome of fetching one source, as written to <archive_dir>/fetch.json."""

    source: str
    run_id: str
    snapshot_date: date
    archive_dir: str
    status: str  # ok | failed
    started_at: datetime
    finished_at: datetime
    requests: int
    http_status: int | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    # The parse made while the fetch went on, for load_source; never written to fetch.json.
    parsed: ParseAhead | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        stored = {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "parsed"}
        return stored | {"notes": list(self.notes), "snapshot_date": self.snapshot_date.isoformat(),
                         "started_at": self.started_at.isoformat(), "finished_at": self.finished_at.isoformat()}

    @classmethod
    def from_json(cls, data: dict) -> "FetchResult":
        return cls(**data | {"snapshot_date": date.fromisoformat(data["snapshot_date"]),
                             "started_at": datetime.fromisoformat(data["started_at"]),
                             "finished_at": datetime.fromisoformat(data["finished_at"])})


@dataclass(frozen=True)
class SourceProgress:
    """How far one source has got: sent while it fetches (per response) and when it is loaded."""

    source: str
    stage: str  # fetching | fetched | failed | loaded
    requests: int
    records: int | None = None  # records parsed, once loaded
    listings: int | None = None  # offers loaded


_listeners: list[Callable[[SourceProgress], None]] = []


@contextmanager
def progress_to(listener: Callable[[SourceProgress], None]) -> Iterator[None]:
    """Send every source's progress to listener while the block runs (from the fetch threads, Prefect's too:
    a process-wide hook, since a callable cannot travel through a flow's parameters)."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def report_progress(progress: SourceProgress) -> None:
    for listener in list(_listeners):
        listener(progress)


def new_run_id() -> str:
    """A sortable, unique run id: UTC time of the clock (GPULEDGER_NOW when pinned) plus random hex."""
    return f"{config.utc_now():%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def fetch_source(name: str, run_id: str, snapshot_date: date, settings: Settings | None = None, *,
                 transport=None, parse_ahead: bool = False) -> FetchResult:
    """Fetch one source with its own client and event loop, archiving each response as it arrives.

    parse_ahead: parse the answers while the fetch goes on (sources with a parse_frame), for a load_source
    that follows in this process; the result carries that parse."""
    settings = settings or from_env()
    module = sources.get(name)
    directory = archive.run_dir(name, snapshot_date, run_id)
    directory.mkdir(parents=True, exist_ok=True)
    writer = archive.ArchiveWriter(directory)
    ahead = ParseAhead(module) if parse_ahead and hasattr(module, "parse_frame") else None
    # Each answer is compressed and written on a thread of its own while the next request goes out (gzip, the
    # checksum and fsync release the GIL): written inline, the server waited for them, ~0.15 s per 20 MB.
    archiving = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"archive-{name}")
    writes: list[Future] = []

    def write(raw) -> None:
        writer.write(raw)
        if ahead:
            ahead.archived(raw)

    def archived(raw) -> None:
        _raise_failed_write(writes)  # a write that failed stops the fetch at its next answer
        writes.append(archiving.submit(write, raw))
        report_progress(SourceProgress(name, "fetching", client.requests))

    client = SourceClient(name, settings, transport=transport, on_response=archived)
    started, error = config.utc_now(), None

    async def run() -> None:
        async with client:
            await module.fetch(client, settings)

    try:
        try:
            asyncio.run(run())
        finally:
            archiving.shutdown()  # every answer received is on disk before the fetch is summed up
        _raise_failed_write(writes)
    except SourceError as exc:
        error = client.scrub(str(exc))
    except Exception as exc:  # a bug or a disk error must not stop the other sources: record it
        log.exception("%s: fetch failed unexpectedly", name)
        error = client.scrub(f"{name}: unexpected {type(exc).__name__}: {exc}")
    finally:
        if ahead:
            ahead.close()
    result = FetchResult(
        source=name, run_id=run_id, snapshot_date=snapshot_date, archive_dir=str(directory),
        status="failed" if error else "ok", started_at=started, finished_at=config.utc_now(),
        requests=client.requests, http_status=client.last_status, error=error, notes=client.notes,
        parsed=ahead if ahead and not error else None)
    writer.write_summary(result.to_json())
    report_progress(SourceProgress(name, "failed" if error else "fetched", client.requests))
    return result


def _raise_failed_write(writes: list[Future]) -> None:
    failed = next((w.exception() for w in writes if w.done() and w.exception()), None)
    if failed:
        raise failed


def source_names(names: list[str] | None) -> list[str]:
    """The requested sources in registry order (FX first, so the others can convert with its rates)."""
    wanted = [n for n in sources.SOURCES if names is None or n in names]
    unknown = set(names or ()) - set(wanted)
    if unknown:
        raise ValueError(f"unknown source(s) {', '.join(sorted(unknown))}; known: {', '.join(sources.SOURCES)}")
    return wanted


def waves(names: list[str]) -> list[list[str]]:
    """The sources in the order they can be fetched: the others together, then those that read what the others
    loaded (scrapers.sources.AFTER_LOAD); a wave left empty is dropped."""
    return [wave for wave in ([n for n in names if n not in sources.AFTER_LOAD],
                              [n for n in names if n in sources.AFTER_LOAD]) if wave]


def fetch_concurrently(names: list[str], run_id: str, snapshot_date: date,
                       settings: Settings | None = None) -> dict[str, FetchResult]:
    """Every source in its own thread (each has its own client and event loop), parsing ahead for the load that
    follows; failures come back as results."""
    settings = settings or from_env()
    with ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="fetch") as pool:
        futures = {n: pool.submit(fetch_source, n, run_id, snapshot_date, settings, parse_ahead=True) for n in names}
        return {n: future.result() for n, future in futures.items()}
