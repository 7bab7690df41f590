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
# pyarrow's S3 client is C++ and bypasses the guard above: every s3:// location a test does not point at its
# own local S3 server (the `s3` fixture) goes to a closed loopback port, with fake credentials and no
# instance-metadata or profile lookup, so no test can reach AWS.
os.environ.update({"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "testing",
                   "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                   "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.devnull,
                   "AWS_SHARED_CREDENTIALS_FILE": os.devnull})
# pytest-xdist's workers are started with COLUMNS=80 and LINES=24, which a table reads as the terminal's width:
# a test sees output as a plain `pytest` run draws it (a pipe), and one that asks for a width sets COLUMNS itself.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
for _name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
    os.environ.pop(_name, None)
# One Prefect home for the session, outside the repository; a test that needs its own sets it explicitly.
os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="gpuledger-prefect-")


@pytest.fixture(autouse=True)
def gpuledger_home(tmp_path, monkeypatch) -> Path:
    """Every test gets its own warehouse, raw archive and exports folder."""
    home = tmp_path / "home"
    monkeypatch.setenv("GPULEDGER_HOME", str(home))
    monkeypatch.setenv("GPULEDGER_EXPORTS", str(tmp_path / "exports"))
    return home


@pytest.fixture
def slim_night(monkeypatch):
    """A nightly run that draws one model's report page (besides the market page) and prices cost_at_speed at one
    tier: for tests whose subject is neither the report nor the speed tiers. A page per catalogue model and a
    stream-count search per tier (a few seconds a run each) would be most of every run such a test makes."""
    from tests.pipeline_support import slim_nights

    slim_nights(monkeypatch)


@pytest.fixture(scope="session")
def report_days(tmp_path_factory):
    """Three replayed days and the report site of two (tests/report_support.py), built once for the report's
    tests: the command's and the browser's read the same pages."""
    from tests.report_support import publish_days

    base = tmp_path_factory.mktemp("report")
    return publish_days(base / "home", base / "site")


@pytest.fixture(scope="session")
def s3_server():
    """One moto S3 server on 127.0.0.1 for the session; tests take their own bucket from it."""
    from tests.s3_support import S3Server

    server = S3Server().start()
    yield server
    server.close()


@pytest.fixture
def s3(s3_server, monkeypatch):
    """The AWS environment pointed at the local S3 server, and a fresh bucket's URL (s3://bucket)."""
    from tests.s3_support import point_at

    point_at(monkeypatch, s3_server)
    return f"s3://{s3_server.bucket()}"



def pytest_collection_modifyitems(config, items):
    """Files with end-to-end tests (marked slow) first, each file's tests kept together: `make test` runs with
    `--no-loadscope-reorder`, so pytest-xdist hands workers whole files in this order, the long ones (the SIGKILL
    sweep, ~200 s in one test) while the many short files are left to fill the end. xdist's own order (most tests
    first) sent the sweep last, where it ran alone."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: within each group, collection order
