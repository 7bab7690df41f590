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


def test_published_days_count_each_tables_rows_of_the_latest_days_a_run_did_not_fail(gpuledger_home):
    with db.connect() as con:
        assert queries.published_days(con, ("daily_prices", "own_vs_rent")).fetchall() == []  # no run yet
        for run_id, day, hour, status, quality in (
                ("a", date(2026, 11, 26), 22, "ok", "ok"), ("c", date(2026, 11, 27), 21, "failed", None),
                ("b", date(2026, 11, 27), 22, "ok", "suspect"), ("d", date(2026, 11, 28), 22, "failed", None)):
            con.execute("insert into runs (run_id, snapshot_date, started_at, status, trigger, quality) values "
                        "(?, ?, ?, ?, 'test', ?)", [run_id, day, datetime(day.year, day.month, day.day, hour), status, quality])
        con.execute("insert into own_vs_rent_stored (snapshot_date, model, gpu, precision, context_tokens, streams, method, "
                    "price_kind, gpu_count, tp, replicas, hardware_usd, quoted_on, years, usd_per_kwh, "
                    "maintenance_usd_per_month, utilisation, own_usd_per_hr, power_unknown, estimator_version) "
                    "select '2026-11-27', 'm' || i, 'g', 'bf16', 4096, 1, 'measured', 'list', 8, 1, 8, 1e5, "
                    "'2026-09-16', 3, 0.1, 500, 0.5, 5, false, '1' from range(3) t(i)")
        days = queries.published_days(con, ("daily_prices", "own_vs_rent")).fetchall()
    # 2026-11-28 only failed; 2026-11-27's latest run judged it suspect, and its failed run is counted among its runs;
    # own_vs_rent's rows are a view's (the days stored before migration 0026 here), counted for that day alone
    assert days == [(date(2026, 11, 27), "suspect", 2, 0, 3), (date(2026, 11, 26), "ok", 1, 0, 0)]
