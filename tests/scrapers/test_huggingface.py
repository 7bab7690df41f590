"""Hugging Face config.json files: conditional fetches (ETag), a gated repository's token, and each repository's
answer (200, 304, 401, 404) parsed as that repository's, never as the source's failure; beside each config, the model
API's count of the weights (real answers in tests/fixtures/hf_api, with their PROVENANCE)."""

import json
from pathlib import Path

import httpx
import pytest

from scrapers import huggingface
from scrapers.base import SourceError
from scrapers.http import redact_url
from scrapers.settings import Pacing
from tests.sources_support import fast_settings, fetch_with, raw
from warehouse import catalog, db, queries

CONFIGS = Path(__file__).parents[1] / "fixtures" / "hf_configs"
API = Path(__file__).parents[1] / "fixtures" / "hf_api"
QWEN = "Qwen/Qwen3-8B"
BODY = (CONFIGS / QWEN / "config.json").read_bytes()
ETAG = '"8f4fd0a5a6cce2a07b1ab29cbad3ed42ad9a8b38"'
HF = "http://hf.test"
# Where the Hub sends a file kept in Xet/LFS storage: a URL signed for a while (its signature grants the file)
SIGNED = ("http://cdn.test/xet/abc?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA0123abcd&"
          "X-Amz-Signature=0123abcdef&Expires=1&Policy=0123abcdPolicy&Key-Pair-Id=K0123abcd")


def settings(**overrides):
    return fast_settings(huggingface_url=HF, **overrides)


def fetch(repos: list[huggingface.Tracked], answer, **overrides):
    """fetch_repos over the given repositories (the source's fetch reads them from the warehouse)."""
    return fetch_with(huggingface, settings(**overrides), answer,
                      fetch=lambda client, s: huggingface.fetch_repos(client, s, repos))


def answer_by_repo(answers: dict[str, httpx.Response]):
    def answer(request: httpx.Request) -> httpx.Response:
        return answers.get(huggingface.repo_of(raw(huggingface.NAME, "GET", request.url.path, b"")),
                           httpx.Response(404, json={"error": "Repository not found"}))
    return answer


def test_each_config_is_asked_with_the_etag_held_and_each_repositorys_answer_is_its_own():
    repos = [huggingface.Tracked(QWEN, "curated", ETAG), huggingface.Tracked("meta-llama/Llama-3.3-70B-Instruct", "curated"),
             huggingface.Tracked("nobody/nothing", "api listing"), huggingface.Tracked("Qwen/Qwen3-14B", "curated")]
    fetched = fetch(repos, answer_by_repo({
        QWEN: httpx.Response(304, headers={"ETag": ETAG}),
        "meta-llama/Llama-3.3-70B-Instruct": httpx.Response(401, json={"error": "Access to model is restricted"}),
        "Qwen/Qwen3-14B": httpx.Response(200, content=BODY, headers={"ETag": '"other"', "X-Repo-Commit": "abc"})}))
    sent = [(str(r.url), r.headers.get("if-none-match")) for r in fetched.seen]
    weights = "?expand%5B%5D=safetensors"  # the model API, beside each config Hugging Face has (200 or 304)
    assert sent == [(f"{HF}/Qwen/Qwen3-8B/resolve/main/config.json", ETAG), (f"{HF}/api/models/Qwen/Qwen3-8B{weights}", None),
                    (f"{HF}/meta-llama/Llama-3.3-70B-Instruct/resolve/main/config.json", None),
                    (f"{HF}/nobody/nothing/resolve/main/config.json", None),
                    (f"{HF}/Qwen/Qwen3-14B/resolve/main/config.json", None), (f"{HF}/api/models/Qwen/Qwen3-14B{weights}", None)]
    assert not any("authorization" in r.headers for r in fetched.seen)  # no token set: none sent
    answers = {c.repo: c for c in huggingface.parse(fetched.responses).model_configs}
    assert {repo: c.http_status for repo, c in answers.items()} == {
        QWEN: 304, "meta-llama/Llama-3.3-70B-Instruct": 401, "nobody/nothing": 404, "Qwen/Qwen3-14B": 200}
    assert answers[QWEN].etag == ETAG and answers[QWEN].config is None
    fetched_one = answers["Qwen/Qwen3-14B"]
    assert fetched_one.config == json.loads(BODY) and fetched_one.etag == '"other"' and len(fetched_one.config_sha256) == 64
    assert fetched.responses[-1].headers["x-repo-commit"] == "abc"  # which commit the config came from, archived


def test_the_token_goes_as_a_bearer_to_the_configured_host_only():
    seen = []

    def answer(request):
        seen.append((request.url.host, request.headers.get("authorization")))
        if request.url.path.startswith("/api/models/"):
            return httpx.Response(200, content=(API / f"{QWEN}.json").read_bytes())
        if request.url.path.startswith("/api/resolve-cache/"):
            return httpx.Response(200, content=BODY)
        if request.url.path.startswith("/other/"):  # resolve redirecting to another host: nothing follows it there
            return httpx.Response(302, headers={"Location": SIGNED})
        return httpx.Response(307, headers={"Location": f"/api/resolve-cache/models/{QWEN}/abc/config.json"})

    fetched = fetch([huggingface.Tracked(QWEN, "curated")], answer, hf_token="hf_secret_token_value")
    token = "Bearer hf_secret_token_value"
    assert seen == [("hf.test", token)] * 3  # resolve's redirect within its host keeps the token (a gated repository),
    # and the model API on the same host has it too
    assert fetched.responses[0].url.endswith(f"/api/resolve-cache/models/{QWEN}/abc/config.json")
    assert "hf_secret_token_value" not in json.dumps([r.headers for r in fetched.responses])
    seen.clear()
    fetched = fetch([huggingface.Tracked("other/model", "curated"), huggingface.Tracked(QWEN, "curated")], answer,
                    hf_token="hf_secret_token_value")
    assert seen == [("hf.test", token)] * 4  # the other repository is asked all the same (no model API after a redirect)
    (note,) = fetched.client.notes
    assert note.startswith("huggingface: GET /other/model/resolve/main/config.json: HTTP 302 redirect to http://cdn.test/")
    assert "refused: it leaves http://hf.test" in note and "X-Amz-Signature=[REDACTED]" in note
    assert "0123abcd" not in note + json.dumps([r.url for r in fetched.responses])
    configs = huggingface.parse(fetched.responses).model_configs
    assert [(c.repo, c.http_status, c.config is not None) for c in configs] == [("other/model", 302, False),
                                                                                  (QWEN, 200, True)]


def test_a_signed_urls_signature_and_credential_are_redacted():
    assert redact_url(SIGNED) == ("http://cdn.test/xet/abc?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=[REDACTED]"
                                  "&X-Amz-Signature=[REDACTED]&Expires=1&Policy=[REDACTED]"
                                  "&Key-Pair-Id=[REDACTED]")


def test_a_server_error_or_a_transport_failure_fails_the_source():
    with pytest.raises(SourceError, match=r"^huggingface: GET /Qwen/Qwen3-8B/resolve/main/config.json: HTTP 503 after the retries: the Hub"):
        fetch([huggingface.Tracked(QWEN, "curated")], lambda request: httpx.Response(503))


def test_repositories_past_the_request_budget_wait_for_the_next_run_with_a_note():
    repos = [huggingface.Tracked(f"owner/model-{i}", "api listing") for i in range(5)]
    fetched = fetch(repos, lambda request: httpx.Response(404), pacing={"huggingface": Pacing(0.0, 2)})
    assert len(fetched.seen) == 2
    assert fetched.client.notes == ["huggingface: request budget used up; 3 repositories wait for the next run"]


def test_a_listed_id_that_is_not_a_repository_is_never_asked():
    repos = [huggingface.Tracked("not a repo", "api listing"), huggingface.Tracked(QWEN, "curated")]
    fetched = fetch(repos, lambda request: httpx.Response(200, content=BODY))
    assert [r.url.path for r in fetched.seen] == ["/Qwen/Qwen3-8B/resolve/main/config.json", "/api/models/Qwen/Qwen3-8B"]
    assert "1 listed id(s) are not owner/name and were not asked: not a repo" in fetched.client.notes[0]


def test_the_repository_is_read_from_a_resolve_path_or_the_cache_it_redirects_to():
    redirected = f"/api/resolve-cache/models/{QWEN}/0a1b2c3d/config.json"
    (config,) = huggingface.parse([raw(huggingface.NAME, "GET", redirected, BODY)]).model_configs
    assert (config.repo, config.http_status, config.config["model_type"]) == (QWEN, 200, "qwen3")
    stray = huggingface.parse([raw(huggingface.NAME, "GET", "/api/spaces/Qwen/Qwen3-8B", BODY),
                               raw(huggingface.NAME, "GET", f"/{QWEN}/resolve/main/config.json", BODY)])
    assert [c.repo for c in stray.model_configs] == [QWEN]  # an answer no repository is named for is noted, no record
    assert stray.notes == ["huggingface: /api/spaces/Qwen/Qwen3-8B: not a config.json path of a Hugging Face repository"]


@pytest.mark.parametrize(("body", "error"), [
    (BODY[: len(BODY) // 2], "config.json is not JSON"),
    (b"[1, 2]", "config.json is not a JSON object (a list)"),
    (b"<!DOCTYPE html><html>Service unavailable</html>", "config.json is not JSON")])
def test_a_body_that_is_no_config_is_that_repositorys_problem(body, error):
    (config,) = huggingface.parse([raw(huggingface.NAME, "GET", f"/{QWEN}/resolve/main/config.json", body)]).model_configs
    assert config.error.startswith(error) and config.config is None and config.http_status == 200


def test_the_repositories_followed_come_from_the_warehouse():
    """The catalogue's hf_repo and hf_ids, the API listings of each provider's latest good fetch and the asked ones,
    once each without case; the etag only where a model or a reason still stands for it."""
    with db.connect() as con:
        catalog.load_catalogs(con)
        con.execute("insert into fetches (run_id, source, snapshot_date, started_at, status) values "
                    "('r1', 'openrouter', '2026-08-18', '2026-08-18 22:00', 'ok'), "
                    "('r2', 'openrouter', '2026-08-19', '2026-08-19 22:00', 'ok')")
        for run_id, repo in (("r1", "old/listing"), ("r2", "zai-org/GLM-4.6"), ("r2", "qwen/qwen3-8b")):
            con.execute("insert into api_prices (snapshot_date, run_id, api_provider, api_model_id, price_kind, tier, "
                        "hugging_face_id, usd_per_mtok_input, usd_per_mtok_output, fetched_at, response_sha256) values "
                        "('2026-08-19', ?, 'openrouter', ?, 'standard', 'base', ?, 1, 2, '2026-08-19', 'x')",
                        [run_id, repo, repo])
        con.execute("insert into model_configs (repo, http_status, etag, reason, checked_on, run_id) values "
                    "('Qwen/Qwen3-8B', 200, '\"held\"', null, '2026-08-18', 'r1'), "
                    "('zai-org/GLM-4.6', 200, '\"unreadable\"', 'its reason', '2026-08-18', 'r1'), "
                    "('gone/derived', 200, '\"stale\"', null, '2026-08-18', 'r1')")
        followed = {repo: (wanted_by, etag) for repo, wanted_by, etag in queries.tracked_repos(
            con, ["gone/derived", "user/asked", "QWEN/qwen3-8b"])}
    curated = {r for m in catalog.read_all()["models"].iter_rows(named=True)
               for r in (m["hf_repo"], *(m["hf_ids"] or "").split()) if r}
    assert set(followed) == curated | {"zai-org/GLM-4.6", "gone/derived", "user/asked"}
    assert followed[QWEN] == ("curated", '"held"') and followed["zai-org/GLM-4.6"] == ("api listing", '"unreadable"')
    assert followed["gone/derived"] == ("GPULEDGER_HF_MODELS", None)  # no row and no reason: fetched whole
    assert "old/listing" not in followed  # an older fetch's listing


def test_a_repository_that_never_answers_fails_the_source_even_after_one_that_did():
    def answer(request):
        if "Qwen3-8B" in request.url.path:
            return httpx.Response(304)
        raise httpx.ConnectError("connection refused", request=request)

    repos = [huggingface.Tracked(QWEN, "curated", ETAG), huggingface.Tracked("Qwen/Qwen3-14B", "curated", ETAG)]
    with pytest.raises(SourceError, match=r"Qwen3-14B/resolve/main/config.json: ConnectError after 3 attempts"):
        fetch(repos, answer)


def test_ids_with_dot_segments_or_thousands_of_them_are_never_asked_and_the_note_stays_short():
    unsound = ["owner/..", "a/.", "../b", "-a/b", "a/b--c", "a/b.git", "o" * 97 + "/b"]
    repos = [huggingface.Tracked(r, "api listing") for r in unsound + [f"x/{i}!" for i in range(5000)]]
    fetched = fetch(repos + [huggingface.Tracked(QWEN, "curated")], lambda request: httpx.Response(200, content=BODY))
    assert [r.url.path for r in fetched.seen] == ["/Qwen/Qwen3-8B/resolve/main/config.json", "/api/models/Qwen/Qwen3-8B"]
    (note,) = fetched.client.notes
    assert note.startswith("huggingface: 5007 listed id(s) are not owner/name and were not asked: owner/.., a/., ../b")
    assert note.endswith(" and 4997 more") and len(note) < 1_500


def _config_then_api(repo: str, api_status: int, api_body: bytes) -> list:
    return [raw(huggingface.NAME, "GET", f"/{repo}/resolve/main/config.json", BODY),
            raw(huggingface.NAME, "GET", f"/api/models/{repo}", api_body, status=api_status)]


@pytest.mark.parametrize(("repo", "parameters", "total"), [
    ("Qwen/Qwen3-235B-A22B", {"BF16": 235_093_634_560}, 235_093_634_560),
    ("deepseek-ai/DeepSeek-V4-Flash-0731", {"BF16": 1_483_567_488, "I64": 2_327_040, "F32": 37_741_630,
                                            "F8_E4M3": 6_304_038_912, "I8": 296_352_743_424}, 304_180_418_494),
])
def test_the_model_apis_count_of_the_weights_goes_with_the_config(repo, parameters, total):
    (config,) = huggingface.parse(_config_then_api(repo, 200, (API / f"{repo}.json").read_bytes())).model_configs
    assert config.safetensors == {"parameters": parameters, "total": total}


@pytest.mark.parametrize(("status", "body", "note"), [
    (404, b'{"error":"Repository not found"}', None),  # the API's own answer: no count, no note
    (200, b'{"id":"Qwen/Qwen3-8B"}', None),  # no safetensors files (only .bin): no count
    (200, b"<html>busy</html>", "the model API's answer is not JSON"),
    (200, b'{"safetensors":{"parameters":{"BF16":10},"total":11}}', "field 'safetensors' is not parameters per dtype"),
])
def test_a_model_api_answer_without_a_count_leaves_the_config_as_it_is(status, body, note):
    result = huggingface.parse(_config_then_api(QWEN, status, body))
    (config,) = result.model_configs
    assert config.safetensors is None and config.config["model_type"] == "qwen3"
    assert [n for n in result.notes if note and note in n] if note else not result.notes


# The Hub's refusals as it sends them (huggingface_hub's hf_raise_for_status reads the same): an X-Error-Code header
# (GatedRepo, RepoNotFound, EntryNotFound), an X-Error-Message header, and a JSON body with an "error" field.
GATED_403 = httpx.Response(403, json={"error": "Access to model google/gemma-3-4b-pt is restricted and you are not in "
                                              "the authorized list. Visit https://huggingface.co/google/gemma-3-4b-pt "
                                              "to ask for access."},
                           headers={"X-Error-Code": "GatedRepo", "X-Error-Message": "Access to model "
                                    "google/gemma-3-4b-pt is restricted and you are not in the authorized list. Visit "
                                    "https://huggingface.co/google/gemma-3-4b-pt to ask for access."})


@pytest.mark.parametrize("refusal", [
    httpx.Response(400, json={"error": "Invalid repo name"}),
    GATED_403,
    httpx.Response(451, json={"error": "Unavailable for legal reasons"}),
    httpx.Response(418, text="I'm a teapot")])
def test_an_unexpected_refusal_of_one_config_costs_that_repository_alone(refusal):
    repos = [huggingface.Tracked("odd/one", "api listing"), huggingface.Tracked("Qwen/Qwen3-14B", "curated")]
    fetched = fetch(repos, answer_by_repo({"odd/one": refusal, "Qwen/Qwen3-14B": httpx.Response(200, content=BODY)}))
    answers = {c.repo: c for c in huggingface.parse(fetched.responses).model_configs}
    assert {repo: c.http_status for repo, c in answers.items()} == {"odd/one": refusal.status_code, "Qwen/Qwen3-14B": 200}
    assert answers["Qwen/Qwen3-14B"].config == json.loads(BODY)
    assert fetched.responses[0].status == refusal.status_code  # archived as the Hub answered it


def test_the_hubs_own_words_for_a_refusal_are_the_repositorys_error():
    """What the Hub says (X-Error-Code, X-Error-Message, else the body's "error") is kept and goes with the status."""
    fetched = fetch([huggingface.Tracked("google/gemma-3-4b-pt", "curated"), huggingface.Tracked("odd/one", "curated")],
                    answer_by_repo({"google/gemma-3-4b-pt": GATED_403,
                                    "odd/one": httpx.Response(400, json={"error": "Invalid repo name"})}))
    gated, odd = huggingface.parse(fetched.responses).model_configs
    assert gated.error.startswith("GatedRepo: Access to model google/gemma-3-4b-pt is restricted and you are not in")
    assert odd.error == "Invalid repo name" and gated.config is None and odd.config is None


def test_a_refused_model_api_leaves_the_config_standing_with_a_note():
    def answer(request):
        if request.url.path.startswith("/api/models/"):
            return httpx.Response(400, json={"error": "Invalid expand parameter"})
        return httpx.Response(200, content=BODY)

    fetched = fetch([huggingface.Tracked(QWEN, "curated"), huggingface.Tracked("Qwen/Qwen3-14B", "curated")], answer)
    assert len(fetched.seen) == 4  # both configs and both model APIs asked
    result = huggingface.parse(fetched.responses)
    assert [(c.repo, c.http_status, c.safetensors) for c in result.model_configs] == [(QWEN, 200, None),
                                                                                     ("Qwen/Qwen3-14B", 200, None)]
    assert any("/api/models/Qwen/Qwen3-8B: the model API answered HTTP 400" in n and "Invalid expand" in n
               for n in result.notes)


def test_one_repositorys_server_error_after_the_retries_costs_it_alone_with_a_note():
    repos = [huggingface.Tracked("broken/one", "api listing"), huggingface.Tracked("Qwen/Qwen3-14B", "curated")]
    fetched = fetch(repos, answer_by_repo({"broken/one": httpx.Response(500, json={"error": "Internal Error"}),
                                           "Qwen/Qwen3-14B": httpx.Response(200, content=BODY)}))
    assert [r.url.path for r in fetched.seen].count("/broken/one/resolve/main/config.json") == 3  # retried first
    answers = {c.repo: c.http_status for c in huggingface.parse(fetched.responses).model_configs}
    assert answers == {"broken/one": 500, "Qwen/Qwen3-14B": 200}
    assert fetched.client.notes == ['huggingface: GET /broken/one/resolve/main/config.json: HTTP 500 after 3 attempts: '
                                    '{"error":"Internal Error"}']


def test_server_errors_for_several_repositories_in_a_row_fail_the_source_and_the_rest_are_not_asked():
    repos = [huggingface.Tracked(QWEN, "curated")] + [huggingface.Tracked(f"owner/model-{i}", "api listing")
                                                      for i in range(10)]
    fetched_before = []

    def answer(request):
        fetched_before.append(request.url.path)
        return httpx.Response(200, content=BODY) if QWEN in request.url.path else httpx.Response(503)

    with pytest.raises(SourceError, match=r"^huggingface: GET /owner/model-2/resolve/main/config.json: HTTP 503 after the "
                                          r"retries, as for the 2 repositories asked before it: the Hub is failing; "
                                          r"7 repositories wait"):
        fetch(repos, answer)
    assert len(fetched_before) == 2 + 3 * 3  # Qwen's config and count, then three repositories' 3 attempts each
