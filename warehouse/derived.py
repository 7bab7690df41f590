"""Derived tables: a date's rows are replaced together, in one transaction, so a rerun never duplicates."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

import duckdb

from warehouse.db import transaction

if TYPE_CHECKING:  # polars loads with the first frame: `gpuledger status` reads BY_DATE without it
    import polars as pl

# The published tables dated by day.
BY_DATE = ("daily_prices", "rental_ranges", "cost_per_mtok", "own_vs_rent", "price_index", "own_rent_api",
           "cost_at_speed")
# A published table that is a view (migrations 0025, 0026), computed when asked from the stored table a derive
# replaces, and the table of the rows the days derived before it keep: deriving such a day again replaces those by the
# view's.
VIEWS = {"cost_per_mtok": ("replica_prices", "cost_per_mtok_stored"),
         "cost_at_speed": ("replica_prices", "cost_at_speed_stored"),
         "own_vs_rent": ("own_hardware", "own_vs_rent_stored")}
STORED = (*(t for t in BY_DATE if t not in VIEWS), *dict.fromkeys(stored for stored, _ in VIEWS.values()))
SUPERSEDES = {stored: tuple(legacy for fact, legacy in VIEWS.values() if fact == stored) for stored, _ in VIEWS.values()}
# Each derived table's key, checked before a replacement (the tables carry no index: see migration 0006).
KEYS = {
    "daily_prices": ("snapshot_date", "provider", "gpu", "gpu_count", "price_kind", "tier"),
    "rental_ranges": ("snapshot_date", "gpu", "n_gpus", "provider", "price_kind"),
    "replica_prices": ("snapshot_date", "gpu", "provider", "price_kind", "tp", "replica_pricing"),
    "own_hardware": ("snapshot_date", "gpu", "price_kind", "gpu_count"),
    "price_index": ("snapshot_date", "gpu", "provider", "price_kind"),
    "own_rent_api": ("snapshot_date", "model", "precision", "context_tokens", "streams", "speed_tier", "method"),
    "estimates": ("model", "gpu", "precision", "context_tokens", "streams", "method", "estimator_version",
                  "grid_sha256"),
    "speed_answers": ("speed_sha256", "model", "gpu", "precision", "speed_tier", "tp"),
}


def check_keys(table: str, frame: pl.DataFrame) -> None:
    """Refuse a frame whose rows repeat the table's key, naming the first repeated key."""
    import polars as pl

    keys = list(KEYS[table])
    repeated = frame.filter(pl.struct(keys).is_duplicated())
    if repeated.height:
        raise ValueError(f"{table}: {repeated.height} rows repeat a key, e.g. {repeated.select(keys).row(0)}")


def replace_for_date(
    con: duckdb.DuckDBPyConnection, day: date, frames: dict[str, pl.DataFrame], quarantine: pl.DataFrame | None = None
) -> dict[str, int]:
    """Replace each given table's rows for day with the frame's rows, and the day's price-sanity quarantine
    when given; all of it or none."""
    import polars as pl

    unknown = set(frames) - set(STORED)
    if unknown:
        raise ValueError(f"not a stored derived table: {', '.join(sorted(unknown))}")
    replaced = frames | ({"quarantine": quarantine} if quarantine is not None else {})
    for table, frame in replaced.items():
        other_days = frame.filter(pl.col("snapshot_date") != day).height
        if other_days:
            raise ValueError(f"{table}: {other_days} rows are not dated {day}")
        if table in KEYS:
            check_keys(table, frame)
    with transaction(con):
        for table, frame in replaced.items():
            only_derived = " and stage = 'quality'" if table == "quarantine" else ""  # parse rows are facts
            for replaced_table in (table, *SUPERSEDES.get(table, ())):
                con.execute(f"delete from {replaced_table} where snapshot_date = ?{only_derived}", [day])
            con.register("derived_frame", frame)
            con.execute(f"insert into {table} by name select * from derived_frame")
            con.unregister("derived_frame")
    return {table: frame.height for table, frame in frames.items()}
