"""The whole nightly run on real recorded markets: vast.ai of 2024-11-05 (trimmed) and RunPod of 2025-06-21.

The runs export nothing (export format ""): every test here reads the warehouse's tables, and the exports and
report pages (one per catalogue model, most of a run's time on this market) are drawn from those tables.
"""

import json
import shutil
import statistics
from collections import defaultdict

import polars as pl
import pytest
from typer.testing import CliRunner

from flows import pipeline
from flows.cli.app import app
from tests.pipeline_support import serve_fixtures
from tests.sources_support import FIXTURES, SNAPSHOT
from transforms import gpu_names
from transforms.quality import QualityRules
from warehouse import db

REAL = FIXTURES.parent / "real"
VAST = json.loads((REAL / "vastai_bundles_2024-11-05.json").read_text())["offers"]
RUNPOD = json.loads((REAL / "runpod_gputypes_2025-06-21.json").read_text())["data"]["gpuTypes"]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """One replayed run over the real payloads, shared by the module's tests (read-only afterwards)."""
    home = tmp_path_factory.mktemp("real-home")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("GPULEDGER_HOME", str(home))
        monkeypatch.setenv("GPULEDGER_EXPORTS", str(tmp_path_factory.mktemp("real-exports")))
        with serve_fixtures(monkeypatch, REAL):
            summary = pipeline.run(snapshot_date=SNAPSHOT, export_format="", trigger="test")
    return home, summary


def query(warehouse, monkeypatch, sql: str, *params) -> pl.DataFrame:
    monkeypatch.setenv("GPULEDGER_HOME", str(warehouse[0]))
    with db.connect(read_only=True) as con:
        return con.sql(sql, params=list(params) or None).pl()


@pytest.mark.slow
def test_every_real_listing_maps_to_a_part_whose_memory_matches_the_listing(warehouse, monkeypatch):
    offers = query(warehouse, monkeypatch, "select o.provider, o.gpu_raw, o.gpu, o.gpu_memory_gb, g.memory_gb "
                                           "from offers o left join gpus g on g.name = o.gpu "
                                           "where o.provider in ('vastai', 'runpod')")
    assert offers.filter(pl.col("gpu").is_null()).is_empty()
    assert query(warehouse, monkeypatch, "select * from unmapped_gpus").is_empty()
    ratio = offers["gpu_memory_gb"] / offers["memory_gb"]
    low, high = gpu_names.MEMORY_FIT
    assert ratio.min() >= low and ratio.max() <= high
    # every distinct raw name and reported memory of the real vast.ai market is in the fixture, and maps
    assert offers.filter(pl.col("provider") == "vastai").select("gpu_raw", "gpu_memory_gb").unique().height == len(
        {(o["gpu_name"], o["gpu_ram"]) for o in VAST})


@pytest.mark.slow
def test_the_real_day_is_not_suspect_and_the_rtx_4090_outliers_are_quarantined(warehouse, monkeypatch):
    assert warehouse[1].quality == "ok"
    per_gpu = [o["dph_base"] / o["num_gpus"] for o in VAST if o["gpu_name"] == "RTX 4090"]
    median = statistics.median(per_gpu)
    outliers = {str(o["id"]) for o in VAST if o["gpu_name"] == "RTX 4090"
                and o["dph_base"] / o["num_gpus"] > QualityRules().max_ratio_to_median * median}
    assert len(outliers) == 3  # $20/GPU-hour twice and $9.63 once, against a median near $0.45
    quarantined = query(warehouse, monkeypatch, "select offer_id from quarantine where stage = 'quality' "
                                                "and provider = 'vastai' and price_kind = 'on_demand'")
    assert set(quarantined["offer_id"]) == outliers


@pytest.mark.slow
def test_per_gpu_min_and_max_in_daily_prices_equal_the_payload(warehouse, monkeypatch):
    mapping = dict(query(warehouse, monkeypatch, "select offer_id, gpu from offers where provider = 'vastai' "
                                                 "and price_kind = 'on_demand'").iter_rows())
    quarantined = set(query(warehouse, monkeypatch, "select offer_id from quarantine where provider = 'vastai' "
                                                    "and price_kind = 'on_demand'")["offer_id"])
    expected = defaultdict(list)
    for o in VAST:
        if str(o["id"]) not in quarantined:
            tier = {1: "datacenter", 0: "community"}.get(o["hosting_type"], "unknown")
            expected[mapping[str(o["id"])], o["num_gpus"], tier].append(o["dph_base"] / o["num_gpus"])
    published = query(warehouse, monkeypatch, "select gpu, gpu_count, tier, min_usd_per_gpu_hr, max_usd_per_gpu_hr "
                                               "from daily_prices where provider = 'vastai' "
                                               "and price_kind = 'on_demand'")
    got = {(g, n, t): (lo, hi) for g, n, t, lo, hi in published.iter_rows()}
    assert set(got) == set(expected)
    for key, prices in expected.items():
        assert got[key] == pytest.approx((min(prices), max(prices))), key


@pytest.mark.slow
def test_runpod_lists_only_what_each_cloud_offers_at_a_price(warehouse, monkeypatch):
    offered = {f"{t['id']}:{tier}" for t in RUNPOD for tier, flag, price in (
        ("secure", "secureCloud", "securePrice"), ("community", "communityCloud", "communityPrice"))
        if t[flag] and t[price]}
    # and an Instant Cluster where the type names the datacenters that host one
    offered |= {f"{t['id']}:cluster" for t in RUNPOD if t["nodeGroupDatacenters"] and t["clusterPrice"]}
    listed = query(warehouse, monkeypatch, "select offer_id, usd_per_gpu_hr from offers where provider = 'runpod' "
                                           "and price_kind = 'on_demand'")
    assert set(listed["offer_id"]) == offered
    assert listed["usd_per_gpu_hr"].min() > 0
    assert not any(o.startswith("unknown:") for o in listed["offer_id"])  # the pseudo-type lists nothing


@pytest.mark.slow
def test_odd_host_sizes_get_rental_ranges_from_hosts_of_that_size(warehouse, monkeypatch):
    ranges = query(warehouse, monkeypatch, "select gpu, n_gpus, min_usd_per_hr from rental_ranges "
                                           "where provider = 'vastai' and price_kind = 'on_demand'")
    sizes = {o["num_gpus"] for o in VAST}
    assert {3, 5, 6, 7, 9, 10, 11, 12, 14} <= sizes <= set(ranges["n_gpus"])
    for row in ranges.filter(pl.col("n_gpus").is_in([3, 6, 10])).iter_rows(named=True):
        hosts = [o["dph_base"] for o in VAST if o["num_gpus"] == row["n_gpus"]]
        assert row["min_usd_per_hr"] >= min(hosts) - 1e-9  # a range never undercuts the hosts of that size


@pytest.mark.slow
def test_small_models_are_priced_on_small_cards(warehouse, monkeypatch):
    costs = query(warehouse, monkeypatch, "select distinct model, gpu from cost_per_mtok where provider = 'vastai'")
    for model in ("llama-3.1-8b", "gpt-oss-20b", "qwen3-30b-a3b"):
        gpus = set(costs.filter(pl.col("model") == model)["gpu"])
        assert {"GeForce RTX 3060 12GB", "GeForce RTX 4090 24GB", "RTX A4000 16GB", "RTX A5000 24GB"} <= gpus, model
    monkeypatch.setenv("GPULEDGER_HOME", str(warehouse[0]))
    table = CliRunner().invoke(app, ["table", "--model", "llama-3.1-8b", "--date", str(SNAPSHOT), "--context", "4096",
                                     "--streams", "4", "-f", "csv"])
    assert table.exit_code == 0, table.output
    assert "GeForce RTX 3060 12GB" in table.output and "RTX A4000 16GB" in table.output


@pytest.mark.slow
def test_a_card_the_catalogue_lacks_flags_the_day_and_lands_in_unmapped_gpus(monkeypatch, tmp_path):
    shutil.copytree(FIXTURES.parent, tmp_path / "fixtures")
    path = tmp_path / "fixtures" / "real" / "vastai_bundles_2024-11-05.json"
    data = json.loads(path.read_text())
    for offer in data["offers"][:3]:  # tomorrow's new card, three offers of it
        offer.update(gpu_name="RTX 6090", gpu_ram=49140)
    path.write_text(json.dumps(data))
    with serve_fixtures(monkeypatch, path.parent):
        summary = pipeline.run(snapshot_date=SNAPSHOT, export_format="", trigger="test")
    assert summary.quality == "suspect"
    with db.connect(read_only=True) as con:
        unmapped = con.execute("select provider, gpu_raw, gpu_memory_gb, listings from unmapped_gpus").fetchall()
        reasons = con.execute("select quality_reasons from runs").fetchall()[0][0]
    assert unmapped == [("vastai", "RTX 6090", 49140 / 1024, 3)]
    assert "vastai: " in reasons and "have an unknown GPU name: RTX 6090 (" in reasons


@pytest.mark.slow
def test_on_the_real_markets_every_answer_is_a_replica_someone_could_deploy(warehouse, monkeypatch):
    answered = query(warehouse, monkeypatch, """
        select a.model, a.precision, a.rent_tp, a.rent_replica_pricing, c.deployable from own_rent_api a join cost_per_mtok c
        using (snapshot_date, model, precision, context_tokens, streams, method)
        where c.gpu = a.rent_gpu and c.tp = a.rent_tp and c.provider = a.rent_provider
          and c.price_kind = a.rent_price_kind and c.replica_pricing = a.rent_replica_pricing""")
    assert answered.height == query(warehouse, monkeypatch,
                                    "select * from own_rent_api where rent_gpu is not null and speed_tier is null").height
    # a speed tier's rental is one of the tier's priced rows, all deployable
    at_tier = query(warehouse, monkeypatch, """
        select c.deployable from own_rent_api a join cost_at_speed c using (snapshot_date, model, precision, speed_tier)
        where c.gpu = a.rent_gpu and c.tp = a.rent_tp and c.provider = a.rent_provider
          and c.price_kind = a.rent_price_kind""")
    assert at_tier.height == query(warehouse, monkeypatch, "select * from own_rent_api where rent_gpu is not null "
                                   "and speed_tier is not null").height
    assert at_tier["deployable"].all()
    assert answered["deployable"].all()
    # RunPod's Instant Clusters hold what no host can (Qwen3.8's 2.4T parameters at BF16 on 64 H200, the Kimi K2
    # family's 1T): a cluster answers only for a replica wider than one 8-GPU node
    cluster = answered.filter(pl.col("rent_replica_pricing") == "provider_cluster")
    assert "qwen3.8-2.4t-a95b" in set(cluster["model"]) and (cluster["rent_tp"] > 8).all()
    clusters = query(warehouse, monkeypatch, "select distinct gpu, deployable from cost_per_mtok "
                                             "where replica_pricing = 'provider_cluster'")
    # RunPod's three, and GCP's TPU v3 pod slice of the catalog (16 chips on four hosts joined by ICI)
    assert set(clusters["gpu"]) == {"A100 SXM4 80GB", "H100 SXM5 80GB", "H200 SXM", "TPU v3 32GB"}
    assert clusters["deployable"].all()
    unsaid = query(warehouse, monkeypatch, "select count(*) as n from cost_per_mtok "
                                           "where not deployable and not_deployable_reason is null")
    assert unsaid["n"][0] == 0
    consumer = query(warehouse, monkeypatch, "select distinct c.gpu from cost_per_mtok c join gpus g on g.name = c.gpu "
                                             "where c.deployable and c.tp > 8 and g.form_factor like '%consumer%'")
    assert consumer.is_empty()  # a consumer card never spans hosts
    monkeypatch.setenv("GPULEDGER_HOME", str(warehouse[0]))
    table = CliRunner().invoke(app, ["table", "--model", "deepseek-r1", "--precision", "bf16", "--context", "4096",
                                     "--date", str(SNAPSHOT), "-f", "json"])
    assert table.exit_code == 0, table.output
    shown = json.loads(table.output)
    priced = [r for r in shown["table"] if r["usd_per_mtok"] is not None]
    assert priced and {r["replica_pricing"] for r in priced} <= {"one_listing", "provider_cluster"}
    deployable = query(warehouse, monkeypatch, "select distinct gpu, tp, provider from cost_per_mtok where deployable")
    cards = {(c["gpu"], c["tp"], c["provider"]) for c in shown["Cards"] if c["usd_per_mtok"] is not None}
    assert cards and cards <= set(deployable.rows())
