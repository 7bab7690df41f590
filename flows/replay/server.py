"""A replay HTTP server on 127.0.0.1: recorded responses at the providers' real paths, with fault injection.

It serves one of two directory layouts:
- a manifest: `replay.json` = {"recorded_on": "YYYY-MM-DD", "now": ISO 8601 (for GPULEDGER_NOW),
  "env": {VAR: "{url}/path"}, "routes": [{"method", "path", "file", "content_type", "status" (200),
  "auth" ("bearer": 401 without a Bearer header), "etag" (answer with an ETag, and 304 to a request holding it),
  "note"}]} with the files beside it;
- a raw archive (warehouse/archive.py): any directory holding NNNN.meta.json + NNNN.body.gz files, at any
  depth (a run, a date, a source or raw/ itself). When several recordings share a method and path, the one
  whose request body matches is served, else the first.
A manifest may also name "hf_configs": a folder of Hugging Face config.json files as <owner>/<name>/config.json
(tests/fixtures/hf_configs), served at /<owner>/<name>/resolve/main/config.json, and "hf_gated": the repositories
among them that answer 401 without a Bearer token. Hugging Face configs are served as Hugging Face serves them: with
an ETag (the file's git blob hash), and 304 without a body to a request whose If-None-Match is that ETag.
"hf_api": a folder of the model API's answers as <owner>/<name>.json (tests/fixtures/hf_api), served at
/api/models/<owner>/<name> (any other repository's answers 404).
The vast.ai search path applies the request's filters (eq, neq, gt, gte, lt, lte, in, notin on fields the
offers carry), `order` and `limit` to the recorded offers, so query splitting and full searches can be tested.

Faults, per path, are the plans of flows/faults.py: HTTP statuses, transport faults (timeout, drop, truncate,
trickle, huge), payload edits (invalid, html, empty, dup, deep, missing:F, null:F, absurd:F, bigint:F, overflow:F, control:F,
rename:F, string:F, type:CT), an error echoing the request (echo) and redirects (redirect:CODE to another origin,
redirect:CODE:same).
"""

import functools
import hashlib
import json
import logging
import math
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from flows.replay import faults
from warehouse import archive

log = logging.getLogger("gpuledger.replay")

MANIFEST = "replay.json"
VASTAI_SEARCH = "/api/v0/bundles/"
URL_SETTINGS = ("GPULEDGER_VASTAI_URL", "GPULEDGER_RUNPOD_URL", "GPULEDGER_VERDA_URL", "GPULEDGER_SKYPILOT_URL",
                "GPULEDGER_ECB_URL",
                "GPULEDGER_FRANKFURTER_URL", "GPULEDGER_OPENROUTER_URL", "GPULEDGER_HF_URL")
HF_CONFIG = "/{repo}/resolve/main/config.json"
_OPS = {
    "eq": lambda v, x: v == x, "neq": lambda v, x: v != x, "gt": lambda v, x: v > x, "gte": lambda v, x: v >= x,
    "lt": lambda v, x: v < x, "lte": lambda v, x: v <= x, "in": lambda v, x: v in x, "notin": lambda v, x: v not in x,
}
_SPECIAL_KEYS = {"limit", "order", "type", "allocated_storage", "disable_bundling"}


@dataclass
class Route:
    method: str
    path: str
    body: bytes
    content_type: str = "application/json"
    status: int = 200
    auth: str | None = None
    request_body: str | None = None
    etag: bool = False  # answer with the served body's ETag, and 304 to a request that already holds it


def git_etag(body: bytes) -> str:
    """Hugging Face's ETag of a file kept in git (config.json): its quoted git blob hash."""
    return '"' + hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest() + '"'


def hf_routes(directory: Path, gated: list[str]) -> list[Route]:
    """Every <owner>/<name>/config.json under directory, at its Hugging Face resolve path."""
    return [Route("GET", HF_CONFIG.format(repo=f"{p.parent.parent.name}/{p.parent.name}"), p.read_bytes(),
                  auth="bearer" if f"{p.parent.parent.name}/{p.parent.name}" in gated else None, etag=True)
            for p in sorted(directory.glob("*/*/config.json"))]


@dataclass
class Logged:
    """One request the server received (the Authorization header only as present or not)."""

    method: str
    path: str
    query: str
    body: bytes
    authorized: bool
    at: float  # time.monotonic()
    served: str = ""  # the status or fault served
    host: str = ""  # the Host header: another name than the server's own means a client followed a redirect
    holds: str | None = None  # the If-None-Match sent


def _matches(value, condition: dict) -> bool:
    try:
        return all(_OPS[op](value, x) for op, x in condition.items() if op in _OPS)
    except TypeError:
        return False


def vastai_search(offers: list, query: dict) -> list:
    """The recorded offers the search would return: its filters, order and limit applied."""
    for key, condition in query.items():
        if key not in _SPECIAL_KEYS and isinstance(condition, dict):
            offers = [o for o in offers if key not in o or _matches(o[key], condition)]
    for key, direction in reversed(query.get("order") or []):
        offers = sorted(offers, key=lambda o, k=key: (o.get(k) is None, o.get(k) or 0), reverse=direction == "desc")
    return offers[: query["limit"]] if isinstance(query.get("limit"), int) else offers


def load_routes(directory: Path) -> tuple[list[Route], dict]:
    """Routes from a manifest directory or a raw archive, and the manifest's extra fields ({} for an archive)."""
    manifest_path = directory / MANIFEST
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        routes = [Route(r["method"].upper(), r["path"], (directory / r["file"]).read_bytes(),
                        r.get("content_type", "application/json"), r.get("status", 200), r.get("auth"),
                        etag=r.get("etag", False))
                  for r in manifest["routes"]]
        if manifest.get("hf_configs"):
            routes += hf_routes(directory / manifest["hf_configs"], manifest.get("hf_gated", []))
        if manifest.get("hf_api"):
            routes += [Route("GET", f"/api/models/{p.parent.name}/{p.stem}", p.read_bytes())
                       for p in sorted((directory / manifest["hf_api"]).glob("*/*.json"))]
        return routes, manifest
    routes = []
    for run in sorted({p.parent for p in directory.rglob("[0-9][0-9][0-9][0-9].meta.json")}):
        for meta in archive.read_metadata(run):
            if meta["method"] == "FILE":  # data that never came over HTTP (the bundled FX history)
                continue
            routes.append(Route(meta["method"], meta["path"], archive.read_body(meta),
                                meta.get("content_type") or "application/octet-stream", meta["status"],
                                request_body=meta.get("request_body"), etag="etag" in (meta.get("headers") or {})))
    if not routes:
        raise FileNotFoundError(f"{directory}: no {MANIFEST} and no archived responses (NNNN.meta.json)")
    return routes, {}


def _same_json(a: str | bytes | None, b: str | bytes | None) -> bool:
    try:
        return json.loads(a or "null") == json.loads(b or "null")
    except ValueError:
        return a == b


class ReplayServer:
    """Serve recordings on 127.0.0.1 from threads; a context manager (`with ReplayServer(dir) as server`)."""

    def __init__(self, directory: Path, *, port: int = 0, latency_s: float = 0.0, retry_after: str | None = "1",
                 hang_s: float = 5.0, faults: dict[str, str] | None = None, elsewhere: str | None = None):
        self.directory = Path(directory)
        self.routes, self.manifest = load_routes(self.directory)
        self.latency_s, self.retry_after, self.hang_s = latency_s, retry_after, hang_s
        self.log: list[Logged] = []
        self._faults: dict[str, faults.FaultPlan] = {}
        for path, spec in (faults or {}).items():
            self.set_fault(path, spec)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._httpd.replay = self
        self._thread: threading.Thread | None = None
        # where "redirect:CODE" sends a client: another origin, by default this server under another name
        self.elsewhere = elsewhere or f"http://localhost:{self._httpd.server_address[1]}"

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def now(self) -> str | None:
        """The moment the recordings stand for, to pin GPULEDGER_NOW in a replayed run."""
        return self.manifest.get("now")

    def env(self) -> dict[str, str]:
        """Settings that point every source at this server."""
        env = dict.fromkeys(URL_SETTINGS, self.url)
        env |= {k: v.format(url=self.url) for k, v in self.manifest.get("env", {}).items()}
        if self.now:
            env["GPULEDGER_NOW"] = self.now
        return env

    def set_fault(self, path: str, spec: str) -> None:
        self._faults[path] = faults.FaultPlan(spec)

    def clear_faults(self) -> None:
        self._faults.clear()

    def requests_to(self, path: str) -> list[Logged]:
        return [r for r in self.log if r.path == path]

    def start(self) -> "ReplayServer":
        """Serve from a thread; a server already serving keeps its one thread (`with` on a started server).
        A second serve_forever thread would outlive stop(): shutdown() ends one loop, and the other then
        spins on the closed socket for the rest of the process."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                            name="replay", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "ReplayServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def route(self, method: str, path: str, body: bytes) -> Route | None:
        candidates = [r for r in self.routes if r.method == method and r.path == path]
        exact = [r for r in candidates if r.request_body is not None and _same_json(r.request_body, body)]
        return (exact or candidates or [None])[0]

    def payload(self, route: Route, path: str, body: bytes) -> bytes:
        if path != VASTAI_SEARCH or route.status != 200 or (route.request_body and _same_json(route.request_body, body)):
            return route.body
        offers = self._recorded_offers(path)
        if offers is None:
            return route.body  # not the documented shape: serve it as recorded, the client must notice
        return json.dumps({"offers": vastai_search(offers, json.loads(body or b"{}"))}).encode()

    @functools.cache  # noqa: B019 (one server, few paths: decoded once, not once per search of a large payload)
    def _recorded_offers(self, path: str) -> list | None:
        """Every recorded search's offers, once per offer id; None when a recording is not {"offers": [...]}."""
        recorded = [json.loads(r.body) for r in self.routes if r.path == path and r.status == 200]
        if not all(isinstance(data, dict) and isinstance(data.get("offers"), list) for data in recorded):
            return None
        offers, seen = [], set()
        for data in recorded:
            for offer in data["offers"]:
                if offer.get("id") not in seen:
                    seen.add(offer.get("id"))
                    offers.append(offer)
        return offers

    def fault(self, path: str) -> str:
        plan = self._faults.get(path)
        return plan.next() if plan else "ok"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "gpuledger-replay"

    def log_message(self, format, *args):  # noqa: A002 (the stdlib's signature)
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self):
        self._serve()

    def do_POST(self):
        self._serve()

    def _send(self, status: int, body: bytes, content_type: str = "application/json", headers: dict | None = None,
              *, mode: str = "") -> None:
        """Answer; mode is "" (whole body), or the transport fault truncate, trickle or huge (then close)."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if mode == "huge":
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if mode:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        try:
            if mode == "truncate":
                self.wfile.write(body[: len(body) // 2])
            elif mode == "trickle":
                hang_s = self.server.replay.hang_s
                pieces = max(faults.TRICKLE_PIECES, math.ceil(hang_s / faults.TRICKLE_GAP_S))
                step = max(1, -(-len(body) // pieces))
                for start in range(0, len(body), step):
                    time.sleep(hang_s * step / len(body))
                    self.wfile.write(body[start:start + step])
            elif mode == "huge":
                for chunk in faults.padded(body):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")
            else:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up: its deadline or its size cap
            self.close_connection = True

    def _serve(self):
        replay: ReplayServer = self.server.replay
        parts = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        entry = Logged(self.command, parts.path, parts.query, body,
                       (self.headers.get("Authorization") or "").startswith("Bearer "), time.monotonic(),
                       host=self.headers.get("Host") or "", holds=self.headers.get("If-None-Match"))
        replay.log.append(entry)
        if replay.latency_s:
            time.sleep(replay.latency_s)
        fault = entry.served = replay.fault(parts.path)
        if fault in ("timeout", "drop"):
            if fault == "timeout":
                time.sleep(replay.hang_s)
            self.close_connection = True
            return
        moved = faults.redirect(fault)
        if moved:
            status, same_origin = moved
            location = ("" if same_origin else replay.elsewhere.rstrip("/")) + self.path
            self._send(status, json.dumps({"moved": location}).encode(), headers={"Location": location})
            return
        if fault.isdigit():
            status = int(fault)
            headers = {"Retry-After": replay.retry_after} if status in (429, 503) and replay.retry_after else {}
            self._send(status, json.dumps({"error": f"injected {status}"}).encode(), headers=headers)
            return
        if fault == faults.ECHO:
            self._send(400, faults.echoed(self.headers.get("Authorization"), body), "text/plain; charset=utf-8")
            return
        route = replay.route(self.command, parts.path, body)
        if route is None:
            entry.served = "404"
            self._send(404, json.dumps({"error": f"nothing recorded for {self.command} {parts.path}"}).encode())
            return
        if route.auth == "bearer" and not entry.authorized:
            entry.served = "401"
            self._send(401, json.dumps({"code": "unauthorized_request", "message": "missing bearer token"}).encode())
            return
        try:
            payload, content_type = faults.edit(fault, replay.payload(route, parts.path, body), route.content_type)
        except ValueError as exc:  # a fault that cannot apply to this recording: say so loudly, never serve it clean
            log.error("%s %s: %s", self.command, parts.path, exc)
            entry.served = "500"
            self._send(500, json.dumps({"error": f"fault {fault!r} cannot apply: {exc}"}).encode())
            return
        headers = {}
        if route.etag and route.status == 200:
            headers["ETag"] = git_etag(payload)
            if fault not in faults.TRANSPORT and entry.holds == headers["ETag"]:  # a transport fault sends it all
                self._send(304, b"", content_type, headers)
                return
        self._send(route.status, payload, content_type, headers, mode=fault if fault in faults.TRANSPORT else "")
