"""Small, readable offers frames for transform tests."""

from datetime import date, datetime

import polars as pl

DAY = date(2026, 11, 27)
AT = datetime(2026, 11, 27, 2, 0)


def offers(*rows: dict) -> pl.DataFrame:
    """Offers rows with defaults for every column the transforms read; usd_per_hr follows from the per-GPU price."""
    defaults = dict(snapshot_date=DAY, fetched_at=AT, run_id="r1", provider="vastai", gpu_raw="H200", gpu="H200 SXM",
                    gpu_count=1, max_gpu_count=None, price_kind="on_demand", tier="datacenter", native_currency="USD")
    full = []
    for i, row in enumerate(rows):
        merged = {**defaults, "offer_id": f"o{i}", **row}
        merged.setdefault("source", merged["provider"])  # a market's own feed; a catalog names other providers
        merged.setdefault("price_basis", "listing")
        merged.setdefault("usd_per_hr", merged["usd_per_gpu_hr"] * merged["gpu_count"])
        merged.setdefault("native_per_hr", merged["usd_per_hr"])
        full.append(merged)
    return pl.DataFrame(full, schema_overrides={"gpu_count": pl.Int32, "max_gpu_count": pl.Int32})
