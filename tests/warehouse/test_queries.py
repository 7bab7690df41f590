"""Read queries: API prices as of a date."""

from datetime import date, datetime

from warehouse import db, queries


def fetched(con, run_id: str, day: date, status: str = "ok", usd_out: float | None = None) -> None:
    con.execute("insert into fetches (run_id, source, snapshot_date, started_at, status) values (?, 'openrouter', ?, ?, ?)",
                [run_id, day, datetime.combine(day, datetime.min.time()), status])
    if usd_out is not None:
        con.execute("insert into api_prices (snapshot_date, run_id, api_provider, api_model_id, price_kind, tier, model, "
                    "usd_per_mtok_input, usd_per_mtok_output, fetched_at, response_sha256) values "
                    "(?, ?, 'openrouter', 'a/m', 'standard', 'base', 'm', 0.1, ?, ?, 'sha')",
                    [day, run_id, usd_out, datetime.combine(day, datetime.min.time())])


def test_api_prices_are_the_latest_successful_fetch_on_or_before_the_date(gpuledger_home):
    with db.connect() as con:
        fetched(con, "aug", date(2026, 8, 19), usd_out=0.16)
        fetched(con, "nov-early", date(2026, 11, 20), usd_out=0.15)
        fetched(con, "nov-late", date(2026, 11, 27), status="failed")
        asof = {day: queries.api_prices_asof(con, day)[["run_id", "usd_per_mtok_output"]].rows()
                for day in (date(2026, 8, 18), date(2026, 8, 19), date(2026, 11, 27))}
    assert asof == {date(2026, 8, 18): [], date(2026, 8, 19): [("aug", 0.16)], date(2026, 11, 27): [("nov-early", 0.15)]}
