"""Point every source at a replay of the fixtures, fast and with credentials: the start of every end-to-end test."""

from pathlib import Path

from flows.replay.server import ReplayServer
from tests.sources_support import FAST_ENV, FIXTURES

CREDENTIALS = {"VERDA_CLIENT_ID": "pipeline-test-client", "VERDA_CLIENT_SECRET": "pipeline-test-secret"}
CREDENTIAL_NAMES = ("RUNPOD_API_KEY", "VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET")
# In tests whose subject is neither the report nor the speed tiers, a night draws one model's page (and the market
# page) and prices cost_at_speed at the chat tier alone: a page per catalogue model and a search per tier would be
# most of each nightly run they make (the slim_night fixture sets it).
SLIM_NIGHT = {"GPULEDGER_REPORT_MODELS": "llama-3.3-70b", "GPULEDGER_SPEED_TIERS": "35"}


def slim_nights(monkeypatch) -> None:
    """The nights run under `monkeypatch` are slim (SLIM_NIGHT); module-scoped fixtures call it on their own patch."""
    for name, value in SLIM_NIGHT.items():
        monkeypatch.setenv(name, value)


def set_env(monkeypatch, env: dict[str, str]) -> None:
    """Every variable of env set under monkeypatch: a module's published warehouse and lake, for one test."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def serve_fixtures(monkeypatch, directory: Path = FIXTURES, *, credentials: dict[str, str] = CREDENTIALS,
                   **server_options) -> ReplayServer:
    """A started replay server (faults={path: spec} and other ReplayServer options), the environment on it."""
    server = ReplayServer(directory, **{"hang_s": 1.0} | server_options).start()
    for name in CREDENTIAL_NAMES:
        monkeypatch.delenv(name, raising=False)
    for name, value in (server.env() | FAST_ENV | credentials).items():
        monkeypatch.setenv(name, value)
    return server
