"""Generated market days with known moves, shared by the price_index, history and changes tests."""

from datetime import date

import polars as pl

from tests.transforms.offers_factory import offers

NOV = {d: date(2026, 11, d) for d in range(1, 31)}
H100, B200 = "H100 SXM5 80GB", "B200 SXM"
# (provider, gpu, $/GPU-hour) per day of November; nothing on the 3rd (no run that day) nor from the 5th to the 7th.
MARKET = {
    1: [("vastai", H100, 2.0), ("vastai", H100, 3.0), ("runpod", H100, 2.5)],
    2: [("vastai", H100, 2.2), ("vastai", H100, 3.0), ("runpod", H100, 2.5), ("vastai", B200, 5.0)],
    4: [("vastai", H100, 2.2), ("vastai", H100, 3.3), ("vastai", B200, 4.0)],
    8: [("vastai", H100, 1.8), ("vastai", H100, 3.3), ("vastai", B200, 4.0), ("runpod", H100, 2.0)],
}


def day_offers(day: int, **columns) -> pl.DataFrame:
    """The day's listings as offers rows (extra columns as given, for every row)."""
    return offers(*(dict(snapshot_date=NOV[day], provider=p, gpu=g, usd_per_gpu_hr=price, **columns)
                    for p, g, price in MARKET[day]))
