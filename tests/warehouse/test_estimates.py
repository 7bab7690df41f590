import dataclasses
from datetime import datetime

import duckdb
import polars as pl
import pytest

from transforms import estimator, presets
from warehouse import catalog, db
from warehouse.estimates import replace_estimates, stored_and_current

FP4_ONLY = "RTX PRO 4500 Blackwell Server Edition"  # no BF16 figure: nothing is known at bf16


@pytest.fixture
def con():
    with db.connect() as connection:
        yield connection


@pytest.fixture(scope="module")
def grids() -> dict[str, pl.DataFrame]:
    frames = catalog.read_all()
    out = {}
    for params in (presets.CEILING, presets.CALCULATOR):
        gpus = estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], params.name)
        grid = estimator.make_grid(["deepseek-v4-flash", "llama-3.1-8b"], ["H200 SXM", "L4 24GB", FP4_ONLY],
                                   ["bf16", "int4"], [4096, 32768], [1, 32])
        out[params.name] = estimator.estimate(frames["models"], gpus, grid, params)
    return out


def stored(con, method: str | None = None) -> int:
    where = f"where method = '{method}'" if method else ""
    return con.execute(f"select count(*) from estimates {where}").fetchall()[0][0]


def test_a_grid_is_stored_once_however_often_it_is_replaced(con, grids):
    assert replace_estimates(con, grids["calculator"]) == 48
    assert replace_estimates(con, grids["calculator"]) == 48
    assert stored(con) == 48


def test_replacing_drops_the_old_rows_of_the_same_method_and_version_only(con, grids):
    replace_estimates(con, grids["calculator"])
    replace_estimates(con, grids["ceiling"])
    smaller = grids["calculator"].filter(pl.col("streams") == 1)
    replace_estimates(con, smaller)
    assert (stored(con, "calculator"), stored(con, "ceiling")) == (smaller.height, grids["ceiling"].height)


def test_stored_rows_keep_nulls_and_the_pinned_clock(con, grids, monkeypatch):
    monkeypatch.setenv("GPULEDGER_NOW", "2026-12-01T03:00:00+00:00")
    replace_estimates(con, grids["calculator"])
    rows = con.execute("select distinct computed_at, agg_tok_s is null from estimates where gpu = ? and precision = 'bf16'",
                       [FP4_ONLY]).fetchall()
    assert rows == [(datetime(2026, 12, 1, 3, 0), True)]


def test_a_failed_replacement_leaves_the_previous_grid(con, grids):
    replace_estimates(con, grids["calculator"])
    broken = grids["calculator"].with_columns(tp=pl.lit(None, dtype=pl.Int64))  # tp is NOT NULL
    with pytest.raises(duckdb.ConstraintException):
        replace_estimates(con, broken)
    assert stored(con) == 48 and con.execute("select count(*) from estimates where tp is null").fetchall()[0][0] == 0


def test_stored_estimates_are_current_only_for_the_same_requests(con):
    """A changed request mix ($GPULEDGER_INPUT_PER_OUTPUT) makes the stored measured grid stale."""
    frames = catalog.read_all()
    gpus = estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], "measured")
    grid = estimator.make_grid(["llama-3.1-8b"], ["H200 SXM"], ["fp8"], [4096, 32768], [1, 32])
    three_to_one = estimator.estimate(frames["models"], gpus, grid, presets.MEASURED)
    one_to_one = estimator.estimate(frames["models"], gpus, grid,
                                    dataclasses.replace(presets.MEASURED, input_per_output=1.0))
    replace_estimates(con, three_to_one)
    assert stored_and_current(con, three_to_one)
    assert not stored_and_current(con, one_to_one)
