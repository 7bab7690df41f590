"""Prefect kept local and quiet: applied before prefect is first imported, so its settings see it."""

import os
import secrets
import subprocess
import sys
import time

import httpx

from warehouse import config

OFFLINE_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",  # the server's heartbeat to prefect.io
    "DO_NOT_TRACK": "1",  # the SDK's usage telemetry
    # a fresh ephemeral server migrates its database for ~22 s on 2 cores; the default timeout is 20 s
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}


def configure() -> None:
    """Prefect's state under $GPULEDGER_HOME/prefect, telemetry off; explicit user settings win."""
    os.environ.setdefault("PREFECT_HOME", str(config.home() / "prefect"))
    os.makedirs(os.environ["PREFECT_HOME"], exist_ok=True)  # Prefect makes the folder, not its parents
    for name, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(name, value)


def start_local_server(port: int, timeout_s: float = 120.0) -> subprocess.Popen:
    """Start `prefect server start` on 127.0.0.1 (the ephemeral server has no scheduler) and wait for health.

    The server answers only requests carrying a credential made for this start (HTTP basic, Prefect's
    PREFECT_SERVER_API_AUTH_STRING), which this process and the flow runs it starts hold in their environment
    alone: without it, any local process (or a web page the user opens, through the browser) could create a run
    of the served nightly with any parameters. Health checks stay open."""
    configure()
    url = f"http://127.0.0.1:{port}/api"
    auth = f"gpuledger:{secrets.token_urlsafe(32)}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ | {"PREFECT_SERVER_API_AUTH_STRING": auth},
    )
    os.environ["PREFECT_API_AUTH_STRING"] = auth  # this process's client, before prefect is imported
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prefect server exited with code {proc.returncode} before it was healthy")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                os.environ["PREFECT_API_URL"] = url
                return proc
        except httpx.TransportError:
            pass
        time.sleep(1)
    proc.terminate()
    raise RuntimeError(f"prefect server on port {port} was not healthy after {timeout_s:g} s")
