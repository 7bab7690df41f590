from datetime import datetime

import duckdb
import polars as pl
import pytest

from transforms import estimator, presets
from warehouse import catalog, db
from warehouse.estimates import ANSWER_COLUMNS, grid_sha256, is_stored, read_grid, store_answers, store_grid

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


def key(grid: pl.DataFrame, **settings) -> str:
    return grid_sha256({"estimator_version": estimator.ESTIMATOR_VERSION} | settings, {"grid": grid})


def test_a_grid_is_stored_once_however_often_it_is_stored(con, grids):
    assert store_grid(con, grids["calculator"], "k1") == 48
    assert store_grid(con, grids["calculator"], "k1") == 0
    assert stored(con) == 48 and is_stored(con, "k1") and not is_stored(con, "k2")


def test_a_stored_grid_reads_back_as_the_estimator_gave_it(con, grids):
    """Row for row, in order and in the estimator's types, less what the table does not keep."""
    grid = grids["calculator"]
    assert read_grid(con, "k1") is None
    store_grid(con, grid, "k1")
    back = read_grid(con, "k1")
    assert back.equals(grid.select(back.columns))
    assert set(grid.columns) - set(back.columns) == {"compute_tflops", "fp4_estimated"}


def test_a_stored_grid_is_never_replaced_and_another_key_stores_beside_it(con, grids):
    store_grid(con, grids["calculator"], "k1")
    smaller = grids["calculator"].filter(pl.col("streams") == 1)
    store_grid(con, smaller, "k1")  # the same key: the grid already stored stands
    store_grid(con, smaller, "k2")
    rows = dict(con.execute("select grid_sha256, count(*) from estimates group by 1").fetchall())
    assert rows == {"k1": 48, "k2": smaller.height}


def test_stored_rows_keep_nulls_and_the_pinned_clock(con, grids, monkeypatch):
    monkeypatch.setenv("GPULEDGER_NOW", "2026-12-01T03:00:00+00:00")
    store_grid(con, grids["calculator"], "k1")
    rows = con.execute("select distinct computed_at, agg_tok_s is null from estimates where gpu = ? and precision = 'bf16'",
                       [FP4_ONLY]).fetchall()
    assert rows == [(datetime(2026, 12, 1, 3, 0), True)]


def test_a_failed_store_stores_nothing(con, grids):
    broken = grids["calculator"].with_columns(tp=pl.lit(None, dtype=pl.Int64))  # tp is NOT NULL
    with pytest.raises(duckdb.ConstraintException):
        store_grid(con, broken, "k1")
    assert stored(con) == 0 and not is_stored(con, "k1")


def test_the_key_changes_with_every_input_and_not_with_row_order(grids):
    grid = grids["calculator"]
    assert key(grid) == key(grid.reverse()) == key(grid.select(reversed(grid.columns)))
    assert key(grid) != key(grid.with_columns(agg_tok_s=pl.col("agg_tok_s") * 1.000001))
    assert key(grid) != key(grid.head(47))
    assert key(grid) != key(grid, input_per_output=1.0)


def answers(gpus: list[str], user_tok_s: float) -> pl.DataFrame:
    """Speed answers (transforms/speed.py's columns) of one model at two tiers on each GPU, a replica of 2 GPUs."""
    rows = [{"model": "llama-3.1-8b", "gpu": gpu, "precision": "bf16", "speed_tier": tier, "min_user_tok_s": float(tier),
             "max_ttft_s": 2.0, "input_tokens": 3072, "output_tokens": 1024, "tp": 2, "streams": 8,
             "stopped_by": "target", "user_tok_s": user_tok_s, "ttft_s": 0.5, "agg_tok_s": 8 * user_tok_s,
             "agg_tok_s_low": None, "agg_tok_s_high": None, "method": "measured", "engine": "trtllm",
             "estimator_version": estimator.ESTIMATOR_VERSION} for gpu in gpus for tier in ("20", "35")]
    return pl.DataFrame(rows, schema_overrides={"agg_tok_s_low": pl.Float64, "agg_tok_s_high": pl.Float64})


def test_a_gpus_speed_answers_are_stored_the_first_time_and_never_replaced(con):
    """A night stores the answers of the GPUs it lists that its key has none of: a GPU stored before keeps its rows."""
    assert store_answers(con, answers(["H200 SXM"], 40.0), "s1") == 2
    assert store_answers(con, answers(["H200 SXM", "L4 24GB"], 99.0), "s1") == 2  # only L4's are new
    assert store_answers(con, answers(["H200 SXM"], 99.0), "s2") == 2  # another key stores beside it
    rows = con.execute("select speed_sha256, gpu, min(user_tok_s), count(*) from speed_answers group by all "
                       "order by all").fetchall()
    assert rows == [("s1", "H200 SXM", 40.0, 2), ("s1", "L4 24GB", 99.0, 2), ("s2", "H200 SXM", 99.0, 2)]
    assert [c for (c,) in con.execute("select column_name from information_schema.columns "
                                      "where table_name = 'speed_answers' order by ordinal_position").fetchall()
            ] == list(ANSWER_COLUMNS)


def test_speed_answers_that_repeat_a_key_are_refused_whole(con):
    with pytest.raises(ValueError, match="speed_answers: 4 rows repeat a key"):
        store_answers(con, pl.concat([answers(["H200 SXM"], 40.0), answers(["L4 24GB", "H200 SXM"], 40.0)]), "s1")
    assert con.execute("select count(*) from speed_answers").fetchall() == [(0,)]
