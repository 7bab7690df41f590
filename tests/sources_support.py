"""Helpers for the source tests: fixture files, raw responses, fast settings, edited fixture copies."""

import asyncio
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import httpx

from scrapers.http import SourceClient
from scrapers.settings import DEFAULT_PACING, HttpSettings, Pacing, Settings
from warehouse.records import RawResponse

FIXTURES = Path(__file__).parent / "fixtures" / "sources"
NOW = datetime(2026, 11, 27, 22, 0)  # the fixtures' recording moment (replay.json "now")
SNAPSHOT = date(2026, 11, 27)
FAST_HTTP = HttpSettings(connect_timeout_s=2.0, read_timeout_s=2.0, attempts=3, backoff_s=0.01, backoff_max_s=0.05)
# Environment that makes a real run fast: no pacing, tiny backoffs, short timeouts.
FAST_ENV = {"GPULEDGER_HTTP_BACKOFF_S": "0.01", "GPULEDGER_HTTP_ATTEMPTS": "3", "GPULEDGER_HTTP_TIMEOUT_S": "2"} | {
    f"GPULEDGER_{name.upper()}_MIN_INTERVAL_S": "0" for name in DEFAULT_PACING}


def fixture_json(name: str):
    return json.loads((FIXTURES / name).read_text())


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def raw(source: str, method: str, path: str, body: bytes | str, *, request_body: str | None = None,
        status: int = 200, base: str = "http://replay.test") -> RawResponse:
    """A response as the archive would give it back (`path` may carry a query string)."""
    body = body.encode() if isinstance(body, str) else body
    return RawResponse(source, method, base + path, status, {"content-type": "application/json"}, body, NOW,
                       request_body)


def fast_settings(url: str = "http://replay.test", **overrides) -> Settings:
    """Settings pointing every source at url, with no pacing and tiny backoffs."""
    base = dict(vastai_url=url, runpod_url=url, verda_url=url, ecb_url=url, frankfurter_url=url, openrouter_url=url,
                verda_pricing_url=url + "/products", http=FAST_HTTP,
                pacing={name: Pacing(0.0, p.max_requests) for name, p in DEFAULT_PACING.items()})
    return Settings(**base | overrides)


SIBLINGS = ("hf_configs", "hf_api", "real")  # what the manifest serves from beside it: configs, the model API, catalogs


def copy_fixtures(directory: Path) -> Path:
    """A copy of the fixture directory at `directory`, the folders its manifest serves from linked beside it as in
    tests/fixtures (a sibling already there, a copy to edit, is kept)."""
    shutil.copytree(FIXTURES, directory)
    for sibling in SIBLINGS:
        if not (directory.parent / sibling).exists():
            (directory.parent / sibling).symlink_to(FIXTURES.parent / sibling)
    return directory


def edited_fixtures(tmp_path: Path, name: str, edit: Callable) -> Path:
    """A copy of the fixture directory where `edit(data)` changed the JSON file `name` (edit may return new data)."""
    directory = copy_fixtures(tmp_path / "fixtures")
    data = json.loads((directory / name).read_text())
    data = edit(data) or data
    (directory / name).write_text(json.dumps(data))
    return directory


@dataclass
class Fetched:
    responses: list[RawResponse]
    client: SourceClient
    seen: list[httpx.Request] = field(default_factory=list)


def fetch_with(module, settings: Settings, answer: Callable[[httpx.Request], httpx.Response], *,
               fetch: Callable | None = None) -> Fetched:
    """Run a source's fetch() (or fetch(client, settings)) against a MockTransport where answer() plays the
    provider; keeps the requests."""
    seen = []

    def handler(request):
        seen.append(request)
        return answer(request)

    client = SourceClient(module.NAME, settings, transport=httpx.MockTransport(handler))

    async def go():
        async with client:
            return await (fetch or module.fetch)(client, settings)

    return Fetched(asyncio.run(go()), client, seen)
