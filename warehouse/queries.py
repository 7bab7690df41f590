"""Read queries the pipeline and the analyst commands share.

The pipeline's reads return polars frames; the ones behind `gpuledger status` return DuckDB relations, which
the command fetches without loading polars.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

import duckdb

from warehouse import config, derived

if TYPE_CHECKING:
    import polars as pl


# Per source, the date's latest run whose fetch of it succeeded: the run the date's tables are built from (two
# fetches started at the same moment, as with a pinned clock, are told apart by run id, so every reader agrees).
_CHOSEN_RUNS = """
    with chosen as (
        select source, run_id from fetches where snapshot_date = $day and status = 'ok'
        qualify row_number() over (partition by source order by started_at desc, run_id desc) = 1)
"""


def published_offers(con: duckdb.DuckDBPyConnection, day: date) -> duckdb.DuckDBPyRelation:
    """The date's offers: per source, those of the latest run whose fetch of that source succeeded (an
    interrupted or replaced run's listings are not the day's)."""
    return _of_chosen_runs(con, "offers", "source", day)


def _of_chosen_runs(con: duckdb.DuckDBPyConnection, table: str, key: str, day: date,
                    condition: str = "") -> duckdb.DuckDBPyRelation:
    """A fact table's rows of the date that the date's chosen fetches wrote (`key` names their source)."""
    return con.sql(
        _CHOSEN_RUNS + f"select t.* from {table} t join chosen c on t.{key} = c.source and t.run_id = c.run_id "
                       f"where t.snapshot_date = $day {condition}",
        params={"day": day},
    )


def offer_origins(con: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    """Per provider of the date's offers: how its prices came (price_basis), from which sources, resold by whom."""
    return con.sql(
        "select provider, list(distinct price_basis order by price_basis) as price_basis, "
        "list(distinct source order by source) as sources, "
        "list(distinct reseller order by reseller) filter (where reseller is not null) as resellers "
        "from (" + published_offers(con, day).sql_query() + ") group by provider",
        params={"day": day}).pl()


def model_keys(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Each model's id, origin and Hugging Face ids: what a new curated, user or derived row is weighed against."""
    columns = ("model_id", "origin", "hf_repo", "hf_ids")
    return [dict(zip(columns, row, strict=True))
            for row in con.execute(f"select {', '.join(columns)} from models").fetchall()]


def offers_for_date(con: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    return published_offers(con, day).pl()


def quarantined_for_date(con: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    """What the date's chosen fetches (those of offers_for_date) quarantined as they were read."""
    return _of_chosen_runs(con, "quarantine", "provider", day, "and t.stage = 'parse'").pl()


def catalog_files_for_date(con: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    """The catalog files the date's chosen fetches read (those of offers_for_date), one row per cloud."""
    return _of_chosen_runs(con, "catalog_files", "source", day).pl()


def catalog_clouds_before(con: duckdb.DuckDBPyConnection, day: date, days: int) -> pl.DataFrame:
    """The (source, cloud) of every catalog file read in the `days` before the date."""
    return con.sql(
        "select distinct source, cloud from catalog_files where status <> 'failed' and snapshot_date < $day "
        "and snapshot_date >= $day - to_days($days::integer)", params={"day": day, "days": days}).pl()


def api_prices_asof(con: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    """Per API provider, the prices of its latest successful fetch on or before the date (API prices are kept
    until a newer fetch: a day without one compares against the last known, dated by its own fetched_at)."""
    return con.sql(
        """
        with chosen as (
            select source, run_id from fetches
            where status = 'ok' and snapshot_date <= $day and source in (select distinct api_provider from api_prices)
            qualify row_number() over (partition by source order by snapshot_date desc, started_at desc) = 1)
        select p.* from api_prices p join chosen c on p.api_provider = c.source and p.run_id = c.run_id
        """,
        params={"day": day},
    ).pl()


def catalog_versions(con: duckdb.DuckDBPyConnection, source: str, run_id: str, day: date) -> dict:
    """Per cloud of a catalog source, (version, changed_on) of its latest file read by another run on or before
    the date (a rebuild of an older day reads what came before it, not after)."""
    rows = con.execute(
        """
        select cloud, version, changed_on from catalog_files
        where source = ? and run_id <> ? and snapshot_date <= ? and status <> 'failed'
        qualify row_number() over (partition by cloud order by fetched_at desc, run_id desc) = 1
        """, [source, run_id, day]).fetchall()
    return {cloud: (version, changed_on) for cloud, version, changed_on in rows}


def catalog_freshness(con: duckdb.DuckDBPyConnection, now) -> duckdb.DuckDBPyRelation:
    """Per catalog source and cloud: its last read file's version, the day that version first came (its age in
    days: a file refreshed every few hours upstream that stays the same for days is stale), and the last answer."""
    return con.sql(
        """
        select source, cloud, arg_max(status, fetched_at) as last_status,
               max(fetched_at) filter (where status <> 'failed') as last_read_at,
               arg_max(version, fetched_at) filter (where status <> 'failed') as version,
               arg_max(changed_on, fetched_at) filter (where status <> 'failed') as changed_on,
               date_diff('day', arg_max(changed_on, fetched_at) filter (where status <> 'failed'),
                         $now::date) as version_age_days,
               arg_max(listings, fetched_at) filter (where status <> 'failed') as listings,
               arg_max(error, fetched_at) filter (where status = 'failed') as last_error
        from catalog_files group by source, cloud order by source, cloud
        """,
        params={"now": now})


def listing_history(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Per date and source: the listings loaded by that date's latest successful fetch."""
    return con.sql(
        """
        select snapshot_date, source, arg_max(offers_loaded, started_at) as listings
        from fetches where status = 'ok' and offers_loaded is not null group by snapshot_date, source
        """
    ).pl()


def table(con: duckdb.DuckDBPyConnection, name: str) -> pl.DataFrame:
    return con.sql(f"select * from {name}").pl()


def latest_date(con: duckdb.DuckDBPyConnection, table_name: str = "cost_per_mtok") -> date | None:
    """The newest snapshot_date a table holds (none beyond config.last_plausible_day), or None when it is empty. A
    view's dates are its stored tables' (each stored row makes rows of the view): its own max would compute every
    row of every day."""
    dated = " union all ".join(f"select snapshot_date from {t}" for t in derived.VIEWS.get(table_name, (table_name,)))
    return con.execute(f"select max(snapshot_date) from ({dated}) where snapshot_date <= ?",
                       [config.last_plausible_day()]).fetchall()[0][0]


def recent_runs(con: duckdb.DuckDBPyConnection, limit: int = 10) -> duckdb.DuckDBPyRelation:
    return con.sql(
        """
        select run_id, snapshot_date, started_at, finished_at, status, quality, source_status, quality_reasons,
               publication, mirror
        from runs order by started_at desc limit $limit
        """,
        params={"limit": limit},
    )


def source_freshness(con: duckdb.DuckDBPyConnection, now, stale_hours: float) -> duckdb.DuckDBPyRelation:
    """Per source: its last attempt, its last success, how old that is, and whether it is stale."""
    return con.sql(
        """
        with last_try as (
            select source, arg_max(status, started_at) as last_status, arg_max(error, started_at) as last_error,
                   max(started_at) as last_attempt_at
            from fetches group by source),
        last_ok as (
            select source, max(finished_at) as last_ok_at, arg_max(run_id, finished_at) as run_id,
                   arg_max(offers_loaded, finished_at) as offers_loaded
            from fetches where status = 'ok' group by source)
        select t.source, t.last_status, t.last_attempt_at, o.last_ok_at,
               round(date_diff('second', o.last_ok_at, $now::timestamp) / 3600.0, 1) as age_hours,
               o.last_ok_at is null or date_diff('second', o.last_ok_at, $now::timestamp) > $stale * 3600 as stale,
               o.offers_loaded, t.last_error
        from last_try t left join last_ok o using (source) order by t.source
        """,
        params={"now": now, "stale": stale_hours},
    )


def row_counts(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> duckdb.DuckDBPyRelation:
    counts = " union all ".join(f"select {i} as i, '{t}' as name, count(*) as rows from {t}" for i, t in enumerate(tables))
    return con.sql(f'select name as "table", rows from ({counts}) order by i')


def published_days(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...], limit: int = 7) -> duckdb.DuckDBPyRelation:
    """The latest published dates: their quality and each derived table's rows on that date. Each count names its
    date as a literal: a view (cost_at_speed, own_vs_rent) is then computed for that day alone, where a date joined in
    from the runs would compute every day's rows first (minutes over a year)."""
    days = [d for (d,) in con.execute("select distinct snapshot_date from runs where status != 'failed' "
                                      "order by snapshot_date desc limit ?", [limit]).fetchall()]
    per_day = " union all ".join(
        f"select date '{day.isoformat()}' as snapshot_date"
        + "".join(f", (select count(*) from {t} where snapshot_date = date '{day.isoformat()}') as {t}" for t in tables)
        for day in days
    ) or "select null::date as snapshot_date" + "".join(f", null::bigint as {t}" for t in tables) + " where false"
    return con.sql(
        f"""
        select d.snapshot_date, arg_max(r.quality, r.started_at) as quality, count(r.run_id) as runs,
               {", ".join(f"any_value(d.{t}) as {t}" for t in tables)}
        from ({per_day}) d join runs r using (snapshot_date) group by d.snapshot_date order by d.snapshot_date desc
        """
    )


def unpublished(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Dates whose last export to a lake location failed, with why."""
    return con.sql(
        """
        select snapshot_date, location, format, attempted_at, published_at as last_published_at, error
        from publications where status = 'unpublished' order by snapshot_date
        """
    )


def price_index_before(con: duckdb.DuckDBPyConnection, day: date, days: int = 30) -> pl.DataFrame:
    """Earlier price_index rows a day's index needs: the last `days` days, and each series' first row."""
    return con.sql(
        """
        select * from price_index where snapshot_date < $day
        qualify snapshot_date >= $day - $days::integer
             or row_number() over (partition by gpu, provider, price_kind order by snapshot_date) = 1
        """,
        params={"day": day, "days": days},
    ).pl()


def price_index_between(con: duckdb.DuckDBPyConnection, start: date, end: date) -> pl.DataFrame:
    """price_index rows dated start to end (both included)."""
    return con.sql("select * from price_index where snapshot_date between $start and $end",
                   params={"start": start, "end": end}).pl()


def published_before(con: duckdb.DuckDBPyConnection, day: date, table_name: str = "price_index") -> date | None:
    """The latest date before day that the table holds rows for."""
    return con.execute(f"select max(snapshot_date) from {table_name} where snapshot_date < ?", [day]).fetchall()[0][0]


def cost_series(con: duckdb.DuckDBPyConnection, model: str, start: date, end: date) -> pl.DataFrame:
    """One model's cost_per_mtok rows dated start to end."""
    return con.sql("select * from cost_per_mtok where model = $model and snapshot_date between $start and $end",
                   params={"model": model, "start": start, "end": end}).pl()



def tracked_repos(con: duckdb.DuckDBPyConnection, asked: list[str]) -> list[tuple[str, str, str | None]]:
    """The repositories whose config.json the Hugging Face source follows, as (repo, wanted_by, etag), one per
    repository (compared without case), the longest unchecked first: every hf_repo and hf_ids of a curated model,
    every hugging_face_id of each API provider's latest successful fetch, and the `asked` ones. A derived model is
    followed while one of these names its repository, never for its own sake (its row goes when none does).

    The etag is given only when what it stands for is still here (a model row serving the repository, or the
    reason its config gave none): a 304 must not keep a repository whose derived row has gone from coming back."""
    return con.execute(
        """
        with latest_api as (
            select source, run_id from fetches
            where status = 'ok' and source in (select distinct api_provider from api_prices)
            qualify row_number() over (partition by source order by snapshot_date desc, started_at desc) = 1),
        wanted as (
            select unnest(string_split(concat_ws(' ', hf_repo, hf_ids), ' ')) as repo, origin as wanted_by, 0 as rank
            from models where origin = 'curated'
            union all
            select p.hugging_face_id, 'api listing', 1 from api_prices p
            join latest_api l on p.api_provider = l.source and p.run_id = l.run_id
            union all
            select unnest($asked::varchar[]), 'GPULEDGER_HF_MODELS', 2),
        chosen as (
            select arg_min(repo, (rank, repo)) as repo, arg_min(wanted_by, (rank, repo)) as wanted_by
            from wanted where repo <> '' group by lower(repo))
        select w.repo, w.wanted_by,
               case when c.reason is not null or lower(w.repo) in (select repo from model_repos) then c.etag end
        from chosen w left join model_configs c on lower(c.repo) = lower(w.repo)
        order by c.checked_on nulls first, lower(w.repo)
        """, {"asked": asked}
    ).fetchall()
