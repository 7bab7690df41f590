"""Plain orchestration of the sources: fetch (self-contained, thread-safe, archive first), then load from the archive.

fetch_source never raises for a source failure: the failure is returned and written to the archive's
fetch.json. load_source parses from the archive only, so a rebuild can re-load any archived run directory;
a run's own load takes the parse its fetch made from the archive while the next answers were on their way.
"""

import asyncio
import ctypes
import logging
import queue
import secrets
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import duckdb
import polars as pl

from scrapers import sources
from scrapers.base import ParseResult, RawResponse, SourceError
from scrapers.http import SourceClient
from scrapers.settings import Settings, from_env
from transforms import api_prices, gpu_names
from transforms.normalise import fx_rates_frame, listings_frame, normalise, rejections_frame
from warehouse import archive, catalog, config, lake, mirror
from warehouse.load import Batch, FetchRow, finish_run, load_batch, start_run

log = logging.getLogger("gpuledger.fetching")


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


def _report(progress: SourceProgress) -> None:
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
        _report(SourceProgress(name, "fetching", client.requests))

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
    _report(SourceProgress(name, "failed" if error else "fetched", client.requests))
    return result


def _raise_failed_write(writes: list[Future]) -> None:
    failed = next((w.exception() for w in writes if w.done() and w.exception()), None)
    if failed:
        raise failed


def _gpu_names(con: duckdb.DuckDBPyConnection, provider: str) -> gpu_names.Catalogue:
    if not con.execute("select count(*) from gpus").fetchall()[0][0]:
        catalog.load_catalogs(con)
    return gpu_names.catalogue(con.sql("select name, memory_gb from gpus").pl(),
                               con.sql("select provider, gpu_raw, memory_gb, gpu, note from gpu_aliases").pl(), provider)


def _fetch_row(fetched: FetchResult, status: str, error: str | None, notes: list[str]) -> FetchRow:
    return FetchRow(
        run_id=fetched.run_id, source=fetched.source, snapshot_date=fetched.snapshot_date,
        started_at=fetched.started_at, finished_at=fetched.finished_at, status=status,
        http_status=fetched.http_status, requests=fetched.requests, error=error, archive_dir=fetched.archive_dir,
        notes=list(dict.fromkeys(notes)))


def _parse(fetched: FetchResult) -> ParseResult:
    """The parse made while fetching, else a parse of the archived responses; raises SourceError/ArchiveError
    when they cannot be read."""
    if fetched.parsed is not None:
        return fetched.parsed.take()
    module = sources.get(fetched.source)
    responses = archive.read_responses(Path(fetched.archive_dir))
    # By columns where the source has it (large answers), reading one archived body at a time.
    return module.parse_frame(responses) if hasattr(module, "parse_frame") else module.parse(list(responses))


def _batch(con: duckdb.DuckDBPyConnection, fetched: FetchResult, parsed: ParseResult) -> Batch:
    """The parsed listings normalised, with the fetch's row and notes."""
    listings = parsed.frame if parsed.frame is not None else listings_frame(parsed.listings)
    needs_fx = listings.filter(pl.col("native_currency").str.to_uppercase() != "USD").height > 0
    rates = con.sql("select date, base, quote, rate, source from fx_rates").pl() if needs_fx else None
    result = normalise(listings, rejections_frame(parsed.rejected), _gpu_names(con, fetched.source), rates,
                       provider=fetched.source, run_id=fetched.run_id, snapshot_date=fetched.snapshot_date,
                       quarantined_at=config.utc_now())
    notes = fetched.notes + parsed.notes
    if result.duplicates:
        notes.append(f"{result.duplicates} duplicate listing(s) (same offer id and price kind) kept once")
    api = _api_batch(con, parsed, fetched) if parsed.api_prices or parsed.api_aliases else {}
    if api and api["unmapped_api_models"].height:
        notes.append(f"{api['unmapped_api_models'].height} API model(s) map to no catalogue model (unmapped_api_models)")
    row = _fetch_row(fetched, "ok", None, notes)
    row.record_count, row.truncated = parsed.record_count, parsed.truncated
    return Batch(row, result.offers, result.quarantine, result.unmapped, fx_rates_frame(parsed.fx_rates), api)


def _api_batch(con: duckdb.DuckDBPyConnection, parsed, fetched: FetchResult) -> dict[str, pl.DataFrame]:
    """API prices mapped to the catalogue's models, their aliases and the unmapped ids, stamped with the run."""
    stamp = {"snapshot_date": pl.lit(fetched.snapshot_date), "run_id": pl.lit(fetched.run_id),
             "api_provider": pl.lit(fetched.source)}
    models = con.sql("select model_id, hf_repo, hf_ids, api_ids from models").pl()
    mapped = api_prices.map_models(api_prices.api_prices_frame(parsed.api_prices), models)
    return {"api_prices": mapped.with_columns(**stamp),
            "api_aliases": api_prices.aliases_frame(parsed.api_aliases).with_columns(**stamp),
            "unmapped_api_models": api_prices.unmapped(mapped).with_columns(**stamp)}


def load_source(con: duckdb.DuckDBPyConnection, fetched: FetchResult | Path) -> FetchRow:
    """Parse from the archive, normalise and load one source under the caller's (single writer) connection.

    `fetched` is a FetchResult, or an archive run directory to re-load (its fetch.json says how the fetch went).
    A fetch or parse failure is loaded as a failed `fetches` row with the error; nothing else is written.
    """
    if isinstance(fetched, Path):
        fetched = FetchResult.from_json(archive.read_summary(fetched))
    row = _load_source(con, fetched)
    _report(SourceProgress(row.source, "loaded" if row.status == "ok" else "failed", row.requests or 0,
                           row.record_count, row.offers_loaded))
    return row


def _release_freed_memory() -> None:
    """Give the memory Python freed back to the system (glibc keeps it otherwise). The fetch, the parse and
    DuckDB each allocate through their own allocator, so what one freed and glibc kept was added to the
    next one's peak: trimming before the parse and before the load took a 20,000-offer fetch from ~515 MB
    to ~405 MB peak resident memory, for about 10 ms. No gc.collect(): the parsed answers hold no reference
    cycles, so counting frees them, and a full collection in a long-lived process (a test session, a served
    flow) walks every object it holds: seconds, which stalled the concurrent fetches' deadlines."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (it has malloc_trim); None elsewhere (musl, macOS)."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None


_LIBC = _glibc()


def _load_source(con: duckdb.DuckDBPyConnection, fetched: FetchResult) -> FetchRow:
    if fetched.status != "ok":
        return load_batch(con, Batch(_fetch_row(fetched, "failed", fetched.error, fetched.notes)))
    _release_freed_memory()
    try:
        parsed = _parse(fetched)
        _release_freed_memory()
        batch = _batch(con, fetched, parsed)
        del parsed
    except (SourceError, archive.ArchiveError) as exc:
        return load_batch(con, Batch(_fetch_row(fetched, "failed", str(exc), fetched.notes)))
    _release_freed_memory()
    try:
        return load_batch(con, batch)
    except duckdb.Error as exc:
        log.exception("%s: load failed", fetched.source)
        return load_batch(con, Batch(_fetch_row(fetched, "failed", f"{fetched.source}: load failed: {exc}",
                                                fetched.notes)))


def source_names(names: list[str] | None) -> list[str]:
    """The requested sources in registry order (FX first, so the others can convert with its rates)."""
    wanted = [n for n in sources.SOURCES if names is None or n in names]
    unknown = set(names or ()) - set(wanted)
    if unknown:
        raise ValueError(f"unknown source(s) {', '.join(sorted(unknown))}; known: {', '.join(sources.SOURCES)}")
    return wanted


def fetch_concurrently(names: list[str], run_id: str, snapshot_date: date,
                       settings: Settings | None = None) -> dict[str, FetchResult]:
    """Every source in its own thread (each has its own client and event loop), parsing ahead for the load that
    follows; failures come back as results."""
    settings = settings or from_env()
    with ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="fetch") as pool:
        futures = {n: pool.submit(fetch_source, n, run_id, snapshot_date, settings, parse_ahead=True) for n in names}
        return {n: future.result() for n, future in futures.items()}


def sync_mirror() -> mirror.SyncResult | None:
    """Copy the raw archive's new files to $GPULEDGER_RAW_MIRROR (None when unset); a failure is returned."""
    location = config.raw_mirror()
    if not location:
        return None
    result = mirror.sync(lake.open_store(location), config.raw_dir())
    if result.error:
        log.warning("%s; %d file(s) wait for the next run", result.error, result.pending)
    return result


def mirror_state(result: mirror.SyncResult | None) -> str | None:
    """runs.mirror: mirrored, pending (some files are only on this machine) or None (no mirror)."""
    return None if result is None else "pending" if result.pending else "mirrored"


def fetch_and_load(con: duckdb.DuckDBPyConnection, names: list[str] | None, run_id: str, snapshot_date: date, *,
                   trigger: str = "cli", settings: Settings | None = None) -> list[FetchRow]:
    """One run without deriving: start it, fetch the sources concurrently, load each (FX first), finish it."""
    wanted = source_names(names)
    start_run(con, run_id, snapshot_date, trigger, wanted)
    try:
        results = fetch_concurrently(wanted, run_id, snapshot_date, settings)
        mirrored = sync_mirror()
        rows = [load_source(con, results[name]) for name in wanted]
    except BaseException as exc:
        finish_run(con, run_id, error=f"run aborted: {type(exc).__name__}: {exc}")
        raise
    finish_run(con, run_id, mirror=mirror_state(mirrored))
    return rows
