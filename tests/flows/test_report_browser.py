"""The report's pages in a real browser: Playwright driving Debian's chromium, headless, pages opened from disk.

Every page is checked for console errors and for requests leaving the site's folder; the model page's controls,
sorting and chart are checked against the numbers cost_per_mtok holds. Screenshots go to the test's tmp_path.
"""

import shutil
from pathlib import Path

import polars as pl
import pytest

from flows import report as flows_report
from tests.report_support import MODELS, SUSPECT_DAY
from tests.sources_support import SNAPSHOT
from transforms import display, report
from warehouse import db

pytestmark = pytest.mark.slow
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def published(report_days):
    return report_days


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield chromium
        chromium.close()


class Visit:
    """One page opened from disk, with every console error and every request that left the site's folder."""

    def __init__(self, browser, root: Path, path: Path):
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.page = browser.new_page(viewport={"width": 1300, "height": 900})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        inside = root.as_uri()
        self.page.route("**/*", self._guard(inside))
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")
        # report.js decompresses the page's data before it draws, and says when it has drawn
        self.page.wait_for_function("document.body.dataset.drawn === '1' || !document.querySelector('script[src$=\"report.js\"]')")

    def _guard(self, inside: str):
        def handle(route):
            if route.request.url.startswith(inside + "/"):
                route.continue_()
            else:
                self.outside.append(route.request.url)
                route.abort()
        return handle

    def points(self, chart: str) -> int:
        """Points the chart drew: over every trace Plotly holds for the element."""
        return self.page.evaluate(f"document.getElementById('{chart}').data.reduce((n, t) => n + t.x.length, 0)")

    def column(self, key: str) -> list[str]:
        return self.page.locator(f"#model-table tbody td[data-key='{key}']").all_inner_texts()

    def clean(self) -> None:
        assert self.errors == [] and self.outside == []


def cost_at(home: Path, model: str, precision: str, context: int, streams: int) -> pl.DataFrame:
    with db.connect(home / "gpuledger.duckdb", read_only=True) as con:
        return con.sql(
            "select gpu, provider, replica_pricing, tp, usd_per_mtok, replica_usd_per_hr from cost_per_mtok "
            "where snapshot_date = ? and model = ? and precision = ? and context_tokens = ? and streams = ? "
            "and method = ? and price_kind = 'on_demand'",
            params=[SNAPSHOT, model, precision, context, streams, flows_report.METHOD]).pl()


def test_the_market_page_draws_every_days_history_offline(browser, published, tmp_path):
    visit = Visit(browser, published.root, published.sites[SNAPSHOT].index)
    visit.clean()
    with db.connect(published.home / "gpuledger.duckdb", read_only=True) as con:
        history = report.price_history(con.sql("select * from price_index").pl())
    assert visit.points("history-chart") == 2 * history.height  # the minimum and the median of each day
    shown = visit.page.evaluate("document.getElementById('history-chart').data.filter(t => t.visible === true)"
                                ".map(t => t.legendgroup)")
    assert shown and all(report.FEATURED.search(g) for g in shown)
    assert visit.page.locator("#suspect-banner").count() == 0
    visit.page.screenshot(path=tmp_path / "market.png", full_page=True)


def test_the_market_table_filters_live_listings_from_catalog_list_prices(browser, published):
    visit = Visit(browser, published.root, published.sites[SNAPSHOT].index)
    rows = "#market-table tbody tr"
    origins = visit.page.eval_on_selector_all(rows, "rs => rs.map(r => r.dataset.origin)")
    assert any(o.startswith("live listing") for o in origins) and any(o.startswith("catalog list price") for o in origins)
    visit.page.select_option("#origin-filter", "catalog list price")
    shown = visit.page.eval_on_selector_all(rows, "rs => rs.filter(r => !r.hidden).map(r => r.dataset.origin)")
    assert shown and all(o.startswith("catalog list price") for o in shown)
    visit.page.select_option("#origin-filter", "")
    assert visit.page.eval_on_selector_all(rows, "rs => rs.filter(r => !r.hidden).length") == len(origins)


def test_a_suspect_day_shows_its_banner(browser, published, tmp_path):
    visit = Visit(browser, published.root, published.sites[SUSPECT_DAY].index)
    visit.clean()
    banner = visit.page.locator("#suspect-banner")
    assert banner.is_visible() and f"verda: no successful fetch on {SUSPECT_DAY}" in banner.inner_text()
    visit.page.screenshot(path=tmp_path / "suspect.png")


def test_the_root_index_links_the_days(browser, published, tmp_path):
    visit = Visit(browser, published.root, published.root / "index.html")
    visit.clean()
    assert visit.page.locator("#days a").all_inner_texts() == [str(SNAPSHOT), str(SUSPECT_DAY)]
    visit.page.screenshot(path=tmp_path / "index.png")


@pytest.mark.parametrize("model", MODELS)
def test_switching_precision_and_streams_follows_cost_per_mtok(browser, published, tmp_path, model):
    visit = Visit(browser, published.root, published.sites[SNAPSHOT].index.parent / f"{model}.html")
    seen = set()
    for precision, streams in (("int4", "32"), ("fp8", "1"), ("bf16", "32"), ("int4", "1")):
        visit.page.select_option("#precision", precision)
        visit.page.select_option("#streams", streams)
        visit.page.select_option("#context", "32768")
        assert visit.page.evaluate("document.body.dataset.setting") == f"{precision}/32768/{streams}"
        held = cost_at(published.home, model, precision, 32768, int(streams))
        rows = visit.page.locator("#model-table tbody tr.priced")
        shown = pl.DataFrame({
            "gpu": [r.get_attribute("data-gpu") for r in rows.all()],
            "provider": [r.get_attribute("data-provider") for r in rows.all()],
            "replica_pricing": [r.get_attribute("data-pricing") for r in rows.all()],
            "tp": [int(t) for t in rows.locator("td[data-key='tp']").all_inner_texts()],
            "usd_per_mtok": rows.locator("td[data-key='usd_per_mtok']").all_inner_texts(),
            "replica_usd_per_hr": rows.locator("td[data-key='replica_usd_per_hr']").all_inner_texts(),
        })
        assert shown.height, (precision, streams)
        joined = shown.join(held, on=["gpu", "provider", "replica_pricing"], how="left", suffix="_held")
        assert joined["usd_per_mtok_held"].null_count() == 0 and (joined["tp"] == joined["tp_held"]).all()
        assert joined["usd_per_mtok"].to_list() == [display.usd_label(v) for v in joined["usd_per_mtok_held"]]
        assert joined["replica_usd_per_hr"].to_list() == [display.usd_label(v) for v in joined["replica_usd_per_hr_held"]]
        assert visit.points("scatter") == shown.height  # one point per priced row
        cheapest = visit.page.locator("[data-card='cheapest per M tokens'] .usd-m").inner_text()
        assert cheapest == display.usd_label(min(joined["usd_per_mtok_held"]))
        cards = visit.page.locator("#vendor-table, #calc-cards").all_inner_texts()
        assert not any("null" in text or "undefined" in text for text in cards), cards  # what is known, or a dash
        seen.add(tuple(shown["usd_per_mtok"]))
    assert len(seen) == 4  # every setting drew its own numbers
    visit.page.locator("#scatter").scroll_into_view_if_needed()
    box = visit.page.locator("#scatter .scatterlayer .point").first.bounding_box()
    visit.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # Plotly's drag layer is on top
    hover = visit.page.locator("#scatter .hoverlayer").text_content()
    assert " x " in hover and "/M tokens" in hover and "listings" in hover
    visit.clean()
    visit.page.screenshot(path=tmp_path / f"{model}.png", full_page=True)


def test_the_table_sorts_and_the_priced_only_toggle_hides_unpriced_parts(browser, published):
    visit = Visit(browser, published.root, published.sites[SNAPSHOT].index.parent / f"{MODELS[0]}.html")
    header = visit.page.locator("#model-table th[data-key='agg_tok_s']")
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    table = visit.page.evaluate("window.gpuledgerPage")
    raw = pl.DataFrame(table["views"][table["default"]]["table"])
    labels = raw.sort("agg_tok_s", nulls_last=True, maintain_order=True)["agg_tok_s_label"].to_list()
    assert visit.column("agg_tok_s") == labels
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    assert visit.column("agg_tok_s") == raw.sort("agg_tok_s", descending=True, nulls_last=True, maintain_order=True)["agg_tok_s_label"].to_list()
    total = visit.page.locator("#model-table tbody tr").count()
    visit.page.check("#priced-only")
    priced = raw.filter(pl.col("usd_per_mtok").is_not_null()).height
    assert visit.page.locator("#model-table tbody tr").count() == priced < total
    visit.clean()


def test_the_frontier_chart_draws_a_line_per_gpu_and_the_api_with_hover_text(browser, published, tmp_path):
    visit = Visit(browser, published.root, published.sites[SNAPSHOT].index.parent / "llama-3.3-70b.html")
    visit.page.wait_for_function("document.getElementById('frontier').data !== undefined")
    visit.clean()
    traces = visit.page.evaluate("document.getElementById('frontier').data.map(t => "
                                 "({name: t.name, x: t.x, y: t.y, hover: t.hovertemplate}))")
    api = [t for t in traces if t["name"].startswith("API")]
    parts = [t for t in traces if not t["name"].startswith("API")]
    assert len(api) == 1 and len(set(api[0]["y"])) == 1  # the API is one price whatever the speed
    assert parts and all("streams" in t["hover"] and "first token" in t["hover"] for t in parts)
    for t in parts:  # along each GPU's line, a faster speed per user never costs less
        assert t["x"] == sorted(t["x"]) and t["y"] == sorted(t["y"])
    visit.page.evaluate("Plotly.Fx.hover('frontier', [{curveNumber: 0, pointNumber: 0}])")
    label = visit.page.locator("#frontier .hovertext").first.text_content()
    assert "streams" in label and "first token" in label and parts[0]["name"] in label
    with db.connect(published.home / "gpuledger.duckdb", read_only=True) as con:
        tiers = con.execute("select speed_tier, min(usd_per_mtok) from cost_at_speed where snapshot_date = ? and "
                            "model = 'llama-3.3-70b' and price_kind = 'on_demand' group by 1", [SNAPSHOT]).fetchall()
    shown = visit.page.locator("#tier-table tbody tr")
    assert shown.count() == len(tiers) > 0
    cheapest = {tier: display.usd_label(usd) for tier, usd in tiers}
    for row in shown.all():
        assert row.locator("td").last.inner_text() == cheapest[row.get_attribute("data-tier")]
    visit.page.locator("#frontier").screenshot(path=tmp_path / "frontier.png")


def test_the_models_index_finds_a_model_among_500(browser, published, tmp_path):
    """500 synthetic catalogue rows (ids model-000 to model-499, ten vendors) in the day's models index."""
    vendors = ["Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel", "India", "Juliet"]
    site = published.sites[SNAPSHOT]
    with db.connect(published.home / "gpuledger.duckdb", read_only=True) as con:
        common = flows_report.page_context(con, site.root, SNAPSHOT, 500)
    models = pl.DataFrame({"model_id": [f"model-{i:03d}" for i in range(500)],
                           "name": [f"Synthetic {i:03d} {'MoE' if i % 3 else 'dense'}" for i in range(500)],
                           "vendor": [vendors[i % 10] for i in range(500)], "arch": ["decoder"] * 500,
                           "total_params_b": [float(i) for i in range(500)]})
    page = site.index.parent / "models-500.html"
    page.write_text(flows_report.models_index(common, models))
    visit = Visit(browser, published.root, page)
    items = visit.page.locator("#families li")
    assert items.count() == 500 and visit.page.locator("#families section").count() == 10
    visit.page.fill("#model-search", "synthetic 137")
    shown = visit.page.locator("#families li:visible a")
    assert shown.all_inner_texts() == ["Synthetic 137 MoE"]
    assert visit.page.locator("#families section:visible h2").all_inner_texts() == ["Hotel (50)"]
    assert visit.page.locator("#model-count").inner_text() == "1 shown"
    visit.page.fill("#model-search", "golf DENSE")  # every word, anywhere in the row, any case
    assert visit.page.locator("#families li:visible").count() == len([i for i in range(500) if i % 10 == 6 and not i % 3])
    visit.page.fill("#model-search", "no such model")
    assert visit.page.locator("#families li:visible").count() == 0 and visit.page.locator("#no-model").is_visible()
    visit.page.fill("#model-search", "")
    assert visit.page.locator("#families li:visible").count() == 500
    visit.clean()
    visit.page.screenshot(path=tmp_path / "models.png")
