"""Hostile provider text and absurd prices, end to end: a nightly run replays recordings carrying a spreadsheet
formula as an offer id and a region, markup as another offer id, terminal escapes and NUL in a GPU name, and
absurd OpenRouter prices; then the exports, the report and the commands are read as a user would.

One nightly (with CSV exports and the report) is shared by the module: each test reads what it left, or a copy.
"""

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from flows import pipeline
from tests.cli_support import gpuledger
from tests.pipeline_support import serve_fixtures
from tests.sources_support import SNAPSHOT, copy_fixtures
from warehouse import db

FORMULA = '=HYPERLINK("https://evil.test/","1B300")'  # Verda's 1B300.30V, listed and priced (cost_per_mtok)
MARKUP = '<a href="https://evil.test/">GB300</a>'  # Verda's 1GB300.36V, the one GB300 on offer: on the model page
REGION = "@SUM(1+1)*cmd|' /C calc'!A0"  # Verda's location FIN-03, the region of the FORMULA listing
ESCAPES = "\x1b]0;owned\x07\x1b[2J\x00"  # set the terminal's title, clear the screen, NUL
GPU_NAME = f"{ESCAPES}RTX 4090\x1b[0m"  # the first vast.ai offer's GPU name: unknown, so named in the day's quality
# The B300 listings both carry a formula: the cost tables price a replica with either
RENAMED = {"1B300.30V": FORMULA, "8B300.240V": FORMULA.replace("1B300", "8B300"), "1GB300.36V": MARKUP}
MODEL = "deepseek-v4-flash"


def hostile_fixtures(directory: Path) -> Path:
    """The recordings with the hostile text above, and two OpenRouter prices no API asks: "1000" USD per token
    (a billion per million: above the bound) for MODEL's only listing, "1e308" (too large to convert) for another."""
    copy_fixtures(directory)

    def edit(name: str, change) -> None:
        path = directory / name
        path.write_text(json.dumps(change(json.loads(path.read_text()))))

    def types(data):
        for record in data:
            record["instance_type"] = RENAMED.get(record["instance_type"], record["instance_type"])
        return data

    def availability(data):
        for entry in data:
            entry["location_code"] = REGION if entry["location_code"] == "FIN-03" else entry["location_code"]
            entry["availabilities"] = [RENAMED.get(t, t) for t in entry["availabilities"]]
        return data

    def locations(data):
        return [loc | {"code": REGION} if loc["code"] == "FIN-03" else loc for loc in data]

    def vastai(data):
        data["offers"][0]["gpu_name"] = GPU_NAME
        return data

    def openrouter(data):
        prices = {"deepseek/deepseek-v4-flash": "1000", "openai/gpt-oss-20b": "1e308"}
        for record in data["data"]:
            if record["id"] in prices:
                record["pricing"]["completion"] = prices[record["id"]]
        return data

    for name, change in (("verda_instance_types.json", types), ("verda_instance_availability.json", availability),
                         ("verda_locations.json", locations), ("vastai_bundles.json", vastai),
                         ("openrouter_models_2026-08-19.json", openrouter)):
        edit(name, change)
    return directory


@dataclass
class Night:
    home: Path
    exports: Path
    earlier_run: str  # a fetch of the same day before the nightly: its listings are not the day's
    run: str


@pytest.fixture(scope="module")
def night(tmp_path_factory) -> Night:
    base = tmp_path_factory.mktemp("hostile")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULEDGER_HOME", str(base / "home"))
        mp.setenv("GPULEDGER_EXPORTS", str(base / "exports"))
        mp.setenv("GPULEDGER_REPORT_MODELS", MODEL)  # the page whose chart holds the listings below
        with serve_fixtures(mp, hostile_fixtures(base / "fixtures")) as server:
            mp.setenv("GPULEDGER_NOW", f"{SNAPSHOT}T21:00:00")  # an hour before the nightly
            earlier = pipeline.run(None, SNAPSHOT, export_format="", derive=False)
            mp.setenv("GPULEDGER_NOW", server.now)
            summary = pipeline.run(None, SNAPSHOT, export_format="csv", trigger="test")
    assert earlier.status == summary.status == "ok" and summary.quality == "suspect"
    return Night(base / "home", base / "exports", earlier.run_id, summary.run_id)


@pytest.fixture
def home(night, monkeypatch):
    monkeypatch.setenv("GPULEDGER_HOME", str(night.home))
    monkeypatch.setenv("GPULEDGER_EXPORTS", str(night.exports))
    return night.home



def exported_csv(night: Night, table: str) -> str:
    (path,) = (night.exports / "csv" / table / f"date={SNAPSHOT}").glob("*.csv")
    return path.read_text()


def test_absurd_api_prices_are_quarantined_naming_the_field_and_the_day_says_so(night, home):
    with db.connect(read_only=True) as con:
        quarantined = con.execute("select offer_id, field, reason from quarantine where provider = 'openrouter' "
                                  "and run_id = ? order by 1", [night.run]).fetchall()
        listed = con.execute("select count(*) from api_prices where api_model_id in "
                             "('deepseek/deepseek-v4-flash', 'openai/gpt-oss-20b') and tier = 'base'").fetchone()
        compared = con.execute("select api_usd_per_mtok_output from own_rent_api where model = ?", [MODEL]).fetchall()
        reasons = con.execute("select quality_reasons from runs where status = 'ok' and quality is not null").fetchone()
    assert quarantined == [
        ("deepseek/deepseek-v4-flash", "usd_per_mtok_output",
         "absurd price: 1000000000.0 USD per million tokens, above 1000"),
        ("openai/gpt-oss-20b", "pricing.completion", "price '1e308' USD per token is out of range")]
    assert listed == (0,) and compared and {value for (value,) in compared} == {None}
    assert ("openrouter: 1 API price(s) above 1000 USD per million tokens quarantined: deepseek/deepseek-v4-flash "
            "(usd_per_mtok_output)") in reasons[0]
    shown = gpuledger("table", "--model", MODEL)
    assert "1,000,000,000" not in shown and "API:" not in shown
    page = (home.parent / "exports" / "report" / f"date={SNAPSHOT}" / f"{MODEL}.html").read_text()
    assert "1,000,000,000" not in page and "deepseek/deepseek-v4-flash, fetched" not in page


def test_a_rebuild_of_the_day_reads_the_archived_absurd_prices_the_same_way(night, gpuledger_home, monkeypatch):
    shutil.copytree(night.home, gpuledger_home)
    output = gpuledger("rebuild", "--from", str(SNAPSHOT), "--format", "none", "--no-prefect")
    assert str(SNAPSHOT) in output and "suspect" in output
    with db.connect(read_only=True) as con:
        loaded = con.execute("select source, status from fetches where source = 'openrouter'").fetchall()
    assert loaded == [("openrouter", "ok")] * 2


def test_csv_exports_neutralise_formulas_and_keep_numbers_while_parquet_keeps_the_text(night, home, tmp_path,
                                                                                       monkeypatch):
    offers = pl.read_csv(exported_csv(night, "offers").encode(), infer_schema_length=0)
    verda = offers.filter(pl.col("provider") == "verda")
    assert "'" + FORMULA in verda["offer_id"].to_list() and FORMULA not in verda["offer_id"].to_list()
    assert "'" + REGION in verda["region"].to_list()
    assert MARKUP in verda["offer_id"].to_list()  # markup is no formula: CSV leaves it as it is
    assert not any(re.match(r"[=+\-@\t\r]", cell) for column in offers.columns for cell in offers[column].drop_nulls()
                   if not re.fullmatch(r"-?[\d.]+(e-?\d+)?", cell))
    offer_ids = pl.read_csv(exported_csv(night, "cost_per_mtok").encode(), infer_schema_length=0)["offer_ids"]
    assert any(ids.startswith("'" + FORMULA) for ids in offer_ids) and not any(ids.startswith("=") for ids in offer_ids)
    monkeypatch.setenv("GPULEDGER_EXPORTS", str(tmp_path / "parquet"))
    gpuledger("export", "--table", "offers", "--format", "parquet")
    parquet = pl.read_delta(str(tmp_path / "parquet" / "offers"))  # the lake's Delta table
    assert {FORMULA, MARKUP} <= set(parquet["offer_id"]) and REGION in set(parquet["region"])
    numbers = parquet.sort("provider", "offer_id", "price_kind").select("usd_per_hr", "usd_per_gpu_hr")
    from_csv = offers.sort("provider", "offer_id", "price_kind").select(
        pl.col("usd_per_hr", "usd_per_gpu_hr").cast(pl.Float64))
    assert parquet.height == offers.height and numbers.sort(pl.all()).equals(from_csv.sort(pl.all()))


def test_the_commands_write_spreadsheet_safe_csv(home):
    table = pl.read_csv(gpuledger("table", "--model", MODEL, "--gpu", "B300 SXM", "-f", "csv").encode(),
                        infer_schema_length=0)
    assert table["offer_ids"].str.starts_with("'=HYPERLINK(").all()
    rows = gpuledger("sql", "select offer_id, region, usd_per_hr from offers where provider = 'verda' "
                            "and offer_id like '=%' and price_kind = 'on_demand' order by all", "-f", "csv").splitlines()
    assert rows[1].startswith(f"\"'{FORMULA[:10]}") and f"'{REGION}" in rows[1] and rows[1].endswith(",6.19")


def test_terminal_escapes_and_nul_from_a_provider_never_reach_the_terminal(home):
    outputs = [gpuledger("status"), gpuledger("status", "-f", "markdown"), gpuledger("status", "-f", "csv"),
               gpuledger("sql", "select gpu_raw from unmapped_gpus"),
               gpuledger("sql", "select gpu_raw from unmapped_gpus", "-f", "csv"),
               gpuledger("sql", "select gpu_raw from unmapped_gpus", "-f", "json")]
    for output in outputs:
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", output), output
        assert "\\x1b]0;owned\\x07\\x1b[2J\\x00RTX 4090" in output or "\\u001b]0;owned\\u0007" in output, output
    error = gpuledger("sql", "select cast(gpu_raw as integer) from unmapped_gpus", code=1)
    assert "\\x1b" in error and "\x1b" not in error  # a provider's text quoted in an error is escaped too


def test_the_report_the_nightly_writes_shows_the_days_quality(night):
    page = (night.exports / "report" / f"date={SNAPSHOT}" / "index.html").read_text()
    assert 'id="suspect-banner"' in page and "running" not in page
    assert f'<code>{night.run}</code> (ok, quality suspect)' in page
    assert "unknown GPU name" in page  # the reasons are on the page


def test_the_offers_export_holds_only_the_listings_the_day_was_derived_from(night, home):
    offers = pl.read_csv(exported_csv(night, "offers").encode(), infer_schema_length=0)
    assert set(offers["run_id"]) == {night.run}
    with db.connect(read_only=True) as con:
        stored = dict(con.execute("select run_id, count(*) from offers where snapshot_date = ? group by 1",
                                  [SNAPSHOT]).fetchall())
    assert stored.keys() == {night.earlier_run, night.run} and offers.height == stored[night.run]


@pytest.mark.slow
def test_chart_hover_text_shows_provider_markup_as_text(night):
    from playwright.sync_api import sync_playwright

    from tests.flows.test_report_browser import CHROMIUM
    from tests.report_support import page_data

    page_path = night.exports / "report" / f"date={SNAPSHOT}" / f"{MODEL}.html"
    data = page_data(page_path)  # as the page's script reads it: the night's replicas joined in
    table = data["views"][data["default"]]["table"]
    assert MARKUP in table["offer_ids"]  # the page's scatter holds the listing
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                       else route.abort())
            page.goto(page_path.as_uri())
            page.wait_for_function("document.getElementById('scatter').data !== undefined")
            hovered = page.evaluate("""() => {
                const chart = document.getElementById('scatter');
                const curve = chart.data.findIndex((t) => t.customdata.some((c) => c[4].includes('GB300')));
                const point = chart.data[curve].customdata.findIndex((c) => c[4].includes('GB300'));
                Plotly.Fx.hover(chart, [{ curveNumber: curve, pointNumber: point }]);
                const label = chart.querySelector('.hoverlayer');
                return { links: label.querySelectorAll('a').length, text: label.textContent };
            }""")
        finally:
            browser.close()
    assert hovered["links"] == 0 and MARKUP in hovered["text"]
