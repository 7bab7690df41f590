"""SIGKILL the pipeline at points of the last load, the derive and the export; every rerun must heal (fetch and the
other loads: test_crash_safety.py)."""

import pytest

from tests.reliability.crash_sweep import LATE_POINTS, sweep

pytestmark = pytest.mark.usefixtures("slim_night")  # their subject is neither the report nor the speed tiers


@pytest.mark.slow
def test_sigkill_in_the_last_load_derive_or_export_then_a_rerun_heals(monkeypatch):
    assert sweep(LATE_POINTS, monkeypatch) == {"load", "derive", "export"}
