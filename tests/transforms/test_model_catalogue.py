"""Which rows a night's config.json answers give, and who wins where two rows name one model or repository."""

import json
import re
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path

import pytest

from scrapers.base import ModelConfig
from transforms import hf_class_defaults, model_config
from transforms.model_catalogue import (
    NOT_FOLLOWED,
    UNKNOWN_304,
    Weights,
    checked,
    hub_weights,
    index_weights,
    read_config,
    refusal,
    user_rows,
    weights_check,
)
from transforms.model_config import ModelConfigError, derive_model, derive_readings, vision_tower_params

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


def test_the_language_models_block_that_is_no_object_is_refused_naming_it_whichever_its_name():
    """A text_config or InternVL's llm_config (model_config.TEXT_BLOCKS) that is a list, text or a number is named,
    never read as the top level; an llm_config object is read as the language model (InternVL2-2B's internlm2), and
    a text_config: null beside it states no block (the first block stated non-null is the language model's)."""
    internvl = json.loads((Path(__file__).parents[1] / "fixtures" / "unseen_configs" / "holdout12" / "zylluan"
                           / "ft-uav_internvl2-2B" / "config.json").read_text())
    assert read_config(internvl, "acme/internvl")["total_params_b"] == 1.89
    for block in model_config.TEXT_BLOCKS:
        for value in ([internvl["llm_config"]], "internlm2", 5):
            with pytest.raises(ModelConfigError, match=rf"^acme/vlm: config.json field '{block}' is a "
                                                       rf"{type(value).__name__}, not an object$"):
                read_config({k: v for k, v in internvl.items() if k != "llm_config"} | {block: value}, "acme/vlm")
    assert read_config({"text_config": None} | internvl, "acme/internvl")["total_params_b"] == 1.89


@pytest.mark.parametrize("field", ["rope_scaling", "rope_parameters", "quantization_config"])
def test_a_field_read_as_an_object_that_is_none_is_refused_naming_it(field):
    """rope_parameters (transformers 5's rope_scaling) that is text was an AttributeError read_config caught as
    "cannot be read", naming no field."""
    raw = json.loads((CONFIGS / "Qwen/Qwen3-8B/config.json").read_text()) | {field: "yarn"}
    with pytest.raises(ModelConfigError, match=rf"^Qwen/Qwen3-8B: config.json field '{field}' is a str, not an object$"):
        read_config(raw, "Qwen/Qwen3-8B")


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



@pytest.mark.parametrize(("field", "value"), [("safetensors", {"total": 5}), ("safetensors", "abc"),
                                              ("weights", {"params": True}), ("weights", {"params": "5"}),
                                              ("weights", ["params", 5])])
def test_a_user_model_file_whose_weights_field_was_edited_by_hand_is_refused_alone(field, value):
    config = json.loads((CONFIGS / VL8 / "config.json").read_text())
    good = {"model_id": "mine", "repo": None, "path": "/tmp/config.json", "config": config, "config_sha256": "b" * 64,
            "added_on": "2026-08-19", "safetensors": None}
    bad = good | {"model_id": "edited", field: value}
    rows, refused = user_rows([bad, good, good | {"model_id": "also"}], CURATED)
    assert [r["model_id"] for r in rows] == ["mine", "also"]
    (why,) = refused
    assert why.startswith(f"user model edited: its file edited.json: field '{field}' is not ")


def test_a_model_api_answer_of_another_shape_refuses_its_repository_only():
    """The parse keeps only a well-formed safetensors field (scrapers/huggingface.py is_weights_count); the catalogue
    checks it again, so a malformed one that reaches it is that repository's reason, never the night's."""
    vl8, other = answer(VL8), answer("lab/copy", config=VL8)
    done = checked([vl8, ModelConfig(**{**other.__dict__, "safetensors": {"total": 5}})], CURATED, {}, DAY, "r1")
    assert [row["hf_repo"] for row in done.models] == [VL8]
    assert by_repo(done)["lab/copy"]["reason"].startswith("lab/copy: field 'safetensors' is not the model API's")


def weights(repo: str) -> dict:
    return json.loads((API / f"{repo}.json").read_text())["safetensors"]


def counted(repo: str) -> Weights:
    return hub_weights(weights(repo), repo)


def test_a_derived_total_is_checked_against_the_weights_the_model_api_counted():
    """Qwen3-235B-A22B: its config derives 235.09B, its safetensors hold 235,093,634,560 BF16 parameters."""
    row = derive_model(json.loads((CONFIGS / "Qwen/Qwen3-235B-A22B/config.json").read_text()), "Qwen/Qwen3-235B-A22B")
    assert weights_check(row["total_params_b"], counted("Qwen/Qwen3-235B-A22B")) == (
        235.09, "within 3% of the weights (-0.0%; the Hugging Face model API's safetensors total)")
    assert weights_check(row["total_params_b"], None) == (None, None)  # no safetensors files: nothing to compare


def test_a_total_the_reader_got_wrong_is_flagged():
    """Qwen3-8B read as if its head were tied to its embedding (0.62B short): the weights' 8.19B catch it."""
    raw = json.loads((CONFIGS / "Qwen/Qwen3-8B/config.json").read_text()) | {"tie_word_embeddings": True}
    row = derive_model(raw, "Qwen/Qwen3-8B")
    weights_b, check = weights_check(row["total_params_b"], counted("Qwen/Qwen3-8B"))
    assert (weights_b, check) == (8.19, "FLAGGED: the derived total 7.57B is -7.6% off the weights' 8.19B "
                                        "(the Hugging Face model API's safetensors total)")
    _, check = weights_check(7.57, counted("Qwen/Qwen3-8B"), frozenset({"vision_tower_by_field", "mtp"}))
    assert check.endswith("(the Hugging Face model API's safetensors total; the row leaves out a vision/audio tower and multi-token-prediction "
                          "layers)")


def test_a_quantized_checkpoints_packed_integers_are_not_compared():
    """DeepSeek-V4-Flash-0731 holds 296B of its 304B as I8: packed 4-bit weights, several to each integer."""
    weights_b, check = weights_check(290.94, counted("deepseek-ai/DeepSeek-V4-Flash-0731"))
    assert weights_b == 304.18
    assert check.startswith("not compared: 296.36B of the weights' 304.18B are integers (I64, I8)")


def test_the_weights_count_is_held_per_repository_and_set_on_the_row_derived_beside_it():
    """Qwen3-VL-8B's weights hold its language model (the row's 8.19B) and its vision tower (0.58B, read by field):
    the Hub's safetensors total, 8,767,123,696 (quoted in public GitHub files), is met by the two together."""
    counted = {"parameters": {"BF16": 8_767_123_696}, "total": 8_767_123_696}
    vl8 = answer(VL8)
    done = checked([ModelConfig(**{**vl8.__dict__, "safetensors": counted})], CURATED, {}, DAY, "r1")
    (row,) = done.models
    assert (row["total_params_b"], row["weights_params_b"]) == (8.19, 8.77)
    assert row["weights_check"] == ("within 3% of the weights (-0.0%; the Hugging Face model API's safetensors total; "
                                    "with its 0.58B vision tower read by field)")
    assert json.loads(by_repo(done)[VL8]["safetensors"]) == counted
    # a count of the language model alone is not what these weights hold: the tower is compared, and the gap said
    lm_only = {"parameters": {"BF16": 8_190_735_360}, "total": 8_190_735_360}
    (row,) = checked([ModelConfig(**{**vl8.__dict__, "safetensors": lm_only})], CURATED, {}, DAY, "r1").models
    assert row["weights_check"] == ("FLAGGED: the derived total 8.19B with its 0.58B vision tower read by field is "
                                    "+7.0% off the weights' 8.19B (the Hugging Face model API's safetensors total)")


def test_a_status_without_a_meaning_of_its_own_says_what_the_hub_said():
    at = datetime(2026, 8, 19)
    assert refusal(ModelConfig("odd/one", 400, at, error="Invalid repo name")) == (
        "HTTP 400: no config received; the Hub said: Invalid repo name")
    assert refusal(ModelConfig("odd/one", 503, at)) == "HTTP 503: a server error through every retry"
    assert refusal(ModelConfig("odd/one", 404, at, error="RepoNotFound: gone")) == (
        "HTTP 404: no such repository, or no config.json in it")  # the status says it: its meaning, as ever


# --- readings the weights choose (docs/models.md, "When the config leaves a reading open") ------------------------

UNSEEN = Path(__file__).parents[1] / "fixtures" / "unseen_configs"
INDEXES = Path(__file__).parents[1] / "fixtures" / "weight_indexes"  # real weight indexes, trimmed, with PROVENANCE
TELECHAT = "Tele-AI/telechat-7B"
RUGPT = "EvilFreelancer/rugpt3xl-convert"


def unseen(where: str) -> dict:
    return json.loads((UNSEEN / where / "config.json").read_text())


@pytest.fixture
def first_contact(monkeypatch):
    """The reader as the ninth held-out set met it: without the entries its scoring taught (TeleChat's gated SiLU and
    tied head, ruGPT-3 XL's ungated GELU; README.md of unseen_configs), where the configs leave both open."""
    monkeypatch.delitem(model_config._FAMILIES, "telechat")
    monkeypatch.delitem(model_config._QUIRKS, "rugpt3xl")


def test_a_config_that_leaves_the_mlp_and_the_head_open_is_read_every_way(first_contact):
    """TeleChat-7B states neither an activation nor tie_word_embeddings (remote code hard-wires both): four readings,
    each counted; alone, the config is refused naming both fields and every reading."""
    readings = derive_readings(unseen(f"holdout9/{TELECHAT}"), TELECHAT)
    assert {tuple(r.assumed.items()): r.row["total_params_b"] for r in readings} == {
        (("hidden_act", "gated"), ("tie_word_embeddings", "tied")): 7.2,
        (("hidden_act", "gated"), ("tie_word_embeddings", "untied")): 7.86,
        (("hidden_act", "ungated"), ("tie_word_embeddings", "tied")): 5.69,
        (("hidden_act", "ungated"), ("tie_word_embeddings", "untied")): 6.35}
    with pytest.raises(ModelConfigError) as refused:
        read_config(unseen(f"holdout9/{TELECHAT}"), TELECHAT)
    assert str(refused.value).startswith(f"{TELECHAT}: config.json leaves 'hidden_act', 'tie_word_embeddings' open")
    assert "7.2B total; " in str(refused.value) and "6.35B total" in str(refused.value)
    assert str(refused.value).endswith("the weights' parameter count would settle it (the Hub's model API for a "
                                       "repository; `models add --weights-index` or `--params` for a config on disk)")


def test_the_weights_count_chooses_the_one_reading_within_3_percent(first_contact):
    """TeleChat-7B's weight index holds 14,400,036,864 bytes: 7,200,018,432 values at 2 bytes (a user's --params; the
    config states no dtype). Only the gated, tied reading is within 3% of it: what TeleChat's code builds (TelechatMLP
    around F.silu; the index lists no lm_head). ruGPT-3 XL's 1,418,678,272 chooses its ungated GELU MLP."""
    row = read_config(unseen(f"holdout9/{TELECHAT}"), TELECHAT, weights=Weights(7_200_018_432, "given with --params"))
    assert row["total_params_b"] == 7.2
    why = row["notes"].split("; config.json leaves ")[1]
    assert why.startswith("'hidden_act', 'tie_word_embeddings' open (the family's code decides): read as a gated MLP "
                          "(gate, up and down projections) and the output head tied to the input embedding, the reading "
                          "whose total is within 3% of the weights' 7,200,018,432 parameters (given with --params) "
                          "(-0.0%); the other readings: ")
    assert "an ungated MLP (up and down) and an untied output head: 6.35B total (-11.8%)" in why
    rugpt = read_config(unseen(f"holdout9/{RUGPT}"), RUGPT, weights=Weights(1_418_678_272, "given with --params"))
    assert rugpt["total_params_b"] == 1.41 and "read as an ungated MLP (up and down)" in rugpt["notes"]


def test_a_count_no_reading_meets_is_refused_naming_the_count(first_contact):
    """The same index read at the wrong width (4 bytes a value, 3,600,009,216): no reading is within 3%."""
    with pytest.raises(ModelConfigError, match=re.escape("none is within 3% of the weights' 3,600,009,216 parameters "
                                                         "(given with --params) (+100.0%, +118.3%, +58.1%, +76.4%)")):
        read_config(unseen(f"holdout9/{TELECHAT}"), TELECHAT, weights=Weights(3_600_009_216, "given with --params"))


def test_two_readings_within_3_percent_whose_active_counts_disagree_are_refused(monkeypatch):
    """DeepSeek-V2-Lite without its class's untied head (the remote code's DeepseekV2Config, now transformers'): tied
    15.5B and untied 15.71B are both within 3% of its card's 15.7B, but their active counts (2.45B, 2.66B) are not
    within 3% of each other: the count cannot tell them apart, so nothing is chosen."""
    monkeypatch.delitem(hf_class_defaults.CLASS_DEFAULTS, "deepseek_v2")
    with pytest.raises(ModelConfigError, match=re.escape("2 are within 3% of the weights' 15,700,000,000 parameters "
                                                         "(given with --params) and their active counts differ by "
                                                         "more than 3% (2.45B to 2.66B)")):
        read_config(unseen("dev/deepseek-ai/DeepSeek-V2-Lite-Chat"), "deepseek-ai/DeepSeek-V2-Lite-Chat",
                    weights=Weights(15_700_000_000, "given with --params"))


def test_a_count_of_packed_integers_or_of_parts_the_readings_leave_out_never_chooses(first_contact, monkeypatch):
    """A quantized checkpoint's count (the model API's, of DeepSeek-V4-Flash-0731's I8 blocks) is no parameter count;
    Molmo-7B-D's weights hold the vision backbone its code builds, which no reading counts: neither chooses."""
    packed = hub_weights(weights("deepseek-ai/DeepSeek-V4-Flash-0731"), "deepseek-ai/DeepSeek-V4-Flash-0731")
    with pytest.raises(ModelConfigError, match=r"the weights' count \(the Hugging Face model API's safetensors "
                                               r"total\) cannot choose: 296.36B of the weights' 304.18B are integers"):
        read_config(unseen(f"holdout9/{TELECHAT}"), TELECHAT, weights=packed)
    monkeypatch.delitem(model_config._FAMILIES, "molmo")  # Molmo's SwiGLU, learnt from the eighth set
    molmo = "reubzdubz/Molmo7B_D_NF4Quant"
    with pytest.raises(ModelConfigError, match="cannot choose: the weights hold a vision tower its code builds"):
        read_config(unseen(f"holdout8/{molmo}"), molmo, weights=Weights(8_021_025_280, "given with --params"))


def test_the_count_is_compared_by_what_the_reading_leaves_out_not_by_its_notes_wording(first_contact):
    """TeleChat-7B left open (tied or untied head, gated or not): its readings' facts, not their notes, decide whether
    the weights' count can choose: readings whose notes are reworded still choose, ones said to leave out MTP layers
    are refused."""
    from transforms.model_catalogue import chosen_reading

    raw, count = unseen(f"holdout9/{TELECHAT}"), Weights(7_200_018_432, "given with --params")
    readings = derive_readings(raw, TELECHAT)
    reworded = [replace(r, row=r.row | {"notes": "reworded"}) for r in readings]
    assert chosen_reading(reworded, count, raw, TELECHAT).row["total_params_b"] == 7.2
    with pytest.raises(ModelConfigError, match="cannot choose: the weights hold multi-token-prediction layers"):
        chosen_reading([replace(r, left_out=frozenset({"mtp"})) for r in readings], count, raw, TELECHAT)

def test_a_weight_index_counts_parameters_by_its_total_and_the_configs_dtype():
    """MiMo-7B's index: 15,666,819,072 bytes of bfloat16, 7,833,409,536 parameters. TeleChat-7B's config states no
    dtype, and Molmo-7B-D NF4's is quantized (packed 4-bit weights): neither index is turned into a count."""
    index = json.loads((INDEXES / "jj8127/mimo_kor/model.safetensors.index.json").read_text())
    counted = index_weights(index, unseen("holdout8/jj8127/mimo_kor"), "model.safetensors.index.json")
    assert counted.params == 7_833_409_536 and counted.source == (
        "model.safetensors.index.json metadata.total_size 15,666,819,072 bytes / 2 (bfloat16; approximate where some "
        "tensors are stored in another dtype)")
    telechat = json.loads((INDEXES / TELECHAT / "pytorch_model.bin.index.json").read_text())
    with pytest.raises(ValueError, match="field 'torch_dtype' is None, not a dtype whose size is known"):
        index_weights(telechat, unseen(f"holdout9/{TELECHAT}"), "pytorch_model.bin.index.json")
    molmo = json.loads((INDEXES / "reubzdubz/Molmo7B_D_NF4Quant/model.safetensors.index.json").read_text())
    with pytest.raises(ValueError, match=r"a quantized checkpoint \(quantization_config\)"):
        index_weights(molmo, unseen("holdout8/reubzdubz/Molmo7B_D_NF4Quant"), "model.safetensors.index.json")
    # MOSS's int8 checkpoint states its GPTQ only by the top-level wbits: its index's bytes are packed integers too
    with pytest.raises(ValueError, match=r"a quantized checkpoint \(wbits\)"):
        index_weights(index, unseen("holdout10/fnlp/moss-moon-003-sft-int8"), "model.safetensors.index.json")
    # an index that states total_parameters (transformers' save_pretrained: the model's num_parameters()) is read by it
    assert index_weights(index | {"metadata": {"total_parameters": 7_833_409_536}}, unseen("holdout8/jj8127/mimo_kor"),
                         "i.json").params == 7_833_409_536


def test_the_hubs_count_chooses_for_a_fetched_config_and_a_users_count_for_one_on_disk(first_contact, monkeypatch):
    """The same rule on both paths. Qwen3-8B's config without its tie_word_embeddings, and qwen3 unknown to the class
    defaults (as a family the reader has not met would be): tied 7.57B or untied 8.19B, and the model API's real
    answer (8,190,735,360 BF16) chooses untied; without the answer the config is refused. A user model file's count
    (TeleChat-7B's, given with --params) chooses the same way."""
    monkeypatch.delitem(hf_class_defaults.CLASS_DEFAULTS, "qwen3")
    qwen = answer("Qwen/Qwen3-8B", config="Qwen/Qwen3-8B")
    qwen = ModelConfig(**{**qwen.__dict__, "repo": "lab/Qwen3-8B-copy",
                          "config": {k: v for k, v in qwen.config.items() if k != "tie_word_embeddings"}})
    done = checked([ModelConfig(**{**qwen.__dict__, "safetensors": weights("Qwen/Qwen3-8B")})], CURATED, {}, DAY, "r1")
    (row,) = done.models
    assert row["total_params_b"] == 8.19 and row["weights_check"] == "within 3% of the weights (-0.0%; the Hugging Face model API's safetensors total)"
    assert "read as an untied output head, the reading whose total is within 3% of the weights' 8,190,735,360 " \
           "parameters (the Hugging Face model API's safetensors total) (-0.0%)" in row["notes"]
    assert by_repo(checked([qwen], CURATED, {}, DAY, "r1"))["lab/Qwen3-8B-copy"]["reason"].endswith(
        "would settle it (the Hub's model API for a repository; `models add --weights-index` or `--params` for a "
        "config on disk)")
    entry = {"model_id": "telechat", "repo": None, "path": "/tmp/c.json", "config": unseen(f"holdout9/{TELECHAT}"),
             "config_sha256": "b" * 64, "added_on": "2026-08-19", "safetensors": None,
             "weights": {"params": 7_200_018_432, "source": "given with --params"}}
    (user,), refused = user_rows([entry], CURATED)
    assert refused == [] and user["total_params_b"] == 7.2
    assert user["weights_check"] == "within 3% of the weights (-0.0%; given with --params)"  # what the row was met by


def test_a_transformers_version_does_not_make_an_absent_tie_word_embeddings_true(monkeypatch):
    """transformers 4's to_diff_dict omits tie_word_embeddings from a file it writes only when it is True, but a config
    carrying transformers_version need not be one it wrote: DeepSeek-V2-Lite-Chat's (4.33.1) omits it, its class unties,
    and the card's 2.4B active (without the input embedding) is the untied reading's. Both readings stay open."""
    monkeypatch.delitem(hf_class_defaults.CLASS_DEFAULTS, "deepseek_v2")  # as if its class were remote code
    raw = unseen("dev/deepseek-ai/DeepSeek-V2-Lite-Chat")
    assert raw["transformers_version"] == "4.33.1" and "tie_word_embeddings" not in raw
    active = {r.assumed["tie_word_embeddings"]: r.row["active_params_b"] - 102_400 * 2048 / 1e9
              for r in derive_readings(raw, "deepseek-ai/DeepSeek-V2-Lite-Chat")}
    assert active["untied"] == pytest.approx(2.4, rel=0.03) and active["tied"] != pytest.approx(2.4, rel=0.03)


_ACTIVATIONS = ("hidden_act", "activation_function", "activation", "ffn_act_fn", "activation_type", "hidden_activation",
                "mlp_hidden_act")


def _left_open(config: dict) -> dict:
    """The config without its activation and tie fields, at the top and in its text_config."""
    def strip(part):
        return {k: v for k, v in part.items() if k not in (*_ACTIVATIONS, "tie_word_embeddings", "weight_tying")}
    out = strip(config)
    if isinstance(config.get("text_config"), dict):
        out["text_config"] = strip(config["text_config"])
    return out


def _tower(config: dict, repo: str) -> float:
    """The vision tower and projector the reader counts apart, 0 where it reads none."""
    try:
        return vision_tower_params(config, repo)
    except ModelConfigError:
        return 0.0


def test_no_fixture_config_left_open_is_given_a_wrong_reading_by_its_own_count(monkeypatch):
    """Every config of the fixtures the reader reads, its activation and tie fields removed and its model_type's
    entries, quirks and class defaults dropped (a family never met), counted by its in-sample row's own total: the
    count chooses the reading the row has, or nothing (weights holding towers or MTP layers, two readings whose active
    counts differ), never another one. (A check of the choosing rule's margins, not of real weights: a real count
    differs from the row by what the row leaves out; a vision tower read by field is added to the count, as it is to
    each reading, so that the count is the whole model's.)"""
    fates = {"right": 0, "wrong": [], "refused": 0}
    for path in sorted((CONFIGS.parent).glob("**/config.json")):
        config = json.loads(path.read_text())
        repo = "/".join(path.parts[-3:-1])
        try:
            truth = read_config(config, repo)
        except ModelConfigError:
            continue
        text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
        kind = text.get("model_type") or config.get("model_type")
        with monkeypatch.context() as m:
            for table in (model_config._FAMILIES, model_config._QUIRKS, model_config._TEXT_CONFIG_DEFAULTS,
                          hf_class_defaults.CLASS_DEFAULTS):
                if kind in table:
                    m.delitem(table, kind)
            try:
                row = read_config(_left_open(config), repo,
                                  weights=Weights(round(truth["total_params_b"] * 1e9 + _tower(config, repo)),
                                                  "the row's own total and its tower"))
            except ModelConfigError:
                fates["refused"] += 1
                continue
        same = all(abs(row[k] / truth[k] - 1) <= 0.03 for k in ("total_params_b", "active_params_b"))
        fates["right"] += same
        if not same:
            fates["wrong"].append(repo)
    assert fates["wrong"] == [] and fates["right"] >= 50 and fates["refused"] >= 50, fates
