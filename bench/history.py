"""A year of offers: warehouse size against zstd Parquet, and the analyst's queries through `gpuledger sql`.

The year is one generated day (GPULEDGER_BENCH_DAY_OFFERS vast.ai offers, fetched from the replay server
like any day, about 25,000 offers rows) repeated over 365 dates with prices moved a few percent by a hash of
the offer and the day, stored day after day as the nightly loads store them (see REPEAT). Baseline: the same
rows exported as zstd Parquet, queried by DuckDB in-process.
Targets: the warehouse at most 2x the Parquet bytes; each query through `gpuledger sql`, whole process,
under 1 s; each query in-process on the warehouse no slower than on the Parquet file (ratio <= 1).
"""

import os
import sys
import tempfile
import time
from pathlib import Path

from bench import _offers
from bench._support import GPULEDGER, best, last_json, replay_server, run, verdict
from warehouse.load import OFFERS_ORDER

DAY_OFFERS = int(os.environ.get("GPULEDGER_BENCH_DAY_OFFERS", "13000"))
DAYS = 365
MAX_SIZE_RATIO, MAX_SQL_S, MAX_QUERY_RATIO = 2.0, 1.0, 1.0
QUERIES = {
    "one GPU's daily minimum": "select snapshot_date, min(usd_per_gpu_hr) as low from {t} "
                               "where gpu = 'H100 SXM5 80GB' and price_kind = 'on_demand' "
                               "group by snapshot_date order by snapshot_date",
    "monthly median per GPU": "select gpu, date_trunc('month', snapshot_date) as month, median(usd_per_gpu_hr) as "
                              "median from {t} where price_kind = 'on_demand' group by all order by all",
    "latest day's 20 cheapest": "select gpu, provider, gpu_count, usd_per_gpu_hr, region from {t} where "
                                "snapshot_date = (select max(snapshot_date) from {t}) and price_kind = 'on_demand' "
                                "order by usd_per_gpu_hr limit 20",
}
# Day d's copy of the generated day, as a nightly load would have stored it: dated d days earlier, a different
# run, each offer's prices moved by up to +-5% (one factor per offer and day, as its price kinds come from one
# record), the same move in the prices its `extras` carry, one day less left on its contract (`duration`), and
# the day's rows in the order load_batch writes them (warehouse/load.py: OFFERS_ORDER), one day after another.
# Copies with extras frozen over the year, each offer's copies side by side, gave a year no fetch produces:
# identical extras 365 times over, which Parquet's dictionary pages store once (2.4x then; the warehouse file
# was the same size).
MOVED = ("dph_base", "dph_total", "min_bid", "discounted_dph_total")
EXTRAS = ("json_merge_patch(extras, json_object("  # a price that is null in the record is left out of the copy
          + ", ".join(f"'{key}', round((extras->>'{key}')::double * m, 6)" for key in MOVED)
          + ", 'duration', (extras->>'duration')::double - d * 86400))")
REPEAT = f"""
insert into offers by name
select * exclude (d, m) replace (
    snapshot_date - d::integer as snapshot_date, fetched_at - to_days(d::integer) as fetched_at,
    run_id || '-' || d as run_id,
    usd_per_hr * m as usd_per_hr, usd_per_gpu_hr * m as usd_per_gpu_hr, native_per_hr * m as native_per_hr,
    {EXTRAS} as extras)
from (select *, 0.95 + (hash(offer_id, d) % 1000) / 10000.0 as m
      from offers, range({{first}}, {{last}}) t(d) where run_id = '{{run}}')
order by snapshot_date, {", ".join(OFFERS_ORDER)}
"""
TIMED = """
import json, sys, time
import duckdb
con = duckdb.connect(sys.argv[1], read_only=sys.argv[1] != ":memory:")
out = {}
for name, query in json.loads(sys.argv[2]).items():
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        rows = con.sql(query).fetchall()
        best = min(best, time.perf_counter() - start)
    # a query that finds nothing times only what a file's statistics let a reader skip
    if not rows:
        raise SystemExit(f"{name}: no rows")
    out[name] = best
print(json.dumps(out))
"""


def _year(home: Path, env: dict[str, str]) -> int:
    """One generated day fetched into the warehouse, then repeated backwards over the year, written as loads write
    (the warehouse's own connection: its row group size)."""
    from warehouse import db

    fixture = _offers.replay_dir(home.parent / "replay", DAY_OFFERS, seed=1)
    with replay_server(fixture) as replay:
        run([*GPULEDGER, "fetch", "--source", "vastai"], env | {"GPULEDGER_VASTAI_URL": replay["GPULEDGER_VASTAI_URL"]})
    con = db.connect(home / "gpuledger.duckdb")
    try:
        day_run = con.execute("select any_value(run_id) from offers").fetchall()[0][0]
        # in slices, oldest first: one insert of 9 M rows needs more memory than CI has
        for first in reversed(range(1, DAYS, 61)):
            con.execute(REPEAT.format(run=day_run, first=first, last=min(first + 61, DAYS)))
        con.execute("checkpoint")
        return con.execute("select count(*) from offers").fetchall()[0][0]
    finally:
        con.close()


def main() -> None:
    import json

    import duckdb

    print(f"history: {DAYS} days of offers from a generated day of {DAY_OFFERS:,} vast.ai offers")
    with tempfile.TemporaryDirectory(prefix="gpuledger-bench-") as tmp:
        home = Path(tmp) / "home"
        env = {"GPULEDGER_HOME": str(home), "GPULEDGER_VASTAI_MIN_INTERVAL_S": "0", "GPULEDGER_VASTAI_LIMIT": "50000",
               "GPULEDGER_HTTP_MAX_BYTES": str(2**30)}
        start = time.perf_counter()
        rows = _year(home, env)
        print(f"  {rows:,} offers rows written in {time.perf_counter() - start:.0f}s")
        database, parquet = home / "gpuledger.duckdb", Path(tmp) / "offers.parquet"
        con = duckdb.connect(str(database), read_only=True)
        con.execute(f"copy (select * from offers) to '{parquet}' (format parquet, compression zstd)")
        con.close()
        warehouse_b, parquet_b = database.stat().st_size, parquet.stat().st_size
        print(f"  warehouse file {warehouse_b / 1e6:,.0f} MB (every table); offers as zstd Parquet "
              f"{parquet_b / 1e6:,.0f} MB")
        on_parquet = {n: q.format(t=f"read_parquet('{parquet}')") for n, q in QUERIES.items()}
        on_warehouse = {n: q.format(t="offers") for n, q in QUERIES.items()}
        parquet_s = last_json(run([sys.executable, "-c", TIMED, ":memory:", json.dumps(on_parquet)]))
        warehouse_s = last_json(run([sys.executable, "-c", TIMED, str(database), json.dumps(on_warehouse)]))
        sql_s = {}
        for name, query in on_warehouse.items():
            run([*GPULEDGER, "sql", query], env)  # warm caches
            sql_s[name] = best([*GPULEDGER, "sql", query], 3, env).wall_s
    print(f"  {'query':<28} {'gpuledger sql':>14} {'warehouse':>10} {'parquet':>10}")
    for name in QUERIES:
        print(f"  {name:<28} {sql_s[name]:13.2f}s {warehouse_s[name] * 1000:8.0f}ms {parquet_s[name] * 1000:8.0f}ms")
    verdict("history", [
        ("warehouse / zstd Parquet bytes", warehouse_b / parquet_b, MAX_SIZE_RATIO),
        *((f"gpuledger sql '{name}' wall s", sql_s[name], MAX_SQL_S) for name in QUERIES),
        *((f"'{name}' warehouse / parquet", warehouse_s[name] / parquet_s[name], MAX_QUERY_RATIO)
          for name in QUERIES),
    ])
