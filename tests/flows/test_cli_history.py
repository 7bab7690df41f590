"""`gpuledger history` and `changes` on a small warehouse of generated days with known moves (3 Nov missing)."""

import json
import shutil
from datetime import datetime

import polars as pl
import pytest

from flows.derive import derive_date
from tests.cli_support import gpuledger
from tests.pipeline_support import slim_nights
from tests.trends_support import MARKET, NOV, day_offers
from transforms import presets
from warehouse import catalog, config, db, export, lake, load

DAYS = (1, 2, 4)  # the generated market up to 4 November



def load_day(con, day: int) -> None:
    """One run per day, its listings loaded per provider as a fetch would, then the day derived."""
    run_id = f"run-{day}"
    providers = sorted({p for p, _, _ in MARKET[day]})
    load.start_run(con, run_id, NOV[day], "test", providers)
    listings = day_offers(day, fetched_at=datetime(2026, 11, day, 2), run_id=run_id)
    for provider in providers:
        fetch = load.FetchRow(run_id=run_id, source=provider, snapshot_date=NOV[day],
                              started_at=datetime(2026, 11, day, 2), status="ok", requests=1)
        mine = listings.filter(pl.col("provider") == provider)
        load.load_batch(con, load.Batch(fetch, mine.with_columns(gpu_raw=pl.col("gpu"),
                                                                 offer_id=pl.col("offer_id") + f"-{provider}")))
    derive_date(con, NOV[day])
    load.finish_run(con, run_id)


@pytest.fixture(scope="module")
def generated_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("generated")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULEDGER_HOME", str(home))
        slim_nights(mp)  # the history is the subject, not the speed tiers
        with db.connect() as con:
            catalog.load_catalogs(con)
            for day in DAYS:
                load_day(con, day)
    return home


@pytest.fixture
def generated(generated_home, gpuledger_home):
    shutil.copytree(generated_home, gpuledger_home)


def index_row(day: int, gpu: str, provider: str) -> dict:
    with db.connect(read_only=True) as con:
        return con.sql("select * from price_index where snapshot_date = ? and gpu = ? and provider = ? "
                       "and price_kind = 'on_demand'", params=[NOV[day], gpu, provider]).pl().row(0, named=True)


@pytest.mark.usefixtures("generated")
def test_derive_writes_price_index_with_changes_and_a_missing_day_left_null():
    second, fourth = index_row(2, "H100 SXM5 80GB", "vastai"), index_row(4, "H100 SXM5 80GB", "vastai")
    assert second["min_change_1d"] == pytest.approx(0.1) and second["quality"] is not None
    assert fourth["min_change_1d"] is None and fourth["median_change_1d"] is None  # 3 November: no row
    b200 = index_row(4, "B200 SXM", "all")
    assert (b200["first_seen_date"], b200["days_since_first_seen"]) == (NOV[2], 2)


@pytest.mark.usefixtures("generated")
def test_price_index_is_exported_like_the_other_derived_tables():
    with db.connect(read_only=True) as con:
        written = export.export_table(con, "price_index", NOV[4], lake.open_store(config.exports_dir()))
        stored = con.sql("select count(*) from price_index where snapshot_date = ?", params=[NOV[4]]).fetchall()[0][0]
    exported = pl.read_delta(written.location).filter(pl.col("snapshot_date") == NOV[4]).height
    assert exported == written.rows == stored == 4  # H100 and B200, on vastai and over all providers


@pytest.mark.usefixtures("generated")
def test_history_csv_has_one_row_per_day_with_data_and_no_invented_day():
    rows = pl.read_csv(gpuledger("history", "--gpu", "H100 SXM5 80GB", "--provider", "vastai", "-f", "csv").encode(),
                       try_parse_dates=True)
    assert rows["snapshot_date"].to_list() == [NOV[1], NOV[2], NOV[4]]
    assert rows["min_usd_per_gpu_hr"].to_list() == [2.0, 2.2, 2.2]
    assert rows["min_change_1d"].to_list() == [None, pytest.approx(0.1), None]


@pytest.mark.usefixtures("generated")
def test_history_json_over_all_providers_and_the_days_window():
    rows = json.loads(gpuledger("history", "--gpu", "h100 sxm5", "--days", "2", "-f", "json"))
    assert [(r["snapshot_date"], r["provider"], r["listings"]) for r in rows] == [("2026-11-04", "all", 2)]


@pytest.mark.usefixtures("generated")
def test_history_on_the_terminal_draws_a_sparkline_per_gpu_with_the_gap():
    out = gpuledger("history", "--days", "4")
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 3}
    # 1-4 November: H100 min 2.0, 2.2, (none), 2.2; B200 first seen on the 2nd, 5.0 then 4.0
    assert "▁██ █" not in out  # never a bar for the missing day
    assert "▁█ █" in lines["H100 SXM5 80GB"] and "+10.0%" in lines["H100 SXM5 80GB"]
    assert " █ ▁" in lines["B200 SXM"] and "-20.0%" in lines["B200 SXM"]
    assert "a blank is a day without data" in out


@pytest.mark.usefixtures("generated")
def test_history_by_model_gives_the_cheapest_cost_per_million_tokens_each_day():
    rows = json.loads(gpuledger("history", "--model", "llama-3.1-8b", "--precision", "int4", "-f", "json"))
    # 1 November lists single H100s only: the TP2 replica they would make across hosts is not deployable
    assert [r["snapshot_date"] for r in rows] == ["2026-11-02", "2026-11-04"]
    assert {r["method"] for r in rows} == {presets.DEFAULT_COST_METHOD}  # the cost views' method
    for r in rows:
        assert r["usd_per_mtok"] == pytest.approx(r["replica_usd_per_hr"] * 1e6 / (r["agg_tok_s"] * 3600))
    per_gpu = json.loads(gpuledger("history", "--model", "llama-3.1-8b", "--gpu", "B200 SXM", "-f", "json"))
    assert [r["gpu"] for r in per_gpu] == ["B200 SXM", "B200 SXM"]
    assert "trend" in gpuledger("history", "--model", "llama-3.1-8b")


@pytest.mark.usefixtures("generated")
def test_history_says_what_exists_when_nothing_matches():
    out = gpuledger("history", "--gpu", "H100 SXM5 80GB", "--provider", "verda", code=1)
    assert "no on_demand prices from verda" in out and "vastai on_demand" in out
    out = gpuledger("history", "--model", "llama-3.1-8b", "--streams", "7", code=1)
    assert "no $/M for llama-3.1-8b" in out and f"{presets.DEFAULT_COST_METHOD} int4 32768 tokens 32 streams" in out
    assert "unknown GPU" in gpuledger("history", "--gpu", "no such card", code=1)


@pytest.mark.usefixtures("generated")
def test_changes_against_the_previous_published_day():
    data = json.loads(gpuledger("changes", "-f", "json"))
    assert (data["date"], data["previous"]) == ("2026-11-04", "2026-11-02")  # 3 November was not published
    assert [(r["change"], r["gpu"], r["provider"]) for r in data["appeared_and_gone"]] == [
        ("gone", "H100 SXM5 80GB", "runpod")]
    first_move = data["price_moves"][0]
    assert (first_move["gpu"], first_move["min_change"]) == ("B200 SXM", pytest.approx(-0.2))
    assert [(r["provider"], r["move"]) for r in data["listing_moves"]] == [("runpod", "vanished")]


@pytest.mark.usefixtures("generated")
def test_changes_on_an_earlier_date_and_on_the_first_day():
    second = json.loads(gpuledger("changes", "--date", "2026-11-02", "-f", "json"))
    assert {(r["change"], r["gpu"]) for r in second["appeared_and_gone"]} == {("first seen", "B200 SXM")}
    assert [(r["provider"], r["move"]) for r in second["listing_moves"]] == [("vastai", "jumped")]
    first = gpuledger("changes", "--date", "2026-11-01")
    assert "first published day" in first
    csv = pl.read_csv(gpuledger("changes", "--date", "2026-11-01", "-f", "csv").encode())
    assert set(csv["section"]) == {"appeared_and_gone", "listing_moves"}  # no price to move from
    assert set(csv["change"].drop_nulls()) == {"first seen"} and set(csv["move"].drop_nulls()) == {"appeared"}
    assert "no prices published for 2026-11-03" in gpuledger("changes", "--date", "2026-11-03", code=1)


@pytest.mark.parametrize(("command", "option", "value"), [
    ("history", "--days", "100000000000"), ("history", "--days", "0"), ("history", "--streams", "0"),
    ("changes", "--listing-threshold", "nan"), ("changes", "--listing-threshold", "-0.1"), ("changes", "--top", "0"),
])
def test_an_option_out_of_its_range_is_a_clear_error(command, option, value):
    refused = gpuledger(command, option, value, code=2)
    assert f"Invalid value for '{option}'" in refused and "Traceback" not in refused


def test_history_before_anything_is_published_says_what_to_do():
    gpuledger("init")
    assert "nothing published yet" in gpuledger("history", code=1)
    assert "nothing published yet" in gpuledger("changes", code=1)


@pytest.mark.usefixtures("generated")
def test_sql_latest_day_is_the_newest_published_day_and_reads_as_the_subquery_would():
    assert gpuledger("sql", "select latest_day() as day", "-f", "csv").splitlines() == ["day", "2026-11-04"]
    cheapest = ("select model, min(usd_per_mtok) as usd from cost_per_mtok where snapshot_date = {} and deployable "
                "group by model order by model")
    by_macro = gpuledger("sql", cheapest.format("latest_day()"), "-f", "csv")
    assert by_macro == gpuledger("sql", cheapest.format("(select max(snapshot_date) from cost_per_mtok)"), "-f", "csv")
    assert len(by_macro.splitlines()) > 2
