"""Catalogues and the reference pages' observed values, shared by the estimator tests."""

from pathlib import Path

import polars as pl
import pytest

from transforms import estimator
from warehouse import catalog

REFERENCE = Path(__file__).parents[1] / "fixtures" / "reference"


def observed(name: str) -> pl.DataFrame:
    """A reference table as the page displays it: every value a string."""
    return pl.read_csv(REFERENCE / f"{name}.csv", infer_schema=False)


@pytest.fixture(scope="session")
def frames() -> dict[str, pl.DataFrame]:
    return catalog.read_all()


@pytest.fixture(scope="session")
def models(frames) -> pl.DataFrame:
    return frames["models"]


@pytest.fixture(scope="session")
def ceiling_gpus(frames) -> pl.DataFrame:
    return estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], "ceiling")


@pytest.fixture(scope="session")
def calculator_gpus(frames) -> pl.DataFrame:
    return estimator.apply_overlay(frames["gpus"], frames["gpu_overlays"], "calculator")


@pytest.fixture(scope="session")
def page001_prices() -> pl.DataFrame:
    """Page 001's $/hr column (one TP group) as per-GPU prices."""
    table = observed("seed001_table").filter(pl.col("usd_hr").is_not_null())
    return table.select(
        gpu=pl.col("catalog_key"), usd_per_gpu_hr=pl.col("usd_hr").cast(pl.Float64) / pl.col("tp").cast(pl.Float64)
    )
