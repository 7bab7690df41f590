"""One run of the pipeline and one rebuild, with no orchestrator: the Prefect flows wrap exactly these.

The warehouse is opened only while writing, so readers get in between; the writer lock is held for the
whole run, so two runs never interleave. Progress goes to the `gpuledger.pipeline` logger, phase by phase.
"""

import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from flows import catalogue, fetch, ingest
from flows.derive import EXPORTED, DeriveAhead, DerivePlan, derive_date, made_by, speed_tiers
from scrapers import settings as source_settings
from scrapers import sources as source_registry
from warehouse import archive, config, db, delta, derived, export, lake, load, mirror
from warehouse.load import FetchRow
from warehouse.lock import writer_lock

log = logging.getLogger("gpuledger.pipeline")
TRIGGER = re.compile(r"[a-z][a-z0-9_-]{0,31}")  # what started a run (runs.trigger): cli, schedule, test
WAREHOUSE_WAIT_S = 600.0  # how long a run waits for readers to release the warehouse file before failing


def run_lock_wait_s() -> float:
    """$GPULEDGER_RUN_WAIT_S (default 900): how long a run waits for another run to finish before giving up."""
    return float(os.environ.get("GPULEDGER_RUN_WAIT_S", "900"))


FetchAll = Callable[[list[str], str, date], dict[str, fetch.FetchResult]]


@dataclass
class RunSummary:
    run_id: str
    snapshot_date: str
    status: str  # ok | partial | failed
    quality: str | None  # ok | suspect; None when the run only fetched (nothing derived)
    sources: dict[str, str]
    errors: dict[str, str]
    derived: dict[str, int]
    exported: list[str]
    publication: str | None = None  # published | unpublished | None (no export)
    mirror: str | None = None  # mirrored | pending | None (no mirror configured)
    warnings: list[str] = field(default_factory=list)  # what did not reach the lake or the mirror, and why
    fetches: list[FetchRow] = field(default_factory=list)  # each source's outcome, as loaded into `fetches`


def _close_interrupted_runs(con) -> None:
    """Runs left `running` by a process that died: holding the writer lock proves nobody runs them now."""
    for (run_id,) in con.execute("select run_id from runs where status = 'running'").fetchall():
        load.finish_run(con, run_id, error="interrupted: the process running it stopped before it finished")


def publish(con, day: date, export_format: str, run_id: str, ahead: DeriveAhead | None = None):
    """Derive the day's tables behind the quality gates (with what was derived ahead), then export them to the lake
    (None: no export). The report follows once the run's quality is recorded (_write_report), so its pages say what
    the run found."""
    log.info("phase derive %s", day)
    counts, verdict = derive_date(con, day, DerivePlan(), ahead)
    log.info("phase export %s", day)
    pub = (export.publish_date(con, day, EXPORTED, export_format, run_id, made_by=made_by(verdict.quality))
           if export_format else None)
    if pub and pub.error:
        log.warning("%s stays unpublished until the next run: %s", day, pub.error)
    # the views' rows of the day as the export counted them to publish them (a count of its own computes them)
    return counts | {view: pub.rows[view] for view in derived.VIEWS if pub and view in pub.rows}, verdict, pub


def publish_pending(con, run_id: str) -> list[export.Publication]:
    """Publish again every date the lake refused earlier (the store was down); they are already derived."""
    done = []
    for day, fmt, tables in export.unpublished(con, lake.exports_store().url):
        log.info("phase export %s (left unpublished earlier)", day)
        done.append(export.publish_date(con, day, tables, fmt, run_id, made_by=made_by()))
    return done


def lake_upkeep(con, run_id: str) -> None:
    """Age the derived tables' dates past $GPULEDGER_LAKE_DERIVED_DAYS out of the lake (every run), then compact,
    vacuum and checkpoint the lake's tables whose upkeep is due; a failure waits for the next run (the day is
    published: upkeep only keeps the tables quick to open, within their retention and their window)."""
    store = lake.exports_store()
    try:
        for table, days in export.age_out(store, config.lake_derived_days(), run_id).items():
            log.info("lake window: %s aged out of %s (`gpuledger export --date` puts a date back)",
                     ", ".join(map(str, days)), table)
    except OSError as exc:
        log.warning("lake window left for the next run: %s", exc)
    due = export.upkeep_due(con, store.url, (*EXPORTED, *export.KEYED), config.utc_now(), config.lake_upkeep_days())
    if not due:
        return
    log.info("phase upkeep %s", ", ".join(due))
    try:
        export.upkeep(con, store, due, config.lake_retention_days())
    except OSError as exc:
        log.warning("lake upkeep left for the next run: %s", exc)


def _write_report(con, day: date, run_id: str) -> None:
    """The day's report pages after the exports and the run's quality, published beside them when the exports
    live in an object store; a page that cannot be drawn or sent never fails the stored data."""
    from flows import report

    log.info("phase report %s", day)
    delta.release_freed_heap()  # what the derive and the exports freed, before the report's frames (its docstring)
    try:
        site = report.write_site(con, report.report_root(), day)
        if not config.exports_local():
            lake.publish_directory(site.root, "report", run_id)
    except Exception:  # the tables are committed and exported; `gpuledger report --date` redraws the pages
        log.exception("the report for %s was not written", day)


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


@contextmanager
def _aborted_if_raised(con, run_id: str) -> Iterator[None]:
    """Whatever stops the block closes the run as aborted, with the error, and goes on."""
    try:
        yield
    except BaseException as exc:
        load.finish_run(con, run_id, error=f"run aborted: {type(exc).__name__}: {exc}")
        raise


def run(
    sources: list[str] | None = None,
    snapshot_date: date | None = None,
    export_format: str = "parquet",
    trigger: str = "cli",
    fetch_all: FetchAll = fetch.fetch_concurrently,
    *,
    derive: bool = True,
) -> RunSummary:
    """Fetch every source concurrently, load each in its own transaction, then (derive) derive the day's tables and
    export them; `gpuledger fetch` is the same run with derive=False."""
    names = fetch.source_names(sources)
    if export_format and export_format not in export.FORMATS:  # a served flow's parameters come from its API
        raise ValueError(f"unknown export format {export_format!r}: use {' or '.join(export.FORMATS)}, or none")
    if not TRIGGER.fullmatch(trigger):
        raise ValueError(f"trigger {trigger[:40]!r}: a short lower-case name (cli, schedule, test...)")
    source_settings.from_env()  # a bad setting or secrets file fails the run now, not in every source
    day = config.check_day(snapshot_date or config.utc_today(), "snapshot date")
    run_id = fetch.new_run_id()
    if derive:
        lake.exports_store()  # a bad lake or mirror location fails the run now, before any fetch
        speed_tiers()  # and so does an unknown speed tier
        config.lake_derived_days()  # or a lake window that is not a number of days
    if config.raw_mirror():
        lake.open_store(config.raw_mirror())
    counts, verdict, pub = {}, None, None
    with writer_lock(f"run {run_id}", wait_s=run_lock_wait_s()):
        with db.connect(wait_s=WAREHOUSE_WAIT_S) as con:
            _close_interrupted_runs(con)
            catalogue.load(con)
            load.start_run(con, run_id, day, trigger, names)
        rows, waves, mirrored, ahead = [], fetch.waves(names) or [[]], None, None
        for number, wave in enumerate(waves, 1):  # the warehouse is closed while a wave fetches (AFTER_LOAD reads it)
            log.info("phase fetch %s: %s", run_id, ", ".join(wave))
            results = fetch_all(wave, run_id, day)
            if number == len(waves):  # every answer is archived: mirrored before the last ones load
                log.info("phase mirror %s", run_id)
                mirrored = sync_mirror()
            with db.connect(wait_s=WAREHOUSE_WAIT_S) as con, _aborted_if_raised(con, run_id):
                for name in wave:
                    log.info("phase load %s", name)
                    rows.append(ingest.load_source(con, results[name]))
                if derive and number == len(waves) - 1:  # the last wave's paced fetch leaves the CPU idle
                    log.info("phase ahead %s: the grid and the speed search, while the last wave fetches", day)
                    ahead = DeriveAhead.start(con, day, DerivePlan())
        with db.connect(wait_s=WAREHOUSE_WAIT_S) as con:
            with _aborted_if_raised(con, run_id):
                if derive:
                    counts, verdict, pub = publish(con, day, export_format, run_id, ahead)
                    if pub and pub.status == "published":  # the lake is reachable again: catch up
                        publish_pending(con, run_id)
                        if export_format == "parquet":
                            lake_upkeep(con, run_id)
            status = load.finish_run(con, run_id, quality=verdict and verdict.quality,
                                     quality_reasons=verdict and verdict.text, publication=pub and pub.status,
                                     mirror=mirror_state(mirrored))
            if derive and export_format:
                _write_report(con, day, run_id)
    log.info("phase done %s: %s", run_id, status)
    warnings = [w for w in (pub and pub.error, mirrored and mirrored.error) if w]
    return RunSummary(run_id, day.isoformat(), status, verdict and verdict.quality, {r.source: r.status for r in rows},
                      {r.source: r.error for r in rows if r.status != "ok"}, counts, list(pub.files) if pub else [],
                      pub and pub.status, mirror_state(mirrored), warnings, rows)


def restore_from_mirror(day: date) -> int:
    """Copy the day's raw run directories this machine lacks from $GPULEDGER_RAW_MIRROR (0 when unset)."""
    location = config.raw_mirror()
    if not location:
        return 0
    try:
        restored = mirror.restore(lake.open_store(location), config.raw_dir(), day, source_registry.SOURCES)
    except OSError as exc:
        if any(config.raw_dir().glob(f"*/{day.isoformat()}/*")):
            log.warning("%s: the mirror is unreachable (%s); rebuilding from the local archive", day, exc)
            return 0
        raise
    log.info("restored %d raw file(s) of %s from the mirror", restored, day)
    return restored


def rebuild(start: date, end: date | None = None, export_format: str = "parquet") -> dict[str, dict]:
    """Re-parse the raw archive for each date from start to end and recompute its tables; no network but the
    raw mirror, which first gives back the run directories this machine lacks (a fresh machine: all of them)."""
    done = {}
    day = start
    while day <= (end or start):
        restored = restore_from_mirror(day)  # a fresh machine gets the day's raw files back first
        run_dirs = sorted(Path(p) for p in config.raw_dir().glob(f"*/{day.isoformat()}/*") if p.is_dir())
        with writer_lock(f"rebuild {day}", wait_s=run_lock_wait_s()), db.connect(wait_s=WAREHOUSE_WAIT_S) as con:
            catalogue.load(con)
            known = {r for (r,) in con.execute("select run_id from runs").fetchall()}
            by_run: dict[str, list[Path]] = {}
            for run_dir in run_dirs:  # a fetch killed before its summary was written never loaded: skipped
                if (run_dir / archive.SUMMARY).exists():
                    by_run.setdefault(run_dir.name, []).append(run_dir)
            for run_id, dirs in sorted(by_run.items()):
                if run_id not in known:  # a warehouse rebuilt from the archive alone gets its runs back
                    load.start_run(con, run_id, day, "rebuild", [d.parts[-3] for d in dirs])
                for run_dir in dirs:
                    ingest.load_source(con, run_dir)
                if run_id not in known:
                    load.finish_run(con, run_id)
            rebuild_id = f"rebuild-{config.utc_now():%Y%m%dT%H%M%SZ}"
            counts, verdict, pub = publish(con, day, export_format, rebuild_id)
            latest = con.execute("select arg_max(run_id, started_at) from runs where snapshot_date = ?", [day]).fetchall()
            if latest[0][0]:
                con.execute("update runs set quality = ?, quality_reasons = ? where run_id = ?",
                            [verdict.quality, verdict.text, latest[0][0]])
            if export_format:
                _write_report(con, day, rebuild_id)
        done[day.isoformat()] = counts | {"quality": verdict.quality, "archived_fetches": len(run_dirs),
                                          "restored_files": restored, "publication": pub and pub.status}
        log.info("rebuilt %s from %d archived fetches", day, len(run_dirs))
        day += timedelta(days=1)
    return done
