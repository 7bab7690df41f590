"""The Prefect flows: `nightly` (fetch, load, derive, export) and `rebuild` (the same from the raw archive).

The warehouse is opened only while writing, so readers get in between; the writer lock is held for the
whole run, so two runs never interleave.
"""

from dataclasses import asdict, dataclass
from datetime import date, timedelta
from pathlib import Path

from flows import prefect_env

prefect_env.configure()

from prefect import flow, get_run_logger, task  # noqa: E402  (after the offline settings)
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.schedules import Cron  # noqa: E402
from prefect.states import Completed, Failed  # noqa: E402

from flows import fetching  # noqa: E402
from flows.derive import EXPORTED, DerivePlan, derive_date  # noqa: E402
from scrapers import sources as source_registry  # noqa: E402
from warehouse import archive, catalog, config, db, export, load  # noqa: E402
from warehouse.lock import writer_lock  # noqa: E402

LOCK_WAIT_S = 900.0  # a second run waits this long for the first, then gives up with a clear message


@dataclass
class RunSummary:
    run_id: str
    snapshot_date: str
    status: str
    quality: str
    sources: dict[str, str]
    errors: dict[str, str]
    derived: dict[str, int]
    exported: list[str]


@task(name="fetch", task_run_name="fetch-{source}", cache_policy=NO_CACHE)
def fetch_task(source: str, run_id: str, snapshot_date: date) -> fetching.FetchResult:
    """One source's fetch and archive; failures come back as a failed result, never as an exception."""
    return fetching.fetch_source(source, run_id, snapshot_date)


def _close_interrupted_runs(con) -> None:
    """Runs left `running` by a process that died: the writer lock proves nobody is running them now."""
    for (run_id,) in con.execute("select run_id from runs where status = 'running'").fetchall():
        load.finish_run(con, run_id, error="interrupted: the process running it stopped before it finished")


def _publish(con, day: date, export_format: str):
    """Derive the day's tables behind the quality gates, then export them."""
    counts, verdict = derive_date(con, day, DerivePlan())
    files = export.export_date(con, day, config.exports_dir(), EXPORTED, export_format) if export_format else []
    return counts, verdict, [str(f) for f in files]


def _final_state(summary: RunSummary):
    """Completed when every source is ok, Completed named Partial when some failed, Failed when all did."""
    if summary.status == "ok":
        return Completed(message=f"run {summary.run_id}: every source ok", data=asdict(summary))
    failures = "; ".join(f"{s}: {e}" for s, e in summary.errors.items())
    message = f"run {summary.run_id}: {summary.status}; failed: {failures}"
    if summary.status == "partial":
        return Completed(name="Partial", message=message, data=asdict(summary))
    return Failed(message=message, data=asdict(summary))


@flow(name="gpuledger-nightly")
def nightly(
    sources: list[str] | None = None,
    snapshot_date: date | None = None,
    export_format: str = "parquet",
    trigger: str = "schedule",
) -> dict:
    """Snapshot every source concurrently, load each in its own transaction, derive the day's tables, export."""
    logger = get_run_logger()
    names = [n for n in source_registry.SOURCES if sources is None or n in sources]
    unknown = set(sources or ()) - set(names)
    if unknown:
        raise ValueError(f"unknown source(s) {', '.join(sorted(unknown))}; known: {', '.join(source_registry.SOURCES)}")
    day = snapshot_date or config.utc_today()
    run_id = fetching.new_run_id()
    with writer_lock(f"nightly {run_id}", wait_s=LOCK_WAIT_S):
        with db.connect() as con:
            _close_interrupted_runs(con)
            catalog.load_catalogs(con)
            load.start_run(con, run_id, day, trigger, names)
        futures = {name: fetch_task.submit(name, run_id, day) for name in names}
        results = {name: future.result() for name, future in futures.items()}
        with db.connect() as con:
            try:
                rows = [fetching.load_source(con, results[name]) for name in names]  # FX first, as registered
                counts, verdict, files = _publish(con, day, export_format)
            except BaseException as exc:
                load.finish_run(con, run_id, error=f"run aborted: {type(exc).__name__}: {exc}")
                raise
            status = load.finish_run(con, run_id, quality=verdict.quality, quality_reasons=verdict.text)
    if verdict.quality != "ok":
        logger.warning("%s is published as suspect: %s", day, verdict.text)
    for row in rows:
        if row.status != "ok":
            logger.error("%s failed: %s", row.source, row.error)
    summary = RunSummary(run_id, day.isoformat(), status, verdict.quality, {r.source: r.status for r in rows},
                         {r.source: r.error for r in rows if r.status != "ok"}, counts, files)
    logger.info("run %s: %s; derived %s", run_id, status, counts)
    return _final_state(summary)


@flow(name="gpuledger-rebuild")
def rebuild(start: date, end: date | None = None, export_format: str = "parquet") -> dict[str, dict]:
    """Re-parse the raw archive for each date from start to end and recompute its tables; no network."""
    logger = get_run_logger()
    done = {}
    day = start
    while day <= (end or start):
        run_dirs = sorted(Path(p) for p in config.raw_dir().glob(f"*/{day.isoformat()}/*") if p.is_dir())
        with writer_lock(f"rebuild {day}", wait_s=LOCK_WAIT_S), db.connect() as con:
            catalog.load_catalogs(con)
            for run_dir in run_dirs:
                if (run_dir / archive.SUMMARY).exists():  # a fetch killed before its summary never loaded
                    fetching.load_source(con, run_dir)
            counts, verdict, _ = _publish(con, day, export_format)
            done[day.isoformat()] = counts | {"quality": verdict.quality}
        logger.info("rebuilt %s from %d archived fetches", day, len(run_dirs))
        day += timedelta(days=1)
    return done


def nightly_schedule(cron: str = "0 2 * * *", timezone: str = "UTC") -> Cron:
    return Cron(cron, timezone=timezone)


def serve_nightly(cron: str, timezone: str) -> None:
    """Serve the nightly flow on its schedule until interrupted (needs a Prefect server with a scheduler)."""
    nightly.serve(name="nightly", schedule=nightly_schedule(cron, timezone), tags=["gpuledger"],
                  description="Snapshot the sources, derive the dated $/M-token tables, export them.")
