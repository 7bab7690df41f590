"""Point every source at a replay of the fixtures, fast and with credentials: the start of every end-to-end test."""

from pathlib import Path

from flows.replay.server import ReplayServer
from tests.sources_support import FAST_ENV, FIXTURES

CREDENTIALS = {"VERDA_CLIENT_ID": "pipeline-test-client", "VERDA_CLIENT_SECRET": "pipeline-test-secret"}
CREDENTIAL_NAMES = ("RUNPOD_API_KEY", "VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET")
# The report draws one model's page (and the market page) in tests whose subject is not the report: a page per
# catalogue model would be most of each nightly run they make (the one_report_page fixture sets it).
REPORT_PAGE = {"GPULEDGER_REPORT_MODELS": "llama-3.3-70b"}


def serve_fixtures(monkeypatch, directory: Path = FIXTURES, *, credentials: dict[str, str] = CREDENTIALS,
                   **server_options) -> ReplayServer:
    """A started replay server (faults={path: spec} and other ReplayServer options), the environment on it."""
    server = ReplayServer(directory, **{"hang_s": 1.0} | server_options).start()
    for name in CREDENTIAL_NAMES:
        monkeypatch.delenv(name, raising=False)
    for name, value in (server.env() | FAST_ENV | credentials).items():
        monkeypatch.setenv(name, value)
    return server
