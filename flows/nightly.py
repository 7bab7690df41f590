"""The Prefect flows: `nightly` and `rebuild`, each a thin wrapper over flows/pipeline.py.

Prefect adds the schedule, one task per source fetch (run concurrently in threads), the run's state (Partial
when a source failed, Failed when all did) and its logs; the steps themselves are the same without it.
"""

from dataclasses import asdict
from datetime import date

from flows import prefect_env

prefect_env.configure()

from prefect import flow, get_run_logger, task  # noqa: E402  (after the offline settings)
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.schedules import Cron  # noqa: E402
from prefect.states import Completed, Failed  # noqa: E402

from flows import fetch, logs, pipeline  # noqa: E402

logs.terminal_safe()  # a failed source's error quotes the provider's body: escaped before any handler prints it


@task(name="fetch", task_run_name="fetch-{source}", cache_policy=NO_CACHE)
def fetch_task(source: str, run_id: str, snapshot_date: date) -> fetch.FetchResult:
    """One source's fetch and archive (parsed as it lands, for the load that follows in this process); failures
    come back as a failed result, never as an exception."""
    return fetch.fetch_source(source, run_id, snapshot_date, parse_ahead=True)


def _fetch_as_tasks(names: list[str], run_id: str, day: date) -> dict[str, fetch.FetchResult]:
    futures = {name: fetch_task.submit(name, run_id, day) for name in names}
    return {name: future.result() for name, future in futures.items()}


def _final_state(summary: pipeline.RunSummary):
    """Completed when every source is ok, Completed named Partial when some failed (or the day did not reach
    the lake or the raw mirror), Failed when all did."""
    if summary.status == "ok" and not summary.warnings:
        return Completed(message=f"run {summary.run_id}: every source ok", data=asdict(summary))
    if summary.status == "ok":
        message = f"run {summary.run_id}: every source ok; {'; '.join(summary.warnings)}"
        return Completed(name="Partial", message=message, data=asdict(summary))
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
    summary = pipeline.run(sources, snapshot_date, export_format, trigger, fetch_all=_fetch_as_tasks)
    if summary.quality != "ok":
        logger.warning("%s is published as suspect: see runs.quality_reasons", summary.snapshot_date)
    for source, error in summary.errors.items():
        logger.error("%s failed: %s", source, error)
    # one short line (a log line is never wrapped): the per-table counts are in the command's own summary
    logger.info("run %s: %s; derived %s rows in %d tables", summary.run_id, summary.status,
                f"{sum(summary.derived.values()):,}", len(summary.derived))
    return _final_state(summary)


@flow(name="gpuledger-rebuild")
def rebuild(start: date, end: date | None = None, export_format: str = "parquet") -> dict[str, dict]:
    """Re-parse the raw archive for each date from start to end and recompute its tables; no network."""
    return pipeline.rebuild(start, end, export_format)


def nightly_schedule(cron: str = "0 2 * * *", timezone: str = "UTC") -> Cron:
    return Cron(cron, timezone=timezone)


def serve_nightly(cron: str, timezone: str) -> None:
    """Serve the nightly flow on its schedule until interrupted (needs a Prefect server with a scheduler)."""
    nightly.serve(name="nightly", schedule=nightly_schedule(cron, timezone), tags=["gpuledger"],
                  description="Snapshot the sources, derive the dated $/M-token tables, export them.")
