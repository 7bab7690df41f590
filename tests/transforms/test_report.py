from datetime import date, datetime, timedelta

import polars as pl
import pytest

from tests.transforms.offers_factory import offers
from tests.transforms.test_tables import GPUS, estimates
from transforms import report, tables
from transforms.costs import replica_prices

DAY = date(2026, 11, 27)


def index_rows(*rows: dict) -> pl.DataFrame:
    """price_index rows (the agreed schema's columns the report reads)."""
    base = dict(snapshot_date=DAY, provider="all", price_kind="on_demand", listings=1, min_change_1d=None,
                median_change_1d=None)
    return pl.DataFrame([base | r for r in rows], schema_overrides={"min_change_1d": pl.Float64,
                                                                   "median_change_1d": pl.Float64})


def test_featured_parts_come_first_and_lookalikes_do_not_count():
    names = ["A100 SXM4 80GB", "GH200 144GB", "GeForce RTX 4090D 24GB", "H200 SXM", "GeForce RTX 4090 24GB",
             "B200 SXM", "H100 SXM5 80GB"]
    assert report.featured_first(names) == ["B200 SXM", "GeForce RTX 4090 24GB", "H100 SXM5 80GB", "H200 SXM",
                                            "A100 SXM4 80GB", "GH200 144GB", "GeForce RTX 4090D 24GB"]


def test_todays_market_is_per_provider_and_kind_with_the_all_providers_rows_left_to_the_history():
    index = index_rows(
        dict(gpu="A100 SXM4 80GB", provider="vastai", min_usd_per_gpu_hr=0.9, median_usd_per_gpu_hr=1.0),
        dict(gpu="H100 SXM5 80GB", provider="runpod", price_kind="interruptible", min_usd_per_gpu_hr=1.2,
             median_usd_per_gpu_hr=1.3),
        dict(gpu="H100 SXM5 80GB", provider="vastai", min_usd_per_gpu_hr=1.9, median_usd_per_gpu_hr=2.1,
             min_change_1d=0.05),
        dict(gpu="H100 SXM5 80GB", provider="all", min_usd_per_gpu_hr=1.9, median_usd_per_gpu_hr=2.1),
        dict(gpu="H100 SXM5 80GB", provider="vastai", snapshot_date=DAY - timedelta(days=1), min_usd_per_gpu_hr=1.8,
             median_usd_per_gpu_hr=2.0),
    )
    today = report.market_today(index, DAY)
    assert today.select("gpu", "price_kind", "provider").rows() == [
        ("H100 SXM5 80GB", "on_demand", "vastai"), ("H100 SXM5 80GB", "interruptible", "runpod"),
        ("A100 SXM4 80GB", "on_demand", "vastai")]
    assert today["min_change_1d"].to_list() == [0.05, None, None]


def test_each_provider_says_whether_its_prices_are_live_listings_or_catalog_list_prices():
    index = index_rows(dict(gpu="H100 SXM5 80GB", provider="vastai", min_usd_per_gpu_hr=1.9, median_usd_per_gpu_hr=2.1),
                       dict(gpu="H100 SXM5 80GB", provider="lambda", min_usd_per_gpu_hr=2.9, median_usd_per_gpu_hr=3.0))
    origins = pl.DataFrame({"provider": ["vastai", "lambda"], "price_basis": [["listing"], ["catalog"]],
                            "sources": [["vastai"], ["skypilot"]], "resellers": [None, ["primeintellect", "shadeform"]]})
    today = report.market_today(index, DAY, origins)
    assert dict(today.select("provider", "origin").rows()) == {
        "vastai": "live listing (vastai)",
        "lambda": "catalog list price (skypilot, resold by primeintellect, shadeform)"}


def test_the_history_is_every_day_of_every_part_over_all_providers():
    index = index_rows(*(dict(gpu=g, snapshot_date=DAY - timedelta(days=d), min_usd_per_gpu_hr=1.0 + d,
                              median_usd_per_gpu_hr=2.0 + d) for g in ("A40 48GB", "H200 SXM") for d in (0, 2)),
                       dict(gpu="H200 SXM", provider="vastai", min_usd_per_gpu_hr=0.1, median_usd_per_gpu_hr=0.1),
                       dict(gpu="H200 SXM", price_kind="interruptible", min_usd_per_gpu_hr=0.1, median_usd_per_gpu_hr=0.1))
    history = report.price_history(index)
    assert history.select("gpu", "snapshot_date", "min_usd_per_gpu_hr").rows() == [
        ("H200 SXM", DAY - timedelta(days=2), 3.0), ("H200 SXM", DAY, 1.0),
        ("A40 48GB", DAY - timedelta(days=2), 3.0), ("A40 48GB", DAY, 1.0)]


def test_listing_counts_are_per_provider_per_day_oldest_first():
    history = pl.DataFrame({"snapshot_date": [DAY, DAY - timedelta(days=1), DAY, DAY], "source": ["verda", "vastai", "vastai", "fx"],
                            "listings": [5, 80, 89, 0]})
    assert report.listing_counts(history, ("vastai", "verda")).rows() == [(DAY - timedelta(days=1), "vastai", 80), (DAY, "vastai", 89),
                                                     (DAY, "verda", 5)]


@pytest.fixture
def calculator():
    est = estimates(dict(gpu="H200 SXM", tp=2, agg_tok_s=822.123456, fp4_estimated=True),
                    dict(gpu="B200 SXM", tp=1, agg_tok_s=1500.0))
    replicas = tables.cheapest_replicas(replica_prices(offers(dict(offer_id="h200-node", gpu_count=2,
                                                                   usd_per_gpu_hr=2.48)), tps=[1, 2]))
    table = tables.calculator_view(est, GPUS, replicas)
    return table, replicas, tables.calculator_cards(table, est, replicas)


def test_the_pages_table_is_the_calculator_view_with_labels_and_where_each_price_came_from(calculator):
    table, _, _ = calculator
    rows = report.table_rows(table)
    assert [k for k, _ in report.TABLE_COLUMNS] == rows.columns[:len(report.TABLE_COLUMNS)]
    h200 = rows.row(0, named=True)
    assert (h200["gpu"], h200["agg_tok_s_label"], h200["replica_usd_per_hr_label"], h200["offer_ids"]) == (
        "H200 SXM", "~822", "$4.96", "h200-node")
    assert h200["agg_tok_s"] == 822.12  # five significant digits: enough to sort and plot by
    assert h200["usd_per_mtok"] == pytest.approx(4.96 * 1e6 / (822.123456 * 3600), rel=1e-4)
    assert h200["replica_pricing_label"] == "one host" and h200["price_observed_at"].endswith("UTC")
    assert rows.row(1, named=True)["usd_per_mtok_label"] is None  # the page shows a dash


def test_the_cards_carry_their_replicas_listings(calculator):
    table, replicas, cards = calculator
    rows = report.card_rows(cards, replicas)
    cheapest = rows.filter(pl.col("card") == "cheapest per M tokens").row(0, named=True)
    assert (cheapest["gpu"], cheapest["offer_ids"], cheapest["usd_per_mtok_label"]) == ("H200 SXM", "h200-node", "$1.68")


def test_a_card_without_a_throughput_figure_shows_what_is_known_never_null():
    """A part the method has no figure for (no compute peak): its card names the replica and its price, no tok/s;
    at the same group size a part with a figure is the one shown."""
    est = estimates(dict(gpu="H200 SXM", tp=1, agg_tok_s=None), dict(gpu="B200 SXM", tp=1, agg_tok_s=900.0))
    replicas = tables.cheapest_replicas(replica_prices(offers(dict(offer_id="h200", gpu_count=1, usd_per_gpu_hr=2.0)),
                                                       tps=[1]))
    table = tables.calculator_view(est, GPUS, replicas)
    cards = report.card_rows(tables.calculator_cards(table, est, replicas), replicas)
    fewest = cards.filter(pl.col("card") == "NVIDIA: fewest GPUs").row(0, named=True)
    assert fewest["part_label"] == "1 x B200 SXM, 900 tok/s"
    alone = report.card_rows(tables.calculator_cards(table.filter(pl.col("gpu") == "H200 SXM"), est, replicas), replicas)
    assert alone.filter(pl.col("card") == "NVIDIA: fewest GPUs")["part_label"].to_list() == [
        "1 x H200 SXM for $2.00/hr (vastai)"]
    assert not any("null" in label or "None" in label for label in alone["part_label"])


def test_a_cards_label_rounds_the_exact_price_once(calculator):
    """$11.974649 is $11.97; rounded first to the page's five significant digits (11.975) it would show $11.98."""
    _, replicas, cards = calculator
    rows = report.card_rows(cards.with_columns(usd_per_mtok=pl.lit(11.974649)), replicas)
    assert set(rows["usd_per_mtok_label"]) == {"$11.97"} and set(rows["usd_per_mtok"]) == {11.975}


def test_the_faq_answers_from_the_settings_table_with_date_and_method(calculator):
    table, _, cards = calculator
    h100 = estimates(dict(gpu="H100 SXM5 80GB", tp=4, agg_tok_s=1300.0), dict(gpu="H100 PCIe 80GB", tp=4, agg_tok_s=900.0))
    h100_one = estimates(dict(gpu="H100 SXM5 80GB", tp=2, agg_tok_s=90.0))
    priced = table.vstack(tables.calculator_view(h100, GPUS, tables.cheapest_replicas(replica_prices(
        offers(dict(offer_id="h100-x4", gpu="H100 SXM5 80GB", gpu_count=4, usd_per_gpu_hr=1.83)), tps=[4]))).drop(
        "rank").with_row_index("rank", offset=3).select(table.columns))
    model = dict(name="Model M", total_params_b=100.0, kv_bytes_per_token=8192.0, native_precision="fp4")
    answers = {a["q"]: a["a"] for a in report.faq(model, ("int4", 32768, 32), priced, h100_one, cards,
                                                  {"bf16": 2.0, "fp8": 1.0, "int4": 0.5}, DAY, "calculator")}
    assert answers["How many H100s do you need to run Model M?"] == (
        "2 x H100 SXM5 80GB at INT4 for 4,096 tokens of context and one stream; 4 at INT4, 32,768 tokens of context "
        "and 32 streams (calculator estimate).")
    cost = answers["What does Model M cost per million tokens on an H100?"]
    assert "$1.56 per million output tokens on 4 x H100 SXM5 80GB" in cost  # 7.32 $/hr over 1,300 tok/s
    assert "listings h100-x4, 2026-11-27" in cost and "cheapest part per token is 4 x H100 SXM5 80GB" in cost
    assert answers["How much GPU memory does Model M need?"].startswith("The weights take 200 GB at FP16, 100 GB at FP8")


def test_a_setting_without_a_deployable_replica_is_answered_first_with_what_is_missing(calculator):
    table, _, cards = calculator
    model = dict(name="Model M", total_params_b=100.0, kv_bytes_per_token=None, native_precision="fp4")
    missing = "no deployable replica at this setting: 16 x GeForce RTX 3090 24GB: needs 16 GPUs on one host"
    one = estimates(dict(gpu="B200 SXM", tp=1, agg_tok_s=90.0))
    first = report.faq(model, ("bf16", 4096, 32), table, one, cards, {"bf16": 2.0}, DAY, "measured", missing)[0]
    assert first == {"q": "Can Model M be served from rented GPUs at FP16, 4,096 tokens of context and 32 streams?",
                     "a": f"On the live listings of {DAY}, {missing}."}
    assert "served from rented GPUs" not in report.faq(model, ("bf16", 4096, 32), table, one, cards, {"bf16": 2.0},
                                                       DAY, "measured")[0]["q"]


def test_owning_shows_only_configurations_whose_replica_fits_one_server():
    own = pl.DataFrame([dict(gpu=g, price_kind="market", gpu_count=n, tp=tp, replicas=n // tp, hardware_usd=1.0,
                             quoted_on=DAY, own_usd_per_hr=1.0, own_usd_per_mtok=1.0, capacity_mtok_per_month=1.0,
                             rent_usd_per_mtok=None, rent_provider=None, breakeven_mtok_per_month=None,
                             deployable=tp <= 8)
                        for g, n, tp in (("H200 SXM", 8, 8), ("GeForce RTX 5090 D V2 24GB", 32, 32))])
    assert report.own_rows(own)["gpu"].to_list() == ["H200 SXM"]


def test_ownership_terms_are_shared_by_every_row_or_none():
    own = pl.DataFrame({"years": [3.0, 3.0], "usd_per_kwh": [0.1, 0.1], "maintenance_usd_per_month": [500.0, 500.0],
                        "utilisation": [0.5, 0.5]})
    assert report.ownership_terms(own) == {"years": 3.0, "usd_per_kwh": 0.1, "maintenance_usd_per_month": 500.0,
                                           "utilisation": 0.5}
    assert report.ownership_terms(own.with_columns(pl.Series("years", [3.0, 5.0]))) is None


def test_the_api_price_line_is_the_models_cheapest_api_price_dated_by_its_fetch():
    api = pl.DataFrame([dict(model="m", api_provider="openrouter", api_model_id="x/m", usd_per_mtok_input=0.0798,
                             usd_per_mtok_output=0.1596, fetched_at=datetime(2026, 8, 19, 10))])
    assert report.api_price_lines(api, "m") == [{"label": "API", "value": "$0.16/M out, $0.08/M in",
                                                "source": "openrouter x/m, fetched 2026-08-19"}]
    assert report.api_price_lines(api, "other") == []


def test_every_groups_table_is_labelled_and_split_in_one_pass_as_it_is_alone(calculator):
    table, _, _ = calculator
    # a second group: the same parts in the other order, one price gone
    other = table.reverse().with_columns(pl.col("usd_per_mtok").shift(1), model=pl.lit("n"))
    tall = pl.concat([table.with_columns(model=pl.lit("m")), other]).select("model", *table.columns)
    parts, order, night = report.split_table(report.table_rows(tall, by=("model",)), by=("model",))
    for model, alone in (("m", table), ("n", other.drop("model"))):
        want = report.split_table(report.table_rows(alone))
        got = [frame.filter(pl.col("model") == model).drop("model") for frame in (parts, order, night)]
        assert all(g.equals(w) for g, w in zip(got, want, strict=True)), model
    assert order.rows() == [("m", 1), ("m", 0), ("n", 0), ("n", 1)]  # parts by name: B200 at 0, H200 at 1


def test_own_rows_of_one_cost_are_ordered_by_part_then_price_kind():
    own = pl.DataFrame([dict(gpu="H200 SXM", price_kind=k, gpu_count=8, tp=8, replicas=1, hardware_usd=1.0,
                             quoted_on=DAY, own_usd_per_hr=1.0, own_usd_per_mtok=1.0, capacity_mtok_per_month=1.0,
                             rent_usd_per_mtok=None, rent_provider=None, breakeven_mtok_per_month=None, deployable=True)
                        for k in ("market", "list")])
    assert report.own_rows(own)["price_kind"].to_list() == ["list", "market"]
    grouped = report.own_rows(pl.concat([own.with_columns(model=pl.lit(m)) for m in "nm"]), by=("model",))
    assert grouped.select("model", "price_kind").rows() == [("m", "list"), ("m", "market"), ("n", "list"),
                                                            ("n", "market")]
