"""Hostile config.json files, end to end: one nightly replays the recordings beside a dozen hostile repositories
(absurd but in-range sizes reached through an OpenRouter listing's hugging_face_id, configs whose fields have the
wrong type, zero heads, NaN or text YaRN factors, millions of layers, a repository id `owner/..`, a config.json
that redirects to a signed CDN URL on another host), then a second nightly where one derived model's config
answers 404 and another's repository is no longer followed.

Each config is that repository's record: set aside with its reason (model_configs, unmapped_models), the source
and the night stand, every other config loads.
"""

import json
import shutil
from pathlib import Path

import pytest

from flows import derive, pipeline
from tests.pipeline_support import serve_fixtures, slim_nights
from tests.sources_support import FIXTURES, SNAPSHOT, copy_fixtures
from warehouse import db

QWEN3_8B = json.loads((FIXTURES.parent / "hf_configs" / "Qwen" / "Qwen3-8B" / "config.json").read_text())
QWEN3_MOE = json.loads((FIXTURES.parent / "hf_configs" / "Qwen" / "Qwen3-30B-A3B" / "config.json").read_text())
YARN = {"rope_type": "yarn", "original_max_position_embeddings": 4096}
NO_HEAD_DIM = {k: v for k, v in QWEN3_8B.items() if k != "head_dim"}
# repository -> (its config.json, what its reason must say)
HOSTILE = {
    "hostile/absurd-sizes": (QWEN3_8B | {"hidden_size": 2**30, "intermediate_size": 2**32}, "'hidden_size'"),
    "hostile/text-config-list": (QWEN3_8B | {"text_config": [1, 2]}, "'text_config' is a list"),
    "hostile/rope-list": (QWEN3_8B | {"rope_scaling": [1, 2]}, "'rope_scaling' is a list"),
    "hostile/quant-string": (QWEN3_8B | {"quantization_config": "fp8"}, "'quantization_config' is a str"),
    "hostile/zero-heads": (NO_HEAD_DIM | {"num_attention_heads": 0}, "'num_attention_heads' is 0"),
    "hostile/yarn-nan": (QWEN3_8B | {"rope_scaling": YARN | {"factor": float("nan")}}, "'rope_scaling.factor' is not"),
    "hostile/yarn-missing": (QWEN3_8B | {"rope_scaling": YARN}, "'rope_scaling.factor' is not"),
    "hostile/yarn-text": (QWEN3_8B | {"rope_scaling": YARN | {"factor": "2"}}, "'rope_scaling.factor' is not"),
    "hostile/experts-1e308": (QWEN3_MOE | {"num_experts_per_tok": 1e308}, "'num_experts_per_tok' is not a count"),
    "hostile/many-layers": (QWEN3_8B | {"num_hidden_layers": 100_000}, "'num_hidden_layers'"),
}
CDN = "hostile/in-xet-storage"  # its config.json answers a 307 to a signed URL on another host
SIGNATURE = "c0ffee1234deadbeef5678"  # the signed URL's X-Amz-Signature
# repository -> the Hub's answer to its config.json, for ever: an unexpected refusal, a server error past the retries
REFUSED = {"hostile/bad-request": "400", "hostile/legal-hold": "451", "hostile/server-error": "500"}
GONE, UNFOLLOWED = "hostile/gone-tomorrow", "hostile/unfollowed-tomorrow"  # plausible: derived on the first night
LISTED = {"x-ai/grok-4.6": "hostile/absurd-sizes", "aion-labs/aion-rp-llama-3.1-8b": "evil/.."}  # OpenRouter's hugging_face_id
TOKEN = "hf_hostileconfigstesttoken"


def write_configs(directory: Path, configs: dict[str, dict]) -> None:
    for repo, data in configs.items():
        path = directory / repo / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))  # NaN as the bare token Python writes and Hugging Face would serve


def fixtures(base: Path) -> Path:
    """The recordings, their configs beside the hostile ones, and OpenRouter listing two of them."""
    directory = base / "fixtures"
    shutil.copytree(FIXTURES.parent / "hf_configs", base / "hf_configs")  # a copy, the hostile configs added to it
    copy_fixtures(directory)
    write_configs(base / "hf_configs", {repo: data for repo, (data, _) in HOSTILE.items()}
                  | {CDN: QWEN3_8B, GONE: QWEN3_8B, UNFOLLOWED: QWEN3_8B})
    listings = directory / "openrouter_models_2026-08-19.json"
    data = json.loads(listings.read_text())
    for record in data["data"]:
        record["hugging_face_id"] = LISTED.get(record["id"], record["hugging_face_id"])
    listings.write_text(json.dumps(data))
    return directory


def nightly(mp, directory: Path, followed: list[str], **server):
    mp.setenv("GPULEDGER_HF_MODELS", ",".join(followed))
    with serve_fixtures(mp, directory, **server) as replay:
        mp.setenv("HF_TOKEN", TOKEN)
        mp.setenv("GPULEDGER_NOW", replay.now)
        return pipeline.run(None, SNAPSHOT, export_format="", trigger="test"), replay


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile-configs")
    directory = fixtures(base)
    followed = [*HOSTILE, CDN, *REFUSED, GONE, UNFOLLOWED]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULEDGER_HOME", str(base / "home"))
        slim_nights(mp)  # the configs are the subject, not the speed tiers
        signed = f"http://localhost:1/xet-bridge?X-Amz-Credential=AKIAHOSTILE&X-Amz-Signature={SIGNATURE}&next="
        first, replay = nightly(mp, directory, followed, faults={f"/{CDN}/resolve/main/config.json": "redirect:307*"}
                                | {f"/{repo}/resolve/main/config.json": f"{status}*" for repo, status in REFUSED.items()},
                                elsewhere=signed)
        with db.connect(read_only=True) as con:
            states = {repo: (status, model, reason) for repo, status, model, reason in con.execute(
                "select repo, http_status, model, reason from model_configs").fetchall()}
            priced = con.execute("select count(*) from cost_per_mtok where snapshot_date = ?", [SNAPSHOT]).fetchone()[0]
            fetched = con.execute("select status, error, notes from fetches where source = 'huggingface'").fetchone()
            derived_first = {m for (m,) in con.execute("select hf_repo from models where origin = 'derived'").fetchall()}
            unmapped_first = {repo: (status, reason) for repo, status, reason in con.execute(
                "select repo, http_status, reason from unmapped_models").fetchall()}
        shutil.rmtree(base / "hf_configs" / GONE)  # answers 404 from now on
        second, _ = nightly(mp, directory, [r for r in followed if r != UNFOLLOWED])
        with db.connect(read_only=True) as con:
            derived_second = {m for (m,) in con.execute("select hf_repo from models where origin = 'derived'").fetchall()}
            unmapped = {repo: reason for repo, reason in con.execute("select repo, reason from unmapped_models").fetchall()}
            priced_models = {m for (m,) in con.execute("select distinct model from cost_per_mtok").fetchall()}
    return {"first": first, "second": second, "states": states, "priced": priced, "fetched": fetched,
            "derived_first": derived_first, "derived_second": derived_second, "unmapped": unmapped,
            "unmapped_first": unmapped_first,
            "priced_models": priced_models, "replay": replay, "home": base / "home"}


def test_an_absurd_config_reached_through_an_api_listing_is_refused_naming_the_field_and_the_night_stands(nights):
    first = nights["first"]
    assert first.status == "ok" and first.sources["huggingface"] == "ok" and nights["priced"] > 0
    status, model, reason = nights["states"]["hostile/absurd-sizes"]
    assert (status, model) == (200, None) and "'hidden_size'" in reason
    assert "hostile/absurd-sizes" not in nights["derived_first"]


@pytest.mark.parametrize("repo", list(HOSTILE))
def test_each_hostile_config_is_its_own_reason_and_the_others_load(nights, repo):
    status, model, reason = nights["states"][repo]
    assert status == 200 and model is None and reason and HOSTILE[repo][1] in reason
    assert reason.startswith(f"{repo}: config.json ")
    assert nights["states"]["Qwen/Qwen3-8B"][2] is None  # a sound config beside them is read
    assert {GONE, UNFOLLOWED} <= nights["derived_first"]


def test_the_text_yarn_factor_never_gives_a_context_of_thousands_of_digits(nights):
    assert "('2')" in nights["states"]["hostile/yarn-text"][2]


def test_a_repository_id_with_dot_segments_is_not_asked_and_the_source_stands(nights):
    status, error, notes = nights["fetched"]
    assert status == "ok" and error is None
    assert "evil/.." in notes and "not asked" in notes
    assert not any(call.path == "/resolve/main/config.json" for call in nights["replay"].log)


def test_a_config_redirected_to_another_host_fails_that_repository_alone_without_the_token_or_the_signature(nights):
    status, model, reason = nights["states"][CDN]
    assert (status, model) == (307, None) and "another host" in reason
    assert {call.host for call in nights["replay"].log} == {nights["replay"].url.removeprefix("http://")}
    texts = [nights["fetched"][2] or "", reason]
    texts += [p.read_bytes().decode("utf-8", "replace") for p in (nights["home"] / "raw").rglob("*") if p.is_file()]
    assert not any(SIGNATURE in text or TOKEN in text for text in texts)
    assert any("X-Amz-Signature=[REDACTED]" in text for text in texts)


@pytest.mark.parametrize("repo", list(REFUSED))
def test_an_unexpected_refusal_or_a_server_error_of_one_config_costs_that_repository_alone(nights, repo):
    """The Hub's 400, 451 or a 500 past the retries for one config.json: that repository is unmapped with the status
    and the Hub's words, every other config is read, the source and the night stay ok."""
    assert nights["first"].status == "ok" and nights["first"].sources["huggingface"] == "ok"
    status, reason = nights["unmapped_first"][repo]
    assert status == int(REFUSED[repo]) and reason.startswith(f"HTTP {status}: ")
    assert f"injected {status}" in reason  # what the Hub said
    assert nights["states"]["Qwen/Qwen3-8B"][2] is None and {GONE, UNFOLLOWED} <= nights["derived_first"]


def test_a_derived_row_does_not_outlive_its_config(nights):
    assert nights["second"].status == "ok" and nights["second"].sources["huggingface"] == "ok"
    assert GONE not in nights["derived_second"] and UNFOLLOWED not in nights["derived_second"]
    assert "HTTP 404" in nights["unmapped"][GONE]
    assert "no longer followed" in nights["unmapped"][UNFOLLOWED]
    assert not {"gone-tomorrow", "unfollowed-tomorrow"} & nights["priced_models"]


def test_a_stored_row_beyond_the_bounds_never_stops_the_days_tables(nights, gpuledger_home):
    """A row an earlier version derived before the bounds existed (a thousand trillion billion parameters: a
    tensor-parallel group of 2^33 GPUs, beyond the estimates' INTEGER column): the day derives without it."""
    shutil.copytree(nights["home"], gpuledger_home, dirs_exist_ok=True)
    with db.connect() as con:
        con.execute("insert into models by name select * replace ('absurd' as model_id, 'hostile/absurd' as hf_repo, "
                    "1e12 as total_params_b, 1e12 as active_params_b, 'derived' as origin) "
                    "from models where model_id = 'qwen3-8b'")
        counts, verdict = derive.derive_date(con, SNAPSHOT)
        priced = {m for (m,) in con.execute("select distinct model from cost_per_mtok").fetchall()}
        estimated = {m for (m,) in con.execute("select distinct model from estimates").fetchall()}
    assert counts["replica_prices"] > 0 and verdict.quality
    assert "absurd" not in priced | estimated and "qwen3-8b" in priced
