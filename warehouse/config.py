"""Where gpuledger keeps its files, and the clock: every path hangs off environment settings."""

import os
from datetime import UTC, date, datetime, timedelta
from pathlib import Path


def home() -> Path:
    """$GPULEDGER_HOME (default ./data): the warehouse, the raw archive and Prefect's state."""
    return Path(os.environ.get("GPULEDGER_HOME", "data")).absolute()


def db_path() -> Path:
    return home() / "gpuledger.duckdb"


def raw_dir() -> Path:
    return home() / "raw"


def exports_dir() -> Path:
    """$GPULEDGER_EXPORTS (default ./exports) as a local folder: the lake's Delta tables and the CSV exports."""
    return Path(os.environ.get("GPULEDGER_EXPORTS", "exports")).absolute()


def exports_location() -> str:
    """$GPULEDGER_EXPORTS as given when it is a URL (s3://bucket/prefix), else the absolute folder."""
    setting = os.environ.get("GPULEDGER_EXPORTS", "exports")
    return setting if "://" in setting else str(exports_dir())


def exports_local() -> bool:
    """Whether $GPULEDGER_EXPORTS is a folder on this machine rather than an object-store URL."""
    return exports_location() == str(exports_dir())


def lake_retention_days() -> int:
    """$GPULEDGER_LAKE_RETENTION_DAYS (default 30): how long the lake keeps the versions a later commit replaced
    (time travel reaches this far back; vacuum removes older files and log entries)."""
    return int(os.environ.get("GPULEDGER_LAKE_RETENTION_DAYS", "30"))


def lake_upkeep_days() -> float:
    """$GPULEDGER_LAKE_UPKEEP_DAYS (default 7): how often the nightly run compacts, vacuums and checkpoints each
    lake table."""
    return float(os.environ.get("GPULEDGER_LAKE_UPKEEP_DAYS", "7"))


def lake_derived_days() -> int | None:
    """$GPULEDGER_LAKE_DERIVED_DAYS (default 30; `0` or `all`: every date, None): how many of the newest dates the
    lake keeps of the tables derived from its facts (warehouse/export.WINDOWED); older dates are deleted from them by
    the nightly run, and `gpuledger export --date` puts one back (docs/lake.md)."""
    setting = os.environ.get("GPULEDGER_LAKE_DERIVED_DAYS", "30").strip().lower()
    if setting in ("0", "all"):
        return None
    if not setting.isdigit():
        raise ValueError(f"GPULEDGER_LAKE_DERIVED_DAYS: {setting!r} is neither a number of days nor `all`")
    return int(setting)


def raw_mirror() -> str | None:
    """$GPULEDGER_RAW_MIRROR (unset: no mirror): the object store (or folder) every raw response is copied to."""
    return os.environ.get("GPULEDGER_RAW_MIRROR") or None


def report_models() -> list[str] | None:
    """$GPULEDGER_REPORT_MODELS (unset: every model): the models the nightly report draws a page for, comma- or
    space-separated (a page takes a few tenths of a second, and the catalogue grows with every model an API sells)."""
    listed = os.environ.get("GPULEDGER_REPORT_MODELS", "").replace(",", " ").split()
    return listed or None


def lock_wait_s() -> float:
    """$GPULEDGER_LOCK_WAIT_S (default 30): how long a command waits for another process to free the warehouse."""
    return float(os.environ.get("GPULEDGER_LOCK_WAIT_S", "30"))


def utc_now() -> datetime:
    """Naive UTC, the convention of every TIMESTAMP column; $GPULEDGER_NOW (ISO 8601) pins it for replays."""
    pinned = os.environ.get("GPULEDGER_NOW")
    if pinned:
        moment = datetime.fromisoformat(pinned)
        return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment
    return datetime.now(UTC).replace(tzinfo=None)


def utc_today() -> date:
    return utc_now().date()


def last_plausible_day() -> date:
    """Tomorrow (UTC): no snapshot, and no date a user asks for, lies beyond it (a time zone ahead of UTC is
    already there). A later day is a typo or a hostile value: a year-9999 snapshot would be the latest for ever."""
    return utc_today() + timedelta(days=1)


def check_day(day: date, what: str) -> date:
    """day, unless it lies beyond last_plausible_day: then a ValueError naming what."""
    if day > last_plausible_day():
        raise ValueError(f"{what} {day} is after {last_plausible_day()} (tomorrow, UTC): no such day yet")
    return day
