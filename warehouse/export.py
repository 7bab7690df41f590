"""Exports: one table's rows for one date, published to the lake ($GPULEDGER_EXPORTS, a folder or s3://).

Parquet (the lake proper) goes to the table's Delta table `<lake>/<table>/`, as one commit that replaces the date's
partition and says what made it (warehouse/delta.py). CSV, for spreadsheets, goes to a per-date folder
`<lake>/csv/<table>/date=YYYY-MM-DD/` behind its manifest (warehouse/lake.py), outside every Delta table (a table's
folder holds only what its log lists: engines that vacuum remove anything else). Whether a date reached the lake is
kept in `publications`, so a date the store refused is published again by the next run; when each Delta table was
last compacted, vacuumed and checkpointed, in `lake_upkeep`.

`offers` holds the listings the date's tables were derived from (per provider, the latest run whose fetch
succeeded), never an interrupted or superseded run's; CSV text is spreadsheet-safe (warehouse/csv_safe.py).
"""

import io
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import duckdb
import pyarrow as pa

from warehouse import config, csv_safe, db, delta, derived, lake, queries

FORMATS = ("parquet", "csv")
DATE_COLUMNS = ("snapshot_date", "date")  # the column that dates a table's rows, in order of preference
CSV_FOLDER = "csv"
MANIFEST_PARTITION = re.compile(r"^([^/]+)/date=(\d{4}-\d{2}-\d{2})/" + re.escape(lake.MANIFEST) + "$")


class ExportError(ValueError):
    """An export that was not asked for in a way it can be done safely."""


@dataclass(frozen=True)
class Publication:
    snapshot_date: date
    location: str
    status: str  # published | unpublished
    files: tuple[str, ...] = ()  # each Delta table's new version (`<uri>@v<version>`), or the CSV files written
    error: str | None = None
    rows: dict[str, int] = field(default_factory=dict)  # each table's rows of the date, as written


@dataclass(frozen=True)
class Written:
    table: str
    day: date
    rows: int
    location: str  # the Delta table's URI, or the CSV partition's folder
    version: int | None  # the Delta table's version this commit made (None: a CSV export)
    files: tuple[str, ...] = ()  # the CSV files written (their full location)

    def describe(self) -> list[str]:
        return [f"{self.location}@v{self.version}"] if self.version is not None else list(self.files)


def exportable(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Every warehouse table with a date column, and that column: any of them can be cut into partitions."""
    found: dict[str, str] = {}
    rows = con.execute(
        "select table_name, column_name from information_schema.columns where table_schema = 'main' "
        "and column_name in ? order by table_name", [list(DATE_COLUMNS)]).fetchall()
    for table, column in sorted(rows, key=lambda r: (r[0], DATE_COLUMNS.index(r[1]))):
        found.setdefault(table, column)
    return found


def held_days(con: duckdb.DuckDBPyConnection, tables, start: date, end: date) -> list[date]:
    """The days from start to end that a run was made for or that one of the tables holds rows of, latest first:
    the days an export has something to publish (any other would be an empty commit per table). A view's days are
    its stored tables' (queries.latest_date): its own would be computed for every day first."""
    held = ["select snapshot_date as day from runs",
            *(f'select "{date_column(con, t)}" from "{stored}"' for t in tables for stored in derived.VIEWS.get(t, (t,)))]
    return [day for (day,) in con.execute(f"select distinct day from ({' union all '.join(held)}) "
                                          "where day between ? and ? order by 1 desc", [start, end]).fetchall()]


def csv_prefix(table: str, day: date) -> str:
    return f"{CSV_FOLDER}/{table}/date={day.isoformat()}"


# A cost table's rows priced by one replica price (a GPU, provider, price kind, pricing and TP) side by side, as
# the lake stores them: their price columns then repeat in runs Parquet's encodings store once (a third fewer bytes
# than in the key's order, model first). Every other table: ordered by all its columns.
LAKE_ORDER = {table: ("gpu", "provider", "price_kind", "replica_pricing", "tp")
              for table in ("cost_per_mtok", "own_vs_rent")}


# Rows per Arrow batch a publication reads from the warehouse, and about the rows of each span of cost_per_mtok
# sorted alone (_spans). 32,768 rather than 65,536: on 1x bench nights the export of cost_per_mtok peaked at
# 505-552 MB instead of 575-625 (whole nightly, with the report's 8-model batches and the heap released before each
# commit: 535 and 536 MB; docs/performance.md, Memory), at the same CPU time. The rows published are the same, but
# the day's file leaves the lake's order at span seams (unexplained; 87 GPUs in 90 runs at 65,536, in 94 at 32,768):
# 0.26 % more bytes a night.
BATCH_ROWS = 32_768

# The lake keeps its facts for ever and what is derived from them for a window of recent dates
# ($GPULEDGER_LAKE_DERIVED_DAYS): a night of cost_per_mtok is ~5 MB of distinct doubles no Parquet setting shortens,
# while the night's facts and the answers they name (written once) make it again by the warehouse view's SQL
# (docs/lake.md, lake_query). FACTS is the night's replica prices; KEYED the answers written once per key, a partition
# per key, the key a column of the replica prices (GRIDS: the estimates, per grid_sha256).
FACTS, GRIDS = "replica_prices", "estimates"
KEYED = {GRIDS: "grid_sha256", "speed_answers": "speed_sha256"}
# Each windowed table, and the nightly fact whose dates make it again: a date the lake's fact does not hold (published
# before the lake kept it, or, for cost_at_speed, replica prices without a speed_sha256) stays in the window's table.
WINDOWED = {"cost_per_mtok": (FACTS, "grid_sha256"), "own_vs_rent": ("own_hardware", "grid_sha256"),
            "cost_at_speed": (FACTS, "speed_sha256")}


VIEW = re.compile(r"^CREATE (?:OR REPLACE )?VIEW (\w+) AS\n(.*?);$", re.S | re.M)


def lake_query(table: str) -> str:
    """The SQL that computes a WINDOWED table from the lake's facts (FACTS, KEYED, own_hardware, under their own
    names): the warehouse view's, as the newest migration defining it wrote it, without the view's last branch, which
    reads the rows the warehouse stored for the days derived before the view (the lake keeps those days in the
    windowed table itself: WINDOWED). One text for both, so the lake's answer is the warehouse's, double for double."""
    if table not in WINDOWED:
        raise ExportError(f"{table!r} is not computed from the lake's facts: those are {', '.join(WINDOWED)}")
    body = [text for _, _, sql in db.migrations() for name, text in VIEW.findall(sql) if name == table][-1]
    computed, _, stored = body.rpartition("\nUNION ALL\n")
    if not computed or f"{table}_stored" not in stored:
        raise ExportError(f"the view {table} does not end in a UNION ALL of {table}_stored: lake_query cannot cut it")
    return computed


def date_column(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """The column that dates an exportable table's rows; ExportError for a table that cannot be exported."""
    tables = exportable(con)
    if table not in tables:
        raise ExportError(f"cannot export {table!r}: exportable tables are {', '.join(sorted(tables))}")
    return tables[table]


def _day_rows(con: duckdb.DuckDBPyConnection, table: str, day: date, fmt: str,
              span: tuple[Any, Any] | None = None) -> tuple[duckdb.DuckDBPyRelation, str]:
    """The table's rows of the date (those whose first LAKE_ORDER column lies in `span`, both ends included, when
    given), in the lake's order, and its date column; refuses tables, dates and formats it cannot export."""
    column = date_column(con, table)
    if not isinstance(day, date):
        raise ExportError(f"an export date must be a date, not {day!r}")
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}: use {' or '.join(FORMATS)}")
    first = _lead(con, table)
    within = f" and {first[0]} between ? and ?" if span else ""
    relation = (queries.published_offers(con, day) if table == "offers"  # the listings the day was derived from
                else con.sql(f"select * from {table} where {column} = ?{within}", params=[day, *(span or ())]))
    return relation.order(", ".join([*first, *(f'"{c}"' for c in relation.columns if c not in first)])), column


def _lead(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """The columns of LAKE_ORDER the table has, the lake's rows are ordered by first."""
    return [c for c in LAKE_ORDER.get(table, ()) if c in con.table(table).columns]


def _spans(con: duckdb.DuckDBPyConnection, table: str, column: str, day: date) -> tuple[list[tuple[Any, Any]], int]:
    """The date's values of the table's first lead column, in order, cut into consecutive spans of about BATCH_ROWS
    rows (a value with more rows is a span alone), and the date's rows; no spans when the column holds a NULL, which
    no range takes in. One column's range is pushed below cost_per_mtok's join to both sides; a range of the lead
    columns together was applied above it, computing the whole day for each span."""
    lead = _lead(con, table)[0]
    counted = con.execute(f"select {lead}, count(*) from {table} where {column} = ? group by all order by all",
                          [day]).fetchall()
    spans, start, rows = [], None, 0
    for value, n in counted:
        start, rows = start if rows else value, rows + n
        if rows >= BATCH_ROWS:
            spans.append((start, value))
            rows = 0
    total = sum(n for _, n in counted)
    if any(value is None for value, _ in counted):
        return [], total
    return spans + ([(start, counted[-1][0])] if rows else []), total


def _batches(con: duckdb.DuckDBPyConnection, table: str, day: date, fmt: str) -> tuple[delta.Batches, str]:
    """The date's rows as Arrow batches in the lake's order. A table with a LAKE_ORDER is read span by span of its
    first column, each sorted alone: the spans follow each other in that order, so the rows come in the order of
    one sort of the whole day, while DuckDB sorts ~BATCH_ROWS rows at a time (the whole day of cost_per_mtok sorted
    at once was the nightly's peak: docs/performance.md). Nothing here asks the ordered day for anything but its
    rows (a count or a schema of it sorted the whole day too)."""
    relation, column = _day_rows(con, table, day, fmt)
    if table not in LAKE_ORDER:
        return delta.Batches(lambda: relation.to_arrow_reader(BATCH_ROWS), relation.count("*").fetchall()[0][0]), column
    spans, rows = _spans(con, table, column, day)
    if not spans:  # an empty day, or one with a NULL to order: sorted whole
        return delta.Batches(lambda: relation.to_arrow_reader(BATCH_ROWS), rows), column

    def read() -> pa.RecordBatchReader:
        readers = (_day_rows(con, table, day, fmt, span)[0].to_arrow_reader(BATCH_ROWS) for span in spans)
        first = next(readers)  # each later span is asked for once the one before is read
        return pa.RecordBatchReader.from_batches(
            first.schema, (batch for reader in itertools.chain([first], readers) for batch in reader))
    return delta.Batches(read, rows), column


def _render(con: duckdb.DuckDBPyConnection, table: str, day: date, fmt: str) -> tuple[bytes, int]:
    relation, _ = _day_rows(con, table, day, fmt)
    frame = relation.pl()
    buffer = io.BytesIO()
    csv_safe.frame(frame).write_csv(buffer)
    return buffer.getvalue(), frame.height


def recorded_quality(con: duckdb.DuckDBPyConnection, day: date) -> str | None:
    """The quality the date's latest judged run recorded (ok | suspect)."""
    rows = con.execute("select quality from runs where snapshot_date = ? and quality is not null "
                       "order by started_at desc limit 1", [day]).fetchall()
    return rows[0][0] if rows else None


def provenance(con: duckdb.DuckDBPyConnection, day: date, run_id: str,
               made_by: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a lake commit says made it: the run, the catalogues' sha256, the schema version and the day's quality;
    made_by adds what only the caller knows (the estimator's version, the quality it just judged)."""
    catalogues = dict(con.execute("select catalog, sha256 from catalog_versions order by catalog").fetchall())
    return {"run_id": run_id, "schema_version": db.schema_version(), "catalogues": catalogues,
            "quality": recorded_quality(con, day), "written_at": config.utc_now().isoformat()} | (made_by or {})


def export_table(con: duckdb.DuckDBPyConnection, table: str, day: date, store: lake.Store, fmt: str = "parquet",
                 run_id: str | None = None, made_by: dict[str, Any] | None = None) -> Written:
    """Replace the table's date in the lake: a commit to its Delta table (parquet) or its CSV folder (csv)."""
    run_id = run_id or f"export-{config.utc_now():%Y%m%dT%H%M%SZ}"
    if fmt == "csv":
        data, rows = _render(con, table, day, fmt)
        prefix = csv_prefix(table, day)
        manifest = lake.replace_partition(store, prefix, [(data, rows)], fmt, run_id, table=table,
                                          date=day.isoformat())
        return Written(table, day, rows, f"{store.url}/{prefix}", None,
                       tuple(f"{store.url}/{prefix}/{entry['file']}" for entry in manifest["files"]))
    rows, column = _batches(con, table, day, fmt)
    commit = delta.publish_day(delta.table_uri(store.url, table), table, column, day, rows,
                               provenance(con, day, run_id, made_by), config.lake_retention_days())
    return Written(table, day, commit.rows, delta.table_uri(store.url, table), commit.version)


def publish_keyed(con: duckdb.DuckDBPyConnection, day: date, store: lake.Store, run_id: str,
                  made_by: dict[str, Any] | None = None) -> list[Written]:
    """The answers (estimate grids, speed answers) the date's replica prices name that the lake lacks, one commit per
    key, as the warehouse stores them (a key's answers never change, so one the lake holds is never written again).
    The rows are read in the warehouse's order, never sorted: a grid at 10x is millions of rows."""
    written = []
    for table, key in KEYED.items():
        uri = delta.table_uri(store.url, table)
        _, held = delta.held_at(uri)
        named = con.execute(f"select distinct {key} from {FACTS} where snapshot_date = ? and {key} is not null "
                            "order by 1", [day]).fetchall()
        for value in (v for (v,) in named if v not in held):
            relation = con.sql(f"select * from {table} where {key} = ?", params=[value])
            rows = delta.Batches(lambda relation=relation: relation.to_arrow_reader(BATCH_ROWS),
                                 relation.count("*").fetchall()[0][0])
            commit = delta.publish_day(uri, table, key, value, rows, provenance(con, day, run_id, made_by),
                                       config.lake_retention_days())
            written.append(Written(table, day, commit.rows, uri, commit.version))
    return written


def export_date(con: duckdb.DuckDBPyConnection, day: date, store: lake.Store, tables, fmt: str = "parquet",
                run_id: str | None = None, made_by: dict[str, Any] | None = None) -> list[Written]:
    """Export the given tables for one date, a commit (or a CSV folder) each; with the replica prices, first the
    answers they name that the lake lacks, so a reader never finds prices naming a key it cannot read."""
    run_id = run_id or f"export-{config.utc_now():%Y%m%dT%H%M%SZ}"
    keyed = publish_keyed(con, day, store, run_id, made_by) if fmt == "parquet" and FACTS in tables else []
    return keyed + [export_table(con, table, day, store, fmt, run_id, made_by) for table in tables]


def age_out(store: lake.Store, keep: int | None, run_id: str, tables=WINDOWED) -> dict[str, list[date]]:
    """Delete from each WINDOWED table of the lake (of those in tables) every date but its `keep` newest (None: keep
    every date), one commit a table; a date its fact does not hold in the lake (WINDOWED) stays, so whatever leaves
    the lake can be computed again from it (lake_query). The dates removed, by table."""
    if keep is None:
        return {}
    about = {"run_id": run_id, "schema_version": db.schema_version(), "written_at": config.utc_now().isoformat()}
    removed, facts = {}, {}
    for table in (t for t in WINDOWED if t in tables):
        fact, key = WINDOWED[table]
        if (fact, key) not in facts:
            facts[fact, key] = fact_holds(store, fact, key)
        removed[table] = delta.age_out(delta.table_uri(store.url, table), table, keep, about,
                                       kept=lambda day, holds=facts[fact, key]: not holds(day))
    return {table: days for table, days in removed.items() if days}


def fact_holds(store: lake.Store, fact: str, key: str) -> Callable[[date], bool]:
    """Whether the lake's fact table holds rows of a date that name their answers' key (never: no such table, or one
    published before it had the key's column). A date is read alone (a night ages out a date or two, not the year's
    facts), its key's values batch by batch after reading: a filter on the key pushed into the scan kept a file
    written before the column existed (pyarrow 26 through deltalake 1.6, measured)."""
    import pyarrow.compute as pc

    table, held = delta.held_at(delta.table_uri(store.url, fact))
    if table is None or key not in [field.name for field in table.schema().fields]:
        return lambda day: False

    def holds(day: date) -> bool:
        if day not in held:
            return False
        dataset = table.to_pyarrow_dataset(file_pruning_predicate=[(delta.date_column(table), "=", day.isoformat())])
        return any(pc.any(pc.is_valid(batch.column(0))).as_py() for batch in dataset.to_batches(columns=[key]))
    return holds


def record(con: duckdb.DuckDBPyConnection, pub: Publication, fmt: str, run_id: str, tables) -> None:
    now = config.utc_now()
    con.execute(
        "insert or replace into publications (snapshot_date, location, format, tables, status, run_id, error, "
        "attempted_at, published_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [pub.snapshot_date, pub.location, fmt, ",".join(tables), pub.status, run_id, pub.error, now,
         now if pub.status == "published" else None])


def publish_date(con: duckdb.DuckDBPyConnection, day: date, tables, fmt: str, run_id: str,
                 store: lake.Store | None = None, made_by: dict[str, Any] | None = None) -> Publication:
    """Export the date to the lake and record the outcome; a store that fails leaves it `unpublished`."""
    store = store or lake.exports_store()
    try:
        written = export_date(con, day, store, tables, fmt, run_id, made_by)
        pub = Publication(day, store.url, "published", tuple(f for w in written for f in w.describe()),
                          rows={w.table: w.rows for w in written if w.table in tables})
    except OSError as exc:  # unreachable, or a commit refused: the warehouse already holds the day
        pub = Publication(day, store.url, "unpublished", error=f"{store.url}: {delta.message(exc)}")
    record(con, pub, fmt, run_id, tables)
    return pub


def unpublished(con: duckdb.DuckDBPyConnection, location: str) -> list[tuple[date, str, list[str]]]:
    """Dates (with format and tables) whose last publication to location failed, oldest first."""
    rows = con.execute("select snapshot_date, format, tables from publications where location = ? "
                       "and status = 'unpublished' order by snapshot_date", [location]).fetchall()
    return [(day, fmt, tables.split(",")) for day, fmt, tables in rows]


def upkeep_due(con: duckdb.DuckDBPyConnection, location: str, tables, now: datetime, every_days: float) -> list[str]:
    """The tables whose last upkeep at location (or, before any, their first publication seen) is every_days old;
    a table seen for the first time starts its clock now."""
    since = dict(con.execute("select table_name, since from lake_upkeep where location = ?", [location]).fetchall())
    for table in tables:
        if table not in since:
            con.execute("insert into lake_upkeep (location, table_name, since) values (?, ?, ?)", [location, table, now])
            since[table] = now
    return [t for t in tables if now - since[t] >= timedelta(days=every_days)]


def upkeep(con: duckdb.DuckDBPyConnection, store: lake.Store, tables, retention_days: int) -> list[delta.Upkeep]:
    """Compact, vacuum and checkpoint each table's Delta table (tables never published are skipped); record it."""
    done = []
    for table in tables:
        try:
            result = delta.upkeep(delta.table_uri(store.url, table), table, retention_days)
        except delta.NotPublished:
            continue
        now = config.utc_now()
        con.execute("insert or replace into lake_upkeep (location, table_name, since, done_at, version, "
                    "compacted_files, vacuumed_files, retention_days) values (?, ?, ?, ?, ?, ?, ?, ?)",
                    [store.url, table, now, now, result.version, result.compacted_files, result.vacuumed_files,
                     retention_days])
        done.append(result)
    return done


@dataclass(frozen=True)
class Migrated:
    table: str
    day: date
    rows: int
    outcome: str  # committed (now a Delta version) | csv (moved under csv/) | superseded (the table had the date)
    version: int | None = None


def manifest_partitions(store: lake.Store) -> list[tuple[str, date]]:
    """The partitions of a lake written before the Delta tables (`<table>/date=YYYY-MM-DD/` behind a manifest)."""
    found = []
    for folder in store.folders():
        found += [(m[1], date.fromisoformat(m[2])) for key in store.list(folder)
                  if (m := MANIFEST_PARTITION.match(key))]
    return sorted(found, key=lambda partition: (partition[1], partition[0]))


def _same_rows(expected: pa.Table, found: pa.Table) -> bool:
    """The same rows, as a multiset, whatever their order and their column order."""
    con = duckdb.connect()
    con.register("expected", expected)
    con.register("found", found.select(expected.column_names))
    differ = con.sql("select count(*) from (select * from expected except all select * from found)").fetchall()[0][0]
    return expected.num_rows == found.num_rows and differ == 0


def migrate(store: lake.Store, retention_days: int) -> list[Migrated]:
    """Convert a lake of manifest partitions, oldest date first: each Parquet partition becomes one commit to its
    table's Delta table (its run and time in the commit), read back and compared before its files are removed; a
    date the Delta table already holds was published later and is kept; CSV partitions move under csv/. Run again,
    it finds nothing left to do."""
    import pyarrow.parquet as pq

    done = []
    for table, day in manifest_partitions(store):
        prefix = f"{table}/date={day.isoformat()}"
        read = lake.read_partition(store, prefix)  # sha256-checked against its manifest
        if read is None:
            continue
        manifest, files = read
        if manifest["format"] == "csv":
            lake.replace_partition(store, csv_prefix(table, day), [(files[e["file"]], e["rows"]) for e in manifest["files"]],
                                   "csv", manifest["run_id"], table=table, date=day.isoformat())
            done.append(Migrated(table, day, manifest["rows"], "csv"))
        else:
            data = pa.concat_tables([pq.read_table(io.BytesIO(files[e["file"]])) for e in manifest["files"]])
            uri = delta.table_uri(store.url, table)
            try:
                held = delta.published_dates(delta.open_table(uri))
            except delta.NotPublished:
                held = set()
            if day in held:
                done.append(Migrated(table, day, data.num_rows, "superseded"))
            else:
                column = next(c for c in DATE_COLUMNS if c in data.column_names)
                about = {"run_id": manifest["run_id"], "schema_version": manifest.get("schema_version"),
                         "written_at": manifest.get("written_at"),
                         "migrated_from": f"{store.url}/{prefix}/{lake.MANIFEST}"}
                commit = delta.publish_day(uri, table, column, day, data, about, retention_days)
                if not _same_rows(data, delta.read(delta.open_table(uri, commit.version), [day])):
                    raise lake.LakeError(f"{uri}: version {commit.version} does not read back {store.url}/{prefix}; "
                                         "its files are left in place")
                done.append(Migrated(table, day, data.num_rows, "committed", commit.version))
        for entry in manifest["files"]:  # only the old files: a table dated by `date` keeps its Delta files here
            store.delete(f"{prefix}/{entry['file']}")
        store.delete(f"{prefix}/{lake.MANIFEST}")
    return done
