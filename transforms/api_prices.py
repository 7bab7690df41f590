"""Per-token API prices beside self-hosting: map API listings to the catalogue, and compare own, rent and API.

Pure polars. A listing maps to a model through its `hugging_face_id` (the model's `hf_repo`, or another checkpoint
of it listed in `hf_ids`), else through the model's extra `api_ids` (the listed id without its `:variant`);
anything else stays unmapped, never guessed, so a dated variant (`deepseek-v4-flash-0731`) maps only when listed.
"""

from dataclasses import fields

import polars as pl

from scrapers.base import ApiAlias, ApiPrice
from transforms.costs import HOURS_PER_MONTH, mtok_per_month
from transforms.estimator import usd_per_mtok
from transforms.presets import DEFAULT_COST_METHOD, DEFAULT_INPUT_PER_OUTPUT

RENT_PRICE_KIND = "on_demand"  # a replica kept up for a month is rented on demand, not on an interruptible bid
API_PRICE_KIND = "standard"  # free variants are rate-limited and batch ones asynchronous: not like for like

API_PRICE_SCHEMA = {
    "api_model_id": pl.String, "price_kind": pl.String, "tier": pl.String, "usd_per_mtok_input": pl.Float64,
    "usd_per_mtok_output": pl.Float64, "usd_per_mtok_cache_read": pl.Float64, "fetched_at": pl.Datetime("us"),
    "response_sha256": pl.String, "hugging_face_id": pl.String, "name": pl.String, "context_length": pl.Int64,
    "min_prompt_tokens": pl.Int64, "utc_start": pl.Int16, "utc_end": pl.Int16,
}
ALIAS_SCHEMA = {"alias_id": pl.String, "target_id": pl.String, "fetched_at": pl.Datetime("us"),
                "response_sha256": pl.String}


def _rows(items: list, schema: dict) -> pl.DataFrame:
    return pl.DataFrame([{f.name: getattr(i, f.name) for f in fields(i)} for i in items], schema=schema, orient="row")


def api_prices_frame(prices: list[ApiPrice]) -> pl.DataFrame:
    return _rows(prices, API_PRICE_SCHEMA)


def aliases_frame(aliases: list[ApiAlias]) -> pl.DataFrame:
    return _rows(aliases, ALIAS_SCHEMA)


def _ids(models: pl.DataFrame, column: str, key: str, model: str) -> pl.DataFrame:
    """(key, model) per id of a space-separated id column, lower-cased."""
    return models.select(pl.col("model_id").alias(model), pl.col(column).str.split(" ").alias(key)).explode(key).filter(
        pl.col(key).is_not_null() & (pl.col(key) != "")).with_columns(pl.col(key).str.to_lowercase())


def map_models(prices: pl.DataFrame, models: pl.DataFrame) -> pl.DataFrame:
    """The prices with `model`: by hugging_face_id = hf_repo or one of hf_ids (another checkpoint of the model),
    else by the listed id (no variant) in api_ids."""
    by_repo = pl.concat([_ids(models, "hf_repo", "_repo", "_by_repo"), _ids(models, "hf_ids", "_repo", "_by_repo")])
    by_id = _ids(models, "api_ids", "_id", "_by_id")
    keyed = prices.with_columns(
        pl.col("hugging_face_id").str.to_lowercase().alias("_repo"),
        pl.col("api_model_id").str.split(":").list.first().str.to_lowercase().alias("_id"),
    )
    return (
        keyed.join(by_repo, on="_repo", how="left", maintain_order="left")
        .join(by_id, on="_id", how="left", maintain_order="left")
        .with_columns(pl.coalesce("_by_repo", "_by_id").alias("model"))
        .drop("_repo", "_id", "_by_repo", "_by_id")
    )


def unmapped(mapped: pl.DataFrame) -> pl.DataFrame:
    """One row per listed id that maps to no model."""
    return mapped.filter(pl.col("model").is_null()).select("api_model_id", "hugging_face_id").unique(
        "api_model_id", keep="first", maintain_order=True)


def cheapest_api(prices: pl.DataFrame, input_per_output: float = DEFAULT_INPUT_PER_OUTPUT,
                 price_kind: str = API_PRICE_KIND) -> pl.DataFrame:
    """Per model: the cheapest listing of the kind at its unconditional (base) tier, by the blended price.

    Long-context and time-of-day tiers stay in api_prices; the comparison takes the price any request pays.
    """
    return (
        prices.filter(pl.col("model").is_not_null() & (pl.col("price_kind") == price_kind) & (pl.col("tier") == "base"))
        .with_columns(blended("usd_per_mtok_input", "usd_per_mtok_output", input_per_output).alias("usd_per_mtok_blended"))
        .sort("usd_per_mtok_blended", "usd_per_mtok_output", "api_provider", "api_model_id")
        .group_by("model", maintain_order=True)
        .first()
    )


def blended(input_col: str, output_col: str, input_per_output: float | pl.Expr) -> pl.Expr:
    """USD per million tokens of a mix of input_per_output input tokens to each output token (a number or a column)."""
    return (input_per_output * pl.col(input_col) + pl.col(output_col)) / (input_per_output + 1)


def _mix(input_per_output: float) -> tuple[pl.Expr, pl.Expr]:
    """(prompt tokens per answer token, replica seconds per answer token with its prompt) of an estimate's requests.

    A measured estimate describes whole requests (its input_tokens, output_tokens): its agg_tok_s already pays for
    their prefill. A reference estimate decodes only, so the prompt's prefill at input_per_output is added.
    """
    whole = pl.col("input_tokens").is_not_null() & pl.col("output_tokens").is_not_null()
    ratio = pl.when(whole).then(pl.col("input_tokens") / pl.col("output_tokens")).otherwise(pl.lit(input_per_output))
    seconds = pl.when(whole).then(1.0 / pl.col("agg_tok_s")).otherwise(
        1.0 / pl.col("agg_tok_s") + input_per_output / pl.col("prefill_tok_s"))
    return ratio, seconds


def own_rent_api(
    costs: pl.DataFrame, own: pl.DataFrame, estimates: pl.DataFrame, api: pl.DataFrame, *,
    input_per_output: float = DEFAULT_INPUT_PER_OUTPUT, method: str = DEFAULT_COST_METHOD,
    grain: tuple[str, ...] = ("precision", "context_tokens", "streams"),
) -> pl.DataFrame:
    """Per model and setting: the cheapest rented replica, the cheapest owned configuration and the cheapest API.

    A setting is the `grain`'s columns and the method: a number of streams, or a speed tier (`speed_tier`, each part
    at the streams that keep its promise: transforms/speed.own_rent_api_at).

    Rented and owned replicas are deployable ones only (docs/deployability.md); where a side has none, its
    `*_not_deployable_reason` gives the reason of the cheapest replica the listings or prices could only fake.
    Output-only $/M (as cost_per_mtok and own_vs_rent give them) and blended $/M over the tokens of the setting's
    requests (input_per_output: the measured requests' own prompt:answer mix, else the argument), the API's price
    blended at the same mix, and the monthly volume (M tokens at the blend) from which renting one replica for the
    month, or owning, costs less than the API: its monthly cost over the API's blended price, NULL when that
    exceeds what it can serve.
    `api` is cheapest_api's frame with api_provider, fetched_at and run_id.
    """
    keys = ["snapshot_date", "model", *grain, "method"]
    setting = ["model", "gpu", *grain, "method"]
    ratio, seconds = _mix(input_per_output)
    rates = estimates.select(*setting, ratio.alias("input_per_output"),
                             ((ratio + 1) / seconds).alias("_mix_tok_s"))  # tokens a second at the blend
    per_mix_tokens = pl.col("_mix_tok_s")
    rentals = costs.filter((pl.col("method") == method) & (pl.col("price_kind") == RENT_PRICE_KIND))
    rent = (
        rentals.filter(pl.col("deployable"))
        .join(rates, on=setting, how="left")
        .sort("usd_per_mtok", "provider", "gpu")
        .group_by(keys, maintain_order=True)
        .first()
        .select(
            *keys, "input_per_output", pl.col("gpu").alias("rent_gpu"), pl.col("tp").alias("rent_tp"),
            pl.col("provider").alias("rent_provider"), pl.col("price_kind").alias("rent_price_kind"),
            pl.col("replica_pricing").alias("rent_replica_pricing"),
            pl.col("replica_usd_per_hr").alias("rent_replica_usd_per_hr"), pl.col("usd_per_mtok").alias("rent_usd_per_mtok"),
            usd_per_mtok(pl.col("replica_usd_per_hr"), per_mix_tokens).alias("rent_usd_per_mtok_blended"),
            mtok_per_month(per_mix_tokens).alias("rent_capacity_mtok_per_month"),
        )
    )
    configurations = own.filter((pl.col("method") == method) & pl.col("own_usd_per_mtok").is_not_null())
    owned = (
        configurations.filter(pl.col("deployable"))
        .join(rates, on=setting, how="left")
        .sort("own_usd_per_mtok", "gpu", "price_kind")
        .group_by(keys, maintain_order=True)
        .first()
        .select(
            *keys, "input_per_output", pl.col("gpu").alias("own_gpu"), pl.col("price_kind").alias("own_price_kind"),
            pl.col("gpu_count").alias("own_gpu_count"),
            (pl.col("own_usd_per_hr") * HOURS_PER_MONTH).alias("own_usd_per_month"), "utilisation",
            "own_usd_per_mtok",
            usd_per_mtok(pl.col("own_usd_per_hr"), per_mix_tokens * pl.col("replicas") * pl.col("utilisation"))
            .alias("own_usd_per_mtok_blended"),
            mtok_per_month(per_mix_tokens * pl.col("replicas")).alias("own_capacity_mtok_per_month"),
        )
    )
    api_cols = api.select(
        "model", "api_provider", "api_model_id", pl.col("price_kind").alias("api_price_kind"),
        pl.col("usd_per_mtok_input").alias("api_usd_per_mtok_input"),
        pl.col("usd_per_mtok_output").alias("api_usd_per_mtok_output"),
        pl.col("fetched_at").alias("api_fetched_at"), pl.col("run_id").alias("api_run_id"),
    )
    # a setting's requests are the same whichever GPU serves them, so rent and own share their mix
    both = rent.join(owned, on=[*keys, "input_per_output"], how="full", coalesce=True).join(
        _fakes(rentals.join(rates, on=setting, how="left"), rent, keys, "usd_per_mtok", "rent"),
        on=[*keys, "input_per_output"], how="full", coalesce=True).join(
        _fakes(configurations.join(rates, on=setting, how="left"), owned, keys, "own_usd_per_mtok", "own"),
        on=[*keys, "input_per_output"], how="full", coalesce=True).join(
        api_cols, on="model", how="left").with_columns(
        blended("api_usd_per_mtok_input", "api_usd_per_mtok_output", pl.col("input_per_output"))
        .alias("api_usd_per_mtok_blended"))

    def beats(monthly: pl.Expr, capacity: str) -> pl.Expr:
        volume = monthly / pl.col("api_usd_per_mtok_blended")
        return pl.when(volume <= pl.col(capacity)).then(volume)

    return both.with_columns(
        beats(pl.col("rent_replica_usd_per_hr") * HOURS_PER_MONTH, "rent_capacity_mtok_per_month")
        .alias("rent_beats_api_mtok_per_month"),
        beats(pl.col("own_usd_per_month"), "own_capacity_mtok_per_month").alias("own_beats_api_mtok_per_month"),
    ).select(
        *keys, "input_per_output", "rent_gpu", "rent_tp", "rent_provider", "rent_price_kind", "rent_replica_pricing",
        "rent_replica_usd_per_hr", "rent_usd_per_mtok", "rent_usd_per_mtok_blended", "rent_capacity_mtok_per_month",
        "own_gpu", "own_price_kind", "own_gpu_count", "own_usd_per_month", "utilisation", "own_usd_per_mtok",
        "own_usd_per_mtok_blended", "own_capacity_mtok_per_month", "api_provider", "api_model_id", "api_price_kind",
        "api_usd_per_mtok_input", "api_usd_per_mtok_output", "api_usd_per_mtok_blended", "api_fetched_at",
        "api_run_id", "rent_beats_api_mtok_per_month", "own_beats_api_mtok_per_month", "rent_not_deployable_reason",
        "own_not_deployable_reason",
    ).sort(keys)


def _fakes(rows: pl.DataFrame, chosen: pl.DataFrame, keys: list[str], cost: str, side: str) -> pl.DataFrame:
    """Per setting with no deployable row on a side: the reason of its cheapest row, which could not be deployed."""
    return (
        rows.join(chosen.select(keys), on=keys, how="anti")
        .sort(cost, "gpu")
        .group_by(keys, maintain_order=True)
        .first()
        .select(*keys, "input_per_output", pl.col("not_deployable_reason").alias(f"{side}_not_deployable_reason"))
    )


def api_line(api: pl.DataFrame, model: str, *, rate: float = 1.0, symbol: str = "$") -> str | None:
    """'API: $0.16/M out (openrouter, 2026-08-19)' for the model's cheapest API price (cheapest_api's frame),
    converted at rate units of the currency per USD; None when no API lists the model."""
    found = api.filter(pl.col("model") == model)
    if found.is_empty():
        return None
    row = found.row(0, named=True)
    return f"API: {symbol}{row['usd_per_mtok_output'] * rate:,.2f}/M out ({row['api_provider']}, {row['fetched_at']:%Y-%m-%d})"
