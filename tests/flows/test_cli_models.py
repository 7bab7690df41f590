"""`gpuledger models`, `models add` and `models show`: a model nobody tracks, added from its config.json, is priced
by every command and kept across `init` and `rebuild`; on a warehouse with a replayed published day."""

import csv
import io
import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from flows import pipeline
from tests.cli_support import gpuledger, invoke
from tests.pipeline_support import serve_fixtures, slim_nights
from tests.sources_support import FIXTURES, SNAPSHOT
from warehouse import user_models

CONFIG = FIXTURES.parent / "hf_configs" / "Qwen" / "Qwen3-VL-8B-Instruct" / "config.json"


def rows(output: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(output)))


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    home = tmp_path_factory.mktemp("models") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULEDGER_HOME", str(home))
        slim_nights(mp)  # neither the report nor the speed tiers are this module's subject
        with serve_fixtures(mp):
            pipeline.run(None, SNAPSHOT, export_format="", trigger="test")
    return home


@pytest.fixture
def home(published, gpuledger_home, slim_night, monkeypatch):
    """A private copy of the published warehouse, without the replay (commands read it only)."""
    shutil.copytree(published, gpuledger_home)
    monkeypatch.setenv("GPULEDGER_NOW", f"{SNAPSHOT}T22:00:00")
    return gpuledger_home


def test_a_model_added_from_its_config_is_priced_and_its_derived_fields_are_in_the_warehouse(home):
    assert "added my-model" in gpuledger("models", "add", "--config", str(CONFIG), "--id", "my-model")
    priced = json.loads(gpuledger("table", "--model", "my-model", "-f", "json"))
    assert priced["table"] and any(r["usd_per_mtok"] is not None for r in priced["table"])
    (row,) = rows(gpuledger("sql", "select * from models where model_id = 'my-model'", "-f", "csv"))
    assert (row["origin"], row["arch"], row["layers"], row["context_max"], row["native_precision"]) == (
        "user", "dense", "36", "262144", "bf16")
    assert row["total_params_b"] == "8.19" and row["kv_bytes_per_token"] == "147456.0" and row["hf_repo"] == ""
    assert row["derived_on"] == str(SNAPSHOT) and len(row["config_sha256"]) == 64
    assert row["source"] == f"derived from {CONFIG.resolve()}"
    assert "my-model" in {r["model_id"] for r in rows(gpuledger("models", "-f", "csv"))}


def test_a_user_model_survives_init_and_rebuild_and_reaches_the_nightly_tables(home):
    gpuledger("models", "add", "--config", str(CONFIG))  # its id: the config's folder, in lower case
    assert user_models.path_of("qwen3-vl-8b-instruct").exists()
    assert "1 read" in gpuledger("init", "--force")
    gpuledger("rebuild", "--from", str(SNAPSHOT), "--no-prefect")
    cost = rows(gpuledger("sql", "select count(*) as n, count(distinct method) as methods from cost_per_mtok "
                                 "where model = 'qwen3-vl-8b-instruct'", "-f", "csv"))
    assert int(cost[0]["n"]) > 0 and cost[0]["methods"] == "3"  # every method of the estimate grid
    assert rows(gpuledger("sql", "select origin from models where model_id = 'qwen3-vl-8b-instruct'", "-f", "csv")) == [
        {"origin": "user"}]
    page = gpuledger("report", "--model", "qwen3-vl-8b-instruct", "--out", str(home / "site")).strip().splitlines()[-1]
    assert (home / "site" / f"date={SNAPSHOT}" / "qwen3-vl-8b-instruct.html").exists() and page.endswith("index.html")


def test_show_names_every_field_and_where_it_came_from(home):
    gpuledger("models", "add", "--config", str(CONFIG), "--id", "my-model")
    shown = json.loads(gpuledger("models", "show", "my-model", "-f", "json"))
    fields = {f["field"]: f for f in shown["fields"]}
    assert (shown["origin"], fields["layers"]["value"], fields["layers"]["from"]) == ("user", 36, "config.json: shape")
    assert fields["context_max"]["from"] == "config.json: context_max"
    assert shown["config"].startswith(f"added {SNAPSHOT} from {CONFIG.resolve()} (sha256 ")
    read = {(r["part"], r["field"]): r["value"] for r in shown["config_fields_read"]}
    assert read[("context_max", "max_position_embeddings")] == "262144" and read[("shape", "num_hidden_layers")] == "36"
    curated = json.loads(gpuledger("models", "show", "qwen3-8b", "-f", "json"))  # its config.json fetched that night
    says = {f["field"]: f["config_json_says"] for f in curated["fields"]}
    assert curated["origin"] == "curated" and "Qwen/Qwen3-8B config.json fetched 2026-11-27" in curated["config"]
    assert says["layers"] == 36 and says["context_max"] == 40960
    # checked against the weights the model API counted that night (tests/fixtures/hf_api: 8,190,735,360 BF16)
    assert (fields := {f["field"]: f for f in curated["fields"]})["weights_params_b"]["value"] == 8.19
    assert fields["weights_check"]["value"] == ("within 3% of the weights (-0.0%; the Hugging Face model API's safetensors total)")  # 8.19B read, 8.1907B counted
    assert "model API" in fields["weights_check"]["from"]
    table = gpuledger("models", "show", "my-model")
    assert "config.json fields the reader read" in table and "max_position_embeddings" in table


def test_a_model_that_cannot_be_added_says_why(home, tmp_path):
    assert "the curated model qwen3-8b already has this id" in gpuledger(
        "models", "add", "--config", str(CONFIG), "--id", "qwen3-8b", code=1)
    broken = tmp_path / "config.json"
    broken.write_text(json.dumps({"hidden_size": 8}))
    assert f"{broken.resolve()}: config.json field 'num_hidden_layers' (or 'num_layers', 'n_layer', 'n_layers') is missing" in gpuledger(
        "models", "add", "--config", str(broken), "--id", "broken", code=1)
    assert not user_models.path_of("broken").exists()
    assert "give --config FILE or --hf OWNER/NAME" in gpuledger("models", "add", code=1)
    assert "not a Hugging Face repository" in gpuledger("models", "add", "--hf", "no-slash", code=1)
    assert "unknown model 'nope'" in gpuledger("models", "show", "nope", code=1)


def test_a_model_is_added_from_its_repository_as_the_nightly_source_fetches_it(home, monkeypatch):
    with serve_fixtures(monkeypatch):
        gpuledger("models", "add", "--hf", "Qwen/Qwen3-VL-32B-Instruct")
        assert "HTTP 404: no such repository" in gpuledger("models", "add", "--hf", "nobody/nothing", code=1)
    entry = json.loads(user_models.path_of("qwen3-vl-32b-instruct").read_text())
    assert entry["repo"] == "Qwen/Qwen3-VL-32B-Instruct" and entry["etag"].startswith('"')
    assert entry["url"].endswith("/Qwen/Qwen3-VL-32B-Instruct/resolve/main/config.json")
    (row,) = rows(gpuledger("sql", "select origin, hf_repo, total_params_b from models "
                                   "where model_id = 'qwen3-vl-32b-instruct'", "-f", "csv"))
    assert row == {"origin": "user", "hf_repo": "Qwen/Qwen3-VL-32B-Instruct", "total_params_b": "32.76"}


def nested(depth: int, fields: dict | None = None) -> str:
    """JSON text of a config.json (or `fields` of a user model file around it) whose one extra field nests `depth`
    objects deep; written as text, as the standard library's encoder would run out of stack first."""
    config = json.dumps(json.loads(CONFIG.read_text()))
    text = config[:-1] + ', "extra": ' + '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1) + "}"
    return text if fields is None else json.dumps(fields)[:-1] + f', "config": {text}}}'


def test_a_config_nested_too_deep_is_refused_and_no_file_is_kept(home, tmp_path):
    deep = tmp_path / "deep" / "config.json"
    deep.parent.mkdir()
    deep.write_text(nested(975))
    assert "nested deeper than 32 levels" in gpuledger("models", "add", "--config", str(deep), "--id", "deep", code=1)
    assert not user_models.path_of("deep").exists()


def test_a_user_model_file_too_deep_misnamed_or_not_a_file_is_refused_and_the_others_load(home):
    gpuledger("models", "add", "--config", str(CONFIG), "--id", "kept")
    folder = user_models.directory()
    kept = json.loads(user_models.path_of("kept").read_text())
    (folder / "deep.json").write_text(nested(3000, {k: v for k, v in kept.items() if k != "config"} | {"model_id": "deep"}))
    (folder / "Bad Name.json").write_text(json.dumps(kept | {"model_id": "Bad Name"}))
    os.mkfifo(folder / "pipe.json")  # read by the glob: opening it would wait for a writer
    output = " ".join(gpuledger("init").split())
    assert "1 read" in output and "deep.json: not a user model file (nested" in output
    assert "Bad Name.json: not a user model file (a model id is lower-case letters, digits" in output
    assert "pipe.json: not a user model file (not a regular file)" in output


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_models_add_reads_only_a_regular_file_of_bounded_size(home, tmp_path, special):
    path = tmp_path / "config.json"
    if special == "fifo":
        os.mkfifo(path)
    else:
        path = Path(special)
    done = []
    worker = threading.Thread(target=lambda: done.append(invoke("models", "add", "--config", str(path), "--id", "x",
                                                                code=1).output), daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive() and special == "fifo":  # release the reader before failing
        with open(path, "w"):
            pass
    assert done and "not a regular file" in done[0]
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (user_models.CONFIG_BYTES + 1))
    assert "larger than 4,194,304 bytes" in gpuledger("models", "add", "--config", str(big), "--id", "x", code=1)


def test_a_repository_id_with_dot_segments_is_refused_before_any_request(home):
    for repo in ("a/..", "owner/.", "-a/b", "a/b--c"):
        assert "not a Hugging Face repository" in gpuledger("models", "add", "--hf", repo, code=1)


def test_a_negative_or_absurd_context_is_refused_naming_the_field(home, tmp_path):
    data = json.loads(CONFIG.read_text())
    path = tmp_path / "negative" / "config.json"
    path.parent.mkdir()
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": -4096}
    path.write_text(json.dumps(data | {"text_config": data["text_config"] | {"rope_scaling": yarn}}))
    output = " ".join(gpuledger("models", "add", "--config", str(path), "--id", "negative", code=1).split())
    assert "'rope_scaling.original_max_position_embeddings' is not" in output
    path.write_text(json.dumps(data | {"text_config": data["text_config"] | {"max_position_embeddings": 2**30}}))
    output = " ".join(gpuledger("models", "add", "--config", str(path), "--id", "negative", code=1).split())
    assert "'max_position_embeddings' is 1,073,741,824, outside the plausible" in output


def test_add_from_a_hub_that_redirects_or_fails_is_what_the_real_one_gives(home, monkeypatch):
    """The fake Hub answers at Hugging Face's paths (/{repo}/resolve/main/config.json, /api/models/{repo}): resolve
    redirecting within its host is followed; a model API that fails leaves the config's row, without the count; a
    config redirected to another host, or a server that keeps failing, adds nothing and says why."""
    repo = "Qwen/Qwen3-VL-8B-Instruct"
    config_path, api_path = f"/{repo}/resolve/main/config.json", f"/api/models/{repo}"
    with serve_fixtures(monkeypatch, faults={config_path: "redirect:307:same", api_path: "503*"}) as server:
        assert "added qwen3-vl-8b-instruct" in gpuledger("models", "add", "--hf", repo)
        assert [c.served for c in server.log if c.path == config_path][:2] == ["redirect:307:same", "ok"]
    entry = json.loads(user_models.path_of("qwen3-vl-8b-instruct").read_text())
    assert entry["safetensors"] is None and entry["config"]["model_type"] == "qwen3_vl"
    with serve_fixtures(monkeypatch, faults={config_path: "redirect:302"}):
        assert "redirected to another host" in gpuledger("models", "add", "--hf", repo, "--id", "elsewhere", code=1)
    with serve_fixtures(monkeypatch, faults={config_path: "500*"}):
        assert "HTTP 500" in gpuledger("models", "add", "--hf", repo, "--id", "failing", code=1)
    assert not user_models.path_of("elsewhere").exists() and not user_models.path_of("failing").exists()


UNSEEN = FIXTURES.parent / "unseen_configs"
INDEXES = FIXTURES.parent / "weight_indexes"  # real weight indexes, trimmed, with PROVENANCE


def test_a_config_on_disk_is_checked_against_the_weight_index_or_count_a_user_has(home, tmp_path, monkeypatch):
    """--weights-index: MiMo-7B's index (15,666,819,072 bytes of bfloat16) counts its weights; TeleChat-7B's config
    states no dtype and Molmo-7B-D NF4's is quantized, so their indexes are refused, saying to give --params. Where the
    config leaves its MLP and head open (TeleChat-7B without the entry its scoring taught), --params chooses the
    reading, and `models show` reads it the same way."""
    mimo = UNSEEN / "holdout8" / "jj8127" / "mimo_kor" / "config.json"
    gpuledger("models", "add", "--config", str(mimo), "--id", "mimo", "--weights-index",
              str(INDEXES / "jj8127" / "mimo_kor" / "model.safetensors.index.json"))
    (row,) = rows(gpuledger("sql", "select total_params_b, weights_params_b, weights_check from models "
                                   "where model_id = 'mimo'", "-f", "csv"))
    assert row == {"total_params_b": "7.62", "weights_params_b": "7.83", "weights_check": (  # the count's source said
        "within 3% of the weights (-2.7%; model.safetensors.index.json metadata.total_size 15,666,819,072 bytes / 2 "
        "(bfloat16; approximate where some tensors are stored in another dtype))")}
    telechat = UNSEEN / "holdout9" / "Tele-AI" / "telechat-7B" / "config.json"
    refused = gpuledger("models", "add", "--config", str(telechat), "--id", "tc", "--weights-index",
                        str(INDEXES / "Tele-AI" / "telechat-7B" / "pytorch_model.bin.index.json"), code=1)
    assert "config.json field 'torch_dtype' is None" in refused and "give --params" in refused
    molmo = UNSEEN / "holdout8" / "reubzdubz" / "Molmo7B_D_NF4Quant" / "config.json"
    assert "a quantized checkpoint" in gpuledger("models", "add", "--config", str(molmo), "--id", "m", "--weights-index", str(
        INDEXES / "reubzdubz" / "Molmo7B_D_NF4Quant" / "model.safetensors.index.json"), code=1)
    assert "one of them" in gpuledger("models", "add", "--config", str(mimo), "--params", "5", "--weights-index",
                                      str(INDEXES / "jj8127" / "mimo_kor" / "model.safetensors.index.json"), code=1)
    assert "--weights-index /nonexistent/index.json: No such file or directory" in gpuledger(
        "models", "add", "--config", str(mimo), "--id", "m", "--weights-index", "/nonexistent/index.json", code=1)
    assert "--weights-index and --params go with --config" in gpuledger("models", "add", "--hf", "a/b", "--params", "5",
                                                                        code=1)
    assert not any(user_models.path_of(m).exists() for m in ("tc", "m"))

    from transforms import model_config
    monkeypatch.delitem(model_config._FAMILIES, "telechat")  # the reader as the ninth held-out set met TeleChat
    assert "the weights' parameter count would settle it" in gpuledger("models", "add", "--config", str(telechat),
                                                                        "--id", "tc", code=1)
    gpuledger("models", "add", "--config", str(telechat), "--id", "tc", "--params", "7200018432")
    assert json.loads(user_models.path_of("tc").read_text())["weights"] == {"params": 7_200_018_432,
                                                                            "source": "given with --params"}
    shown = {f["field"]: f["value"] for f in json.loads(gpuledger("models", "show", "tc", "-f", "json"))["fields"]}
    assert shown["total_params_b"] == 7.2 and "read as a gated MLP (gate, up and down projections) and the output " \
        "head tied to the input embedding" in shown["notes"]


@pytest.mark.parametrize("dtype", [["bfloat16"], {"text": "bfloat16"}])
def test_a_dtype_that_is_a_list_or_an_object_refuses_the_weight_index_naming_the_field(home, tmp_path, dtype):
    config = json.loads((UNSEEN / "holdout8" / "jj8127" / "mimo_kor" / "config.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config | {"torch_dtype": dtype}))
    refused = gpuledger("models", "add", "--config", str(path), "--id", "odd", "--weights-index",
                        str(INDEXES / "jj8127" / "mimo_kor" / "model.safetensors.index.json"), code=1)
    assert "config.json field 'torch_dtype' is" in refused and "give --params" in refused
    assert "Traceback" not in refused and not user_models.path_of("odd").exists()


def test_a_user_model_file_edited_by_hand_is_refused_alone_and_show_says_why(home):
    """A hand-edited weights field (a safetensors of another shape) is that model's refusal: the others still load,
    and `models show` of its row, until the catalogue drops it, says the count cannot be read rather than failing."""
    gpuledger("models", "add", "--config", str(CONFIG), "--id", "kept")
    gpuledger("models", "add", "--config", str(CONFIG), "--id", "edited")
    path = user_models.path_of("edited")
    path.write_text(json.dumps(json.loads(path.read_text()) | {"safetensors": {"total": 5}}))
    shown = json.loads(gpuledger("models", "show", "edited", "-f", "json"))
    assert "its weights' count cannot be read" in shown["config"] and "field 'safetensors'" in shown["config"]
    output = " ".join(gpuledger("init").split())
    assert "user model edited: its file edited.json: field 'safetensors' is not the model API's" in output
    assert {r["model_id"] for r in rows(gpuledger("sql", "select model_id from models where origin = 'user'",
                                                  "-f", "csv"))} == {"kept"}
