"""Loading what was fetched: parse (the parse made while fetching, else the archive), normalise, and load one
source in one transaction, so a rebuild can re-load any archived run directory the same way.

A parse or load failure, whatever it raises, is loaded as that source's failed `fetches` row; the other sources
are not touched.
"""

import ctypes
import logging
from pathlib import Path

import duckdb
import polars as pl

from flows.fetch import FetchResult, SourceProgress, report_progress
from scrapers import settings as source_settings
from scrapers import sources
from scrapers.base import ParseResult, SourceError
from transforms import api_prices, gpu_names, model_catalogue
from transforms.normalise import (
    absurd_api_prices,
    catalog_files_frame,
    fx_rates_frame,
    listings_frame,
    normalise,
    rejections_frame,
)
from warehouse import archive, catalog, config, queries
from warehouse.load import Batch, FetchRow, load_batch

log = logging.getLogger("gpuledger.ingest")

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
    # A config source's 304s and 404s are answers about one repository each, not failed requests
    responses = archive.read_responses(Path(fetched.archive_dir),
                                       ok_only=not getattr(module, "PARSES_EVERY_STATUS", False))
    # By columns where the source has it (large answers), reading one archived body at a time.
    return module.parse_frame(responses) if hasattr(module, "parse_frame") else module.parse(list(responses))


def _batch(con: duckdb.DuckDBPyConnection, fetched: FetchResult, parsed: ParseResult) -> Batch:
    """The parsed listings normalised, with the fetch's row and notes."""
    listings = parsed.frame if parsed.frame is not None else listings_frame(parsed.listings)
    needs_fx = listings.filter(pl.col("native_currency").str.to_uppercase() != "USD").height > 0
    rates = con.sql("select date, base, quote, rate, source from fx_rates").pl() if needs_fx else None
    prices, absurd = absurd_api_prices(api_prices.api_prices_frame(parsed.api_prices))
    result = normalise(listings, pl.concat([rejections_frame(parsed.rejected), absurd]),
                       _gpu_names(con, fetched.source), rates, provider=fetched.source, run_id=fetched.run_id,
                       snapshot_date=fetched.snapshot_date, quarantined_at=config.utc_now())
    notes = fetched.notes + parsed.notes
    if result.duplicates:
        notes.append(f"{result.duplicates} duplicate listing(s) (same offer id and price kind) kept once")
    api = _api_batch(con, prices, parsed.api_aliases, fetched) if parsed.api_prices or parsed.api_aliases else {}
    if api and api["unmapped_api_models"].height:
        notes.append(f"{api['unmapped_api_models'].height} API model(s) map to no catalogue model (unmapped_api_models)")
    models = _model_batch(con, parsed, fetched) if parsed.model_configs else {}
    notes += models.pop("notes", [])
    files = None
    if parsed.files:
        files = catalog_files_frame(parsed.files, queries.catalog_versions(con, fetched.source, fetched.run_id,
                                                                         fetched.snapshot_date),
                                    source=fetched.source, run_id=fetched.run_id, snapshot_date=fetched.snapshot_date)
        notes += [f"{fetched.source}: {f.cloud} failed: {f.error}" for f in parsed.files if f.status == "failed"]
    row = _fetch_row(fetched, "ok", None, notes)
    row.record_count, row.truncated = parsed.record_count, parsed.truncated
    return Batch(row, result.offers, result.quarantine, result.unmapped, fx_rates_frame(parsed.fx_rates), api,
                 catalog_files=files, **models)


MODEL_CONFIGS = {"repo": pl.String, "http_status": pl.Int16, "etag": pl.String, "config_sha256": pl.String,
                 "model": pl.String, "reason": pl.String, "checked_on": pl.Date, "changed_on": pl.Date,
                 "run_id": pl.String, "config_run_id": pl.String, "safetensors": pl.String}


def _model_batch(con: duckdb.DuckDBPyConnection, parsed, fetched: FetchResult) -> dict:
    """The models the fetched configs derive, and every answered repository's model_configs row (Batch fields)."""
    models = queries.model_keys(con)
    held = con.sql("select * from model_configs").pl()
    states = {r["repo"].lower(): r for r in held.iter_rows(named=True)}
    followed = {repo.lower() for repo, _, _ in queries.tracked_repos(con, list(source_settings.from_env().hf_models))}
    done = model_catalogue.checked(parsed.model_configs, models, states, fetched.snapshot_date, fetched.run_id,
                                   followed)
    return {"model_configs": pl.DataFrame([{k: s[k] for k in MODEL_CONFIGS} for s in done.states],
                                          schema=MODEL_CONFIGS, orient="row"),
            "derived_models": catalog.models_frame(done.models), "refetched": done.refetched, "notes": done.notes}


def _api_batch(con: duckdb.DuckDBPyConnection, prices: pl.DataFrame, aliases: list,
               fetched: FetchResult) -> dict[str, pl.DataFrame]:
    """API prices mapped to the catalogue's models, their aliases and the unmapped ids, stamped with the run."""
    stamp = {"snapshot_date": pl.lit(fetched.snapshot_date), "run_id": pl.lit(fetched.run_id),
             "api_provider": pl.lit(fetched.source)}
    models = con.sql("select model_id, hf_repo, hf_ids, api_ids from models").pl()
    mapped = api_prices.map_models(prices, models)
    return {"api_prices": mapped.with_columns(**stamp),
            "api_aliases": api_prices.aliases_frame(aliases).with_columns(**stamp),
            "unmapped_api_models": api_prices.unmapped(mapped).with_columns(**stamp)}


def load_source(con: duckdb.DuckDBPyConnection, fetched: FetchResult | Path) -> FetchRow:
    """Parse from the archive, normalise and load one source under the caller's (single writer) connection.

    `fetched` is a FetchResult, or an archive run directory to re-load (its fetch.json says how the fetch went).
    A fetch or parse failure is loaded as a failed `fetches` row with the error; nothing else is written.
    """
    if isinstance(fetched, Path):
        fetched = FetchResult.from_json(archive.read_summary(fetched))
    row = _load_source(con, fetched)
    report_progress(SourceProgress(row.source, "loaded" if row.status == "ok" else "failed", row.requests or 0,
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
    except Exception as exc:  # whatever an answer makes the parse raise fails that source, never the night
        log.exception("%s: parse failed unexpectedly", fetched.source)
        error = f"{fetched.source}: unexpected {type(exc).__name__} reading its answers: {str(exc)[:200]}"
        return load_batch(con, Batch(_fetch_row(fetched, "failed", error, fetched.notes)))
    _release_freed_memory()
    try:
        return load_batch(con, batch)
    except duckdb.Error as exc:
        log.exception("%s: load failed", fetched.source)
        return load_batch(con, Batch(_fetch_row(fetched, "failed", f"{fetched.source}: load failed: {exc}",
                                                fetched.notes)))
