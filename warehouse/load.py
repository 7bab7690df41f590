"""Loading facts: `runs` bookkeeping, and one source's batch per run in one transaction (replacing any earlier load)."""

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import date, datetime
from importlib import metadata

import duckdb
import polars as pl

from warehouse import catalog, config
from warehouse.db import transaction

DATA_TABLES = ("offers", "unmapped_gpus", "catalog_files")  # keyed by run_id and source
# keyed by run_id and provider (= source name): the parse's quarantine
API_TABLES = ("api_prices", "api_aliases", "unmapped_api_models")  # keyed by run_id and api_provider (= source)
OFFER_KEY = ("offer_id", "price_kind")
# A day's offers are stored sorted so that like values sit together (one GPU's memory, a host's reliability)
# and DuckDB's per-segment compression finds them: on a generated month, 12% smaller than the parse's order.
OFFERS_ORDER = ("gpu", "gpu_memory_gb", "reliability", "offer_id", "price_kind")  # unique within a run and provider; checked here, `offers` has no index


@dataclass
class FetchRow:
    """One row of `fetches`: the outcome of one source in one run."""

    run_id: str
    source: str
    snapshot_date: date
    started_at: datetime
    status: str  # ok | failed
    finished_at: datetime | None = None
    http_status: int | None = None
    requests: int | None = None
    record_count: int | None = None
    offers_loaded: int | None = None
    quarantined: int | None = None
    unmapped: int | None = None
    truncated: bool | None = None
    error: str | None = None
    archive_dir: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Batch:
    """What one source adds to one run; the frames are None for a failed source."""

    fetch: FetchRow
    offers: pl.DataFrame | None = None
    quarantine: pl.DataFrame | None = None
    unmapped: pl.DataFrame | None = None
    fx_rates: pl.DataFrame | None = None  # date, base, quote, rate, source, fetched_at
    api: dict[str, pl.DataFrame] = field(default_factory=dict)  # API_TABLES' frames of an API price source
    model_configs: pl.DataFrame | None = None  # a config source's checks: model_configs rows, by repository
    derived_models: pl.DataFrame | None = None  # models derived from the configs received (origin derived)
    refetched: list[str] = field(default_factory=list)  # repositories whose config came back: their rows are replaced
    catalog_files: pl.DataFrame | None = None  # a catalog source's files, one row per cloud (catalog_files)


def code_version() -> str:
    try:
        return metadata.version("gpuledger")
    except metadata.PackageNotFoundError:
        return "unknown"


def start_run(con: duckdb.DuckDBPyConnection, run_id: str, snapshot_date: date, trigger: str,
              sources: Sequence[str]) -> None:
    """Insert the run as `running`; the run id must be new."""
    con.execute(
        "insert into runs (run_id, snapshot_date, started_at, status, trigger, sources, code_version) "
        "values (?, ?, ?, 'running', ?, ?, ?)",
        [run_id, snapshot_date, config.utc_now(), trigger, ",".join(sources), code_version()],
    )


def finish_run(con: duckdb.DuckDBPyConnection, run_id: str, *, error: str | None = None,
               quality: str | None = None, quality_reasons: str | None = None, publication: str | None = None,
               mirror: str | None = None) -> str:
    """Close the run from its `fetches` rows: ok (all sources ok), partial (some), failed (none, or error).

    publication and mirror say whether the day reached the lake and the raw responses the mirror."""
    found = con.execute("select sources from runs where run_id = ?", [run_id]).fetchall()
    if not found:
        raise KeyError(f"no run {run_id!r}")
    requested = [s for s in (found[0][0] or "").split(",") if s]
    statuses = dict(con.execute("select source, status from fetches where run_id = ?", [run_id]).fetchall())
    ok = [s for s in requested if statuses.get(s) == "ok"]
    status = "failed" if error or not ok else "ok" if len(ok) == len(requested) else "partial"
    con.execute(
        "update runs set finished_at = ?, status = ?, source_status = ?, error = ?, quality = ?, quality_reasons = ?, "
        "publication = ?, mirror = ? where run_id = ?",
        [config.utc_now(), status, ",".join(f"{s}={statuses.get(s, 'missing')}" for s in requested), error, quality,
         quality_reasons, publication, mirror, run_id],
    )
    return status


def load_batch(con: duckdb.DuckDBPyConnection, batch: Batch) -> FetchRow:
    """Replace the source's rows for the run and write its `fetches` row, all in one transaction.

    fx_rates are shared across runs: a (date, base, quote, source) already stored keeps its first value.
    """
    row = batch.fetch
    frames = {}
    if row.status == "ok":
        row.offers_loaded = 0 if batch.offers is None else batch.offers.height
        row.quarantined = 0 if batch.quarantine is None else batch.quarantine.height
        row.unmapped = 0 if batch.unmapped is None else batch.unmapped.height
        row.unmapped += batch.api["unmapped_api_models"].height if batch.api else 0
        frames = {"offers": batch.offers, "unmapped_gpus": batch.unmapped, "quarantine": batch.quarantine, **batch.api,
                  "model_configs": batch.model_configs, "catalog_files": batch.catalog_files}
        if batch.fx_rates is not None:
            frames["fx_rates"] = batch.fx_rates.unique(subset=["date", "base", "quote", "source"], keep="first",
                                                       maintain_order=True).with_columns(run_id=pl.lit(row.run_id))
    frames = {table: frame for table, frame in frames.items() if frame is not None and not frame.is_empty()}
    if "offers" in frames:
        repeated = frames["offers"].filter(pl.struct(OFFER_KEY).is_duplicated())
        if repeated.height:
            raise duckdb.ConstraintException(f"offers: {repeated.height} rows repeat (offer_id, price_kind), e.g. "
                                             f"{repeated.select(OFFER_KEY).row(0)} (migration 0012)")
    names = [f.name for f in fields(FetchRow)]
    if "offers" in frames:  # sorted here, by polars' threads (the inserts below run on one), by the keys it has
        offers = frames["offers"]
        frames["offers"] = offers.sort([c for c in OFFERS_ORDER if c in offers.columns], nulls_last=True)
    for table, frame in frames.items():  # registered outside the transaction: an aborted one refuses unregister
        con.register(f"_batch_{table}", frame)
    # One thread for the inserts: each DuckDB thread fills its own row group, which cost a 20,000-offer load
    # ~50 MB more peak memory for no gain in speed on a batch this size.
    con.execute("set threads = 1")
    try:
        with transaction(con):
            for table in DATA_TABLES:
                con.execute(f"delete from {table} where run_id = ? and source = ?", [row.run_id, row.source])
            con.execute("delete from quarantine where run_id = ? and provider = ?", [row.run_id, row.source])
            for table in API_TABLES:
                con.execute(f"delete from {table} where run_id = ? and api_provider = ?", [row.run_id, row.source])
            con.execute("delete from fetches where run_id = ? and source = ?", [row.run_id, row.source])
            if "model_configs" in frames:  # state per repository, not per run: the newer check replaces the older
                catalog.replace_models(con, "derived", batch.derived_models, repos=batch.refetched)
                con.execute("delete from model_configs where lower(repo) in "
                            "(select lower(repo) from _batch_model_configs)")
            for table in frames:
                ignore = "or ignore " if table == "fx_rates" else ""
                con.execute(f"insert {ignore}into {table} by name select * from _batch_{table}")
            if "model_configs" in frames:  # what no model serves once the rows are in
                row.unmapped += con.execute("select count(*) from unmapped_models where run_id = ?",
                                            [row.run_id]).fetchall()[0][0]
            values = asdict(row) | {"notes": "\n".join(row.notes) or None}
            con.execute(f"insert into fetches ({', '.join(names)}) values ({', '.join('?' * len(names))})",
                        [values[n] for n in names])
    finally:
        con.execute("reset threads")
        for table in frames:
            con.unregister(f"_batch_{table}")
    return row
