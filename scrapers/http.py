"""The shared HTTP client: timeouts, a User-Agent, retries with backoff, pacing, a request budget and a size cap.

Every final response (success, or the last failure) is recorded with credentials kept out (URL query
parameters, redacted JSON keys, no request headers, and any configured credential a provider echoes in a body or
a header replaced), so the caller can archive it before anything parses it.

Redirects are judged here, not by httpx: one is followed only within the origin (scheme, host and port) of the
request, only for a GET, and at most MAX_REDIRECTS times; any other fails the source with the reason, so a
credential is sent to the configured host and nowhere else. A GET with a token follows a redirect within its
origin (the token stays with the host it was configured for): Hugging Face's resolve answers a 307 to its own
/api/resolve-cache/ path, gated repositories included, and huggingface_hub follows it the same way.
"""

import asyncio
import functools
import json
import logging
import time
from collections.abc import Callable, Container, Iterable
from dataclasses import replace
from email.utils import parsedate_to_datetime
from importlib import metadata
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import httpx
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from scrapers.base import SourceError
from scrapers.settings import HttpSettings, Settings
from warehouse import config
from warehouse.records import RawResponse

log = logging.getLogger("gpuledger.scrapers")

REDACTED = "[REDACTED]"
MIN_SECRET_LEN = 8  # shorter values would match ordinary text; no real key or secret is that short
# Compared in lower case. Beside credentials, the parts of a signed URL that grant access until it expires (a
# Hugging Face redirect to its LFS/Xet CDN: S3-style X-Amz-*, CloudFront's Signature, Policy and Key-Pair-Id,
# Google's X-Goog-*, Azure's sig).
SECRET_PARAMS = {"api_key", "apikey", "key", "token", "access_token", "refresh_token", "client_secret", "secret",
                 "password", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token", "policy",
                 "key-pair-id", "x-goog-signature", "x-goog-credential", "sig"}
# Only these response headers are kept: cookies and anything else a server might echo stay out of the archive
# (and the wire length/encoding, which do not describe the decoded, possibly redacted, stored body). ETag and
# X-Repo-Commit say which version of a Hugging Face file was received (the ETag is sent back as If-None-Match);
# X-Error-Code and X-Error-Message say why the Hub refused one (GatedRepo, RepoNotFound, EntryNotFound).
KEPT_HEADERS = ("content-type", "date", "retry-after", "ratelimit", "ratelimit-policy", "x-ratelimit-remaining",
                "x-ratelimit-reset", "etag", "x-repo-commit", "x-error-code", "x-error-message")
MAX_REDIRECTS = 5


def user_agent() -> str:
    try:
        version = metadata.version("gpuledger")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"gpuledger/{version} (+https://github.com/gpuledger/gpuledger)"


def redact_url(url: str) -> str:
    """The URL with user info dropped and secret-looking query parameters replaced."""
    parts = urlsplit(url)
    query = [(k, REDACTED if k.lower() in SECRET_PARAMS else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="[]"), ""))


def redact_json(body: bytes, keys: Iterable[str]) -> tuple[bytes, bool]:
    """Replace the values of the given keys anywhere in a JSON body; (new body, whether anything changed)."""
    keys = set(keys)
    if not keys or not body:
        return body, False
    try:
        data = json.loads(body)
    except ValueError:
        return body, False
    changed = False

    def walk(node):
        nonlocal changed
        if isinstance(node, dict):
            for k, v in node.items():
                if k in keys and v not in (None, ""):
                    node[k], changed = REDACTED, True
                else:
                    walk(v)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(data)
    return (json.dumps(data).encode(), True) if changed else (body, False)


@functools.cache
def _ssl_context():
    # Loading the CA bundle takes tens of milliseconds; one context serves every client of the process.
    return httpx.create_ssl_context()


def make_client(http: HttpSettings, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """An AsyncClient with explicit timeouts and the project's User-Agent that never follows a redirect itself
    (SourceClient decides which redirect to follow)."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(http.read_timeout_s, connect=http.connect_timeout_s),
        headers={"User-Agent": user_agent()},
        transport=transport,
        verify=_ssl_context(),
        follow_redirects=False,
    )


def retry_after_s(value: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _origin(url: httpx.URL) -> tuple[str, str]:
    """(scheme, host[:port]); httpx already leaves a scheme's default port out (http://h:80 is http://h)."""
    return url.scheme, url.host + (f":{url.port}" if url.port else "")


class _Retryable(Exception):
    def __init__(self, raw: RawResponse, wait_s: float | None):
        super().__init__(f"HTTP {raw.status}")
        self.raw, self.wait_s = raw, wait_s


class _Answered(SourceError):
    """A request the server answered with no success: the answer (recorded) and why it is not one. plain: the
    status says it all (no redirect refused, no retries given up)."""

    def __init__(self, message: str, raw: RawResponse, *, plain: bool = False):
        super().__init__(message)
        self.raw, self.plain = raw, plain


class DeadlineExceeded(httpx.TimeoutException):
    """The whole response did not arrive within HttpSettings.deadline_s (a slow trickle); retried like a timeout."""


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, _Retryable | httpx.TransportError)


class SourceClient:
    """One source's HTTP session: retries, pacing, budget, size cap, and the record of what came back."""

    def __init__(
        self,
        source: str,
        settings: Settings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], object] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        on_response: Callable[[RawResponse], None] | None = None,
    ):
        self.source = source
        self.http = settings.http
        self.pacing = settings.pacing_for(source)
        self.secrets = settings.secrets()
        self.requests = 0
        self.last_status: int | None = None
        self.responses: list[RawResponse] = []
        self.notes: list[str] = []
        self._transport, self._sleep, self._clock, self._on_response = transport, sleep, clock, on_response
        self._last_start: float | None = None
        self._client: httpx.AsyncClient | None = None

    async def __aenter__(self) -> "SourceClient":
        self._client = make_client(self.http, self._transport)
        return self

    async def __aexit__(self, *exc) -> None:
        await self._client.aclose()

    @property
    def remaining(self) -> int:
        return self.pacing.max_requests - self.requests

    def _secret_forms(self) -> set[str]:
        """Every known credential value as sent, JSON-escaped and URL-encoded: the ways a body may quote it."""
        return {form for secret in self.secrets if len(secret) >= MIN_SECRET_LEN
                for form in (secret, json.dumps(secret)[1:-1], quote(secret, safe=""))}

    def scrub(self, text: str) -> str:
        """Text for metadata, errors and notes with every known credential value replaced."""
        for form in self._secret_forms():
            text = text.replace(form, REDACTED)
        return text

    def scrub_body(self, body: bytes) -> tuple[bytes, bool]:
        """(the body with every known credential value replaced, whether one was): a provider echoing a credential
        in an error body never puts it at rest (the archive, the mirror). A search per credential; a catalogue
        body holds none, so it is stored as it came."""
        found = False
        for form in self._secret_forms():
            if form.encode() in body:
                body, found = body.replace(form.encode(), REDACTED.encode()), True
        return body, found

    def note(self, message: str) -> None:
        self.notes.append(self.scrub(message))

    def record(self, raw: RawResponse) -> None:
        """Keep a response for the archive (also used for data that did not come over HTTP)."""
        self.responses.append(raw)
        if self._on_response:
            self._on_response(raw)

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: dict | None = None,
        json_body: object = None,
        headers: dict | None = None,
        redact_keys: Iterable[str] = (),
        give_up: Callable[[RawResponse], str | None] | None = None,
        accept: Container[int] = (),
    ) -> RawResponse:
        """Send with retries; return the response (body as received) or raise SourceError naming path and status.

        redact_keys: JSON keys whose values are replaced in the archived request and response bodies.
        give_up: for a retryable status, a reason not to retry (e.g. a daily quota), or None.
        accept: the statuses that are answers rather than failures (a repository's 404, a 304): the response with
        one of them is returned as it is archived instead of raising. A retryable one is still retried first, and
        an answer the status alone does not explain (a redirect refused, a status that persisted through the
        retries or was not retried) is noted with the reason.
        """
        try:
            return await self._request(method, url, params, json_body, headers, redact_keys, give_up)
        except _Answered as exc:
            if exc.raw.status not in accept:
                raise
            if not exc.plain:
                self.note(str(exc))
            return exc.raw

    async def _request(self, method, url, params, json_body, headers, redact_keys, give_up) -> RawResponse:
        path = urlsplit(url).path or "/"
        where = f"{self.source}: {method} {path}"
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.http.attempts),
            wait=self._wait,
            retry=retry_if_exception(_is_retryable),
            sleep=self._sleep,
            before_sleep=lambda state: log.warning(
                "%s: %s, retry %d of %d", where, self.scrub(str(state.outcome.exception())),
                state.attempt_number, self.http.attempts - 1),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    raw, body = await self._attempt(method, url, params, json_body, headers, redact_keys)
                    if raw.status == 429 or raw.status >= 500:
                        self._check_retry(where, raw, give_up)
                        raise _Retryable(raw, retry_after_s(raw.headers.get("retry-after")))
        except _Retryable as exc:
            self.record(exc.raw)
            raise _Answered(
                f"{where}: HTTP {exc.raw.status} after {self.http.attempts} attempts{self._snippet(exc.raw)}", exc.raw
            ) from None
        except httpx.TransportError as exc:
            raise SourceError(
                f"{where}: {type(exc).__name__} after {self.http.attempts} attempts: {self.scrub(str(exc))[:200]}"
            ) from None
        self.record(raw)
        if not raw.ok:
            raise _Answered(f"{where}: HTTP {raw.status}{self._snippet(raw)}", raw, plain=True)
        return replace(raw, body=body)

    def _check_retry(self, where: str, raw: RawResponse, give_up) -> None:
        """Raise instead of retrying when the source says waiting cannot help."""
        reason = give_up(raw) if give_up else None
        wait = retry_after_s(raw.headers.get("retry-after"))
        if wait is not None and wait > self.http.retry_after_max_s:
            reason = f"Retry-After {wait:.0f}s exceeds the {self.http.retry_after_max_s:.0f}s cap"
        if reason:
            self.record(raw)
            raise _Answered(f"{where}: HTTP {raw.status}, not retried: {reason}{self._snippet(raw)}", raw)

    def _snippet(self, raw: RawResponse) -> str:
        text = raw.body[:200].decode("utf-8", "replace").strip()
        return f": {self.scrub(text)}" if text else ""

    def _wait(self, state) -> float:
        exc = state.outcome.exception()
        if isinstance(exc, _Retryable) and exc.wait_s is not None:
            return exc.wait_s
        return wait_exponential_jitter(
            multiplier=self.http.backoff_s, max=self.http.backoff_max_s, jitter=self.http.backoff_s)(state)

    async def _pace(self) -> None:
        if self.requests >= self.pacing.max_requests:
            raise SourceError(f"{self.source}: request budget of {self.pacing.max_requests} used up")
        if self._last_start is not None:
            wait = self._last_start + self.pacing.min_interval_s - self._clock()
            if wait > 0:
                await self._sleep(wait)

    async def _attempt(self, method, url, params, json_body, headers, redact_keys) -> tuple[RawResponse, bytes]:
        """One request and the redirects it may follow: (the response as it will be archived, the body as
        received). A redirect that is not followed is recorded and fails the request with the reason."""
        await self._pace()
        self.requests += 1
        self._last_start = self._clock()
        fetched_at = config.utc_now()
        request = self._client.build_request(method, url, params=params, json=json_body, headers=headers)
        refused = None
        try:
            async with asyncio.timeout(self.http.deadline_s):
                for hop in range(MAX_REDIRECTS + 1):
                    resp = await self._client.send(request, stream=True)
                    try:
                        self.last_status = resp.status_code
                        refused = self._refused(request, resp, hop) if resp.next_request else None
                        if resp.next_request and not refused:
                            request = resp.next_request
                            await request.aread()  # the body httpx carries over, readable like the first one's
                            self.requests += 1  # a hop is a request sent like any other
                            continue
                        body = await self._read_capped(resp, f"{self.source}: {method} {request.url.path}")
                    finally:
                        await resp.aclose()
                    break
        except TimeoutError:  # asyncio.timeout's; httpx reports its own timeouts as httpx.TimeoutException
            raise DeadlineExceeded(f"response not complete within {self.http.deadline_s:g} s") from None
        request_body = request.content.decode("utf-8", "replace") if request.content else None
        kept = {k: self.scrub(resp.headers[k]) for k in KEPT_HEADERS if k in resp.headers}
        final_url = str(request.url)
        # Bodies are archived untouched except for redact_keys (the OAuth token exchange) and a credential echoed
        # (an error page quoting the request): no catalogue body holds one, so no price is ever touched.
        stored, redacted = redact_json(body, redact_keys)
        stored, echoed = self.scrub_body(stored)
        redacted = redacted or echoed
        if request_body is not None:
            request_bytes, request_redacted = redact_json(request_body.encode(), redact_keys)
            request_body, redacted = self.scrub(request_bytes.decode()), redacted or request_redacted
        raw = RawResponse(
            source=self.source,
            method=method,
            url=self.scrub(redact_url(final_url)),
            status=resp.status_code,
            headers=kept,
            body=stored,
            fetched_at=fetched_at,
            request_body=request_body,
            redacted=redacted,
        )
        if refused:
            self.record(raw)
            raise _Answered(f"{self.source}: {method} {urlsplit(url).path or '/'}: {self.scrub(refused)}", raw)
        return raw, body

    def _refused(self, request: httpx.Request, resp: httpx.Response, hop: int) -> str | None:
        """Why the redirect resp asks for is not followed, or None to follow it."""
        target = resp.next_request.url
        refused = f"HTTP {resp.status_code} redirect to {redact_url(str(target))[:200]} refused"
        here = _origin(request.url)
        if _origin(target) != here:
            return f"{refused}: it leaves {urlunsplit((*here, '', '', ''))}"
        if request.method != "GET":
            return f"{refused}: only a GET follows a redirect, this is a {request.method}"
        if hop >= MAX_REDIRECTS:
            return f"{refused}: more than {MAX_REDIRECTS} redirects"
        return None

    async def _read_capped(self, resp: httpx.Response, where: str) -> bytes:
        declared = resp.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.http.max_bytes:
            raise SourceError(f"{where}: response of {declared} bytes exceeds the {self.http.max_bytes}-byte cap")
        body = bytearray()
        async for chunk in resp.aiter_bytes():
            body += chunk
            if len(body) > self.http.max_bytes:
                raise SourceError(f"{where}: response exceeds the {self.http.max_bytes}-byte cap")
        return bytes(body)
