"""Derive a date's published tables from its facts and the catalogues: the wiring, transforms do the work."""

import logging
import os
import threading
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field, replace
from datetime import date

import duckdb
import polars as pl

from transforms import (
    aggregate,
    api_prices,
    costs,
    deployability,
    engines,
    estimator,
    fx,
    model_bounds,
    presets,
    speed,
    trends,
)
from transforms import quality as gates
from warehouse import config, derived, estimates, queries

log = logging.getLogger("gpuledger.derive")
# The requests cost_at_speed, the frontier and the model pages' chart price: a chat turn's length (3,072 in + 1,024 out
# at the default 3:1 mix).
SPEED_CONTEXT_TOKENS = 4096
EXPORTED = ("offers", "daily_prices", "rental_ranges", "replica_prices", "own_hardware", "cost_per_mtok", "own_vs_rent",
            "price_index", "own_rent_api", "cost_at_speed")


def made_by(quality: str | None = None) -> dict[str, str]:
    """What a lake commit of the derived tables names beside the warehouse's own provenance: the estimator's version,
    and the quality just judged (None: the one the day's runs recorded)."""
    return {"estimator_version": estimator.ESTIMATOR_VERSION} | ({"quality": quality} if quality else {})


def input_per_output() -> float:
    """$GPULEDGER_INPUT_PER_OUTPUT (default 3, i.e. 3:1): prompt tokens per answer token of the requests the measured
    method prices, and the mix API prices are blended at, so both describe the same requests."""
    return float(os.environ.get("GPULEDGER_INPUT_PER_OUTPUT", presets.DEFAULT_INPUT_PER_OUTPUT))


def speed_tiers() -> tuple[speed.Target, ...]:
    """$GPULEDGER_SPEED_TIERS (unset: every tier): the tiers cost_at_speed prices, by label (tok/s per user, or
    `batch`), comma- or space-separated. Each tier is a search over every replica's stream counts, the most of a
    night's derivation: a night that needs fewer tiers names them. An unknown label fails naming the setting."""
    known = {tier.label: tier for tier in speed.TIERS}
    listed = dict.fromkeys(os.environ.get("GPULEDGER_SPEED_TIERS", "").replace(",", " ").split())
    unknown = [label for label in listed if label not in known]
    if unknown:
        raise ValueError(f"GPULEDGER_SPEED_TIERS: {', '.join(map(repr, unknown))} is not a speed tier "
                         f"(one of {', '.join(known)})")
    return tuple(known[label] for label in listed) or speed.TIERS


def method_params(name: str, mix: float, engine: str | None = None) -> presets.Params:
    """A method's preset with the requests of the cost tables (the measured method's mix; others ignore it), serving
    with `engine` (None: the preset's, engines.DEFAULT_ENGINE for the measured method)."""
    params = presets.preset(name)
    params = engines.for_engine(params, engine) if engine else params
    return replace(params, input_per_output=mix) if params.serving_model else params


@dataclass(frozen=True)
class DerivePlan:
    """The estimate grid behind the cost tables, and the ownership assumptions."""

    precisions: tuple[str, ...] = ("bf16", "fp8", "int4")
    contexts: tuple[int, ...] = (4096, 32768)
    streams: tuple[int, ...] = (1, 32)
    ownership: costs.OwnershipParams = field(default_factory=costs.OwnershipParams)
    quality: gates.QualityRules = field(default_factory=gates.QualityRules)
    input_per_output: float = field(default_factory=input_per_output)
    # the speed tier own_rent_api also compares at (the chat tier), beside its fixed numbers of streams
    own_rent_api_tier: speed.Target = speed.CHAT
    speed_tiers: tuple[speed.Target, ...] = field(default_factory=speed_tiers)  # the tiers cost_at_speed prices


def catalogues(con: duckdb.DuckDBPyConnection, *, quiet: bool = False) -> dict[str, pl.DataFrame]:
    """The catalogues the day is derived with; a model row beyond the plausibility bounds (stored by a version
    without them) is left out, logged (unless quiet: DeriveAhead reads them too), and the rest derive."""
    cats = {name: queries.table(con, name) for name in ("models", "gpus", "gpu_overlays", "hardware_prices")}
    cats["models"], refused = model_bounds.within_bounds(cats["models"])
    for model_id, reason in refused.items() if not quiet else ():
        log.warning("model %s left out of the derived tables: %s", model_id, reason)
    return cats


GRID_METHODS = ("measured", "calculator", "ceiling")
GRID_CATALOGUES = ("models", "gpus", "gpu_overlays")


def estimate_grid(cats: dict[str, pl.DataFrame], plan: DerivePlan) -> pl.DataFrame:
    """Every method over every model and GPU: measured (the published $/M) and the calculator on the plan's grid,
    the ceiling at its own rule."""
    models, gpu_names = cats["models"]["model_id"].to_list(), cats["gpus"]["name"].to_list()
    frames = []
    for name, grid in zip(GRID_METHODS, (
        estimator.make_grid(models, gpu_names, plan.precisions, plan.contexts, plan.streams),
        estimator.make_grid(models, gpu_names, plan.precisions, plan.contexts, plan.streams),
        estimator.make_grid(models, gpu_names),
    ), strict=True):
        gpus = estimator.apply_overlay(cats["gpus"], cats["gpu_overlays"], name)
        # A part whose memory the method's runtime overhead fills sizes no replica (tp NULL): nothing to store.
        frames.append(estimator.estimate(cats["models"], gpus, grid, method_params(name, plan.input_per_output)).filter(
            pl.col("tp").is_not_null()))
    return pl.concat(frames, how="vertical_relaxed")


def grid_key(cats: dict[str, pl.DataFrame], plan: DerivePlan) -> str:
    """The key estimate_grid's grid is stored under: everything it reads (the estimator's version, each method's
    parameters with the plan's request mix, the plan's grid, the catalogue rows)."""
    settings = {"estimator_version": estimator.ESTIMATOR_VERSION,
                "grid": [plan.precisions, plan.contexts, plan.streams],
                "params": {name: asdict(method_params(name, plan.input_per_output)) for name in GRID_METHODS}}
    return estimates.grid_sha256(settings, {name: cats[name] for name in GRID_CATALOGUES})


def speed_key(cats: dict[str, pl.DataFrame], plan: DerivePlan) -> str:
    """The key the speed answers are stored under: everything a GPU's answers read (the estimator's version, the
    measured method's parameters with the plan's request mix, the request's length, the tiers, the catalogue rows)."""
    settings = {"estimator_version": estimator.ESTIMATOR_VERSION, "context_tokens": SPEED_CONTEXT_TOKENS,
                "params": asdict(method_params(presets.MEASURED.name, plan.input_per_output)),
                "tiers": [asdict(tier) for tier in plan.speed_tiers]}
    return estimates.grid_sha256(settings, {name: cats[name] for name in GRID_CATALOGUES})


def speed_answers(found: dict[speed.Target, pl.DataFrame], tiers: tuple[speed.Target, ...]) -> pl.DataFrame:
    """The answers cost_at_speed prices (the view of migration 0026): each tier's answers that reach it, naming it."""
    return pl.concat([found[tier].filter(pl.col("reaches")).with_columns(
        speed_tier=pl.lit(tier.label), min_user_tok_s=pl.lit(tier.min_user_tok_s, dtype=pl.Float64),
        max_ttft_s=pl.lit(tier.max_ttft_s, dtype=pl.Float64)) for tier in tiers], how="vertical_relaxed")


def own_hardware(hardware: pl.DataFrame, ownership: costs.OwnershipParams, gpus: pl.DataFrame) -> pl.DataFrame:
    """What own_vs_rent (the view of migration 0026) owns with besides the grid: the hardware prices in USD at the
    day's FX, the ownership settings, and whether each part may span hosts."""
    return hardware.join(deployability.part_classes(gpus), on="gpu", how="left").select(
        "snapshot_date", "gpu", "price_kind", "gpu_count", "usd_low", "usd_high", "quoted_on", "fx_rate", "fx_date",
        "fx_source", *(pl.lit(value, dtype=pl.Float64).alias(name) for name, value in asdict(ownership).items()),
        "spans_hosts")


def speed_grid(cats: dict[str, pl.DataFrame], offers: pl.DataFrame) -> pl.DataFrame:
    """The requests cost_at_speed prices: every model on every part listed that day, at the model's native precision
    and SPEED_CONTEXT_TOKENS (split at the plan's prompt:answer mix)."""
    listed = offers["gpu"].drop_nulls().unique().sort().to_list()
    return estimator.make_grid(cats["models"]["model_id"].to_list(), listed, [None], [SPEED_CONTEXT_TOKENS], [1])


def hardware_usd(hardware_prices: pl.DataFrame, rates: pl.DataFrame, day: date) -> pl.DataFrame:
    """Hardware prices in USD at the rate of `day` (or the latest before it)."""
    dated = hardware_prices.with_columns(pl.lit(day).alias("snapshot_date"))
    converted = fx.attach_usd_rate(dated, rates, currency_col="currency", date_col="snapshot_date")
    return converted.filter(pl.col("fx_rate").is_not_null()).with_columns(
        (pl.col("price_low") / pl.col("fx_rate")).alias("usd_low"),
        (pl.col("price_high") / pl.col("fx_rate")).alias("usd_high"),
    )


def cheapest_api(con: duckdb.DuckDBPyConnection, day: date, models: pl.DataFrame, mix: float) -> pl.DataFrame:
    """Per model, the cheapest API price fetched on or before the day, mapped to the catalogue as it stands: a model
    derived from its config after the listing was loaded (the Hugging Face source loads after OpenRouter) maps it
    too. api_prices.model and unmapped_api_models keep the mapping of the load."""
    prices = queries.api_prices_asof(con, day).drop("model")
    return api_prices.cheapest_api(api_prices.map_models(prices, models), mix)


def gate(con: duckdb.DuckDBPyConnection, day: date, offers: pl.DataFrame, rules: gates.QualityRules):
    """The day's quality gates: the offers kept, the price-sanity quarantine and the verdict."""
    # Imported here: the registry loads every scraper, which the commands that only read never need.
    from scrapers.sources import PROVIDERS
    kept, quarantined = gates.price_outliers(offers, rules, config.utc_now())
    today = offers.group_by("source").agg(pl.len().alias("listings"))
    reasons = [
        *gates.missing_provider_flags(offers, PROVIDERS, day),
        *gates.volume_flags(today, queries.listing_history(con), day, rules),
        *gates.unknown_share_flags(offers, rules),
        *gates.catalog_file_flags(queries.catalog_files_for_date(con, day), day, rules,
                                  queries.catalog_clouds_before(con, day, rules.history_days)),
        *gates.quarantined_share_flags(quarantined.height, offers.height, rules),
        *gates.absurd_api_price_flags(queries.quarantined_for_date(con, day)),
    ]
    return kept, quarantined, gates.verdict(reasons)


# requests one step of the speed search answers: its transient grows with the requests asked together
SPEED_REQUESTS = 512


def speed_search(models: pl.DataFrame, gpus: pl.DataFrame, requests: pl.DataFrame, params: presets.Params,
                 tiers: tuple[speed.Target, ...]) -> dict[speed.Target, pl.DataFrame]:
    """speed.answers_each over the requests SPEED_REQUESTS at a time: each request's search is its own, so the
    answers are the same rows in the same order as one search over them all would give (`_grid_row` numbering
    the requests of the whole grid)."""
    steps = [{tier: found.with_columns(pl.col("_grid_row") + start) for tier, found in
              speed.answers_each(models, gpus, requests.slice(start, SPEED_REQUESTS), params, tiers).items()}
             for start in range(0, max(requests.height, 1), SPEED_REQUESTS)]
    return {tier: pl.concat([step[tier] for step in steps], how="vertical_relaxed") for tier in steps[0]}


def search_speeds(cats: dict[str, pl.DataFrame], requests: pl.DataFrame,
                  plan: DerivePlan) -> dict[speed.Target, pl.DataFrame]:
    """The measured method's search over the requests, for every tier cost_at_speed prices and own_rent_api's: the
    tiers share its estimates."""
    measured = method_params(presets.MEASURED.name, plan.input_per_output)
    gpus = estimator.apply_overlay(cats["gpus"], cats["gpu_overlays"], measured.name)
    return speed_search(cats["models"], gpus, requests, measured, (*plan.speed_tiers, plan.own_rent_api_tier))


class DeriveAhead:
    """What of a night's derivation reads only the catalogues and the day's offers, computed on a thread of its own
    while a later wave of sources fetches: the estimate grid when its key is new, and the speed search. That wave is
    the Hugging Face fetch, paced at 0.2 s a request (~35 s of a bench night), with the CPU idle meanwhile; the search
    (6.5 s at today's breadth) and the first grid of a key (~1 s) ran after it.

    Its inputs are read when it starts, from the warehouse as the earlier waves loaded it. derive_date takes its
    results only when what it reads itself gives the same grid key, speed key, plan and requests (a config the later
    wave brought that changes a model changes both keys): the keys hash every input of the grid and the search, so
    equal keys are the same rows; otherwise, or when the thread failed, derive_date computes them as it would
    without it. Handed over once, so the derive alone holds the frames."""

    def __init__(self, con: duckdb.DuckDBPyConnection, day: date, plan: DerivePlan):
        cats = catalogues(con, quiet=True)
        kept, _ = gates.price_outliers(queries.offers_for_date(con, day), plan.quality, config.utc_now())
        self.plan, self.grid_key, self.speed_key = plan, grid_key(cats, plan), speed_key(cats, plan)
        self.requests = speed_grid(cats, kept)
        stored = estimates.is_stored(con, self.grid_key)
        self._result: Future | None = Future()
        threading.Thread(target=self._compute, args=(cats, stored), name="derive-ahead", daemon=True).start()

    @classmethod
    def start(cls, con: duckdb.DuckDBPyConnection, day: date, plan: DerivePlan) -> "DeriveAhead | None":
        """Started, or None (logged) when its inputs cannot be read: the derive reads them again and says why, and
        the wave fetches meanwhile."""
        try:
            return cls(con, day, plan)
        except Exception:
            log.exception("the derivation could not start ahead; the night computes it after the last wave")
            return None

    def _compute(self, cats: dict[str, pl.DataFrame], stored: bool) -> None:
        result = self._result
        try:  # the search first: its transient is over before the grid (the larger frame, held until taken) exists
            found = search_speeds(cats, self.requests, self.plan)
            result.set_result((None if stored else estimate_grid(cats, self.plan), found))
        except BaseException as exc:  # derive_date computes them itself: the night never depends on this thread
            result.set_exception(exc)

    def take(self, key: str, answers_key: str, requests: pl.DataFrame,
             plan: DerivePlan) -> tuple[pl.DataFrame | None, dict[speed.Target, pl.DataFrame] | None]:
        """(the grid, the speed search) computed ahead, once finished, each None when what derive_date reads gives
        another key (or the grid was stored already)."""
        result, self._result = self._result, None
        if result is None:
            raise RuntimeError("what was derived ahead was already taken")
        try:
            grid, found = result.result()
        except Exception:
            log.exception("the derivation started ahead failed; the night computes it now")
            return None, None
        same = plan == self.plan
        return (grid if same and key == self.grid_key else None,
                found if same and answers_key == self.speed_key and requests.equals(self.requests) else None)


# models whose cost rows one step of own_rent_api builds: a night's whole cost_per_mtok is the views' to give
OWN_RENT_API_MODELS = 8


def own_rent_api(grid: pl.DataFrame, prices: pl.DataFrame, hardware: pl.DataFrame, api: pl.DataFrame,
                 plan: DerivePlan, gpus: pl.DataFrame) -> pl.DataFrame:
    """own_rent_api at the plan's numbers of streams: the cost method's rows of cost_per_mtok and own_vs_rent, built
    a few models at a time (every row of it is one model's), never the whole night's at once."""
    method = grid.filter(pl.col("method") == presets.DEFAULT_COST_METHOD)
    models = method["model"].unique().sort().to_list()
    parts = []
    for start in range(0, max(len(models), 1), OWN_RENT_API_MODELS):  # once over none: the empty table
        some = method.filter(pl.col("model").is_in(models[start:start + OWN_RENT_API_MODELS]))
        cost = costs.cost_per_mtok(some, prices)
        own = costs.own_vs_rent(some, hardware, cost, plan.ownership, gpus)
        parts.append(api_prices.own_rent_api(cost, own, some, api, input_per_output=plan.input_per_output))
    return pl.concat(parts, how="vertical_relaxed")


def derive_date(
    con: duckdb.DuckDBPyConnection, day: date, plan: DerivePlan | None = None, ahead: DeriveAhead | None = None
) -> tuple[dict[str, int], gates.Verdict]:
    """Recompute and replace the date's derived tables (and the estimates); return row counts and the verdict. ahead:
    the grid and speed search started before the last wave's fetch, taken where their keys still hold."""
    plan = plan or DerivePlan()
    cats = catalogues(con)
    offers, quarantined, verdict = gate(con, day, queries.offers_for_date(con, day), plan.quality)
    # estimates do not depend on the date: one grid serves every day alike, computed the first night its key is new
    key, speed_sha256, requests = grid_key(cats, plan), speed_key(cats, plan), speed_grid(cats, offers)
    ahead_grid, found = ahead.take(key, speed_sha256, requests, plan) if ahead else (None, None)
    grid = estimates.read_grid(con, key)
    if grid is None:
        grid = estimate_grid(cats, plan) if ahead_grid is None else ahead_grid
        estimates.store_grid(con, grid, key)
    del ahead_grid
    # the estimates' replicas, and every power of two up to them or a node: cost_at_speed widens replicas for speed
    widest = max(grid["tp"].max() or 1, presets.MEASURED.node_gpus)
    tps = {*grid["tp"].drop_nulls().unique().to_list(), *(1 << k for k in range(widest.bit_length()))}
    prices = costs.replica_prices(offers, sorted(tps), cats["gpus"])
    hardware = hardware_usd(cats["hardware_prices"], queries.table(con, "fx_rates"), day)
    api = cheapest_api(con, day, cats["models"], plan.input_per_output)
    compared = own_rent_api(grid, prices, hardware, api, plan, cats["gpus"])
    # the prices the views join: the estimates' replicas and the answers' (the other widths price nothing); the grid
    # is let go before the speed search, the night's other large transient
    estimated, grid_pairs = grid.height, grid.filter(pl.col("agg_tok_s") > 0).select("gpu", "tp").unique()
    del grid
    # at a speed: the measured method on the requests of speed_grid, one search for every tier (own_rent_api's too)
    measured = method_params(presets.MEASURED.name, plan.input_per_output)
    if found is None:
        found = search_speeds(cats, requests, plan)
    # stored once per key, a GPU's the first night it is listed: cost_at_speed is a view of them and the day's prices
    answered = speed_answers(found, plan.speed_tiers)
    estimates.store_answers(con, answered, speed_sha256)
    joined = pl.concat([grid_pairs, answered.select("gpu", "tp")], how="vertical_relaxed").unique()
    frames = {
        "daily_prices": aggregate.daily_prices(offers),
        "rental_ranges": aggregate.rental_ranges(offers, gpus=cats["gpus"]),
        # cost_per_mtok, cost_at_speed and own_vs_rent are views of these joined to the stored grid and answers: the
        # rows of costs.cost_per_mtok, speed.cost_at_speed and costs.own_vs_rent (tested equal)
        "replica_prices": prices.join(joined, on=["gpu", "tp"], how="semi").with_columns(
            grid_sha256=pl.lit(key), speed_sha256=pl.lit(speed_sha256)),
        "own_hardware": own_hardware(hardware, plan.ownership, cats["gpus"]).with_columns(grid_sha256=pl.lit(key)),
        "price_index": trends.price_index(offers, queries.price_index_before(con, day), day),
        "own_rent_api": pl.concat([
            compared,
            speed.own_rent_api_at(found[plan.own_rent_api_tier], measured, plan.own_rent_api_tier, prices, hardware,
                                  plan.ownership, cats["gpus"], api, plan.input_per_output),
        ], how="diagonal_relaxed"),
    }
    labelled = {name: frame.with_columns(pl.lit(verdict.quality).alias("quality")) for name, frame in frames.items()}
    counts = derived.replace_for_date(con, day, labelled, quarantine=quarantined)
    # no count of the views' rows: a count computes them (~0.6 s at 10x); the export counts the rows it publishes
    return {"estimates": estimated, "speed_answers": answered.height, **counts,
            "quarantined": quarantined.height}, verdict
