from datetime import date, datetime

import pytest

from warehouse import config


def test_paths_follow_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GPULEDGER_HOME", str(tmp_path / "h"))
    assert config.db_path() == tmp_path / "h" / "gpuledger.duckdb"
    assert config.raw_dir() == tmp_path / "h" / "raw"


def test_the_clock_can_be_pinned_for_replays(monkeypatch):
    monkeypatch.setenv("GPULEDGER_NOW", "2026-11-27T03:00:00+01:00")
    assert config.utc_now() == datetime(2026, 11, 27, 2, 0)
    assert config.utc_today() == date(2026, 11, 27)
    monkeypatch.delenv("GPULEDGER_NOW")
    assert config.utc_now().tzinfo is None


def test_the_lakes_window_of_derived_dates_is_a_number_of_days_or_all(monkeypatch):
    assert config.lake_derived_days() == 30
    for every in ("0", "all", "ALL"):
        monkeypatch.setenv("GPULEDGER_LAKE_DERIVED_DAYS", every)
        assert config.lake_derived_days() is None
    monkeypatch.setenv("GPULEDGER_LAKE_DERIVED_DAYS", "7")
    assert config.lake_derived_days() == 7
    monkeypatch.setenv("GPULEDGER_LAKE_DERIVED_DAYS", "a week")
    with pytest.raises(ValueError, match="GPULEDGER_LAKE_DERIVED_DAYS"):
        config.lake_derived_days()
