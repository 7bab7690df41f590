"""Which rows a night's config.json answers give, and who wins where two rows name one model or repository."""

import json
from datetime import date, datetime
from pathlib import Path

from scrapers.base import ModelConfig
from transforms.model_catalogue import NOT_FOLLOWED, UNKNOWN_304, checked, refusal, user_rows, weights_check
from transforms.model_config import derive_model

CONFIGS = Path(__file__).parents[1] / "fixtures" / "hf_configs"
API = Path(__file__).parents[1] / "fixtures" / "hf_api"  # real answers of the model API, with their PROVENANCE
DAY, BEFORE, AFTER = date(2026, 8, 19), date(2026, 8, 18), date(2026, 8, 20)
VL8 = "Qwen/Qwen3-VL-8B-Instruct"
CURATED = [{"model_id": "qwen3-8b", "origin": "curated", "hf_repo": "Qwen/Qwen3-8B", "hf_ids": None},
           {"model_id": "glm-5", "origin": "curated", "hf_repo": "zai-org/GLM-5", "hf_ids": "zai-org/GLM-5-FP8"}]


def answer(repo: str, status: int = 200, *, config: str | None = None, etag: str | None = '"e1"') -> ModelConfig:
    body = (CONFIGS / (config or repo) / "config.json").read_text() if status == 200 else None
    return ModelConfig(repo, status, datetime(2026, 8, 19, 22), etag=etag, config=body and json.loads(body),
                       config_sha256="a" * 64 if body else None)


def state(repo: str, checked_on: date = BEFORE, **fields) -> dict:
    return {"repo": repo, "http_status": 200, "etag": '"e0"', "config_sha256": "0" * 64, "model": None, "reason": None,
            "checked_on": checked_on, "changed_on": checked_on, "run_id": "r0", "config_run_id": "r0",
            "safetensors": None} | fields


def by_repo(done) -> dict[str, dict]:
    return {s["repo"]: s for s in done.states}


def test_a_config_nobody_serves_derives_a_row_and_a_curated_one_wins_where_both_exist():
    done = checked([answer(VL8), answer("Qwen/Qwen3-8B"), answer("zai-org/GLM-5-FP8", config="zai-org/GLM-5")],
                   CURATED, {}, DAY, "r1")
    (row,) = done.models
    assert (row["model_id"], row["hf_repo"], row["arch"], row["derived_on"]) == ("qwen3-vl-8b-instruct", VL8, "dense", DAY)
    states = by_repo(done)
    assert states[VL8]["model"] == "qwen3-vl-8b-instruct" and states[VL8]["reason"] is None
    assert states["Qwen/Qwen3-8B"]["model"] is None and states["zai-org/GLM-5-FP8"]["model"] is None  # served
    assert sorted(done.refetched) == sorted([VL8, "Qwen/Qwen3-8B", "zai-org/GLM-5-FP8"]) and done.unmapped == []
    assert states[VL8]["etag"] == '"e1"' and states[VL8]["changed_on"] == DAY and states[VL8]["config_run_id"] == "r1"


def test_a_served_repositorys_config_is_read_though_no_row_is_written_from_it():
    done = checked([answer("zai-org/GLM-5", config="deepseek-ai/DeepSeek-V4-Pro")], CURATED, {}, DAY, "r1")
    (only,) = done.states
    assert only["reason"].startswith("zai-org/GLM-5: config.json field 'compress_ratios'") and only["served"]
    assert done.models == [] and done.unmapped == []  # its curated row still serves it


def test_an_id_another_repository_holds_is_taken_with_the_owner():
    other = [*CURATED, {"model_id": "qwen3-vl-8b-instruct", "origin": "user", "hf_repo": None, "hf_ids": None}]
    (row,) = checked([answer(VL8)], other, {}, DAY, "r1").models
    assert row["model_id"] == "qwen-qwen3-vl-8b-instruct"


def test_an_unreadable_config_or_a_refusal_is_the_reason_the_repository_stays_unmapped():
    done = checked([answer("deepseek-ai/DeepSeek-V4-Pro"), answer("gated/model", 401), answer("gone/model", 404)],
                   CURATED, {}, DAY, "r1")
    states = by_repo(done)
    assert states["deepseek-ai/DeepSeek-V4-Pro"]["reason"].startswith(
        "deepseek-ai/DeepSeek-V4-Pro: config.json field 'compress_ratios' describes compressed attention")
    assert states["gated/model"]["reason"] == "HTTP 401: gated or private: set HF_TOKEN to a token with access to it"
    assert states["gone/model"]["reason"] == "HTTP 404: no such repository, or no config.json in it"
    assert done.models == [] and len(done.unmapped) == 3
    assert "config.json of 3 repositories: 2 refused or redirected (HTTP 3xx/4xx), 1 unreadable" in done.notes


def test_a_304_keeps_what_the_config_gave_a_404_drops_the_derived_row_and_a_401_keeps_it():
    held = {VL8.lower(): state(VL8, model="qwen3-vl-8b-instruct"),
            "owner/was-derived": state("owner/was-derived", model="was-derived"),
            "owner/now-gated": state("owner/now-gated", model="now-gated")}
    done = checked([answer(VL8, 304), answer("owner/was-derived", 404), answer("owner/now-gated", 401)], CURATED, held,
                   DAY, "r1")
    states = by_repo(done)
    assert states[VL8] == state(VL8, model="qwen3-vl-8b-instruct") | {"http_status": 304, "checked_on": DAY,
                                                                          "run_id": "r1", "served": False}
    assert (states["owner/was-derived"]["model"], states["owner/was-derived"]["etag"]) == (None, None)
    assert (states["owner/now-gated"]["model"], states["owner/now-gated"]["etag"]) == ("now-gated", None)
    assert done.models == [] and done.refetched == ["owner/was-derived"]  # its derived row goes with its config
    assert [s["repo"] for s in done.unmapped] == ["owner/was-derived"]


def test_a_derived_row_whose_repository_is_no_longer_followed_is_dropped_with_the_reason():
    models = CURATED + [{"model_id": "left", "origin": "derived", "hf_repo": "owner/Left", "hf_ids": None},
                        {"model_id": "kept", "origin": "derived", "hf_repo": "owner/kept", "hf_ids": None},
                        {"model_id": "later", "origin": "derived", "hf_repo": "owner/later", "hf_ids": None}]
    held = {"owner/left": state("owner/Left", model="left"), "owner/kept": state("owner/kept", model="kept"),
            "owner/later": state("owner/later", AFTER, model="later")}
    done = checked([], models, held, DAY, "r1", followed={"owner/kept", "qwen/qwen3-8b"})
    assert done.refetched == ["owner/Left"]  # a state checked on a later day stands (a rebuild of an earlier one)
    (left,) = done.states
    assert (left["repo"], left["model"], left["reason"], left["checked_on"]) == ("owner/Left", None, NOT_FOLLOWED, DAY)
    assert checked([], models, held, DAY, "r1").refetched == []  # nothing said what is followed: nothing judged


def test_a_304_for_a_config_this_warehouse_never_held_asks_for_it_whole_next_time():
    (only,) = checked([answer(VL8, 304)], CURATED, {}, DAY, "r1").states
    assert only["reason"] == UNKNOWN_304 and only["etag"] is None


def test_a_rebuild_of_an_earlier_day_leaves_what_a_later_check_learnt():
    held = {VL8.lower(): state(VL8, checked_on=AFTER, model="qwen3-vl-8b-instruct")}
    done = checked([answer(VL8, 404)], CURATED, held, DAY, "r1")
    assert done.states == [] and done.models == []
    assert done.notes == ["1 repositories were checked on a later day than this run: their state stands"]


def test_a_user_model_is_derived_again_and_refused_where_a_curated_one_has_its_id_or_repository():
    config = json.loads((CONFIGS / VL8 / "config.json").read_text())
    entries = [{"model_id": "mine", "repo": None, "path": "/tmp/config.json", "config": config,
                "config_sha256": "b" * 64, "added_on": "2026-08-19"},
               {"model_id": "qwen3-8b", "repo": None, "path": "/tmp/c.json", "config": config,
                "config_sha256": "c" * 64, "added_on": "2026-08-19"},
               {"model_id": "glm", "repo": "zai-org/GLM-5-FP8", "config": config, "config_sha256": "d" * 64,
                "added_on": "2026-08-19"},
               {"model_id": "broken", "repo": None, "path": "/tmp/b.json", "config": {"hidden_size": 1},
                "config_sha256": "e" * 64, "added_on": "2026-08-19"}]
    rows, refused = user_rows(entries, CURATED)
    (row,) = rows
    assert (row["model_id"], row["name"], row["vendor"], row["hf_repo"], row["source"]) == (
        "mine", "mine", "user", None, "derived from /tmp/config.json")
    assert (row["config_sha256"], row["derived_on"], row["total_params_b"]) == ("b" * 64, DAY, 8.19)
    assert refused == ["user model qwen3-8b: the curated model qwen3-8b already has this id",
                       "user model glm: the curated model glm-5 already has zai-org/GLM-5-FP8",
                       "user model broken: /tmp/b.json: config.json field 'num_hidden_layers' (or 'num_layers', 'n_layer', "
                       "'n_layers') is missing (model_type None)"]


def weights(repo: str) -> dict:
    return json.loads((API / f"{repo}.json").read_text())["safetensors"]


def test_a_derived_total_is_checked_against_the_weights_the_model_api_counted():
    """Qwen3-235B-A22B: its config derives 235.09B, its safetensors hold 235,093,634,560 BF16 parameters."""
    row = derive_model(json.loads((CONFIGS / "Qwen/Qwen3-235B-A22B/config.json").read_text()), "Qwen/Qwen3-235B-A22B")
    assert weights_check(row["total_params_b"], weights("Qwen/Qwen3-235B-A22B")) == (
        235.09, "within 3% of the weights (-0.0%)")
    assert weights_check(row["total_params_b"], None) == (None, None)  # no safetensors files: nothing to compare


def test_a_total_the_reader_got_wrong_is_flagged():
    """Qwen3-8B read as if its head were tied to its embedding (0.62B short): the weights' 8.19B catch it."""
    raw = json.loads((CONFIGS / "Qwen/Qwen3-8B/config.json").read_text()) | {"tie_word_embeddings": True}
    row = derive_model(raw, "Qwen/Qwen3-8B")
    weights_b, check = weights_check(row["total_params_b"], weights("Qwen/Qwen3-8B"))
    assert (weights_b, check) == (8.19, "FLAGGED: the derived total 7.57B is -7.6% off the weights' 8.19B")
    _, check = weights_check(7.57, weights("Qwen/Qwen3-8B"), "language model only: the vision/audio tower is not counted")
    assert check.endswith("(the row leaves out a vision/audio tower)")


def test_a_quantized_checkpoints_packed_integers_are_not_compared():
    """DeepSeek-V4-Flash-0731 holds 296B of its 304B as I8: packed 4-bit weights, several to each integer."""
    weights_b, check = weights_check(290.94, weights("deepseek-ai/DeepSeek-V4-Flash-0731"))
    assert weights_b == 304.18
    assert check.startswith("not compared: 296.36B of the weights' 304.18B are integers (I64, I8)")


def test_the_weights_count_is_held_per_repository_and_set_on_the_row_derived_beside_it():
    counted = {"parameters": {"BF16": 8_190_735_360}, "total": 8_190_735_360}
    vl8 = answer(VL8)
    done = checked([ModelConfig(**{**vl8.__dict__, "safetensors": counted})], CURATED, {}, DAY, "r1")
    (row,) = done.models
    assert row["weights_params_b"] == 8.19 and row["weights_check"].startswith("within 3%")
    assert json.loads(by_repo(done)[VL8]["safetensors"]) == counted


def test_a_status_without_a_meaning_of_its_own_says_what_the_hub_said():
    at = datetime(2026, 8, 19)
    assert refusal(ModelConfig("odd/one", 400, at, error="Invalid repo name")) == (
        "HTTP 400: no config received; the Hub said: Invalid repo name")
    assert refusal(ModelConfig("odd/one", 503, at)) == "HTTP 503: a server error through every retry"
    assert refusal(ModelConfig("odd/one", 404, at, error="RepoNotFound: gone")) == (
        "HTTP 404: no such repository, or no config.json in it")  # the status says it: its meaning, as ever
