"""Deriving a day: cost_per_mtok, cost_at_speed and own_vs_rent are views of the day's facts and the estimate grid and
speed answers they name (migrations 0025, 0026), and they read what storing the rows gave, on the recorded day and
after the catalogue or estimator change."""

import threading
from datetime import timedelta

import duckdb
import polars as pl
import pytest

from flows import derive
from tests.cli_support import gpuledger
from tests.pipeline_support import serve_fixtures
from tests.sources_support import SNAPSHOT
from transforms import api_prices, costs, estimator, presets, speed
from warehouse import db, derived, estimates, queries

pytestmark = pytest.mark.usefixtures("slim_night")  # their subject is not the report


@pytest.fixture
def recorded_day(monkeypatch):
    """The recorded day, derived by the nightly (no Prefect) from the replayed sources."""
    with serve_fixtures(monkeypatch):
        gpuledger("nightly", "--no-prefect")


def stored_way(con: duckdb.DuckDBPyConnection, plan: derive.DerivePlan) -> pl.DataFrame:
    """The day's cost_per_mtok rows as the derive stored them before the view: every estimate of the grid priced by
    each replica price of its GPU and TP (transforms/costs.cost_per_mtok), labelled with the day's quality."""
    cats = derive.catalogues(con)
    offers, _, verdict = derive.gate(con, SNAPSHOT, queries.offers_for_date(con, SNAPSHOT), plan.quality)
    grid = derive.estimate_grid(cats, plan)
    prices = costs.replica_prices(offers, sorted(grid["tp"].unique().to_list()), cats["gpus"])
    return costs.cost_per_mtok(grid, prices).with_columns(quality=pl.lit(verdict.quality))


def whole_night(con: duckdb.DuckDBPyConnection, plan: derive.DerivePlan) -> dict:
    """The day's frames as the derive built them before the views, the whole night at once: the grid, the replica
    prices, the hardware in USD, cost_per_mtok and own_vs_rent of every method, model and GPU (transforms/costs),
    the cheapest API prices, and one speed search over every request at every tier (transforms/speed)."""
    cats = derive.catalogues(con)
    offers, _, verdict = derive.gate(con, SNAPSHOT, queries.offers_for_date(con, SNAPSHOT), plan.quality)
    grid = derive.estimate_grid(cats, plan)
    # the replicas the derive prices: the estimates' and every power of two up to them or a node
    widest = max(grid["tp"].max(), presets.MEASURED.node_gpus)
    prices = costs.replica_prices(offers, sorted({*grid["tp"].to_list(), *(1 << k for k in range(widest.bit_length()))}),
                                  cats["gpus"])
    hardware = derive.hardware_usd(cats["hardware_prices"], queries.table(con, "fx_rates"), SNAPSHOT)
    cost = costs.cost_per_mtok(grid, prices)
    measured = derive.method_params(presets.MEASURED.name, plan.input_per_output)
    found = speed.answers_each(cats["models"], estimator.apply_overlay(cats["gpus"], cats["gpu_overlays"], "measured"),
                               derive.speed_grid(cats, offers), measured, (*plan.speed_tiers, plan.own_rent_api_tier))
    return {"cats": cats, "quality": pl.lit(verdict.quality).alias("quality"), "grid": grid, "prices": prices,
            "hardware": hardware, "cost": cost, "own": costs.own_vs_rent(grid, hardware, cost, plan.ownership, cats["gpus"]),
            "api": derive.cheapest_api(con, SNAPSHOT, cats["models"], plan.input_per_output), "measured": measured,
            "found": found}


def stored_before_the_views(con: duckdb.DuckDBPyConnection, plan: derive.DerivePlan) -> dict[str, pl.DataFrame]:
    """The day's cost_at_speed and own_vs_rent rows as the derive stored them before the views: the answers at each
    tier priced at their cheapest deployable replica (transforms/speed.cost_at_speed), and owning each estimate
    against renting it (transforms/costs.own_vs_rent), labelled with the day's quality."""
    night = whole_night(con, plan)
    found = {tier: night["found"][tier] for tier in plan.speed_tiers}
    return {"cost_at_speed": speed.cost_at_speed(found, night["prices"]).with_columns(night["quality"]),
            "own_vs_rent": night["own"].with_columns(night["quality"])}


def differing(con: duckdb.DuckDBPyConnection, expected: pl.DataFrame) -> tuple[int, int]:
    """Rows of `expected` the view lacks for the day, and rows the view has that `expected` lacks (as multisets,
    $/M to 9 decimals)."""
    columns = ", ".join(f'"{c}"' for c in expected.columns)
    rounded = "* replace (round(usd_per_mtok, 9) as usd_per_mtok, round(usd_per_mtok_low, 9) as usd_per_mtok_low, " \
              "round(usd_per_mtok_high, 9) as usd_per_mtok_high)"
    con.register("expected", expected)
    view = f"(select {columns} from cost_per_mtok where snapshot_date = '{SNAPSHOT}')"
    missing = con.sql(f"select count(*) from (select {rounded} from expected except all select {rounded} from {view})")
    extra = con.sql(f"select count(*) from (select {rounded} from {view} except all select {rounded} from expected)")
    found = missing.fetchall()[0][0], extra.fetchall()[0][0]
    con.unregister("expected")
    return found


def test_the_view_reads_the_rows_the_derive_stored_before_it(recorded_day):
    with db.connect() as con:
        expected = stored_way(con, derive.DerivePlan())
        view_columns = [c for (c,) in con.execute(
            "select column_name from information_schema.columns where table_name = 'cost_per_mtok' "
            "order by ordinal_position").fetchall()]
        rows = con.execute("select count(*) from cost_per_mtok where snapshot_date = ?", [SNAPSHOT]).fetchall()[0][0]
        assert expected.height > 10_000 and rows == expected.height
        assert sorted(view_columns) == sorted(expected.columns)
        assert differing(con, expected) == (0, 0)
        # what is stored instead: a few hundred replica prices, naming the one grid they were priced with
        prices, grids = con.execute("select count(*), count(distinct grid_sha256) from replica_prices").fetchall()[0]
        assert prices < expected.height / 50 and grids == 1
        # deriving the day again replaces its replica prices and leaves the grid as it was stored; it reads the grid
        # back instead of computing it, and every table it derives is the same, row for row
        stored = con.execute("select count(*), min(computed_at) from estimates").fetchall()
        answers = con.sql("select * from speed_answers").pl()
        tables = {t: con.sql(f"select * from {t} where snapshot_date = '{SNAPSHOT}'").pl()
                  for t in (*derived.STORED, *derived.VIEWS)}
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(derive, "estimate_grid", None)  # the grid is stored under its key: nothing computes it
            counts, _ = derive.derive_date(con, SNAPSHOT)
        assert con.execute("select count(*), min(computed_at) from estimates").fetchall() == stored
        assert con.sql("select * from speed_answers").pl().equals(answers)
        for table, before in tables.items():  # a view's rows come in no set order
            after = con.sql(f"select * from {table} where snapshot_date = '{SNAPSHOT}'").pl()
            assert after.sort(after.columns).equals(before.sort(before.columns)), table
        assert con.execute("select count(*) from replica_prices").fetchall()[0][0] == counts["replica_prices"] == prices
        assert differing(con, expected) == (0, 0)


def test_the_speed_and_own_views_give_the_doubles_the_derive_stored_before_them(recorded_day):
    """The same rows, column for column and bit for bit (the views run polars' operations in its order), in the
    tables' columns and types; what is stored instead is a few dozen hardware prices a night and answers per key."""
    with db.connect() as con:
        for table, expected in stored_before_the_views(con, derive.DerivePlan()).items():
            view = con.sql(f"select * from {table} where snapshot_date = '{SNAPSHOT}'").pl()
            assert expected.height > 1_000 and view.height == expected.height, table
            assert sorted(view.columns) == sorted(expected.columns), table
            con.register("expected", expected.select(view.columns).cast(view.schema))
            con.register("viewed", view)
            assert con.sql("select count(*) from (select * from expected except all select * from viewed)"
                           ).fetchall() == [(0,)], table
            assert con.sql("select count(*) from (select * from viewed except all select * from expected)"
                           ).fetchall() == [(0,)], table
        hardware, answers = con.execute("select (select count(*) from own_hardware), (select count(*) from speed_answers)"
                                        ).fetchall()[0]
        assert hardware < 100 and answers > 0


def whole_night_own_rent_api(con: duckdb.DuckDBPyConnection, plan: derive.DerivePlan) -> pl.DataFrame:
    """The day's own_rent_api as the derive built it from the whole night's frames (whole_night)."""
    n = whole_night(con, plan)
    return pl.concat([
        api_prices.own_rent_api(n["cost"], n["own"], n["grid"], n["api"], input_per_output=plan.input_per_output),
        speed.own_rent_api_at(n["found"][plan.own_rent_api_tier], n["measured"], plan.own_rent_api_tier, n["prices"],
                              n["hardware"], plan.ownership, n["cats"]["gpus"], n["api"], plan.input_per_output),
    ], how="diagonal_relaxed").with_columns(n["quality"])


def test_own_rent_api_built_a_few_models_and_requests_at_a_time_is_the_whole_nights(recorded_day, monkeypatch):
    """The derive never builds the night's whole cost_per_mtok (the views give it): own_rent_api takes the cost
    method's rows a few models at a time, the speed search a slice of requests at a time; the table is the one the
    whole night gave, bit for bit."""
    monkeypatch.setattr(derive, "OWN_RENT_API_MODELS", 5)  # steps that end inside the catalogue, and a short last one
    monkeypatch.setattr(derive, "SPEED_REQUESTS", 97)
    with db.connect() as con:
        derive.derive_date(con, SNAPSHOT)
        stored = con.sql(f"select * from own_rent_api where snapshot_date = '{SNAPSHOT}'").pl()
        expected = whole_night_own_rent_api(con, derive.DerivePlan()).select(stored.columns).cast(stored.schema)
        assert stored.height > 100 and stored["model"].n_unique() > 2 * derive.OWN_RENT_API_MODELS
        assert stored.sort(stored.columns, nulls_last=True).equals(expected.sort(expected.columns, nulls_last=True))


def test_an_old_day_reads_the_same_after_the_catalogue_or_the_estimator_changes(recorded_day, monkeypatch):
    with db.connect() as con:
        before = {t: con.sql(f"select * from {t} where snapshot_date = '{SNAPSHOT}'").pl() for t in derived.VIEWS}
        # a catalogue change (a part's bandwidth), then a new request mix and estimator version, each a day later
        con.execute("update gpus set bandwidth_gbs = bandwidth_gbs * 2 where name = 'H100 SXM5 80GB'")
        derive.derive_date(con, SNAPSHOT + timedelta(days=1))
        monkeypatch.setenv("GPULEDGER_INPUT_PER_OUTPUT", "1")
        monkeypatch.setattr(estimator, "ESTIMATOR_VERSION", "99.0.0")
        derive.derive_date(con, SNAPSHOT + timedelta(days=2))
        grids = con.execute("select grid_sha256, count(*) from estimates group by 1").fetchall()
        assert len(grids) == 3  # each change stored a grid beside the others
        changed = con.execute(
            "select count(distinct agg_tok_s) from estimates where gpu = 'H100 SXM5 80GB' and model = 'llama-3.3-70b' "
            "and method = 'calculator' and precision = 'bf16' and context_tokens = 4096 and streams = 1").fetchall()
        assert changed == [(2,)]  # the doubled bandwidth moved the estimate the new grid holds
        for table, rows in before.items():
            after = con.sql(f"select * from {table} where snapshot_date = '{SNAPSHOT}'").pl()
            assert after.height and after.sort(after.columns).equals(rows.sort(rows.columns)), table




def day_tables(con: duckdb.DuckDBPyConnection) -> dict[str, pl.DataFrame]:
    """The day's rows of every derived table and view, each in a set order."""
    frames = {t: con.sql(f"select * from {t} where snapshot_date = '{SNAPSHOT}'").pl()
              for t in (*derived.STORED, *derived.VIEWS)}
    return {t: frame.sort(frame.columns, nulls_last=True) for t, frame in frames.items()}


def on_thread(monkeypatch, name: str, calls: list[str], fail_on: str | None = None) -> None:
    """derive.<name> records the thread each call runs on (and raises on the thread named fail_on)."""
    original = getattr(derive, name)

    def recorded(*args):
        calls.append(threading.current_thread().name)
        if calls[-1] == fail_on:
            raise MemoryError("the ahead's thread ran out")
        return original(*args)

    monkeypatch.setattr(derive, name, recorded)


def test_what_was_derived_ahead_is_taken_while_its_keys_hold(recorded_day, monkeypatch):
    """The nightly starts the grid and the speed search on a thread before the Hugging Face fetch; the derive takes
    them and computes neither itself, and every table is the one a derive without them gives."""
    searches, grids = [], []
    on_thread(monkeypatch, "search_speeds", searches)
    on_thread(monkeypatch, "estimate_grid", grids)
    plan = derive.DerivePlan()
    with db.connect() as con:
        # a new catalogue row (a part's bandwidth) makes a grid key no night has stored: the ahead computes the grid
        con.execute("update gpus set bandwidth_gbs = bandwidth_gbs * 2 where name = 'H100 SXM5 80GB'")
        ahead = derive.DeriveAhead(con, SNAPSHOT, plan)
        counts, _ = derive.derive_date(con, SNAPSHOT, plan, ahead)
        assert searches == grids == ["derive-ahead"]  # neither ran again on the derive's thread
        cats = derive.catalogues(con)
        stored = estimates.read_grid(con, derive.grid_key(cats, plan))
        assert counts["estimates"] == stored.height > 10_000
        assert stored.equals(derive.estimate_grid(cats, plan).select(stored.columns))
        with_ahead = day_tables(con)
        derive.derive_date(con, SNAPSHOT)  # the same day without: every table the same, row for row
        assert searches == ["derive-ahead", "MainThread"]
        without = day_tables(con)
    for table, frame in without.items():
        assert frame.height and frame.equals(with_ahead[table]), table


def test_what_was_derived_ahead_is_computed_again_when_a_later_load_changed_its_inputs(recorded_day, monkeypatch,
                                                                                        caplog):
    """A model the later wave changed (here a catalogue row updated after the ahead read them) gives other keys: the
    derive computes the grid and the search itself, and the tables are those of the catalogue as it stands. A thread
    that failed leaves the derive to compute them too."""
    grids = []
    on_thread(monkeypatch, "estimate_grid", grids, fail_on="derive-ahead")
    plan = derive.DerivePlan()
    with db.connect() as con:
        ahead = derive.DeriveAhead(con, SNAPSHOT, plan)  # the recorded day's grid is stored: the search alone
        con.execute("update models set layers = layers + 1 where model_id = 'llama-3.3-70b'")
        derive.derive_date(con, SNAPSHOT, plan, ahead)
        with pytest.raises(RuntimeError, match="already taken"):
            ahead.take("", "", pl.DataFrame(), plan)
        with_ahead = day_tables(con)
        con.execute("update models set layers = layers + 1 where model_id = 'llama-3.3-70b'")
        derive.derive_date(con, SNAPSHOT, plan, derive.DeriveAhead(con, SNAPSHOT, plan))
        assert "the derivation started ahead failed" in caplog.text and "ran out" in caplog.text
        assert grids == ["MainThread", "derive-ahead", "MainThread"]
        con.execute("update models set layers = layers - 1 where model_id = 'llama-3.3-70b'")
        derive.derive_date(con, SNAPSHOT)  # the first change's catalogue again, without: its grid is read back
        assert con.execute("select count(distinct grid_sha256) from estimates").fetchall() == [(3,)]
        without = day_tables(con)
    for table, frame in without.items():
        assert frame.height and frame.equals(with_ahead[table]), table
