"""The published views' data: what one date's tables are built from, and the frames both `gpuledger table`
and `gpuledger report` show, so a number on a page and in the terminal come from the same code."""

from dataclasses import dataclass, field
from datetime import date
from functools import cached_property

import duckdb
import polars as pl

from flows.derive import cheapest_api, hardware_usd, input_per_output, method_params
from transforms import costs, deployability, engines, estimator, presets, speed, tables
from warehouse import config, queries


class ViewError(ValueError):
    """A view cannot be built: no published day, or the estimator refused its inputs."""


@dataclass
class Day:
    """What one date's tables are built from."""

    day: date
    models: pl.DataFrame
    gpus: pl.DataFrame
    overlays: pl.DataFrame
    hardware: pl.DataFrame
    fx_rates: pl.DataFrame
    offers: pl.DataFrame
    ranges: pl.DataFrame
    quality: str | None
    api: pl.DataFrame  # per model, the cheapest API price fetched on or before the day
    _prices: dict[int, pl.DataFrame] = field(default_factory=dict, repr=False)  # replica_prices' rows, by TP

    def replica_prices(self, tps: list[int]) -> pl.DataFrame:
        """costs.replica_prices of the day's offers at these TPs. A TP's prices do not depend on the other TPs asked,
        so each is computed once a Day however many models ask (the report asks once a batch of models)."""
        new = sorted(set(tps) - self._prices.keys())
        if new or not tps:
            prices = costs.replica_prices(self.offers, new, self.gpus)
            parts = prices.partition_by("tp", as_dict=True)
            self._prices |= {tp: parts.get((tp,), prices.clear()) for tp in new}
            if not tps:
                return prices
        return pl.concat([self._prices[tp] for tp in sorted(set(tps))]).sort(costs.REPLICA_PRICE_KEY)

    @cached_property
    def capacity(self) -> pl.DataFrame:
        """deployability.capacity of the day's offers."""
        return deployability.capacity(self.offers, self.gpus)


@dataclass
class Calculator:
    """One setting of the calculator view: its estimates (and at one stream), the replica prices, table and cards,
    and, when no part has a deployable replica, what is missing (`note`)."""

    estimates: pl.DataFrame
    one_stream: pl.DataFrame
    replicas: pl.DataFrame
    table: pl.DataFrame
    cards: pl.DataFrame
    note: str | None


def latest_published(con: duckdb.DuckDBPyConnection) -> date:
    day = con.execute("select max(snapshot_date) from runs where status in ('ok', 'partial') and snapshot_date <= ?",
                      [config.last_plausible_day()]).fetchall()[0][0]
    if day is None:
        raise ViewError("no published day yet: run `gpuledger nightly` (or `make demo`) first")
    return day


def load_day(con: duckdb.DuckDBPyConnection, day: date | None) -> Day:
    day = day or latest_published(con)
    quality = con.execute("select arg_max(quality, started_at) from runs where snapshot_date = ? and status != 'failed'",
                          [day]).fetchall()[0][0]
    models = queries.table(con, "models")
    return Day(
        day, models, queries.table(con, "gpus"), queries.table(con, "gpu_overlays"),
        queries.table(con, "hardware_prices"), queries.table(con, "fx_rates"), queries.offers_for_date(con, day),
        con.sql("select * from rental_ranges where snapshot_date = ?", params=[day]).pl(), quality,
        cheapest_api(con, day, models, input_per_output()),
    )


def estimate(data: Day, method: str, grid: pl.DataFrame, engine: str | None = None) -> pl.DataFrame:
    gpus = estimator.apply_overlay(data.gpus, data.overlays, method)
    try:
        return estimator.estimate(data.models, gpus, grid, method_params(method, input_per_output(), engine))
    except (estimator.EstimatorError, presets.ParamError, engines.EngineError) as exc:
        raise ViewError(str(exc)) from None


def estimate_cards(data: Day, model: str, method: str, names: list[str], precision: str | None, context: int,
                   streams: int, engine: str | None = None) -> pl.DataFrame:
    """Page 000's cards as one table: every named part, or the labelled and the rented ones."""
    return estimate_cards_of(data, [model], method, names, precision, context, streams, engine)[model]


def estimate_cards_of(data: Day, models: list[str], method: str, names: list[str], precision: str | None,
                      context: int, streams: int, engine: str | None = None) -> dict[str, pl.DataFrame]:
    """`estimate_cards` of each model, by model: one estimate pass for them all (the report draws every model)."""
    priced = set(data.ranges["gpu"].to_list())
    names = names or [g for g, label in zip(data.gpus["name"], data.gpus["label_000"], strict=True)
                      if label or g in priced]
    est = estimate(data, method, estimator.make_grid(models, names, [precision], [context], [streams]), engine)
    hardware = hardware_usd(data.hardware, data.fx_rates, data.day)
    return {model: tables.estimate_view(rows, data.gpus, data.ranges, hardware)
            for model, rows in by_model(est, models).items()}


def by_model(frame: pl.DataFrame, models: list[str]) -> dict[str, pl.DataFrame]:
    """frame's rows per model, in their order, for each of models (none: an empty frame): one pass, not a filter a
    model."""
    parts = {key[0]: rows for key, rows in frame.partition_by("model", as_dict=True, maintain_order=True).items()}
    return {model: parts.get(model, frame.clear()) for model in models}


def request(estimates: pl.DataFrame) -> dict:
    """The prompt and answer tokens of the requests a setting's estimates price (the measured method prices whole
    requests; the reference methods steady decode: {})."""
    first = estimates.select("input_tokens", "output_tokens").drop_nulls().head(1)
    return {"input_tokens": first["input_tokens"][0], "output_tokens": first["output_tokens"][0]} if first.height else {}


ONE_STREAM = (4096, 1)  # the cards' bare minimum and cheapest per hour: a short context, one stream


def calculator(data: Day, model: str, names: list[str], settings: list[tuple[str, int, int]],
               price_kind: str = "on_demand", method: str = presets.DEFAULT_COST_METHOD, engine: str | None = None,
               ) -> dict[tuple[str, int, int], Calculator]:
    """Page 001's table and cards for each (precision, context, streams): one estimate pass, one pricing pass."""
    return calculators(data, [model], names, settings, price_kind, method, engine).views[model]


CALCULATOR_KEYS = ("model", "precision", "context_tokens", "streams")  # the groups of a Calculators' tall frames


@dataclass
class Calculators:
    """`calculator` of several models: by model and setting (`views`), and every table and card of them as one frame
    each, grouped by CALCULATOR_KEYS (the groups' columns first), for what is computed from them all at once."""

    views: dict[str, dict[tuple[str, int, int], Calculator]]
    table: pl.DataFrame
    cards: pl.DataFrame
    replicas: pl.DataFrame  # the replica prices every table and card is priced with


def calculators(data: Day, models: list[str], names: list[str], settings: list[tuple[str, int, int]],
                price_kind: str = "on_demand", method: str = presets.DEFAULT_COST_METHOD, engine: str | None = None,
                ) -> Calculators:
    """`calculator` of each model with one estimate pass and one pricing pass for them all: a replica price of a
    (GPU, TP) is the same whichever model asks for it, and the day's capacity is the same for all."""
    names = names or data.gpus["name"].to_list()
    precisions = sorted({p for p, _, _ in settings})
    grid = pl.concat([estimator.make_grid(models, names, [p], [c], [s]) for p, c, s in settings]
                     + [estimator.make_grid(models, names, precisions, [ONE_STREAM[0]], [ONE_STREAM[1]])]).unique(
        maintain_order=True)
    est = estimate(data, method, grid, engine)
    replicas = tables.cheapest_replicas(
        data.replica_prices(est["tp"].drop_nulls().unique().to_list()), price_kind)
    capacity = data.capacity
    # every model's table and cards at every setting in one pass, grouped by model and setting
    keys = CALCULATOR_KEYS
    wanted = pl.DataFrame(settings, schema={"precision": pl.String, "context_tokens": pl.Int64, "streams": pl.Int64},
                          orient="row")
    table = tables.calculator_view(est.join(wanted, on=keys[1:], how="semi", maintain_order="left"), data.gpus,
                                   replicas, capacity, by=keys)
    one = est.filter((pl.col("context_tokens") == ONE_STREAM[0]) & (pl.col("streams") == ONE_STREAM[1])).drop(
        keys[2:]).join(wanted, on="precision", maintain_order="left")  # each setting's cards read its precision's
    cards = tables.calculator_cards(table, one, replicas, by=keys)
    estimates, tables_at, cards_at = (frame.partition_by(keys, as_dict=True, include_key=include, maintain_order=True)
                                      for frame, include in ((est, True), (table, False), (cards, False)))
    out = {}
    for model in models:
        out[model] = {}
        for setting in settings:
            here, one = (estimates.get((model, *key), est.clear()) for key in (setting, (setting[0], *ONE_STREAM)))
            table_at = tables_at.get((model, *setting), table.clear().drop(keys))
            out[model][setting] = Calculator(here, one, replicas, table_at, cards_at.get((model, *setting),
                                                                                         cards.clear().drop(keys)),
                                             tables.deployment_note(table_at, here, replicas, capacity))
    return Calculators(out, table, cards, replicas)


SPEED_COLUMNS = ["streams", "user_tok_s", "ttft_s", "stopped_by"]


def speed_shown(target: speed.Target) -> list[str]:
    """The speed columns a table at `target` shows: the means, and beside them the 99th percentiles when those are
    what the target holds."""
    return [*SPEED_COLUMNS[:3], *(target.columns if target.percentile == "p99" else ()), SPEED_COLUMNS[3]]


def calculator_at_target(data: Day, model: str, names: list[str], precision: str, context: int, target: speed.Target,
                         price_kind: str = "on_demand", method: str = presets.DEFAULT_COST_METHOD,
                         engine: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Page 001's table at a speed target, served by `engine` (None: the default): (the answers, the table of the
    parts that reach it, priced like the calculator's and showing streams, user_tok_s, ttft_s (and their 99th
    percentiles for a p99 target) and what stopped them; the parts that cannot reach it, with their best: never
    priced)."""
    names = names or data.gpus["name"].to_list()
    gpus = estimator.apply_overlay(data.gpus, data.overlays, method)
    try:
        answers = speed.at_target(data.models, gpus, estimator.make_grid([model], names, [precision], [context], [1]),
                                  method_params(method, input_per_output(), engine), target)
    except (estimator.EstimatorError, presets.ParamError) as exc:
        raise ViewError(str(exc)) from None
    reached = answers.filter(pl.col("reaches"))
    replicas = tables.cheapest_replicas(
        data.replica_prices(reached["tp"].drop_nulls().unique().to_list()), price_kind)
    table = tables.calculator_view(reached, data.gpus, replicas, data.capacity)
    shown = speed_shown(target)
    table = table.join(reached.select("gpu", *shown), on="gpu", how="left", maintain_order="left")
    table = table.select(*table.columns[:4], *shown, *(c for c in table.columns[4:] if c not in shown))
    # a part the method cannot estimate (no speed figure) is neither reached nor missed: left out
    unreached = answers.filter(~pl.col("reaches") & pl.col("user_tok_s").is_not_null()).sort(
        target.columns[0], descending=True).select("gpu", "tp", "precision", *shown[1:-1])
    return answers, table, unreached


FRONTIER_COLUMNS = ("gpu", "tp", "streams", "user_tok_s", "ttft_s", "agg_tok_s", "usd_per_mtok", "usd_per_mtok_low",
                    "usd_per_mtok_high", "provider", "price_kind", "replica_pricing", "replica_usd_per_hr", "precision",
                    "input_tokens", "output_tokens", "engine")


def frontier(data: Day, model: str, names: list[str], precision: str | None, context: int, prompt: int | None,
             answer: int | None, price_kind: str = "on_demand", engine: str | None = None,
             ) -> tuple[pl.DataFrame, dict | None]:
    """`gpuledger frontier` and the model pages' chart: per GPU listed that day (or each named), $/M against tokens/s
    per user from one stream to the memory limit on every replica up to a node, at its cheapest deployable listing
    of the price kind, the envelope only; and the cheapest API for the same requests (provider, model id and
    api_usd_per_mtok: its output price plus the prompts at its input price, per M output tokens), or None. The
    measured method serves with `engine` (one of engines.ENGINES' names; None: the default); every point names
    it."""
    return frontiers(data, [model], names, precision, context, prompt, answer, price_kind, engine)[model]


def frontiers(data: Day, models: list[str], names: list[str], precision: str | None, context: int,
              prompt: int | None, answer: int | None, price_kind: str = "on_demand", engine: str | None = None,
              ) -> dict[str, tuple[pl.DataFrame, dict | None]]:
    """`frontier` of each model, by model: one pass of curves and prices for them all."""
    params = method_params(presets.MEASURED.name, input_per_output(), engine)
    gpus = estimator.apply_overlay(data.gpus, data.overlays, params.name)
    priced_parts = data.offers["gpu"].drop_nulls().unique().to_list()
    names = names or [g for g in gpus["name"].to_list() if g in set(priced_parts)]
    grid = estimator.make_grid(models, names, [precision], [context], [1]).with_columns(
        input_tokens=pl.lit(prompt, dtype=pl.Int64), output_tokens=pl.lit(answer, dtype=pl.Int64))
    try:
        points = speed.curves(data.models, gpus, grid, params)
    except estimator.EstimatorError as exc:
        raise ViewError(str(exc)) from None
    prices = data.replica_prices(points["tp"].unique().to_list()).filter(
        (pl.col("price_kind") == price_kind) & pl.col("deployable"))
    # A point's cheapest $/M is at its replica's cheapest $/hr (the same tokens/s divide every price of it): one price
    # per GPU and TP is joined, not every provider's (a batch of models' points times every price was most of the
    # report's memory).
    prices = prices.sort("replica_usd_per_hr", "provider", "replica_pricing").group_by("gpu", "tp").first()
    cheapest = speed.priced(points, prices).sort("usd_per_mtok").group_by(["model", "gpu", "tp", "streams"]).first()
    curves = by_model(speed.envelope(cheapest, ["model", "gpu"]), models)
    requests, apis = ({row["model"]: row for row in frame.group_by("model").first().iter_rows(named=True)}
                      for frame in (points, data.api))
    out = {}
    for model in models:
        row, first = apis.get(model), requests.get(model)
        api = None if row is None or first is None else {
            "api_provider": row["api_provider"], "api_model_id": row["api_model_id"],
            "api_usd_per_mtok": row["usd_per_mtok_output"]
            + first["input_tokens"] / first["output_tokens"] * row["usd_per_mtok_input"]}
        out[model] = (curves[model].select(FRONTIER_COLUMNS), api)
    return out
