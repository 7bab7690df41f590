"""The lake's published tables as Delta Lake tables: `<exports>/<table>/`, partitioned by the table's date column.

Publishing a day is one commit that replaces that date's partition (an overwrite whose predicate is the date), so a
reader sees the old day or the new day, never a mix, and the other dates are untouched. The files a commit replaces
stay until vacuum removes them after the retention ($GPULEDGER_LAKE_RETENTION_DAYS), so every version of that
window reads back exactly as it was published (time travel, by version or by commit time). Each of our commits
carries, under the commit info's `gpuledger` key, what made it: the run, the estimator and catalogue versions,
the day's quality, the schema version and the rows written and replaced.

Two writers: delta-rs writes each commit file only if no file of that version exists yet (on S3 a PUT with
`If-None-Match: *`, measured with deltalake 1.6 on moto's server; a folder: a rename that never replaces), so of
two commits racing for one version one is refused. delta-rs itself rebases a refused commit over commits that
touched other dates; one that replaced the same date is refused for good (CommitFailedError) and `publish_day`
writes it again over the new version: the log then holds both commits, the later one current. No lock table
(DynamoDB) and no AWS_S3_ALLOW_UNSAFE_RENAME: an S3-compatible store must honour If-None-Match.

Object stores: delta-rs reads the standard AWS variables itself; `storage_options` adds the endpoint and region the
way warehouse/lake.py reads them, and allows plain http for an http:// endpoint (a local S3 server).
"""

import ctypes
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pyarrow as pa
from deltalake import ColumnProperties, CommitProperties, DeltaTable, WriterProperties, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError

from warehouse import lake

COMMIT_ATTEMPTS = 5  # a commit lost to another writer of the same date is written again this often
CHECKPOINT_INTERVAL = 10  # a checkpoint every 10 commits: opening a table reads at most 10 JSON commits
META = "gpuledger"  # the commit info key our commits' provenance sits under
# Parquet files as zstd (level 9) instead of deltalake's default snappy, for every file written or compacted: any
# Parquet reader reads either. With the rows grouped by price (warehouse/export.LAKE_ORDER) a day of cost_per_mtok
# takes 2.0 MB instead of 3.1 (the demo day, 142,518 rows; docs/performance.md), in no more time. A table's floating
# point columns ($/M and its band, tokens/s, own $/M, capacity, prices) are mostly distinct values, which no
# dictionary shortens: stored byte stream split (each byte of the doubles together), zstd takes a quarter off them.
# Measured on a bench night at 1x (2026-12-05), every float against the four cost columns split before: own_vs_rent
# 0.78 -> 0.59 MB, cost_at_speed 0.85 -> 0.82 MB, offers 0.28 -> 0.27 MB, cost_per_mtok the same 4.98 MB (against
# 6.31 MB with none split); a column of few values (an FX rate) loses nothing. Every Parquet reader reads the
# encoding (polars, DuckDB, pyarrow, Spark). The exception: a replica's $/hr, one value for the hundreds of rows it
# prices (a dictionary keeps it in 14 KB a night of cost_per_mtok, split it took 48).
DICTIONARY_FLOATS = ("replica_usd_per_hr",)


def writer(schema: pa.Schema) -> WriterProperties:
    """How a table of this schema is written: zstd, its floating point columns byte stream split."""
    return WriterProperties(compression="ZSTD", compression_level=9, column_properties={
        field.name: ColumnProperties(dictionary_enabled=False, encoding="BYTE_STREAM_SPLIT")
        for field in pa.schema(schema) if pa.types.is_floating(field.type) and field.name not in DICTIONARY_FLOATS})


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class PublishError(OSError):
    """The lake refused a commit (unreachable, a schema it cannot merge, lost to other writers every time): the day
    stays unpublished in the warehouse's bookkeeping, like a store that is down."""


class NotPublished(ValueError):
    """No such lake table, or no such version of it."""


@dataclass(frozen=True)
class Commit:
    table: str
    day: date | str  # the partition replaced: a date, or a grid's sha256 (the lake's estimates)
    version: int
    rows: int
    replaced_rows: int
    attempts: int  # 1 unless another writer committed the same date first


@dataclass(frozen=True)
class Upkeep:
    table: str
    version: int
    compacted_files: int  # small files rewritten into fewer
    vacuumed_files: int  # replaced files older than the retention, removed


def message(exc: BaseException) -> str:
    """delta-rs's error text on one line (its causes follow one another) without its terminal colours."""
    return " ".join(line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip())


def table_uri(location: str, table: str) -> str:
    """Where a table lives under $GPULEDGER_EXPORTS (a folder or s3://bucket/prefix)."""
    return f"{location.rstrip('/')}/{table}"


def storage_options(uri: str) -> dict[str, str] | None:
    if not uri.startswith("s3://"):
        return None
    # Timeouts and retries as the lake's other S3 client has them (warehouse/lake.py).
    options = {"AWS_REGION": lake.s3_region(), "timeout": "60s", "connect_timeout": "10s", "max_retries": "3"}
    endpoint = lake.s3_endpoint()
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"
    return options


def table_properties(retention_days: int) -> dict[str, str]:
    """Versions are readable for retention_days: the log and the replaced files are kept that long."""
    return {"delta.logRetentionDuration": f"interval {retention_days} days",
            "delta.deletedFileRetentionDuration": f"interval {retention_days} days",
            "delta.checkpointInterval": str(CHECKPOINT_INTERVAL)}


def _open(uri: str) -> DeltaTable | None:
    try:
        return DeltaTable(uri, storage_options=storage_options(uri))
    except TableNotFoundError:
        return None


def _text(value: date | str) -> str:
    return value.isoformat() if isinstance(value, date) else value


def _day_rows(table: DeltaTable, column: str, day: date | str) -> int:
    """Rows the partition holds in the table's loaded version (from the files' footers)."""
    return table.to_pyarrow_dataset(file_pruning_predicate=[(column, "=", _text(day))]).count_rows()


class Batches:
    """A day's rows read in batches, so a publication never holds the whole day in memory (a day of cost_per_mtok
    is ~80 MB as one Arrow table): `read` opens a fresh reader each time, as a retried commit writes the rows
    again; `num_rows` is their count."""

    def __init__(self, read: Callable[[], pa.RecordBatchReader], rows: int):
        self.read, self.num_rows = read, rows


# glibc's malloc_trim, or None where the C library has none (musl, macOS): nothing to release then.
_MALLOC_TRIM = getattr(ctypes.CDLL(None), "malloc_trim", None)


def release_freed_heap() -> None:
    """Give the C heap's free pages back to the system. The nightly runs every step in one process and glibc keeps
    what a step freed (Python objects, delta-rs's and DuckDB's results handed over as Arrow): each export and the
    report started on top of it. Measured on 1x bench nights (3,000 offers, 58 models), called before every
    commit and before the report, two runs each side by side (2 shared cores at load 8): with the export's
    32,768-row batches and the report's 8-model ones the night peaked at 535 and 536 MB instead of 581 and 587;
    with the 8-model batches alone, 593 and 597 against 575 and 614 (no gain measured). The night's CPU time with it
    21.8 and 22.6 s, without 21.7 and 22.5 (docs/performance.md, Memory)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def publish_day(uri: str, name: str, column: str, day: date | str, data: pa.Table | Batches,
                provenance: dict[str, Any], retention_days: int) -> Commit:
    """Replace the date's partition of the table at uri with data (a table, or batches read as they are written),
    in one commit carrying provenance; create the table (partitioned by column) on first use. A commit lost to
    another writer of the same date is written again. The lake's estimates are partitioned by grid instead: day is
    then the grid's sha256, named under its column in the provenance."""
    release_freed_heap()
    last: Exception | None = None
    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        try:
            current = _open(uri)
            rows = data.read() if isinstance(data, Batches) else data
            if current is None:  # version 0 creates the table; a writer that lost that race finds it next attempt
                current = DeltaTable.create(uri, rows.schema, mode="ignore", partition_by=[column],
                                            configuration=table_properties(retention_days),
                                            storage_options=storage_options(uri))
            replaced = _day_rows(current, column, day)
            about = provenance | {"table": name, "date" if isinstance(day, date) else column: _text(day),
                                  "rows": data.num_rows, "replaced_rows": replaced}
            write_deltalake(current, rows, mode="overwrite", predicate=f"{column} = '{_text(day)}'",
                            partition_by=[column], schema_mode="merge", writer_properties=writer(rows.schema),
                            commit_properties=CommitProperties(custom_metadata={META: about}))
        except CommitFailedError as exc:
            last = exc
            continue
        except (DeltaError, OSError) as exc:  # unreachable, refused, or a schema the table cannot take
            raise PublishError(f"{uri}: {message(exc)}") from None
        return Commit(name, day, current.version(), data.num_rows, replaced, attempt)
    raise PublishError(f"{uri}: {COMMIT_ATTEMPTS} commits of {day} lost to other writers: {message(last)}")


def parse_as_of(text: str) -> int | datetime:
    """A version number, or an ISO 8601 time (UTC unless it names its zone; a date means its midnight)."""
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise NotPublished(f"--as-of {text!r} is neither a version number nor an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def open_table(uri: str, as_of: int | datetime | None = None) -> DeltaTable:
    """The table at uri, at its current version or as of a version or time (the last commit at or before it; a time
    before the table's first commit is refused: delta-rs loads version 0 for it, measured with deltalake 1.6)."""
    try:
        table = DeltaTable(uri, storage_options=storage_options(uri))
    except TableNotFoundError:
        raise NotPublished(f"{uri}: no lake table here") from None
    if as_of is not None:
        try:
            table.load_as_version(as_of)
        except (DeltaError, ValueError) as exc:
            raise NotPublished(f"{uri}: no version as of {as_of}: {message(exc)}") from None
        if isinstance(as_of, datetime) and table.version() == 0:
            first = next((info for info in table.history() if info.get("version") == 0), None)
            if first and committed_at(first) > as_of.astimezone(UTC).replace(tzinfo=None):
                raise NotPublished(f"{uri}: no version as of {as_of}: the table was created later")
    return table


def date_column(table: DeltaTable) -> str:
    return table.metadata().partition_columns[0]


def read(table: DeltaTable, days: list[date] | None = None) -> pa.Table:
    """The loaded version's rows (of the given dates only, when given), in the table's column order."""
    filters = [(date_column(table), "in", [d.isoformat() for d in days])] if days else None
    rows = table.to_pyarrow_table(filters=filters)
    return rows.select([field.name for field in table.schema().fields])


def held(table: DeltaTable) -> set:
    """The partition values (dates, or grids) the loaded version holds rows of."""
    return set(pa.table(table.get_add_actions(flatten=True)).column(f"partition.{date_column(table)}").to_pylist())


def held_at(uri: str) -> tuple[DeltaTable | None, set]:
    """The table at uri (None: no table yet) and the partitions it holds now; PublishError when unreachable."""
    try:
        table = _open(uri)
    except (DeltaError, OSError) as exc:
        raise PublishError(f"{uri}: {message(exc)}") from None
    return table, held(table) if table else set()


def age_out(uri: str, name: str, keep: int, provenance: dict[str, Any], kept: Callable[[date], bool]) -> list[date]:
    """Delete from the table at uri every date but its `keep` newest, in one commit carrying provenance (the dates
    removed under `aged_out`), leaving any date `kept` says to keep; the dates removed, none when nothing is older
    (or no table). A Delta delete of whole partitions removes their files from the table; vacuum reclaims them after
    the retention, and until then time travel still reads them."""
    table, dates = held_at(uri)
    dates = sorted(dates)
    old = [day for day in dates[:-keep] if not kept(day)] if keep else []
    if not old:
        return []
    column = date_column(table)
    about = provenance | {"table": name, "aged_out": [day.isoformat() for day in old], "kept_days": keep}
    try:
        table.delete(f"{column} in ({', '.join(repr(day.isoformat()) for day in old)})",
                     commit_properties=CommitProperties(custom_metadata={META: about}))
    except (DeltaError, OSError) as exc:
        raise PublishError(f"{uri}: ageing out failed: {message(exc)}") from None
    return old


def published_dates(table: DeltaTable) -> set[date]:
    """The dates the loaded version holds rows of, and those our commits in the log replaced (an empty day too)."""
    named = {(info.get(META) or {}).get("date") for info in table.history()}
    return held(table) | {date.fromisoformat(d) for d in named if d}


def committed_at(info: dict[str, Any]) -> datetime:
    """A commit's time (the writer's clock, milliseconds in the log) as naive UTC, like every warehouse time."""
    return datetime.fromtimestamp(info["timestamp"] / 1000, UTC).replace(tzinfo=None)


def history(table: DeltaTable) -> list[dict[str, Any]]:
    """Every version the log still holds, newest first: when, what operation, and our provenance where it is ours."""
    found = []
    for info in table.history():
        ours = info.get(META) or {}
        metrics = info.get("operationMetrics") or {}
        found.append({
            "version": info["version"], "committed_at": committed_at(info), "operation": info.get("operation"),
            "date": ours.get("date"), "aged_out": ours.get("aged_out"), "grid_sha256": ours.get("grid_sha256"),
            "speed_sha256": ours.get("speed_sha256"),
            "run_id": ours.get("run_id"),
            "rows": ours.get("rows", metrics.get("num_added_rows")), "replaced_rows": ours.get("replaced_rows"),
            "quality": ours.get("quality"), "estimator_version": ours.get("estimator_version"),
            "catalogues": ours.get("catalogues"), "migrated_from": ours.get("migrated_from"),
        })
    return found


def tables(store: lake.Store) -> list[str]:
    """The Delta tables at the top of the lake."""
    return [name for name in store.folders() if store.list(f"{name}/_delta_log")]


def upkeep(uri: str, name: str, retention_days: int) -> Upkeep:
    """Compact each partition's small files, remove files replaced more than retention_days ago, checkpoint the log
    and drop the log entries past the retention; the table's retention properties follow the setting."""
    table = open_table(uri)
    try:
        wanted = table_properties(retention_days)
        if any(table.metadata().configuration.get(k) != v for k, v in wanted.items()):
            table.alter.set_table_properties(wanted)
        compacted = table.optimize.compact(writer_properties=writer(table.schema().to_arrow()),
                                           commit_properties=CommitProperties(custom_metadata={META: {"upkeep": True}}))
        # The table's own retention was just set to the setting, so it need not be enforced again here.
        vacuumed = table.vacuum(retention_hours=retention_days * 24, dry_run=False, enforce_retention_duration=False)
        table.create_checkpoint()
        table.cleanup_metadata()
    except (DeltaError, OSError) as exc:
        raise PublishError(f"{uri}: upkeep failed: {message(exc)}") from None
    return Upkeep(name, table.version(), compacted.get("numFilesRemoved", 0), len(vacuumed))
