"""`gpuledger report` and the data its pages embed, on a warehouse of three replayed days (no browser here)."""

import json
import re
import shutil

import polars as pl
import pytest
from typer.testing import CliRunner

from flows import report
from flows.cli.app import app
from tests.report_support import DAYS, MODELS, SUSPECT_DAY, page_data
from tests.sources_support import SNAPSHOT
from warehouse import db

runner = CliRunner()


@pytest.fixture
def published(report_days):
    return report_days


@pytest.fixture
def home(published, gpuledger_home, monkeypatch):
    """A private copy of the published warehouse."""
    shutil.copytree(published.home, gpuledger_home)
    monkeypatch.setenv("GPULEDGER_NOW", "2026-11-27T22:00:00")
    return gpuledger_home


def test_the_report_command_writes_the_days_pages_and_prints_where(home, tmp_path):
    result = runner.invoke(app, ["report", "--model", "LLAMA-3.3-70b", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    day = tmp_path / "out" / f"date={SNAPSHOT}"
    assert result.output.strip().splitlines()[-1] == str(day / "index.html")
    assert sorted(p.name for p in day.glob("*.html")) == ["index.html", "llama-3.3-70b.html", "models.html"]
    assert len(list(day.glob("replicas-*.js"))) == 1 and len(list(day.iterdir())) == 4
    assert (tmp_path / "out" / "index.html").exists()


def test_bad_options_name_what_is_wrong(home):
    assert "unknown model 'nope'" in runner.invoke(app, ["report", "--model", "nope"]).output
    assert "--date '27.11.2026' is not YYYY-MM-DD" in runner.invoke(app, ["report", "--date", "27.11.2026"]).output
    assert "no published run on 2020-01-01" in runner.invoke(app, ["report", "--date", "2020-01-01"]).output


def test_an_out_that_is_no_folder_or_cannot_be_made_is_a_clear_error(home, tmp_path, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    (here / "a-file").write_text("keep")
    cases = {"": "--out is empty", str(here / "a-file"): "not a folder", "/dev/null": "not a folder",
             str(here / "a-file" / "site"): "cannot write the report in"}
    for out, message in cases.items():
        result = runner.invoke(app, ["report", "--model", MODELS[0], "--out", out])
        assert result.exit_code == 1 and message in result.output and result.exception.__class__ is SystemExit, out
    assert [p.name for p in here.iterdir()] == ["a-file"] and (here / "a-file").read_text() == "keep"


def test_the_root_lists_the_published_days_latest_first_with_their_quality(published):
    text = (published.root / "index.html").read_text()
    links = re.findall(r'href="date=([\d-]+)/index.html"', text)
    assert links == [str(SNAPSHOT), str(SUSPECT_DAY)]
    assert "quality suspect" in text and "quality ok" in text


def test_every_page_loads_only_files_of_the_site_and_plotly_once(published):
    assets = sorted(p.name for p in (published.root / "assets").iterdir())
    assert assets == sorted(["report.css", "report.js", f"plotly-{_plotly_version()}.min.js"])
    for site in published.sites.values():
        for page in site.pages:
            text = page.read_text()
            refs = re.findall(r'(?:src|href)="([^"]+)"', text)
            assert refs and not [r for r in refs if re.match(r"[a-z]+:|//", r)], page
            shared = 2 if page.name not in ("index.html", "models.html") else 0  # a model page's shared data
            assert text.count("<script src=") == 2 + shared and text.count('id="page-data"') <= 1


def test_a_models_pages_share_what_the_night_does_not_change_in_one_file(published):
    """Both nights' pages of a model load the same shared file (the estimator and catalogue did not change), which
    holds the tables' estimate columns; each page embeds only what the night's prices add, and names the replicas
    it prices with in the night's one file of them."""
    files = sorted(p.name for p in (published.root / report.SHARED).iterdir())
    assert len(files) == len(MODELS) and all(any(f.startswith(m + "-") for f in files) for m in MODELS)
    for model in MODELS:
        loads = {re.search(r'<script src="\.\./(shared/[^"]+)">', (site.index.parent / f"{model}.html").read_text())[1]
                 for site in published.sites.values()}
        assert len(loads) == 1
        embedded = report.unpacked(re.search(r'id="page-data">(.*?)</script>',
                                             (published.sites[SNAPSHOT].index.parent / f"{model}.html").read_text(), re.S)[1])
        for view in embedded["views"].values():
            assert not {"agg_tok_s", "memory_used_pct", "power_kw", "offer_ids", "provider"} & set(view["table"]["rows"])
            assert set(view["table"]["rows"]) >= {"at", "replica", "usd_per_mtok", "usd_per_mtok_label"}
    for site in published.sites.values():
        folder = site.index.parent
        (night,) = [p.name for p in folder.glob("replicas-*.js")]
        assert all(f'<script src="{night}">' in (folder / f"{m}.html").read_text() for m in MODELS)


def _plotly_version() -> str:
    from plotly.offline import get_plotlyjs_version

    return get_plotlyjs_version()


def test_the_models_index_groups_the_models_by_vendor_and_no_header_lists_them(published):
    folder = published.sites[SNAPSHOT].index.parent
    index = (folder / "models.html").read_text()
    with db.connect(published.home / "gpuledger.duckdb", read_only=True) as con:
        vendors = dict(con.execute("select model_id, vendor from models").fetchall())
    sections = re.findall(r'<section class="family" data-vendor="([^"]+)">(.*?)</section>', index, re.S)
    listed = {m: vendor for vendor, body in sections for m in re.findall(r'<a href="([^"/]+)\.html">', body)}
    assert listed == {m: vendors[m] for m in MODELS}
    assert [v for v, _ in sections] == sorted({vendors[m] for m in MODELS}, key=str.lower)
    for page in published.sites[SNAPSHOT].pages:  # every page links the index, and at most its own model
        header = re.search(r"<nav>(.*?)</nav>", page.read_text(), re.S)[1]
        assert 'href="models.html"' in header and len(re.findall(r'href="[^"]+\.html"', header)) <= 3


def test_a_page_embeds_its_data_compressed(published):
    page = published.sites[SNAPSHOT].index.parent / f"{MODELS[0]}.html"
    embedded = len(re.search(r'id="page-data">(.*?)</script>', page.read_text(), re.S)[1])
    assert embedded * 3 < len(json.dumps(page_data(page), separators=(",", ":")))


def test_a_suspect_day_carries_its_banner_and_reasons(published):
    suspect = published.sites[SUSPECT_DAY].index.read_text()
    assert 'id="suspect-banner"' in suspect and f"verda: no successful fetch on {SUSPECT_DAY}" in suspect
    assert 'id="suspect-banner"' not in published.sites[SNAPSHOT].index.read_text()


def test_the_market_page_embeds_every_days_history_and_listing_counts(published):
    data = page_data(published.sites[SNAPSHOT].index)
    assert sorted(set(data["history"]["snapshot_date"])) == [str(d) for d in DAYS]
    assert data["featured"] and all(re.search(r"H100|H200|B200|RTX 4090", g) for g in data["featured"])
    counts = pl.DataFrame(data["counts"])
    assert set(counts.filter(pl.col("snapshot_date") == str(SUSPECT_DAY))["provider"]) == {"vastai", "runpod"}


def cost_rows(home, day) -> pl.DataFrame:
    with db.connect(home / "gpuledger.duckdb", read_only=True) as con:
        return con.sql("select * from cost_per_mtok where snapshot_date = ? and method = ? "
                       "and price_kind = 'on_demand'", params=[day, report.METHOD]).pl()


def test_each_settings_priced_rows_are_what_cost_per_mtok_holds(published):
    costs = cost_rows(published.home, SNAPSHOT)
    for model in MODELS:
        data = page_data(published.sites[SNAPSHOT].index.parent / f"{model}.html")
        assert {s["key"] for s in data["settings"]} == {
            f"{p}/{c}/{s}" for p, c, s in costs.select("precision", "context_tokens", "streams").unique().rows()}
        for setting in data["settings"]:
            table = pl.DataFrame(data["views"][setting["key"]]["table"]).filter(pl.col("usd_per_mtok").is_not_null())
            assert table.height
            held = costs.filter((pl.col("model") == model) & (pl.col("precision") == setting["precision"])
                                & (pl.col("context_tokens") == setting["context"]) & (pl.col("streams") == setting["streams"]))
            joined = table.join(held, on=["gpu", "provider", "replica_pricing"], how="left", suffix="_held")
            assert joined["usd_per_mtok_held"].null_count() == 0
            assert (joined["tp"] == joined["tp_held"]).all()
            assert ((joined["usd_per_mtok"] / joined["usd_per_mtok_held"] - 1).abs() < 1e-4).all()


def test_the_nightly_run_writes_the_report_after_the_exports(home, monkeypatch, tmp_path):
    from flows import pipeline
    from tests.pipeline_support import serve_fixtures

    monkeypatch.setenv("GPULEDGER_EXPORTS", str(tmp_path / "exports"))
    monkeypatch.setenv("GPULEDGER_REPORT_MODELS", "deepseek-v4-flash, llama-3.3-70b no-such-model")
    with serve_fixtures(monkeypatch):
        summary = pipeline.run(None, SNAPSHOT, export_format="csv", trigger="test")
    day = tmp_path / "exports" / "report" / f"date={SNAPSHOT}"
    assert summary.publication == "published" and (day / "index.html").exists()
    assert (tmp_path / "exports" / "csv" / "cost_per_mtok" / f"date={SNAPSHOT}" / "_manifest.json").exists()
    # the pages of the models GPULEDGER_REPORT_MODELS names (an unknown one is skipped), the market page and the index
    assert sorted(p.name for p in day.glob("*.html")) == ["deepseek-v4-flash.html", "index.html", "llama-3.3-70b.html",
                                                    "models.html"]
    assert report.published_days(tmp_path / "exports" / "report") == [str(SNAPSHOT)]


def test_a_model_page_shows_the_api_price_beside_self_hosting(published):
    page = (published.sites[SNAPSHOT].index.parent / "deepseek-v4-flash.html").read_text()
    assert re.search(r"<strong>API:</strong> \$[\d.]+/M out, \$[\d.]+/M in <span class=\"note\">\(openrouter "
                     r"deepseek/deepseek-v4-flash, fetched \d{4}-\d\d-\d\d\)", page)


def test_a_setting_with_no_deployable_replica_is_answered_on_the_model_page(home, tmp_path):
    with db.connect(read_only=True) as con:
        site = report.write_site(con, tmp_path / "site", SNAPSHOT, ["qwen3.8-2.4t-a95b"])
    data = page_data(site.index.parent / "qwen3.8-2.4t-a95b.html")
    first = data["views"]["bf16/32768/32"]["faq"][0]
    assert first["q"].startswith("Can Qwen3.8") and "served from rented GPUs" in first["q"]
    assert "no deployable replica at this setting" in first["a"] and "needs 32 GPUs on one host" in first["a"]
    assert not [v for v in data["views"]["bf16/32768/32"]["table"]["usd_per_mtok"] if v is not None]
    assert "no deployable replica" not in json.dumps(data["views"]["int4/32768/32"]["faq"])


def test_the_frontier_and_the_speed_tiers_name_the_engine_they_model(home, published):
    """The nightly publishes the default engine's answers only; the page says which engine that is."""
    path = published.sites[SNAPSHOT].index.parent / "llama-3.3-70b.html"
    with db.connect(read_only=True) as con:
        tiered = {e for (e,) in con.execute("select distinct engine from cost_at_speed where snapshot_date = ? and "
                                            "model = 'llama-3.3-70b'", [SNAPSHOT]).fetchall()}
    assert tiered == set(page_data(path)["frontier"]["points"]["engine"]) == {"trtllm"}
    page = path.read_text()
    note = re.search(r'<p class="note" id="frontier-note">(.*?)</p>', page, re.S)[1]
    heading = re.search(r'<h3 id="tier-heading">(.*?)</h3>', page, re.S)[1]
    assert "served by TensorRT-LLM" in note and "served by TensorRT-LLM" in heading


def test_a_page_drawn_again_alone_leaves_the_others_pages_reading_their_replicas(home, tmp_path):
    with db.connect(read_only=True) as con:
        site = report.write_site(con, tmp_path / "site", SNAPSHOT, MODELS)
        before = page_data(site.index.parent / f"{MODELS[1]}.html")
        report.write_site(con, tmp_path / "site", SNAPSHOT, MODELS[:1])  # the night's replicas of one model only
    folder = site.index.parent
    assert len(list(folder.glob("replicas-*.js"))) == 2  # each file still loaded by a page
    assert page_data(folder / f"{MODELS[1]}.html") == before
    assert page_data(folder / f"{MODELS[0]}.html")["views"]
    with db.connect(read_only=True) as con:  # every page drawn again: the file no page loads is removed
        report.write_site(con, tmp_path / "site", SNAPSHOT, MODELS)
    assert len(list(folder.glob("replicas-*.js"))) == 1
