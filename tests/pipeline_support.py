"""Helpers for pipeline tests: point every source at a replay of the fixtures, fast and with credentials."""

from pathlib import Path

from flows.replay import ReplayServer
from tests.sources_support import FAST_ENV, FIXTURES

CREDENTIALS = {"VERDA_CLIENT_ID": "pipeline-test-client", "VERDA_CLIENT_SECRET": "pipeline-test-secret"}


def serve_fixtures(monkeypatch, directory: Path = FIXTURES, **faults: str) -> ReplayServer:
    """A started replay server with the environment pointing at it; faults as path=spec keyword pairs."""
    server = ReplayServer(directory, hang_s=1.0, faults={p.replace("__", "/"): s for p, s in faults.items()}).start()
    for name, value in (server.env() | FAST_ENV | CREDENTIALS).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RUNPOD_API_KEY", raising=False)
    return server
