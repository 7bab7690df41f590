import asyncio
import time

import httpx
import pytest

from scrapers.base import SourceError, json_body
from scrapers.http import (
    MAX_REDIRECTS,
    REDACTED,
    SourceClient,
    make_client,
    redact_json,
    redact_url,
    retry_after_s,
    user_agent,
)
from scrapers.settings import HttpSettings, Pacing, from_env
from tests.sources_support import FAST_HTTP, fast_settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Script:
    """A MockTransport handler answering from a list of responses/exceptions, recording what it saw."""

    def __init__(self, *answers):
        self.answers, self.seen = list(answers), []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


NO_PACING = Pacing(0, 40)


def client_for(script, *, http=FAST_HTTP, pacing=NO_PACING, secrets=None, sleeps=None, clock=None):
    settings = fast_settings(http=http, pacing={"test": pacing}, **(secrets or {}))

    async def record_sleep(seconds):
        sleeps.append(seconds)

    kwargs = {"sleep": record_sleep} if sleeps is not None else {}
    if clock:
        kwargs["clock"] = clock
    return SourceClient("test", settings, transport=httpx.MockTransport(script), **kwargs)


async def test_two_429s_then_success_waits_what_retry_after_says():
    script = Script(httpx.Response(429, headers={"Retry-After": "7"}), httpx.Response(429, headers={"Retry-After": "7"}),
                    httpx.Response(200, json={"ok": True}))
    sleeps = []
    async with client_for(script, sleeps=sleeps) as client:
        response = await client.request("GET", "http://replay.test/x")
    assert json_body(response) == {"ok": True}
    assert client.requests == 3 and len(script.seen) == 3
    assert sleeps == [7.0, 7.0]
    assert [r.status for r in client.responses] == [200]  # only the final response is kept for the archive


async def test_5xx_and_connection_errors_back_off_exponentially_with_jitter():
    script = Script(httpx.Response(503), httpx.ConnectError("refused"), httpx.Response(502), httpx.Response(200))
    sleeps = []
    http = HttpSettings(attempts=5, backoff_s=1.0, backoff_max_s=60)
    async with client_for(script, http=http, sleeps=sleeps) as client:
        await client.request("GET", "http://replay.test/x")
    assert client.requests == 4
    assert 1 <= sleeps[0] <= 2 and 2 <= sleeps[1] <= 3 and 4 <= sleeps[2] <= 5


async def test_a_permanent_500_fails_naming_source_path_and_status_and_keeps_the_last_response():
    script = Script(httpx.Response(500, text="upstream exploded"))
    async with client_for(script, sleeps=[]) as client:
        with pytest.raises(SourceError, match=r"test: GET /api/x: HTTP 500 after 3 attempts: upstream exploded"):
            await client.request("GET", "http://replay.test/api/x?a=1")
    assert client.requests == 3
    assert [r.status for r in client.responses] == [500]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_other_4xx_are_not_retried(status):
    script = Script(httpx.Response(status))
    async with client_for(script, sleeps=[]) as client:
        with pytest.raises(SourceError, match=f"HTTP {status}"):
            await client.request("GET", "http://replay.test/x")
    assert client.requests == 1


async def test_read_timeouts_are_retried_then_reported():
    script = Script(httpx.ReadTimeout("slow"))
    async with client_for(script, sleeps=[]) as client:
        with pytest.raises(SourceError, match="test: GET /x: ReadTimeout after 3 attempts"):
            await client.request("GET", "http://replay.test/x")
    assert client.requests == 3


async def test_give_up_stops_retrying_a_quota_429():
    script = Script(httpx.Response(429, json={"error": "search_quota_exceeded"}))
    async with client_for(script, sleeps=[]) as client:
        with pytest.raises(SourceError, match="not retried: daily quota"):
            await client.request("POST", "http://replay.test/q", json_body={},
                                 give_up=lambda r: "daily quota" if b"quota" in r.body else None)
    assert client.requests == 1


async def test_a_retry_after_beyond_the_cap_fails_instead_of_stalling():
    script = Script(httpx.Response(429, headers={"Retry-After": "3600"}))
    async with client_for(script, sleeps=[]) as client:
        with pytest.raises(SourceError, match="Retry-After 3600s exceeds the 120s cap"):
            await client.request("GET", "http://replay.test/x")
    assert client.requests == 1


async def test_bodies_over_the_size_cap_are_refused():
    script = Script(httpx.Response(200, content=b"x" * 2000))
    async with client_for(script, http=HttpSettings(max_bytes=1000)) as client:
        with pytest.raises(SourceError, match="exceeds the 1000-byte cap"):
            await client.request("GET", "http://replay.test/big")


async def test_a_slow_trickle_is_cut_at_the_deadline_although_every_read_is_quick():
    async def trickle():
        for _ in range(20):
            await asyncio.sleep(0.02)
            yield b" "

    started = time.monotonic()
    async with client_for(lambda request: httpx.Response(200, content=trickle()), sleeps=[],
                          http=HttpSettings(attempts=2, deadline_s=0.1)) as client:
        with pytest.raises(SourceError, match=r"test: GET /x: DeadlineExceeded after 2 attempts: .* within 0.1 s"):
            await client.request("GET", "http://replay.test/x")
    assert client.requests == 2 and time.monotonic() - started < 0.35  # the whole trickle would take 0.8 s


def test_the_deadline_and_the_size_cap_are_settings():
    http = from_env({"GPULEDGER_HTTP_DEADLINE_S": "7.5", "GPULEDGER_HTTP_MAX_BYTES": "1024"}).http
    assert (http.deadline_s, http.max_bytes) == (7.5, 1024)
    assert (from_env({}).http.deadline_s, from_env({}).http.max_bytes) == (120.0, 64 * 2**20)


async def test_requests_are_paced_and_budgeted():
    now = [100.0]
    sleeps = []
    script = Script(httpx.Response(200))
    async with client_for(script, pacing=Pacing(min_interval_s=6.0, max_requests=2), sleeps=sleeps,
                          clock=lambda: now[0]) as client:
        await client.request("GET", "http://replay.test/a")
        now[0] += 1.5
        await client.request("GET", "http://replay.test/b")
        with pytest.raises(SourceError, match="request budget of 2 used up"):
            await client.request("GET", "http://replay.test/c")
    assert sleeps == [4.5]
    assert client.remaining == 0


async def test_user_agent_and_explicit_timeouts():
    script = Script(httpx.Response(200))
    async with client_for(script) as client:
        await client.request("GET", "http://replay.test/x")
    assert script.seen[0].headers["user-agent"] == user_agent()
    assert user_agent().startswith("gpuledger/")
    client = make_client(HttpSettings(connect_timeout_s=3, read_timeout_s=9))
    assert (client.timeout.connect, client.timeout.read) == (3, 9)


async def test_what_is_archived_carries_no_credentials_and_an_echoed_one_alone_is_replaced_in_the_body():
    secret = "sentinel-secret-0123456789"
    body = b'{"securePrice": 1.5, "echo": "sentinel-secret-0123456789"}'
    script = Script(httpx.Response(200, content=body))
    async with client_for(script, secrets={"verda_client_secret": secret}) as client:
        await client.request("POST", f"http://replay.test/t?api_key={secret}&x=1", headers={"Authorization": secret},
                             json_body={"client_secret": secret, "grant_type": "client_credentials"},
                             redact_keys=("client_secret",))
    kept = client.responses[0]
    assert secret not in kept.url and "api_key=[REDACTED]" in kept.url and "x=1" in kept.url
    assert secret not in kept.request_body and "client_credentials" in kept.request_body
    assert kept.redacted
    assert kept.body == b'{"securePrice": 1.5, "echo": "[REDACTED]"}'  # the credential alone: the price stays
    assert script.seen[0].headers["authorization"] == secret  # sent, never stored (RawResponse has no request headers)


def redirect(status: int, location: str) -> httpx.Response:
    return httpx.Response(status, headers={"Location": location}, content=b"moved")


async def test_a_get_without_credentials_follows_a_redirect_within_its_origin():
    script = Script(redirect(301, "/y?page=2"), httpx.Response(200, json={"ok": True}))
    async with client_for(script) as client:
        raw = await client.request("GET", "http://replay.test/x")
    assert [str(r.url) for r in script.seen] == ["http://replay.test/x", "http://replay.test/y?page=2"]
    assert json_body(raw) == {"ok": True} and raw.url == "http://replay.test/y?page=2" and client.requests == 2


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("location", ["http://elsewhere.test/t", "https://replay.test/t", "http://replay.test:8080/t"])
async def test_a_redirect_to_another_origin_is_refused_before_anything_is_sent_there(status, location):
    secret = "sentinel-secret-0123456789"
    script = Script(redirect(status, location))
    async with client_for(script, secrets={"verda_client_secret": secret}) as client:
        with pytest.raises(SourceError, match=rf"^test: POST /token: HTTP {status} redirect to {location} refused: "
                                              r"it leaves http://replay.test$"):
            await client.request("POST", "http://replay.test/token", json_body={"client_secret": secret},
                                 redact_keys=("client_secret",))
    assert [r.url.host for r in script.seen] == ["replay.test"] and len(script.seen) == 1  # never retried elsewhere
    assert client.responses[0].status == status and client.last_status == status  # archived, the secret redacted
    assert secret not in client.responses[0].request_body


async def test_within_the_origin_a_post_is_not_redirected():
    script = Script(redirect(307, "/y"), httpx.Response(200))
    async with client_for(script) as client:
        with pytest.raises(SourceError, match="test: POST /x: HTTP 307 redirect to http://replay.test/y refused: "
                                              "only a GET follows a redirect, this is a POST"):
            await client.request("POST", "http://replay.test/x")
    assert len(script.seen) == 1


async def test_within_the_origin_a_get_with_a_token_follows_and_the_token_stays_on_the_host():
    """Hugging Face's resolve answers a 307 to its own /api/resolve-cache/ path, for gated repositories too."""
    script = Script(redirect(307, "/api/resolve-cache/y"), httpx.Response(200, content=b"{}"))
    async with client_for(script) as client:
        raw = await client.request("GET", "http://replay.test/x", headers={"Authorization": "Bearer t0ken-of-hf"})
    assert raw.url == "http://replay.test/api/resolve-cache/y" and raw.status == 200
    assert [(r.url.host, r.headers.get("authorization")) for r in script.seen] == [
        ("replay.test", "Bearer t0ken-of-hf")] * 2


async def test_a_redirect_loop_stops_after_a_few_hops():
    script = Script(redirect(302, "/x"))
    async with client_for(script) as client:
        with pytest.raises(SourceError, match=f"more than {MAX_REDIRECTS} redirects"):
            await client.request("GET", "http://replay.test/x")
    assert len(script.seen) == MAX_REDIRECTS + 1


def test_redaction_helpers():
    assert redact_url("https://u:p@api.test/graphql?api_key=K&q=1") == "https://api.test/graphql?api_key=[REDACTED]&q=1"
    body, changed = redact_json(b'{"access_token": "T", "nested": [{"refresh_token": "R"}], "scope": "s"}',
                                ("access_token", "refresh_token"))
    assert changed and b'"T"' not in body and b'"R"' not in body and body.count(REDACTED.encode()) == 2
    assert redact_json(b"not json", ("access_token",)) == (b"not json", False)


def test_retry_after_accepts_seconds_and_http_dates():
    assert retry_after_s("3") == 3.0
    assert retry_after_s(None) is None and retry_after_s("soon") is None
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: no wait


def test_the_client_loads_without_httpx_own_command_line_client():
    # ~70 ms of every fetching command: click, rich's console and pygments, for a client gpuledger never runs
    import subprocess
    import sys

    probe = ("import sys, scrapers.http, httpx\n"
             "print(sorted(m for m in ('click', 'pygments', 'httpx._main') if sys.modules.get(m)), callable(httpx.main))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["[]", "True"], run.stdout + run.stderr


async def test_accepted_statuses_are_answers_returned_as_archived_not_failures():
    """A source names the statuses that are answers (a repository's 404, a 304): returned, recorded, never raised;
    one the status alone does not explain (retries given up, a redirect refused) is noted with the reason."""
    script = Script(httpx.Response(404, json={"error": "Repository not found"}), httpx.Response(503),
                    httpx.Response(302, headers={"Location": "http://elsewhere.test/file"}))
    async with client_for(script) as client:
        missing = await client.request("GET", "http://replay.test/a", accept={404, 503, 302})
        assert (missing.status, missing.body, client.notes) == (404, b'{"error":"Repository not found"}', [])
        script.answers = [httpx.Response(503)]
        failing = await client.request("GET", "http://replay.test/b", accept={404, 503, 302})
        assert failing.status == 503 and len(script.seen) == 1 + FAST_HTTP.attempts  # retried first
        assert client.notes == [f"test: GET /b: HTTP 503 after {FAST_HTTP.attempts} attempts"]
        script.answers = [httpx.Response(302, headers={"Location": "http://elsewhere.test/file"})]
        moved = await client.request("GET", "http://replay.test/c", accept={404, 503, 302})
        assert moved.status == 302 and "refused: it leaves http://replay.test" in client.notes[-1]
        with pytest.raises(SourceError, match=r"^test: GET /d: HTTP 404"):  # not accepted here: a failure
            script.answers = [httpx.Response(404)]
            await client.request("GET", "http://replay.test/d", accept={410})
    assert [r.status for r in client.responses] == [404, 503, 302, 404]
