"""The speed each user sees and the answer at a speed target: per-user decode tokens/s and time to first token from
the measured serving model's estimate, the most streams that meet a target, and its frontier ($/M against speed).

Nothing here changes the estimator's physics: every figure is read off `estimator.estimate` rows of the measured
method (its requests, decode steps and prefill passes), so a change to that model carries through.

How the measured method serves requests (estimator.request_tok_s): `streams` requests run at once; each finished one
is replaced, its prompt's prefill is a forward pass of its own (shared by the requests that arrive in the same decode
step), and decode steps of the whole batch stall while a prefill pass runs. One request's life is then a cycle of
`streams * output_tokens / agg_tok_s` seconds: its share of every prefill pass plus `output_tokens` decode steps of
`1 / per_stream_tok_s` seconds. From that cycle:

- `ttft_s`, the mean time to the first token: the wait for the pass or step running when the request arrives (its
  mean residual, arrivals at random times) plus the prefill pass that carries the prompt (with the others that
  arrived in the same step);
- `user_tok_s`, the mean decode speed a user sees: the answer's tokens over the rest of the cycle (its decode steps
  and the other requests' prefill passes that stall them).

Both are means over requests. MLPerf (and most service promises) judge a limit at the 99th percentile, under
requests that arrive at random (Poisson); the same cycle gives the tail too, with no fitted factor:

- `ttft_p99_s`, the 99th-percentile time to the first token: a whole decode step (the p99 of the residual of the
  step running at arrival), the wait for a free slot, the other requests' prefill passes queued ahead of the
  prompt, and its own pass. The slot wait (`slot_wait_p99`) is an M/M/c queue: the replica's slots (memory's or
  the engine's limit) each held for a cycle, `streams` busy on average. The prefill queue is an M/G/1 queue of prefill passes served before decode (their share of the time `rho`): its mean wait is
  Pollaczek-Khinchine's (the residual of the pass in service over `1 - rho`, where the whole prefill load is `rho`)
  and its tail Kingman's exponential one (a request waits with probability `rho_others`, the others' share, and
  then about `mean / rho_others`), so p99 = mean * ln(100 * rho_others) / rho_others (none below 1 %);
- `user_tok_s_p99`, the speed 99 % of requests reach or beat (one over MLPerf's p99 time per output token, per
  request `(latency - TTFT) / (tokens - 1)`): the answer's decode steps plus the prefill passes that stall them,
  their count Poisson with the mean the cycle gives, taken at its 99th percentile (normal approximation,
  mean + 2.326 sqrt(mean)).

A target says which figures it holds (`Target.percentile`: the means, or the p99 ones).
"""

from dataclasses import dataclass

import numpy as np
import polars as pl

from transforms import api_prices, costs, estimator
from transforms.presets import Params

# Speed tiers (decode tokens/s per user) the nightly prices: reading pace to voice and agents.
SPEED_TIERS_TOK_S = (10, 20, 35, 50, 75, 100, 150, 200)
BATCH_TIER = "batch"  # no target: as many streams as memory and the engine's batch limit allow
# A product that promises a speed promises a first token soon: every speed tier holds TTFT to this.
TIER_MAX_TTFT_S = 2.0
# The stream counts a frontier is drawn through: one stream, the memory (or batch) limit, and this many between.
FRONTIER_POINTS = 24
SEARCH_SPLIT = 16  # the parts a target's search splits the streams still open into, per estimate
PERCENTILES = ("mean", "p99")  # what a target's limits are judged at: the means or the 99th percentiles
Z_99 = 2.326  # the standard normal's 99th percentile


@dataclass(frozen=True)
class Target:
    """What a product promises each user: at least `min_user_tok_s` decode tokens/s and a first token within
    `max_ttft_s` seconds (None: no such promise)."""

    min_user_tok_s: float | None = None
    max_ttft_s: float | None = None
    percentile: str = "mean"  # judged on the means (user_tok_s, ttft_s) or the p99 figures (PERCENTILES)

    def __post_init__(self) -> None:
        if self.percentile not in PERCENTILES:
            raise ValueError(f"a target's percentile is one of {', '.join(PERCENTILES)}, not {self.percentile!r}")

    @property
    def text(self) -> str:
        """The promise in words, as titles and notes print it: '>= 35 tok/s per user, first token <= 2 s' (means: the
        notes beside say so), '... (99th percentiles)' for a p99 target."""
        parts = [self.min_user_tok_s and f">= {self.min_user_tok_s:g} tok/s per user",
                 self.max_ttft_s and f"first token <= {self.max_ttft_s:g} s"]
        text = ", ".join(p for p in parts if p)
        return f"{text} (99th percentiles)" if text and self.percentile == "p99" else text

    @property
    def columns(self) -> tuple[str, str]:
        """The speed and first-token columns the target is judged on."""
        return ("user_tok_s", "ttft_s") if self.percentile == "mean" else ("user_tok_s_p99", "ttft_p99_s")

    @property
    def label(self) -> str:
        """The tier's name: '35' for 35 tok/s per user, 'batch' for no target; a TTFT limit is its own column."""
        if self.min_user_tok_s is None:
            return BATCH_TIER if self.max_ttft_s is None else "any"
        return f"{self.min_user_tok_s:g}"

    @property
    def none(self) -> bool:
        return self.min_user_tok_s is None and self.max_ttft_s is None


CHAT = Target(35.0, TIER_MAX_TTFT_S)  # a chat product: faster than reading, first token within two seconds
TIERS = (*(Target(float(t), TIER_MAX_TTFT_S) for t in SPEED_TIERS_TOK_S), Target())


SPEED_COLUMNS = ("user_tok_s", "ttft_s", "user_tok_s_p99", "ttft_p99_s")


def _erlang_c(offered: np.ndarray, servers: np.ndarray) -> np.ndarray:
    """The probability that a request arriving at random finds all `servers` slots busy, `offered` of them busy on
    average (Erlang C, M/M/c). Erlang B's recursion B(k) = aB / (k + aB) runs from ten standard deviations below the
    load, where B is (a - k) / a to far better than a percent (the recursion contracts there), up to the slots; more
    than ten standard deviations (and ten slots) of room, no request waits (Erlang C is below 1e-20 there).

    Only the rows with room short of that recurse, and each row only as far as its own slots: the rows, longest
    recursion first, shrink to a prefix as the step passes each one's slots (the same operations on each row as one
    pass over every row for the longest recursion, so the same doubles, at a fraction of the work)."""
    a, c = np.nan_to_num(offered.astype(float)), np.nan_to_num(servers.astype(float))
    roomy = c - a > 10 * np.sqrt(a) + 10
    short = a >= c  # as many requests as slots or more: every arrival waits
    out = np.where(roomy, 0.0, np.where(short, 1.0, np.nan))
    rows = np.flatnonzero(~(roomy | short))  # the rest recurse
    a, c = a[rows], c[rows]
    start = np.clip(np.floor(a - 10 * np.sqrt(a)), 0, c)
    b = np.where(start > 0, np.clip((a - start) / np.maximum(a, 1e-12), 0.0, 1.0), 1.0)
    order = np.argsort(start - c, kind="stable")  # the most steps first
    a, c, start, b = a[order], c[order], start[order], b[order]
    steps = c - start
    for k in range(1, int(np.max(steps, initial=0)) + 1):
        live = int(np.searchsorted(-steps, -k, side="right"))  # the rows with k steps or more to go
        b[:live] = a[:live] * b[:live] / (start[:live] + k + a[:live] * b[:live])
    out[rows[order]] = c * b / (c - a * (1 - b))
    return out


def slots_busy(streams: pl.Expr, slots: pl.Expr) -> pl.Expr:
    """Erlang C's probability that every slot is busy (`_erlang_c`): `slots` requests at most, `streams` on average."""
    return pl.struct(a=streams, c=slots.cast(pl.Float64)).map_batches(
        lambda s: pl.Series(_erlang_c(s.struct.field("a").to_numpy(), s.struct.field("c").to_numpy())),
        return_dtype=pl.Float64)


def slot_wait_p99(cycle: pl.Expr, streams: pl.Expr, slots: pl.Expr, busy: pl.Expr) -> pl.Expr:
    """The 99th-percentile wait for a free slot (module docstring): `slots` requests run at most (memory's or the
    engine's limit), `streams` on average, each holding its slot for a `cycle`; M/M/c: a request waits with Erlang
    C's probability `busy` (`slots_busy`), then an exponential time of mean cycle / (slots - streams)."""
    free = slots.cast(pl.Float64) - streams
    return pl.when(busy > 0.01).then(pl.when(free > 0).then(cycle / free * (100 * busy).log())
                                     .otherwise(float("inf"))).otherwise(0.0)


def speed_columns(slots: pl.Expr, busy: pl.Expr, tokens_per_step: float) -> list[pl.Expr]:
    """user_tok_s and ttft_s (means), user_tok_s_p99 and ttft_p99_s (99th percentiles) of measured-method estimate
    rows (NULL for methods without requests), from the row's streams, answer length, aggregate and per-stream
    tokens/s, the most requests the replica runs at once, `slots`, and the chance they are all busy, `busy`
    (`slots_busy`; see the module's docstring). A decode step keeps `tokens_per_step` tokens per stream (speculative
    decoding, Params.tokens_per_step; 1 without): an answer takes output_tokens / tokens_per_step steps."""
    step = 1 / pl.col("per_stream_tok_s")  # decode seconds per output token
    whole_step = tokens_per_step * step  # one decode step's seconds
    out, streams = pl.col("output_tokens").cast(pl.Float64), pl.col("streams").cast(pl.Float64)
    cycle = streams * out / pl.col("agg_tok_s")
    share = ((cycle - out * step) / streams).clip(lower_bound=0.0)  # one request's share of the prefill passes
    together = pl.max_horizontal(streams / out, pl.lit(1.0))  # requests that join one prefill pass
    own_pass = together * share
    passes = streams / together  # prefill passes per cycle, beside `out` decode steps
    wait = (out * step * whole_step + passes * own_pass ** 2) / (2 * cycle)
    mean_ttft, mean_tok_s = wait + own_pass, out / (cycle - own_pass)
    # the tail (module docstring): others' passes queue ahead of a prompt (M/G/1, prefill before decode) and stall
    # its decode (a Poisson count of them)
    others = (passes - 1).clip(lower_bound=0.0)  # the other requests' passes in one request's cycle
    rho, rho_others = passes * own_pass / cycle, others * own_pass / cycle
    queued = others * own_pass ** 2 / (2 * cycle) / (1 - rho)  # mean wait for others' passes (Pollaczek-Khinchine)
    queued_p99 = pl.when(rho_others > 0.01).then(queued / rho_others * (100 * rho_others).log()).otherwise(0.0)
    stalls_p99 = others + Z_99 * others.sqrt()
    # a 99th percentile is never below the mean: the mean's residual also counts the request's own pass
    ttft_p99 = pl.max_horizontal(whole_step + slot_wait_p99(cycle, streams, slots, busy) + queued_p99 + own_pass, mean_ttft)
    tok_s_p99 = pl.min_horizontal(out / (out * step + stalls_p99 * own_pass), mean_tok_s)
    has_requests = pl.col("output_tokens").is_not_null() & (pl.col("agg_tok_s") > 0)
    return [pl.when(has_requests).then(value).alias(name) for name, value in
            zip(SPEED_COLUMNS, (mean_tok_s, mean_ttft, tok_s_p99, ttft_p99), strict=True)]


def slots(params: Params) -> pl.Expr:
    """The most requests an estimate row's replica runs at once: what memory holds, at most the engine's batch limit
    (estimate rows do not say how many data-parallel attention ranks each batch their own: a row running more
    streams than one rank's limit has at least those)."""
    return pl.max_horizontal("streams", pl.min_horizontal("max_streams", pl.lit(params.max_running_requests)))


def with_speed(estimates: pl.DataFrame, slots: pl.Expr, params: Params) -> pl.DataFrame:
    """Estimate rows (of `params`) with user_tok_s and ttft_s, user_tok_s_p99 and ttft_p99_s (NULL where the method
    models no requests); `slots`: the most requests each row's replica runs at once (`replicas`' top, or `slots`).
    Erlang C's chance that every slot is busy is a column of its own first: inside the speed expressions polars would
    run its Python function once per use."""
    busy = slots_busy(pl.col("streams").cast(pl.Float64), slots)
    return estimates.with_columns(_busy=busy).with_columns(
        speed_columns(slots, pl.col("_busy"), params.tokens_per_step)).drop("_busy")


def meets(target: Target) -> pl.Expr:
    """Rows (with the speed columns) that keep the target's promise, at its percentile."""
    tok_s, ttft = target.columns
    ok = pl.col(tok_s).is_not_null()
    if target.min_user_tok_s is not None:
        ok = ok & (pl.col(tok_s) >= target.min_user_tok_s)
    if target.max_ttft_s is not None:
        ok = ok & (pl.col(ttft) <= target.max_ttft_s)
    return ok.alias("meets")


def replicas(models: pl.DataFrame, gpus: pl.DataFrame, grid: pl.DataFrame, params: Params) -> pl.DataFrame:
    """Per grid row (streams ignored) the replicas the measured method could run at max load: the given tp, else
    every power of two from the fewest GPUs that hold the model up to a node (more GPUs buy each user speed), with
    their layout (attention_dp, request lengths), the most streams each batches (`top`: memory's limit or the
    engine's, the lower) and `limit` naming which; `_grid_row` is the grid row's index. A part that cannot hold the
    model is left out."""
    if not params.serving_model:
        raise estimator.EstimatorError(f"speed targets are a question for the measured method, not {params.name}")
    grid = grid.with_row_index("_grid_row").with_columns(streams=pl.lit(None, dtype=pl.Int64))
    if "tp" not in grid.columns:
        grid = grid.with_columns(tp=pl.lit(None, dtype=pl.Int64))
    fewest = estimator.serving_terms(models, gpus, grid.drop("_grid_row"), params)["tp"]
    given = pl.col("_given").is_not_null()
    widths = pl.lit(pl.Series([[1 << k for k in range(13)]], dtype=pl.List(pl.Int64))).first()
    grid = grid.with_columns(_fewest=fewest, _given=pl.col("tp")).with_columns(
        tp=pl.when(given).then(pl.concat_list("tp")).otherwise(widths),
    ).explode("tp").filter(given | (pl.col("tp") >= pl.col("_fewest"))
                           & (pl.col("tp") <= pl.max_horizontal("_fewest", pl.lit(params.node_gpus))))
    terms = estimator.serving_terms(models, gpus, grid.drop("_grid_row", "_fewest", "_given"), params)
    return terms.select(
        *estimator.NAME_COLUMNS, "precision", "tp", "attention_dp", "input_tokens", "output_tokens",
        top=pl.col("streams"),
        limit=pl.when(pl.col("streams") < pl.col("max_streams")).then(pl.lit("batch limit")).otherwise(pl.lit("memory")),
    ).with_columns(grid.select("_grid_row")).with_row_index("_row").filter(
        pl.col("tp").is_not_null() & (pl.col("top") >= 1))


def _at(models: pl.DataFrame, gpus: pl.DataFrame, reps: pl.DataFrame, streams: pl.Expr, params: Params) -> pl.DataFrame:
    """The estimate of each replica at `streams` streams, with the speed columns and the replica's _row, top, limit."""
    grid = reps.select(*estimator.NAME_COLUMNS, "precision", "tp", "attention_dp", "input_tokens", "output_tokens",
                       streams.cast(pl.Int64).alias("streams"))
    out = estimator.estimate(models, gpus, grid, params)
    return with_speed(out.with_columns(reps.select("_row", "_grid_row", "top", "limit", "attention_dp")), pl.col("top"),
                      params)


def _at_counts(models: pl.DataFrame, gpus: pl.DataFrame, reps: pl.DataFrame, asked: pl.DataFrame,
               params: Params) -> pl.DataFrame:
    """`_at` for each asked (_row, _n), a row per asked row in its order: a pair asked more than once (by several
    targets) is estimated once."""
    pairs = asked.select("_row", "_n").unique(maintain_order=True)
    rows = pairs.join(reps, on="_row", how="left", maintain_order="left")
    out = _at(models, gpus, rows, pl.col("_n"), params)
    return asked.select("_row", "_n").join(out.with_columns(rows.select("_n")), on=["_row", "_n"], how="left",
                                           maintain_order="left").select(out.columns)


def answers(models: pl.DataFrame, gpus: pl.DataFrame, grid: pl.DataFrame, params: Params,
            target: Target) -> pl.DataFrame:
    """Per replica (`replicas`) the answer at the target: the estimate at the most streams (1 to its top) that meet
    it, `reaches` True; a replica that misses it at one stream gives its one-stream estimate (its best speed) with
    `reaches` False, to be listed and never priced. `stopped_by` says what bounds the streams: the target, memory
    or the engine's batch limit. No target: max load. `_grid_row` is the grid row's index (`answers_each`)."""
    return answers_each(models, gpus, grid, params, (target,))[target]


def answers_each(models: pl.DataFrame, gpus: pl.DataFrame, grid: pl.DataFrame, params: Params,
                 targets: tuple[Target, ...]) -> dict[Target, pl.DataFrame]:
    """`answers` at each target, by target, in their order: the replicas, their estimates at their top and at one
    stream, and each round of the searches are estimated once for every target together.

    The search splits the interval between a stream count that meets a target and one that does not into
    SEARCH_SPLIT parts, all rows and all split points in one estimate, and keeps the part where the answer turns:
    per-user speed falls and first tokens slow as streams grow, so the count found is the most that meet it. (A
    split of 16 needs about a third of the estimates halving would, each hardly dearer.) Each target's search takes
    the same steps as it would alone: the targets share the estimates, not their outcomes."""
    targets = tuple(dict.fromkeys(targets))
    reps = replicas(models, gpus, grid, params)
    ends = _at(models, gpus, pl.concat([reps.with_columns(_n=pl.col("top").cast(pl.Int64)),
                                        reps.with_columns(_n=pl.lit(1, dtype=pl.Int64))]), pl.col("_n"), params)
    at_top, top = ends[:reps.height], reps["top"]
    ok_top, ok_one, lo, hi = [], [], [], []
    for target in targets:
        meeting = ends.select(meets(target))["meets"]
        ok_top.append(meeting[:reps.height])
        ok_one.append(meeting[reps.height:])
        # lo meets the target (or is 1 when even one stream misses it), hi does not (top + 1: no more streams run)
        lo.append(pl.select(pl.when(ok_top[-1]).then(top).otherwise(1)).to_series().alias("lo"))
        hi.append(pl.select(pl.when(ok_top[-1]).then(top + 1).otherwise(top)).to_series().alias("hi"))
    searched = [i for i, target in enumerate(targets) if not target.none]

    def still_open(i: int) -> pl.Series:
        return ok_one[i] & ~ok_top[i] & (hi[i] - lo[i] > 1)

    parts = pl.DataFrame({"_k": range(1, SEARCH_SPLIT)}, schema={"_k": pl.Int64})
    while open_ := [i for i in searched if still_open(i).any()]:
        asked = pl.concat([
            reps.with_columns(lo[i], hi[i], _target=pl.lit(i)).filter(still_open(i)).join(parts, how="cross")
            .with_columns(_n=pl.col("lo") + (pl.col("hi") - pl.col("lo")) * pl.col("_k") // SEARCH_SPLIT)
            .filter((pl.col("_n") > pl.col("lo")) & (pl.col("_n") < pl.col("hi"))).unique(["_row", "_n"])
            for i in open_])
        tried = _at_counts(models, gpus, reps, asked, params).with_columns(asked.select("_n", "_target"))
        for i in open_:
            found = reps.select("_row").join(
                tried.filter(pl.col("_target") == i).select("_row", "_n", meets(targets[i])).group_by("_row").agg(
                    _lo=pl.col("_n").filter("meets").max(), _hi=pl.col("_n").filter(~pl.col("meets")).min()),
                on="_row", how="left", maintain_order="left")
            lo[i] = pl.select(pl.max_horizontal(lo[i], found["_lo"])).to_series().alias("lo")
            hi[i] = pl.select(pl.min_horizontal(hi[i], found["_hi"])).to_series().alias("hi")
    final = _at_counts(models, gpus, reps, pl.concat([reps.select("_row", _n=lo[i].cast(pl.Int64)) for i in searched]),
                       params) if searched else None
    out = []
    for i, target in enumerate(targets):
        if target.none:
            out.append(at_top.with_columns(reaches=pl.lit(True), stopped_by=pl.col("limit")))
            continue
        k = searched.index(i)
        out.append(final[k * reps.height:(k + 1) * reps.height].with_columns(
            reaches=ok_one[i], stopped_by=pl.when(ok_top[i]).then(pl.col("limit")).otherwise(pl.lit("target"))))
    return {target: frame.drop("_row", "top", "limit") for target, frame in zip(targets, out, strict=True)}


def at_target(models: pl.DataFrame, gpus: pl.DataFrame, grid: pl.DataFrame, params: Params,
              target: Target) -> pl.DataFrame:
    """Per grid row the answer at the target: of the replicas (`replicas`: the given tp, else the widths from the
    fewest GPUs that hold the model to a node), the one that reaches the target with the most tokens/s per GPU (the
    least $/M at any per-GPU price), at the most streams (1 to its top) that meet it, `reaches` True. A part none of
    whose replicas meets it at one stream gives the one-stream estimate of its fastest (its best speed) with
    `reaches` False (see `answers`). No target: max load, the replica with the most tokens/s per GPU."""
    return best_replicas(answers(models, gpus, grid, params, target))


def best_replicas(found: pl.DataFrame) -> pl.DataFrame:
    """Of `answers`' rows at a target, per grid row the one `at_target` answers with."""
    # per grid row: the reaching replica with the most tokens/s per GPU, else the fastest one stream
    best = (pl.when(pl.col("reaches")).then(pl.col("agg_tok_s") / pl.col("tp")).otherwise(pl.col("user_tok_s") - 1e12))
    return (found.sort("_grid_row", best, pl.col("tp"), descending=[False, True, False], nulls_last=True)
            .group_by("_grid_row", maintain_order=True).first()
            .drop("_grid_row"))


def curves(models: pl.DataFrame, gpus: pl.DataFrame, grid: pl.DataFrame, params: Params,
           points: int = FRONTIER_POINTS) -> pl.DataFrame:
    """Per replica (`replicas`), the estimate with its speed columns at `points` stream counts spaced evenly in log
    from one stream to the replica's top (memory's limit or the engine's)."""
    reps = replicas(models, gpus, grid, params)
    steps = pl.DataFrame({"_k": range(points)}, schema={"_k": pl.Int64})
    counts = reps.join(steps, how="cross").with_columns(
        _n=(pl.col("top").cast(pl.Float64) ** (pl.col("_k") / max(points - 1, 1))).round().cast(pl.Int64)
        .clip(1, pl.col("top")),
    ).unique(["_row", "_n"], maintain_order=True).drop("_k")
    return _at(models, gpus, counts, pl.col("_n"), params).drop("_row", "top", "limit")


def priced(rows: pl.DataFrame, prices: pl.DataFrame) -> pl.DataFrame:
    """Answers or curve points priced by every replica price of their GPU and TP (costs.replica_prices' rows, with
    whether it is deployable and why not): usd_per_mtok and its band (the method's p10-p90). A row that does not
    reach its target (`reaches` False) gets no price."""
    offered = prices.select("snapshot_date", "gpu", "tp", "provider", "price_kind", "replica_pricing",
                            "replica_usd_per_hr", "offer_ids", "deployable", "not_deployable_reason")
    reached = rows.filter(pl.col("reaches")) if "reaches" in rows.columns else rows
    return reached.join(offered, on=["gpu", "tp"], how="inner").with_columns(
        usd_per_mtok=estimator.usd_per_mtok(pl.col("replica_usd_per_hr"), pl.col("agg_tok_s")),
        usd_per_mtok_low=estimator.usd_per_mtok(pl.col("replica_usd_per_hr"), pl.col("agg_tok_s_high")),
        usd_per_mtok_high=estimator.usd_per_mtok(pl.col("replica_usd_per_hr"), pl.col("agg_tok_s_low")),
    )


TABLE_KEY = ("snapshot_date", "model", "gpu", "provider", "price_kind", "precision", "speed_tier")
TABLE_COLUMNS = (
    *TABLE_KEY, "min_user_tok_s", "max_ttft_s", "input_tokens", "output_tokens", "tp", "streams", "stopped_by",
    "user_tok_s", "ttft_s", "agg_tok_s", "replica_pricing", "replica_usd_per_hr", "usd_per_mtok", "usd_per_mtok_low",
    "usd_per_mtok_high", "offer_ids", "deployable", "method", "engine", "estimator_version",
)


def cost_at_speed(found: dict[Target, pl.DataFrame], prices: pl.DataFrame) -> pl.DataFrame:
    """Per grid row (model, GPU, precision, request), provider, price kind and tier: the answer at the tier on the
    replica (up to a node) that makes it cheapest, priced at that replica's cheapest deployable listing (a replica
    the listings could only fake is no answer: its price would undercut a real one at some tier). A part that
    cannot reach a tier has no row there: no price for a speed it cannot give. `found`: the answers at each tier
    (`answers_each` of the measured method on the grid). The warehouse's cost_at_speed is a view that computes these
    rows in SQL from the stored answers and the day's replica prices (migration 0026); this is the definition the
    view is tested against, bit for bit (tests/flows/test_derive.py)."""
    prices = prices.filter(pl.col("deployable"))
    frames = []
    for target, answered in found.items():
        rows = priced(answered, prices)
        frames.append(rows.with_columns(
            speed_tier=pl.lit(target.label), min_user_tok_s=pl.lit(target.min_user_tok_s, dtype=pl.Float64),
            max_ttft_s=pl.lit(target.max_ttft_s, dtype=pl.Float64)))
    every = pl.concat(frames, how="vertical_relaxed")
    return (every.sort("usd_per_mtok", "tp")
            .group_by(TABLE_KEY, maintain_order=True).first()
            .select(TABLE_COLUMNS).sort(TABLE_KEY))


def envelope(points: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per group, the frontier of priced points: those no faster-or-equal point beats on $/M, slowest first, so $/M
    rises with the speed per user along it."""
    fastest_first = points.sort(*by, "user_tok_s", "usd_per_mtok", descending=[*(False,) * len(by), True, False])
    cheaper_faster = pl.col("usd_per_mtok").cum_min().shift(1).over(by)
    return fastest_first.filter(cheaper_faster.is_null() | (pl.col("usd_per_mtok") < cheaper_faster)).sort(
        *by, "user_tok_s")


def own_rent_api_at(found: pl.DataFrame, params: Params, target: Target, prices: pl.DataFrame,
                    hardware_usd: pl.DataFrame, ownership: costs.OwnershipParams, catalogue: pl.DataFrame,
                    api: pl.DataFrame, input_per_output: float) -> pl.DataFrame:
    """own_rent_api at a speed tier: per model (grid row), each part that reaches the target answers on the replica
    with the most tokens/s per GPU (`best_replicas` of `found`, the `answers` of `params` at the target), rented at
    its cheapest listing and owned as own_vs_rent owns it, against the cheapest API; the rows name the tier
    (`speed_tier`, `min_user_tok_s`, `max_ttft_s`). `catalogue` is the GPU catalogue (which parts span hosts)."""
    tier = {"speed_tier": pl.lit(target.label)}
    answered = best_replicas(found).filter(pl.col("reaches")).with_columns(**tier)
    cost = costs.cost_per_mtok(answered, prices).with_columns(**tier)
    own = costs.own_vs_rent(answered, hardware_usd, cost, ownership, catalogue).with_columns(**tier)
    return api_prices.own_rent_api(cost, own, answered, api, input_per_output=input_per_output, method=params.name,
                                   grain=("precision", "context_tokens", "speed_tier")).with_columns(
        min_user_tok_s=pl.lit(target.min_user_tok_s, dtype=pl.Float64),
        max_ttft_s=pl.lit(target.max_ttft_s, dtype=pl.Float64))
