"""Seed a bench store with the nights between its real ones, as a year of nights would have written them, in minutes
instead of hours: `python -m bench._year_seed SOURCE FIRST LAST` (the store is $GPULEDGER_HOME and $GPULEDGER_EXPORTS,
the lake's settings the nightly's). Every date from FIRST to LAST, in date order, gets:

- the warehouse: SOURCE's rows of every table dated by a night (exportable(): offers, replica prices, runs, fetches,
  FX...) copied onto the date, in one transaction a date, as a night appends them: the prices moved by a factor drawn
  per row and column (+-3 %, so no two nights share a double and compression is not flattered), the dates and times
  of the night moved with it (not what is dated once: a quote, a first sighting, a version's first day), run ids
  named after the date, and a checkpoint after each date (a night closes the warehouse, checkpointing, 3-4 times). The estimate grids and speed answers are keyed, stored once: the copies name SOURCE's;
- the lake: the date published by the nightly's own export (export.publish_date), a commit per table like a night,
  the facts for every date and the derived tables for the dates the lake's window keeps
  ($GPULEDGER_LAKE_DERIVED_DAYS; the older ones a real year would have published and aged out, a commit each), then
  the nightly's lake upkeep (ageing out, compaction, vacuum and checkpoints when due) on the date's clock;
- the report and the raw archive: SOURCE's dated folders hard-linked under the date (their bytes counted again
  wherever the store's size is summed, as the copies a real year would hold).

What it does not write: the report pages drawn from the date's own prices, and the raw answers of the date's own
prices (the copies are SOURCE's). The lake's commits carry the wall clock's time (deltalake's), so a retention
($GPULEDGER_LAKE_RETENTION_DAYS > 0) keeps every file the seeded commits replaced: exact only at retention 0.
Prints what it wrote as JSON on its last line.
"""

import json
import os
import shutil
import sys
import time
from datetime import date, timedelta
from pathlib import Path

from flows import pipeline
from flows import report as report_pages
from flows.derive import EXPORTED, made_by
from warehouse import config, db, export

# Dated once, not by the night: copied as they are.
KEPT_DATES = {"quoted_on", "first_seen_date", "changed_on", "checked_on"}
# Written by the lake seeding itself (its publications), never copied.
NOT_COPIED = {"publications"}
MOVE = 0.03  # +-3 % a price, the bench's random walk's step
PRICED = ("usd", "native", "change", "rate")  # the columns of prices, FX rates and price changes


def _run_id(run_id_sql: str, day: date) -> str:
    """The day's run id from the source's: its date replaced (`YYYYMMDD` then the time and random hex)."""
    return f"'{day:%Y%m%d}' || substr({run_id_sql}, 9)"


def _copy_sql(con, table: str, column: str, source: date, day: date) -> str:
    """The insert that copies the table's rows of source onto day."""
    shift = (day - source).days
    replaced = []
    for name, kind in con.execute("select column_name, data_type from information_schema.columns "
                                  "where table_schema = 'main' and table_name = ? order by ordinal_position",
                                  [table]).fetchall():
        if kind == "DATE" and name not in KEPT_DATES:
            replaced.append(f'"{name}" + {shift} as "{name}"')
        elif kind.startswith("TIMESTAMP"):
            replaced.append(f'"{name}" + to_days({shift}) as "{name}"')
        elif name == "run_id":
            replaced.append(f'{_run_id("run_id", day)} as run_id')
        elif kind in ("DOUBLE", "FLOAT") and any(word in name for word in PRICED):
            replaced.append(f'"{name}" * (1 + {MOVE} * (2 * random() - 1)) as "{name}"')
    listing = f" replace ({', '.join(replaced)})" if replaced else ""
    return f'insert into "{table}" select *{listing} from "{table}" where "{column}" = \'{source}\''


def _nightly_tables(con) -> dict[str, str]:
    """The stored tables dated by a night, and their date column."""
    stored = {t for (t,) in con.execute("select table_name from information_schema.tables "
                                        "where table_schema = 'main' and table_type = 'BASE TABLE'").fetchall()}
    return {t: c for t, c in export.exportable(con).items() if t in stored and t not in NOT_COPIED}


def _link_folders(pairs: list[tuple[Path, Path]]) -> int:
    """Hard-link each source folder's files under its destination; the files linked."""
    linked = 0
    for source, destination in pairs:
        shutil.copytree(source, destination, copy_function=os.link)
        linked += sum(1 for p in destination.rglob("*") if p.is_file())
    return linked


def seed(source: date, first: date, last: date) -> dict:
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    window = config.lake_derived_days()
    derived_from = days[0] if window is None else last - timedelta(days=window - 1)
    facts = [t for t in EXPORTED if t not in export.WINDOWED]
    done: dict = {"days": len(days), "first": first.isoformat(), "last": last.isoformat()}
    start = time.perf_counter()
    with db.connect() as con:
        tables = _nightly_tables(con)
        con.execute("select setseed(0.365)")
        rows = 0
        for day in days:
            with db.transaction(con):
                for table, column in tables.items():
                    rows += con.execute(_copy_sql(con, table, column, source, day)).fetchall()[0][0]
            con.execute("checkpoint")  # as a night's closing of the warehouse does: the file grows as nights grow it
        done |= {"warehouse_tables": sorted(tables), "warehouse_rows": rows,
                 "warehouse_s": round(time.perf_counter() - start, 1)}
        start = time.perf_counter()
        (run_id,) = con.execute("select run_id from runs where snapshot_date = ? order by started_at desc limit 1",
                                [source]).fetchone()
        commits = 0
        for day in days:
            os.environ["GPULEDGER_NOW"] = f"{day}T22:00:00"
            day_run = con.execute(f"select {_run_id('?', day)}", [run_id]).fetchone()[0]
            pub = export.publish_date(con, day, EXPORTED if day >= derived_from else facts, "parquet", day_run,
                                      made_by=made_by())
            if pub.status != "published":
                raise SystemExit(f"seeding the lake for {day}: {pub.error}")
            commits += len(pub.files)
            pipeline.lake_upkeep(con, day_run)
        done |= {"lake_commits": commits, "lake_derived_from": derived_from.isoformat(),
                 "lake_s": round(time.perf_counter() - start, 1)}
    start = time.perf_counter()
    raw, report = config.raw_dir(), report_pages.report_root()
    pairs = []
    for folder in sorted(raw.glob(f"*/{source}/*")):
        pairs += [(folder, raw / folder.parent.parent.name / day.isoformat() / (f"{day:%Y%m%d}" + folder.name[8:]))
                  for day in days]
    pairs += [(report / f"date={source}", report / f"date={day}") for day in days]
    done |= {"linked_files": _link_folders(pairs), "links_s": round(time.perf_counter() - start, 1)}
    return done


def main() -> None:
    source, first, last = (date.fromisoformat(a) for a in sys.argv[1:4])
    print(json.dumps(seed(source, first, last)))


if __name__ == "__main__":
    main()
