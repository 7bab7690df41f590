"""The `estimates` table: a grid from transforms.estimator, stored per (method, estimator_version)."""

import duckdb
import polars as pl

from warehouse import config
from warehouse.db import transaction
from warehouse.derived import check_keys

COLUMNS = (
    "model", "gpu", "precision", "context_tokens", "streams", "method", "estimator_version", "tp", "multi_node",
    "memory_used_gb", "memory_used_pct", "max_streams", "single_stream_tok_s", "per_stream_tok_s", "agg_tok_s",
    "prefill_tok_s", "bound", "power_kw", "uncertain", "computed_at", "input_tokens", "output_tokens", "agg_tok_s_low",
    "agg_tok_s_high", "engine",
)


def replace_estimates(con: duckdb.DuckDBPyConnection, df: pl.DataFrame) -> int:
    """Store a grid, replacing every row of the same (method, estimator_version), in one transaction; idempotent.

    Returns the rows stored. `computed_at` is now (config.utc_now) unless the frame carries it.
    """
    if "computed_at" not in df.columns:
        df = df.with_columns(computed_at=pl.lit(config.utc_now(), dtype=pl.Datetime("us")))
    frame = df.select(COLUMNS)
    check_keys("estimates", frame)
    keys = frame.select("method", "estimator_version").unique()
    con.register("estimate_keys", keys)
    con.register("estimate_frame", frame)
    try:
        with transaction(con):
            con.execute(
                "delete from estimates e using estimate_keys k "
                "where e.method = k.method and e.estimator_version = k.estimator_version"
            )
            con.execute("insert into estimates by name select * from estimate_frame")
    finally:
        con.unregister("estimate_keys")
        con.unregister("estimate_frame")
    return frame.height


def stored_and_current(con: duckdb.DuckDBPyConnection, grid: pl.DataFrame) -> bool:
    """The grid's estimates are already stored, for the same requests, computed after the catalogues were last
    loaded (a changed request mix, $GPULEDGER_INPUT_PER_OUTPUT, recomputes them)."""
    methods = grid["method"].unique().to_list()
    version = grid["estimator_version"][0]
    where = f"estimator_version = ? and method in ({', '.join('?' * len(methods))})"
    stored, computed = con.execute(
        f"select count(*), min(computed_at) from estimates where {where}", [version, *methods]).fetchall()[0]
    loaded = con.execute("select max(loaded_at) from catalog_versions").fetchall()[0][0]
    if stored != grid.height or computed is None or (loaded is not None and computed < loaded):
        return False
    request = ["method", "context_tokens", "input_tokens", "output_tokens"]
    stored_requests = con.sql(
        f"select distinct {', '.join(request)} from estimates where {where}", params=[version, *methods]).pl()
    return stored_requests.sort(request, nulls_last=True).equals(
        grid.select(request).unique().cast({"context_tokens": pl.Int64, "input_tokens": pl.Int64,
                                            "output_tokens": pl.Int64}).sort(request, nulls_last=True))
