"""Hugging Face: the config.json of every model repository gpuledger follows, `GET /{repo}/resolve/main/config.json`.

Which repositories: every hf_repo and hf_ids of the catalogue's curated models, every hugging_face_id
the API providers listed in their latest successful fetch, and GPULEDGER_HF_MODELS. The source reads them from the
warehouse when it fetches (warehouse.queries.tracked_repos), so it depends on no other source's code: the
pipeline fetches it after the other sources are loaded (scrapers.sources.AFTER_LOAD), so the day's OpenRouter
listings are among them; on a day OpenRouter failed, its last good listings are.

Unchanged configs are not downloaded again: every config is fetched with the ETag Hugging Face sent with it as
If-None-Match, and Hugging Face answers 304 (no body) while the file is the same (its ETag is the file's git blob
hash). A repository answered 401 (gated or private: HF_TOKEN, sent as a Bearer token to the configured host only),
403, 404 or any other refusal but the rate limit (400, 451, ...) is that repository's answer, never the source's
failure: the Hub's words (its X-Error-Code and X-Error-Message headers, else the body's "error") go with the status.
A server error that persists through the retries is that repository's answer too, unless OUTAGE repositories in a
row get one: then the Hub is failing, the source fails and the rest are not asked (a down Hub costs a few
repositories' retries, not every one's). No answer at all (a transport failure after the retries) or a rate limit
that persists fails the source, as for any other. Resolve may redirect to /api/resolve-cache/models/{repo}/{commit}/…
on the same host: the archived URL is then that one, and the parse reads the repository from either. A redirect to
another host (the Hub sends files kept in LFS/Xet storage to a signed CDN URL) is not followed, so the token never
leaves the configured host: it is that repository's answer (its status recorded, the refusal in the fetch's notes
with the URL's signature redacted), never the source's failure; a config.json is a small text file kept in git.
A listed id that is no repository by the Hub's rules (`owner/..`) is not asked, with a note.

Beside each config.json Hugging Face answered (200 or 304), the model API, `GET /api/models/{repo}?expand[]=safetensors`:
its `safetensors` field counts the parameters of the repository's safetensors files per dtype (`parameters`) and in
all (`total`), which transforms.model_catalogue sets beside the total the config derives. A repository with no
safetensors files has no such field; the API's 401/403/404 is that repository's answer, as for config.json, and
any other failure of it (another refusal, a server error, a redirect off the host, no answer) is noted: the config
it would check still stands.
"""

import hashlib
import re
from dataclasses import dataclass, replace

from scrapers import base
from scrapers.base import ModelConfig, ParseResult, SchemaError, SourceError
from scrapers.settings import REPO
from warehouse import db, queries
from warehouse.bounded import CONFIG_DEPTH
from warehouse.records import RawResponse

NAME = "huggingface"
CONFIG_PATH = "/{repo}/resolve/main/config.json"
REDIRECTS = (301, 302, 303, 307, 308)
# The statuses that are one repository's answer, never the source's failure: 304 (unchanged), a redirect not
# followed (to another host, or past the hops allowed), any refusal but the rate limit (401 gated, 403 not granted,
# 404, 400, 451, ...), and a server error that persisted through the retries: the Hub failing for one repository
# costs that repository, the Hub failing for OUTAGE repositories in a row fails the source (the rest are not asked).
ANSWERS = frozenset({304, *REDIRECTS, *(status for status in range(400, 600) if status != 429)})
OUTAGE = 3
REPO_REFUSALS = (401, 403, 404)  # the model API's ordinary refusals (gated, not granted, none): no count, no note
NAMED = 10  # listed ids a note names when they are no repository
MODEL_API_PATH = "/api/models/{repo}"
MODEL_API_QUERY = {"expand[]": "safetensors"}  # the safetensors field alone, not the file list
PARSES_EVERY_STATUS = True  # the parse reads the 304s and 404s too: they are answers, not failed fetches
_PATHS = (re.compile(r"^/(?P<repo>[\w.-]+/[\w.-]+)/resolve/[^/]+/config\.json$"),
          re.compile(r"^/api/resolve-cache/models/(?P<repo>[\w.-]+/[\w.-]+)/[^/]+/config\.json$"))
_MODEL_API = re.compile(r"^/api/models/(?P<repo>[\w.-]+/[\w.-]+)$")


@dataclass(frozen=True)
class Tracked:
    repo: str
    wanted_by: str  # curated | derived | api listing | GPULEDGER_HF_MODELS
    etag: str | None = None  # of the config already held: sent as If-None-Match


def tracked(settings) -> list[Tracked]:
    """The repositories to fetch, from the warehouse (see the module's docstring) and settings.hf_models."""
    with db.connect(read_only=True) as con:
        rows = queries.tracked_repos(con, list(settings.hf_models))
    return [Tracked(repo, wanted_by, etag) for repo, wanted_by, etag in rows]


async def fetch(client, settings) -> list[RawResponse]:
    try:
        repos = tracked(settings)
    except db.WarehouseError as exc:
        raise SourceError(f"{NAME}: the repositories to follow are read from the warehouse: {exc}") from None
    return await fetch_repos(client, settings, repos)


async def fetch_repos(client, settings, repos: list[Tracked]) -> list[RawResponse]:
    """Each repository's config.json, conditional on the ETag held; a repository's answer (ANSWERS) is recorded and
    the next one asked. Repositories past the request budget wait for the next night, with a note."""
    unsound = [t.repo for t in repos if not REPO.fullmatch(t.repo)]
    if unsound:  # named, the first few of them (a listing may send thousands), each cut short
        named = ", ".join(repo[:100] for repo in unsound[:NAMED])
        more = f" and {len(unsound) - NAMED} more" if len(unsound) > NAMED else ""
        client.note(f"{NAME}: {len(unsound)} listed id(s) are not owner/name and were not asked: {named}{more}")
    asked = [t for t in repos if REPO.fullmatch(t.repo)]
    base_url = settings.huggingface_url.rstrip("/")
    failing = 0  # repositories in a row whose config the Hub answered with a server error after the retries
    for index, item in enumerate(asked):
        if client.remaining <= 0:
            client.note(f"{NAME}: request budget used up; {len(asked) - index} repositories wait for the next run")
            break
        headers = {"If-None-Match": item.etag} if item.etag else {}
        if settings.hf_token:
            headers["Authorization"] = f"Bearer {settings.hf_token}"
        answer = await client.request("GET", base_url + CONFIG_PATH.format(repo=item.repo), headers=headers,
                                      accept=ANSWERS)
        failing = failing + 1 if answer.status >= 500 else 0
        if failing == min(OUTAGE, len(asked)):
            also = f", as for the {failing - 1} repositories asked before it" if failing > 1 else ""
            raise SourceError(f"{NAME}: GET {answer.path}: HTTP {answer.status} after the retries{also}: the Hub is "
                              f"failing; {len(asked) - index - 1} repositories wait for the next run")
        if answer.status in (200, 304) and client.remaining > 0:  # the repository is there: its weights' count beside
            try:
                await client.request("GET", base_url + MODEL_API_PATH.format(repo=item.repo), accept=ANSWERS,
                                     headers={k: v for k, v in headers.items() if k == "Authorization"},
                                     params=MODEL_API_QUERY)
            except SourceError as exc:  # the count is a check beside the config, which arrived: noted, not fatal
                client.note(f"{NAME}: {item.repo}: no count of its weights ({exc})")
    return client.responses


def repo_of(raw: RawResponse) -> str:
    """The repository a response answers for, from its (possibly redirected) URL path."""
    for pattern in (*_PATHS, _MODEL_API):
        match = pattern.match(raw.path)
        if match:
            return match["repo"]
    raise SchemaError(NAME, raw.path, "not a config.json path of a Hugging Face repository")


def is_model_api(raw: RawResponse) -> bool:
    """Whether the response is the model API's (the weights' count), not a config.json."""
    return bool(_MODEL_API.match(raw.path))


def parse(responses: list[RawResponse]) -> ParseResult:
    """One ModelConfig per config.json response, the config parsed (JSON) for a 200, with the model API's safetensors
    count of the answer after it (the derivation and the comparison are transforms' work)."""
    result = ParseResult()
    for raw in responses:
        try:
            repo = repo_of(raw)
        except SchemaError as exc:  # an answer no repository can be named for is no record: noted, the rest read
            result.notes.append(str(exc))
            continue
        if is_model_api(raw):
            _weights(raw, repo, result)
            continue
        result.record_count += 1
        etag = raw.headers.get("etag")
        if raw.status != 200:
            said = None if raw.status == 304 else hubs_words(raw)
            result.model_configs.append(ModelConfig(repo, raw.status, raw.fetched_at, etag=etag, error=said))
            continue
        sha256, config, error = hashlib.sha256(raw.body).hexdigest(), None, None
        try:
            config = base.loads(raw.body, max_depth=CONFIG_DEPTH)
        except ValueError as exc:  # base.loads reads JSON nested too deep as a ValueError too
            error = f"config.json is not JSON ({str(exc)[:120] or type(exc).__name__})"
        if error is None and not isinstance(config, dict):
            config, error = None, f"config.json is not a JSON object (a {type(config).__name__})"
        result.model_configs.append(ModelConfig(repo, 200, raw.fetched_at, etag, config, sha256, error))
    return result


def hubs_words(raw: RawResponse) -> str | None:
    """What the Hub said with a refusal, cut short: its X-Error-Code and X-Error-Message headers (what huggingface_hub
    reads), else the JSON body's "error"; None when it said nothing readable."""
    message = raw.headers.get("x-error-message")
    if not message:
        try:
            answer = base.loads(raw.body) if raw.body else None
        except ValueError:
            answer = None
        error = answer.get("error") if isinstance(answer, dict) else None
        message = error if isinstance(error, str) else None
    return ": ".join(filter(None, (raw.headers.get("x-error-code"), message)))[:200] or None


def _weights(raw: RawResponse, repo: str, result: ParseResult) -> None:
    """The model API's safetensors field, set on the repository's config answer before it; an answer without one
    (no safetensors files, or the API refused) leaves it None, a malformed one or an unexpected status is noted and
    left None."""
    index = next((i for i in range(len(result.model_configs) - 1, -1, -1) if result.model_configs[i].repo == repo), None)
    if index is not None and raw.status not in (200, *REPO_REFUSALS):
        said = hubs_words(raw)
        result.notes.append(f"{NAME}: {raw.path}: the model API answered HTTP {raw.status}"
                            + (f" ({said})" if said else "") + ": no count of the weights")
    if index is None or raw.status != 200:
        return
    try:
        answer = base.loads(raw.body)
    except ValueError:
        result.notes.append(f"{NAME}: {raw.path}: the model API's answer is not JSON")
        return
    safetensors = answer.get("safetensors") if isinstance(answer, dict) else None
    if safetensors is None:
        return
    if not is_weights_count(safetensors):
        result.notes.append(f"{NAME}: {raw.path}: field 'safetensors' is not parameters per dtype summing to a total")
        return
    result.model_configs[index] = replace(result.model_configs[index], safetensors={
        "parameters": safetensors["parameters"], "total": safetensors["total"]})


def is_weights_count(safetensors) -> bool:
    """Whether a safetensors field is the model API's count of the weights: parameters per dtype, each a count,
    summing to a positive total (the parse checks the API's answer; the catalogue checks it again where it is read back
    from a user model file or the warehouse, which a hand may have edited)."""
    counts = safetensors.get("parameters") if isinstance(safetensors, dict) else None
    total = safetensors.get("total") if isinstance(safetensors, dict) else None
    return (isinstance(counts, dict) and bool(counts) and all(_count(v) for v in counts.values()) and _count(total)
            and total > 0 and total == sum(counts.values()))


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
