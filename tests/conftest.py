"""Shared test set-up: no network, an isolated GPULEDGER_HOME per test, Prefect kept offline."""

import os
import sys
import tempfile
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
FIXTURES = TESTS / "fixtures"
NETGUARD = TESTS / "netguard"

sys.path.insert(0, str(NETGUARD))
import gpuledger_netguard  # noqa: E402

gpuledger_netguard.install()
# Subprocesses started by tests inherit the guard and Prefect's offline switches.
os.environ["GPULEDGER_NETGUARD"] = "1"
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(NETGUARD), os.environ.get("PYTHONPATH")]))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
# One Prefect home for the session, outside the repository; a test that needs its own sets it explicitly.
os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="gpuledger-prefect-")


@pytest.fixture(autouse=True)
def gpuledger_home(tmp_path, monkeypatch) -> Path:
    """Every test gets its own warehouse, raw archive and exports folder."""
    home = tmp_path / "home"
    monkeypatch.setenv("GPULEDGER_HOME", str(home))
    monkeypatch.setenv("GPULEDGER_EXPORTS", str(tmp_path / "exports"))
    return home
