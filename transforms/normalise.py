"""Typed rows from a source's parse -> `offers`, `quarantine` and `unmapped_gpus` rows: pure polars, no IO."""

from dataclasses import asdict, dataclass
from datetime import date, datetime

import polars as pl

from scrapers.base import Rejection
from scrapers.frames import json_text, listings_frame, shallow  # noqa: F401 (listings_frame: re-exported)
from transforms import gpu_names
from transforms.fx import attach_usd_rate

MAX_USD_PER_GPU_HR = 100.0  # no GPU rents for more; a price above it is a unit or parsing error
MAX_GPU_MEMORY_GB = 4096.0  # per GPU; the largest have 288 GB: above it, a unit error or a hostile value
# No API asks more per million tokens (the dearest text models list a few hundred dollars out); above it, the
# price is a unit or parsing error ("1000" USD per token would publish $1,000,000,000 per million).
MAX_USD_PER_MTOK = 1000.0
API_PRICE_COLUMNS = ("usd_per_mtok_input", "usd_per_mtok_output", "usd_per_mtok_cache_read")

REJECTION_SCHEMA = {"offer_id": pl.String, "price_kind": pl.String, "field": pl.String, "reason": pl.String,
                    "record": pl.String}
OFFER_COLUMNS = (
    "snapshot_date", "fetched_at", "run_id", "provider", "offer_id", "gpu_raw", "gpu", "gpu_count", "max_gpu_count",
    "gpu_memory_gb", "price_kind", "usd_per_hr", "usd_per_gpu_hr", "native_currency", "native_per_hr", "region",
    "country", "tier", "reliability", "verified", "availability", "extras", "fx_rate", "fx_date", "fx_source",
    "source", "reseller", "price_basis", "source_version",
)
QUARANTINE_COLUMNS = ("snapshot_date", "run_id", "provider", "offer_id", "price_kind", "field", "reason", "record",
                      "quarantined_at")
FX_RATES_SCHEMA = {"date": pl.Date, "base": pl.String, "quote": pl.String, "rate": pl.Float64, "source": pl.String,
                   "fetched_at": pl.Datetime("us")}


@dataclass(frozen=True)
class Normalised:
    offers: pl.DataFrame
    quarantine: pl.DataFrame
    unmapped: pl.DataFrame
    duplicates: int  # listings dropped because the same offer id and price kind came earlier


def _records_as_json(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.Series("record", [json_text(r) for r in frame["record"]], dtype=pl.String))


def rejections_frame(rejections: list[Rejection]) -> pl.DataFrame:
    rows = [shallow(item) | {"record": json_text(item.record)} for item in rejections]
    return pl.DataFrame(rows, schema=REJECTION_SCHEMA, orient="row")


def fx_rates_frame(rates: list) -> pl.DataFrame:
    return pl.DataFrame([asdict(r) for r in rates], schema=FX_RATES_SCHEMA, orient="row")


CATALOG_FILES_SCHEMA = {
    "run_id": pl.String, "source": pl.String, "cloud": pl.String, "snapshot_date": pl.Date,
    "fetched_at": pl.Datetime("us"), "http_status": pl.Int64, "status": pl.String, "version": pl.String,
    "sha256": pl.String, "changed_on": pl.Date, "rows": pl.Int64, "listings": pl.Int64, "error": pl.String,
}


def catalog_files_frame(files: list, held: dict[str, tuple[str, date]], *, source: str, run_id: str,
                        snapshot_date: date) -> pl.DataFrame:
    """A catalog source's files as `catalog_files` rows. `held`: per cloud, the (version, changed_on) of its latest
    earlier read; a file read again at that version keeps its changed_on (its age), a new version starts today."""
    rows = []
    for f in files:
        version, since = held.get(f.cloud, (None, None))
        changed_on = None if f.status == "failed" else since if f.version == version and since else snapshot_date
        rows.append(shallow(f) | {"run_id": run_id, "source": source, "snapshot_date": snapshot_date,
                                  "changed_on": changed_on})
    return pl.DataFrame(rows, schema=CATALOG_FILES_SCHEMA, orient="row")


def _problem(usd_per_gpu_hr: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(field, reason) of the first reason a listing cannot be priced, or nulls."""
    count, price, price_field = pl.col("gpu_count"), pl.col("native_per_hr"), pl.col("price_field")
    checks = [
        (count.is_null(), pl.lit("gpu_count"), pl.lit("missing GPU count")),
        (count <= 0, pl.lit("gpu_count"), pl.lit("zero GPUs: cannot be priced per GPU")),
        (pl.col("gpu_memory_gb") > MAX_GPU_MEMORY_GB, pl.lit("gpu_memory_gb"),
         pl.format("implausible GPU memory: {} GB per GPU, above " + f"{MAX_GPU_MEMORY_GB:g}", pl.col("gpu_memory_gb"))),
        (price.is_null(), price_field, pl.lit("missing price")),
        (price <= 0, price_field, pl.format("zero or negative price: {}", price)),
        (pl.col("fx_rate").is_null(), pl.lit("native_currency"),
         pl.format("no USD rate for {} on or before {}", pl.col("native_currency"), pl.col("fetched_at").dt.date())),
        (usd_per_gpu_hr > MAX_USD_PER_GPU_HR, price_field,
         pl.format("absurd price: {} USD per GPU-hour, above " + f"{MAX_USD_PER_GPU_HR:g}", usd_per_gpu_hr.round(2))),
    ]
    return _first_failed(checks)


def _first_failed(checks: list[tuple[pl.Expr, pl.Expr, pl.Expr]]) -> tuple[pl.Expr, pl.Expr]:
    """(field, reason) of the first check (condition, field, reason) a row fails; NULL when it fails none."""
    field, reason = pl.lit(None, pl.String), pl.lit(None, pl.String)
    for condition, f, r in reversed(checks):
        field = pl.when(condition).then(f).otherwise(field)
        reason = pl.when(condition).then(r).otherwise(reason)
    return field, reason


def absurd_api_prices(prices: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the API price tiers kept, a rejection per tier with a price above MAX_USD_PER_MTOK naming the first such
    column), from transforms/api_prices.py's frame: like an absurd GPU price, never stored as a price."""
    field, reason = _first_failed([
        (pl.col(column) > MAX_USD_PER_MTOK, pl.lit(column),
         pl.format(f"absurd price: {{}} USD per million tokens, above {MAX_USD_PER_MTOK:g}", pl.col(column)))
        for column in API_PRICE_COLUMNS])
    marked = prices.with_columns(_field=field, _reason=reason)
    absurd = marked.filter(pl.col("_reason").is_not_null())
    rejections = absurd.select(
        pl.col("api_model_id").alias("offer_id"), "price_kind", pl.col("_field").alias("field"),
        pl.col("_reason").alias("reason"),
        pl.Series("record", [json_text(r) for r in absurd.drop("_field", "_reason").to_dicts()], dtype=pl.String))
    return marked.filter(pl.col("_reason").is_null()).drop("_field", "_reason"), rejections


def normalise(
    listings: pl.DataFrame,
    rejected: pl.DataFrame,
    names: gpu_names.Catalogue,
    rates: pl.DataFrame | None,
    *,
    provider: str,
    run_id: str,
    snapshot_date: date,
    quarantined_at: datetime,
) -> Normalised:
    """Offers (one per offer id and price kind, first wins), quarantine rows with reasons, unmapped GPU names.

    `gpu` comes from the name resolver (transforms/gpu_names.py), once per distinct raw name and memory.
    Prices in another currency are converted with the USD rate of their fetch date (or the latest before);
    rates may be None when every price is in USD.
    """
    unique = listings.unique(subset=["offer_id", "price_kind"], keep="first", maintain_order=True)
    # `provider` runs the machine: the source itself, or the cloud a catalog names (source stays the source)
    for column, value in (("provider", None), ("reseller", None), ("price_basis", "listing"), ("source_version", None)):
        if column not in unique.columns:
            unique = unique.with_columns(pl.lit(value, pl.String).alias(column))
    frame = unique.with_row_index("_row").with_columns(
        snapshot_date=pl.lit(snapshot_date, pl.Date), run_id=pl.lit(run_id), source=pl.lit(provider),
        provider=pl.coalesce(pl.col("provider"), pl.lit(provider)),
        native_currency=pl.col("native_currency").str.to_uppercase(), _fetch_day=pl.col("fetched_at").dt.date())
    if rates is None:
        is_usd = pl.col("native_currency") == "USD"
        frame = frame.with_columns(fx_rate=pl.when(is_usd).then(1.0), fx_date=pl.lit(None, pl.Date),
                                   fx_source=pl.lit(None, pl.String))
    else:
        frame = attach_usd_rate(frame, rates, "native_currency", "_fetch_day")
    usd_per_hr = pl.col("native_per_hr") / pl.col("fx_rate")
    usd_per_gpu_hr = usd_per_hr / pl.col("gpu_count")
    field, reason = _problem(usd_per_gpu_hr)
    frame = frame.with_columns(usd_per_hr=usd_per_hr, usd_per_gpu_hr=usd_per_gpu_hr, field=field, reason=reason)

    offers = gpu_names.resolve_listings(frame.filter(pl.col("reason").is_null()), names)
    unmapped = (  # per provider, the reseller's where one resold it: the file or feed that named the GPU
        offers.filter(pl.col("gpu").is_null())
        .group_by(pl.coalesce("reseller", "provider").alias("provider"), "gpu_raw")
        .agg(gpu_memory_gb=pl.col("gpu_memory_gb").max(), listings=pl.col("offer_id").n_unique())
        .sort("provider", "gpu_raw")
        .select(snapshot_date=pl.lit(snapshot_date, pl.Date), run_id=pl.lit(run_id), provider="provider",
                gpu_raw="gpu_raw", gpu_memory_gb="gpu_memory_gb", listings=pl.col("listings").cast(pl.Int64),
                source=pl.lit(provider))
    )
    quarantine = pl.concat([
        _records_as_json(frame.filter(pl.col("reason").is_not_null()).select(list(REJECTION_SCHEMA))),
        rejected.select(list(REJECTION_SCHEMA)),
    ]).select(snapshot_date=pl.lit(snapshot_date, pl.Date), run_id=pl.lit(run_id), provider=pl.lit(provider),
              **{c: c for c in REJECTION_SCHEMA}, quarantined_at=pl.lit(quarantined_at, pl.Datetime("us")))
    converted = pl.col("native_currency") != "USD"
    return Normalised(
        offers=offers.with_columns(fx_rate=pl.when(converted).then("fx_rate")).select(OFFER_COLUMNS),
        quarantine=quarantine.select(QUARANTINE_COLUMNS),
        unmapped=unmapped,
        duplicates=listings.height - unique.height,
    )
