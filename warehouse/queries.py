"""Read queries the pipeline and the analyst commands share."""

from datetime import date

import duckdb
import polars as pl


def offers_for_date(con: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    """The date's offers: per provider, those of the latest run whose fetch of that provider succeeded."""
    return con.sql(
        """
        with chosen as (
            select source, arg_max(run_id, started_at) as run_id
            from fetches where snapshot_date = $day and status = 'ok' group by source)
        select o.* from offers o join chosen c on o.provider = c.source and o.run_id = c.run_id
        where o.snapshot_date = $day
        """,
        params={"day": day},
    ).pl()


def table(con: duckdb.DuckDBPyConnection, name: str) -> pl.DataFrame:
    return con.sql(f"select * from {name}").pl()


def latest_date(con: duckdb.DuckDBPyConnection, table_name: str = "cost_per_mtok") -> date | None:
    """The newest snapshot_date a table holds, or None when it is empty."""
    return con.execute(f"select max(snapshot_date) from {table_name}").fetchall()[0][0]
