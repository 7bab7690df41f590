"""Catalogues and the reference pages' observed values, shared by the estimator tests."""

import polars as pl
import pytest

from tests.reference_pages import observed
from transforms import estimator
from warehouse import catalog


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
