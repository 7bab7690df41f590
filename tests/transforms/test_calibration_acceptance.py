"""The calibration's checks that need the full fit and both full cross-validations: `make check-calibration`.

They take minutes by nature (a fit per held-out model and per held-out vendor, and the fit on every row), so they
run as a CI step of their own after `make test` (marker `calibration`, which `make test` leaves out); every faster
check of the calibration lives in test_calibration.py.
"""

import json

import polars as pl
import pytest

from bench import calibrate
from transforms import calibration, presets

pytestmark = pytest.mark.calibration


@pytest.fixture(scope="module")
def prepared() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    measurements = calibrate.load_measurements()
    terms, rows, _ = calibrate.prepared(measurements)
    return measurements, terms, rows


@pytest.fixture(scope="module")
def out_of_fold(prepared) -> dict[str, pl.DataFrame]:
    return calibrate.validated(prepared[1])


def test_the_committed_parameters_are_what_the_fit_finds_on_the_committed_measurements(prepared, out_of_fold):
    found = calibration.final(prepared[1], presets.MEASURED_BASE, out_of_fold["source"])
    committed = json.loads(presets.MEASURED_FIT.read_text())["parameters"]
    assert calibration.parameters(found) == pytest.approx(committed, rel=1e-9)


@pytest.fixture(scope="module")
def checks(prepared, out_of_fold) -> pl.DataFrame:
    measurements, _, rows = prepared
    found = calibration.acceptance({calibrate.SPLITS[s]: oof for s, oof in out_of_fold.items()},
                                   calibration.representable(measurements, rows))
    assert set(found["split"]) == set(calibrate.SPLITS.values())
    assert set(found["group"]) == set(calibration.ACCEPTED_GROUPS)
    return found


def _failing(checks: pl.DataFrame, group: str, representable: bool) -> str:
    failing = checks.filter((pl.col("group") == group) & ((pl.col("figure") == "representable") == representable)
                            & ~pl.col("passes"))
    return "\n".join(f"{r['split']} {r['group']} {r['figure']} = {r['value']:.3f}, needs {r['threshold']}"
                     for r in failing.iter_rows(named=True))


@pytest.mark.parametrize(("split", "group"), [(split, group) for split in calibrate.SPLITS.values()
                                              for group in calibration.ACCEPTED_GROUPS])
def test_held_out_estimates_meet_the_acceptance_on_every_split(checks, split, group):
    failing = _failing(checks.filter(pl.col("split") == split), group, representable=False)
    assert not failing, "\n" + failing


@pytest.mark.parametrize("group", ["max_load", "fixed_concurrency"])
def test_enough_usable_rows_are_representable(checks, group):
    failing = _failing(checks, group, representable=True)
    assert not failing, "\n" + failing
