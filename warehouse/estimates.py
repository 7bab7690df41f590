"""The `estimates` table: grids from transforms.estimator, each stored once under the sha256 of what made it; and the
`speed_answers` table: the answers at each speed tier (transforms/speed.py), a GPU's stored once under its key.

A grid is never replaced: the days priced with it (replica_prices.grid_sha256, read through the cost_per_mtok and
own_vs_rent views; speed_sha256, through cost_at_speed) must read the same forever, so a changed catalogue, estimator
or plan stores a new grid beside the old ones.
"""

import hashlib
import json

import duckdb
import polars as pl

from warehouse import config
from warehouse.db import transaction
from warehouse.derived import check_keys

COLUMNS = (
    "model", "gpu", "precision", "context_tokens", "streams", "method", "estimator_version", "tp", "multi_node",
    "memory_used_gb", "memory_used_pct", "max_streams", "single_stream_tok_s", "per_stream_tok_s", "agg_tok_s",
    "prefill_tok_s", "bound", "power_kw", "uncertain", "computed_at", "input_tokens", "output_tokens", "agg_tok_s_low",
    "agg_tok_s_high", "engine", "grid_sha256",
)


def grid_sha256(settings: dict, frames: dict[str, pl.DataFrame]) -> str:
    """The key of a grid: sha256 over the settings it was computed with (the estimator's version, the plan) and every
    row of the catalogue frames it read, whatever their row order."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    for name in sorted(frames):
        frame = frames[name]
        digest.update(f"\n{name}:{sorted(frame.columns)}\n".encode())
        rows = frame.select(sorted(frame.columns)).write_ndjson().splitlines()
        digest.update("\n".join(sorted(rows)).encode())
    return digest.hexdigest()


# The table's INTEGER columns, read back as the Int64 the estimator computes them in.
INTEGERS = ("context_tokens", "streams", "tp", "max_streams", "input_tokens", "output_tokens")


def is_stored(con: duckdb.DuckDBPyConnection, key: str) -> bool:
    return con.execute("select count(*) from estimates where grid_sha256 = ?", [key]).fetchall()[0][0] > 0


def read_grid(con: duckdb.DuckDBPyConnection, key: str) -> pl.DataFrame | None:
    """The grid stored under `key`, in the order it was stored, its integers as Int64 (None: no such grid): the
    rows the estimator gave (the same key stands for the same rows), without computed_at and the key."""
    frame = con.sql(f"select {', '.join(c for c in COLUMNS if c not in ('computed_at', 'grid_sha256'))} "
                    "from estimates where grid_sha256 = $key", params={"key": key}).pl()
    return frame.cast(dict.fromkeys(INTEGERS, pl.Int64)) if frame.height else None


def store_grid(con: duckdb.DuckDBPyConnection, df: pl.DataFrame, key: str) -> int:
    """Store a grid under its key, in one transaction, unless that key is stored already (then nothing changes: the
    same key stands for the same rows). Returns the rows stored. `computed_at` is now (config.utc_now) unless the
    frame carries it."""
    if "computed_at" not in df.columns:
        df = df.with_columns(computed_at=pl.lit(config.utc_now(), dtype=pl.Datetime("us")))
    frame = df.with_columns(grid_sha256=pl.lit(key)).select(COLUMNS)
    check_keys("estimates", frame)
    con.register("estimate_frame", frame)
    try:
        with transaction(con):
            if is_stored(con, key):
                return 0
            con.execute("insert into estimates by name select * from estimate_frame")
    finally:
        con.unregister("estimate_frame")
    return frame.height


ANSWER_COLUMNS = (
    "speed_sha256", "model", "gpu", "precision", "speed_tier", "min_user_tok_s", "max_ttft_s", "input_tokens",
    "output_tokens", "tp", "streams", "stopped_by", "user_tok_s", "ttft_s", "agg_tok_s", "agg_tok_s_low",
    "agg_tok_s_high", "method", "engine", "estimator_version",
)


def store_answers(con: duckdb.DuckDBPyConnection, df: pl.DataFrame, key: str) -> int:
    """Store the speed answers of the GPUs that have none under `key` yet, in one transaction; a GPU's answers once
    stored are never replaced (one GPU's answers do not depend on the others searched beside it, so the same key
    stands for the same rows whichever night stores them). Returns the rows stored."""
    frame = df.with_columns(speed_sha256=pl.lit(key)).select(ANSWER_COLUMNS)
    check_keys("speed_answers", frame)
    con.register("answer_frame", frame)
    try:
        with transaction(con):
            return con.execute("insert into speed_answers by name select * from answer_frame where gpu not in "
                               "(select gpu from speed_answers where speed_sha256 = ?)", [key]).fetchall()[0][0]
    finally:
        con.unregister("answer_frame")
