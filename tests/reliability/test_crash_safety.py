"""SIGKILL the pipeline at points of fetch, archive and the first sources' loads; every rerun must heal (the last load's,
the derive's and the export's points are test_crash_safety_late.py's: two halves, so both of make test's workers
sweep)."""

import pytest

from tests.reliability.crash_sweep import EARLY_POINTS, sweep

pytestmark = pytest.mark.usefixtures("slim_night")  # their subject is neither the report nor the speed tiers


@pytest.mark.slow
def test_sigkill_in_fetch_or_load_then_a_rerun_heals(monkeypatch):
    assert sweep(EARLY_POINTS, monkeypatch) == {"fetch", "load"}
