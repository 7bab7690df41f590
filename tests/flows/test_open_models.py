"""Every open model people serve: the real OpenRouter answer of 2026-08-19 (its open-weight listings and a few
others) replayed with the real config.json files of tests/fixtures/hf_configs, through the whole nightly run.

A listing whose config the replay holds gets a models row (curated, or derived from the config) and own_rent_api
rows with its API price beside self-hosting; every other listed repository is in unmapped_models with the reason
(HTTP 404, or what the reader cannot read); none of them fails the night. The next night asks every config with
the ETag it holds and downloads none again.
"""

import json
from datetime import timedelta
from pathlib import Path

import pytest

from flows import pipeline
from tests.pipeline_support import serve_fixtures, slim_nights
from tests.sources_support import FIXTURES, SNAPSHOT, copy_fixtures
from warehouse import db

CONFIGS = FIXTURES.parent / "hf_configs"
LISTINGS = "openrouter_models_2026-08-19_open_weights.json"


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """The replayed night and the one after, on one warehouse; (home, the two runs, the server's log)."""
    base = tmp_path_factory.mktemp("open-models")
    copy_fixtures(base / "sources")
    manifest = json.loads((base / "sources" / "replay.json").read_text())
    for route in manifest["routes"]:
        if route["path"] == "/api/v1/models":
            route["file"] = LISTINGS
    (base / "sources" / "replay.json").write_text(json.dumps(manifest))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULEDGER_HOME", str(base / "home"))
        slim_nights(mp)  # own_rent_api is priced at the chat tier whatever the speed tiers; they are not the subject
        server = serve_fixtures(mp, base / "sources")
        try:
            first = pipeline.run(None, SNAPSHOT, export_format="", trigger="test")
            asked_first = len(server.log)
            second = pipeline.run(["huggingface"], SNAPSHOT + timedelta(days=1), export_format="", derive=False)
        finally:
            server.stop()
    return base / "home", first, second, server.log[asked_first:]


def listed() -> dict[str, str]:
    """hugging_face_id -> listed model id, of every listing that names a repository."""
    data = json.loads((FIXTURES / LISTINGS).read_text())["data"]
    return {m["hugging_face_id"]: m["id"] for m in data if m.get("hugging_face_id")}


def query(home: Path, sql: str) -> list[tuple]:
    with db.connect(home / "gpuledger.duckdb", read_only=True) as con:
        return con.execute(sql).fetchall()


def test_no_listed_repository_fails_the_night(nights):
    _, first, _, _ = nights
    assert first.status == "ok" and first.sources["huggingface"] == "ok" and first.quality == "ok"


def test_every_listing_whose_config_is_replayed_gets_a_model_and_an_own_rent_api_row_with_its_api_price(nights):
    home = nights[0]
    served = {repo.lower(): model for model, repo in query(home, "select model_id, repo from model_repos")}
    compared = {model: api for model, api in query(home, "select model, any_value(api_model_id) from own_rent_api "
                                                         "where snapshot_date = '2026-11-27' group by model")}
    unreadable = {repo for (repo,) in query(home, "select repo from unmapped_models where reason not like 'HTTP %'")}
    replayed = {repo: model_id for repo, model_id in listed().items()
                if (CONFIGS / repo / "config.json").exists() and repo not in unreadable}
    assert len(replayed) >= 35
    for repo in replayed:
        assert repo.lower() in served, repo
        assert compared.get(served[repo.lower()]) is not None, (repo, served[repo.lower()])
    derived = dict(query(home, "select hf_repo, model_id from models where origin = 'derived'"))
    assert derived == {"Qwen/Qwen3-VL-8B-Instruct": "qwen3-vl-8b-instruct",
                       "Qwen/Qwen3-VL-32B-Instruct": "qwen3-vl-32b-instruct",  # and the MoE ones, read by their fields
                       "Qwen/Qwen3-VL-30B-A3B-Instruct": "qwen3-vl-30b-a3b-instruct",
                       "Qwen/Qwen3-VL-235B-A22B-Instruct": "qwen3-vl-235b-a22b-instruct"}
    for repo, model in derived.items():  # priced against the listing that named it, loaded before the model was
        assert compared[model] == replayed[repo]


def test_every_other_listed_repository_is_unmapped_with_its_reason(nights):
    home = nights[0]
    reasons = dict(query(home, "select repo, reason from unmapped_models"))
    served = {repo for (repo,) in query(home, "select repo from model_repos")}
    expected = {repo for repo in listed() if repo.lower() not in served}
    assert set(reasons) == expected and len(expected) >= 9  # 11 before the Qwen3-VL MoE configs read by their fields
    for repo, reason in reasons.items():
        if (CONFIGS / repo / "config.json").exists():  # replayed, but of an architecture the reader does not know
            assert reason.startswith(f"{repo}: config.json field '") and "model_type" in reason
        else:
            assert reason == "HTTP 404: no such repository, or no config.json in it"
    assert reasons["MiniMaxAI/Minimax-M3"].startswith("HTTP 404")  # the listing's spelling, as listed
    # a gated repository without HF_TOKEN: its reason is kept, and the curated row still serves its listing
    assert query(home, "select http_status, reason from model_configs where repo = 'meta-llama/Llama-3.3-70B-Instruct'") \
        == [(401, "HTTP 401: gated or private: set HF_TOKEN to a token with access to it")]


def test_the_next_night_asks_with_the_etags_held_and_downloads_no_config_again(nights):
    home, _, second, log = nights
    assert second.status == "ok"
    configs = [call for call in log if call.path.endswith("/config.json")]
    held = {repo for (repo,) in query(home, "select repo from model_configs where config_run_id is not null")}
    assert {call.path.split("/resolve/")[0][1:] for call in configs if call.holds} == held
    assert query(home, "select http_status, count(*) from model_configs where config_sha256 is not null "
                       "group by all") == [(304, len(held))]
    assert query(home, "select count(*) from models where origin = 'derived' and derived_on = '2026-11-27'") == [(4,)]


def test_the_weights_count_of_each_repository_the_model_api_answers_for_is_held(nights):
    """The replayed model API answers (tests/fixtures/hf_api) are held per repository; the others answered 404."""
    home = nights[0]
    held = dict(query(home, "select repo, safetensors from model_configs where safetensors is not null"))
    assert set(held) == {"Qwen/Qwen3-8B", "Qwen/Qwen3-235B-A22B"}
    assert json.loads(held["Qwen/Qwen3-235B-A22B"]) == {"parameters": {"BF16": 235_093_634_560}, "total": 235_093_634_560}
