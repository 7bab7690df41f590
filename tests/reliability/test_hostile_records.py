"""One hostile record costs itself, never its source or the night (issue 30, N7 and N8), end to end: one nightly
replays recordings where one OpenRouter price is "1e999999" (a Decimal overflow at the shift to per million
tokens), one OpenRouter `context_length`, one vast.ai `num_gpus` and one Verda GPU count and GPU memory are
integers beyond 64 bits, one vast.ai offer counts a million GPUs and another 2^64 MiB per GPU. Each is its record's quarantine reason
naming the field; every other record of those sources loads.
"""

import json
from pathlib import Path

import pytest

from flows import pipeline
from scrapers import verda
from tests.pipeline_support import serve_fixtures
from tests.sources_support import FIXTURES, SNAPSHOT, copy_fixtures
from warehouse import db

BEYOND_64_BITS = 2**64 + 1
OVERFLOW = "1e999999"  # a finite Decimal; shifted six places it leaves Decimal's range
# (source, the record's id, the field named in quarantine)
HOSTILE = {
    ("openrouter", "qwen/qwen3.8-27b", "pricing.completion"),
    ("openrouter", "x-ai/grok-4.6", "context_length"),
    ("vastai", "26635622", "num_gpus"),
    ("verda", "1B300.30V", "gpu.number_of_gpus"),
    ("verda", "8B300.240V", "gpu_memory.size_in_gigabytes"),
}
MILLION_GPUS = 10**6  # an int64, but no offer rents a million GPUs: above the bound on a listing's count


def hostile_fixtures(directory: Path) -> tuple[Path, str]:
    """The recordings with the records above; also the id of the vast.ai offer given MILLION_GPUS."""
    copy_fixtures(directory)

    def edit(name: str, change) -> None:
        path = directory / name
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))

    def openrouter(data):
        models = {record["id"]: record for record in data["data"]}
        models["qwen/qwen3.8-27b"]["pricing"]["completion"] = OVERFLOW
        models["x-ai/grok-4.6"]["context_length"] = BEYOND_64_BITS

    def vastai(data):
        offers = {str(offer["id"]): offer for offer in data["offers"]}
        offers["26635622"]["num_gpus"] = BEYOND_64_BITS
        data["offers"][2]["num_gpus"] = MILLION_GPUS
        data["offers"][3]["gpu_ram"] = BEYOND_64_BITS  # MiB: a number, but no GPU holds it

    def verda(data):
        types = {record["instance_type"]: record for record in data}
        types["1B300.30V"]["gpu"]["number_of_gpus"] = BEYOND_64_BITS
        types["8B300.240V"]["gpu_memory"]["size_in_gigabytes"] = 10**400  # beyond a double, too

    edit("openrouter_models_2026-08-19.json", openrouter)
    edit("vastai_bundles.json", vastai)
    edit("verda_instance_types.json", verda)
    offers = json.loads((directory / "vastai_bundles.json").read_text())["offers"]
    return directory, (str(offers[2]["id"]), str(offers[3]["id"]))


def nightly(mp, home: Path, directory: Path):
    """A nightly (no derive) replaying directory: its summary, fetch statuses, quarantine and what loaded."""
    mp.setenv("GPULEDGER_HOME", str(home))
    with serve_fixtures(mp, directory) as server:
        mp.setenv("GPULEDGER_NOW", server.now)
        summary = pipeline.run(None, SNAPSHOT, export_format="", derive=False)
    with db.connect(read_only=True) as con:
        fetches = dict(con.execute("select source, status from fetches where run_id = ?", [summary.run_id]).fetchall())
        quarantined = con.execute("select provider, offer_id, field, reason from quarantine where run_id = ?",
                                  [summary.run_id]).fetchall()
        loaded = set(con.execute(
            "select provider, offer_id from offers where run_id = ? union all "
            "select api_provider, api_model_id from api_prices where run_id = ?",
            [summary.run_id, summary.run_id]).fetchall())
    return summary, fetches, quarantined, loaded


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    """The hostile night, what a clean night of the same recordings loaded, and the ids of the vast.ai offers with
    a million GPUs and with 2^64 MiB per GPU."""
    base = tmp_path_factory.mktemp("records")
    with pytest.MonkeyPatch.context() as mp:
        directory, implausible = hostile_fixtures(base / "fixtures")
        *_, clean = nightly(mp, base / "clean", FIXTURES)
        return (*nightly(mp, base / "home", directory), clean, implausible)


def test_no_hostile_record_fails_its_source_or_the_night(night):
    summary, fetches, _, loaded, clean, implausible = night
    assert summary.status == "ok" and set(fetches.values()) == {"ok"}, fetches
    hostile = {(provider, offer_id) for provider, offer_id, _ in HOSTILE} | {("vastai", i) for i in implausible}
    assert loaded == clean - hostile  # every other record of those sources loaded


def test_each_hostile_record_is_quarantined_naming_its_field(night):
    _, _, quarantined, *_ = night
    named = {(provider, offer_id, field) for provider, offer_id, field, _ in quarantined}
    assert named >= HOSTILE
    reasons = {(provider, offer_id): reason for provider, offer_id, _, reason in quarantined}
    assert "out of range" in reasons[("openrouter", "qwen/qwen3.8-27b")]
    assert "above" in reasons[("vastai", "26635622")]


def test_a_listing_counting_a_million_gpus_or_2_to_the_64_mib_per_gpu_is_quarantined_as_implausible(night):
    _, _, quarantined, _, _, (million, memory) = night
    found = {offer_id: (field, reason) for provider, offer_id, field, reason in quarantined if provider == "vastai"}
    assert found[million][0] == "num_gpus" and "is above 1,024" in found[million][1]
    assert found[memory][0] == "gpu_memory_gb" and "implausible GPU memory" in found[memory][1]


# N9: without Verda credentials the public pricing page is read. Its parse is one walk over the document.
NESTED = 150  # tables, each in a cell of the one around it: 22 KB that held the old parse ~9 s (n^3.5 and worse)
ROW = ("<tr><th>Instance</th><th>GPU</th><th>Price</th></tr>"
       "<tr><td>{i}H100.80S</td><td>1x H100 SXM5 80GB</td><td>$2.29/h</td></tr>")
DIGITS = "1" * 20_000  # a price cell of digits alone: the price search backtracked over it for 31 s


def pricing_page(directory: Path, body: str) -> Path:
    copy_fixtures(directory)
    (directory / "verda_pricing_page.html").write_text(body)
    return directory


def nested_tables() -> str:
    opened = "".join("<table>" + ROW.format(i=i) + "<tr><td>" for i in range(1, NESTED + 1))
    digits = f"<table>{ROW.format(i=0)}<tr><td>DIGITS</td><td>1x A100 SXM4 40GB</td><td>{DIGITS}</td></tr></table>"
    return f"<html><body>{digits}{opened}{'</td></tr></table>' * NESTED}</body></html>"


def keyless_night(mp, home: Path, directory: Path):
    mp.setenv("GPULEDGER_HOME", str(home))
    with serve_fixtures(mp, directory, credentials={}) as server:
        mp.setenv("GPULEDGER_NOW", server.now)
        summary = pipeline.run(None, SNAPSHOT, export_format="", derive=False)
    with db.connect(read_only=True) as con:
        offers = con.execute("select offer_id, usd_per_hr from offers where run_id = ? and source = 'verda' "
                             "and price_kind = 'on_demand'", [summary.run_id]).fetchall()
        quarantined = con.execute("select offer_id, field, reason from quarantine where run_id = ? and "
                                  "provider = 'verda'", [summary.run_id]).fetchall()
        error = con.execute("select error from fetches where run_id = ? and source = 'verda'",
                            [summary.run_id]).fetchone()[0]
    return summary, sorted(offers), quarantined, error


def test_nested_tables_on_the_pricing_page_are_each_read_for_their_own_rows(tmp_path):
    with pytest.MonkeyPatch.context() as mp:
        summary, offers, quarantined, _ = keyless_night(mp, tmp_path / "home",
                                                        pricing_page(tmp_path / "fixtures", nested_tables()))
    assert summary.status == "ok" and summary.sources["verda"] == "ok"
    # one listing per table, its own row (the old parse read each nested row again in every table around it)
    assert offers == sorted((f"{i}H100.80S", 2.29) for i in range(NESTED + 1))
    assert [(offer_id, field) for offer_id, field, _ in quarantined] == [("DIGITS", "price")]
    assert "a price cell of 20,000 characters" in quarantined[0][2]


def test_a_pricing_page_beyond_the_node_bound_fails_verda_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(verda, "MAX_PAGE_NODES", 5_000)  # the bound, met by a smaller page
    page = "<html><body>" + "<div><span>x</span></div>" * 3_000 + nested_tables() + "</body></html>"
    with pytest.MonkeyPatch.context() as mp:
        summary, offers, _, error = keyless_night(mp, tmp_path / "home", pricing_page(tmp_path / "fixtures", page))
    assert summary.status == "partial" and summary.sources == {**summary.sources, "verda": "failed"}
    assert {s for name, s in summary.sources.items() if name != "verda"} == {"ok"}
    assert offers == [] and error.startswith("verda: /products: the pricing page has more than 5,000 nodes")
