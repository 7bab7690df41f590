"""Fit the measured method's efficiencies to benchmark throughput and report its error on rows the fit did not see.

Pure: frames in, frames and numbers out (bench/calibrate.py reads the committed measurements and writes the fit).
A measurement is one benchmark result (warehouse/reference/calibration/measurements.csv): a model on `gpus` GPUs of
one part at a precision, requests of `input_tokens` in and `output_tokens` out, either at a fixed concurrency or at
max load, and the output tokens per second per GPU it reached. The estimator is asked the same question:

- the replica: `group_gpus` GPUs when the benchmark states its parallelism (TPxPP or DEP), else (MLPerf) every
  power-of-two group from the smallest that holds the model up to the system's GPUs, taking the best rate per GPU
  (a submitter tunes the split; the estimator is given the same choice);
- the streams: the stated concurrency, or at max load as many as the memory holds up to MAX_BATCH (an engine's
  batch limit), never more than the memory holds.

Rows whose mean prompt length no source publishes (MLPerf's llama2-70b and mixtral-8x7b: `input_assumed`, half
the dataset's input limit) are estimated and reported but never fitted on: their prefill share is a guess.
Fixed-concurrency rows are estimated and reported but not fitted on either (FITTED_LOADS): every one is
DeepSeek-R1 on an early-2025 release (SGLang 0.4.2-0.4.3, vLLM 0.7.3-0.7.4, TensorRT-LLM 0.17) whose per-GPU rate
the same GPUs beat 8-30 times over under later releases (the TensorRT-LLM tables' DeepSeek-R1 rows), so they
measure those releases' kernels, not the hardware the cost tables price; fitted on, they pulled every efficiency
down and the held-out max-load rows' error up (55% within ±25% against 58% without them).

The efficiencies (presets.FITTED) are few and global: bandwidth, compute by precision, vendor, prefill, TP/EP
scaling, a step overhead and a collective latency. None is per row or per model. They minimise a pseudo-Huber loss of
log(estimate/measured) (a ratio error, so small and large systems weigh alike; linear beyond HUBER, so a few runs
of immature software cannot drag the fit) with a weak pull to PRIOR, by a Nelder-Mead search. Validation is
leave-one-model-out: each model's rows are estimated by the fit on the other models' rows, so every row has an
out-of-fold ratio; the band is that ratio's p10-p90. Leave-one-family-out (no sibling seen either) is reported
alongside as the stricter test.
"""

import math
from dataclasses import dataclass

import polars as pl

from transforms import estimator
from transforms.presets import FITTED, Params, fitted

MAX_BATCH = 512  # streams an engine batches at once at max load: of 256, 512, 1024 and 2048 it puts the most rows within ±25%
# Model families held out together: a family shares architecture and training, so leaving one out tests whether
# the fit carries to models it has not seen.
FAMILIES = {
    "llama-2-70b": "Llama 2", "llama-3.1-8b": "Llama 3", "llama-3.3-70b": "Llama 3", "llama-3.1-405b": "Llama 3",
    "llama-4-scout": "Llama 4", "llama-4-maverick": "Llama 4", "mixtral-8x7b": "Mixtral", "qwen3-30b-a3b": "Qwen3",
    "qwen3-235b-a22b": "Qwen3", "gpt-oss-20b": "gpt-oss", "gpt-oss-120b": "gpt-oss", "deepseek-r1": "DeepSeek",
}
# Starting point and prior of the search: typical serving figures (bandwidth ~70% of peak, compute ~40-50%).
PRIOR = {
    "bandwidth_efficiency": 0.7, "compute_efficiency": 0.5, "compute_efficiency_fp8": 0.4,
    "compute_efficiency_int4": 0.3, "moe_compute_efficiency": 0.7, "vendor_efficiency_amd": 0.7, "vendor_efficiency_intel": 0.5,
    "prefill_mfu": 0.4, "tp_derate": 0.05, "step_overhead_s": 0.005, "tp_comm_s": 0.001,
}
SEARCHED = tuple(PRIOR)
DERATE_MAX = 0.3  # tp_derate beyond this would make an 8-GPU group slower than 0.1 of its peak
RESTARTS = (0.5, 0.2)
PRIOR_WEIGHT = 0.01  # per parameter, in squared log units: enough to pin a parameter no training row informs
WITHIN = 0.25
FITTED_LOADS = ("max_load",)  # see the module's docstring: fixed-concurrency rows are reported, not fitted on
HUBER = 0.1  # the loss is quadratic in log ratio below this and linear above (pseudo-Huber): smooth and robust


class CalibrationError(ValueError):
    """Measurements the calibration cannot take; the message names the row and field."""


@dataclass(frozen=True)
class Fit:
    params: Params
    rows: int
    loss: float
    evaluations: int


def _to_unbounded(values: dict) -> list[float]:
    """Search coordinates: logit of fractions, log of seconds, so every point of the space is a valid parameter."""
    out = []
    for name in SEARCHED:
        v = values[name]
        if name == "tp_derate":
            v = v / DERATE_MAX
        out.append(math.log(v) if name.endswith("_s") else math.log(v / (1 - v)))
    return out


def _to_values(x: list[float]) -> dict:
    values = {}
    for name, xi in zip(SEARCHED, x, strict=True):
        if name.endswith("_s"):
            values[name] = math.exp(xi)
        else:
            frac = 1 / (1 + math.exp(-xi))
            values[name] = frac * DERATE_MAX if name == "tp_derate" else frac
    return values


def with_values(base: Params, values: dict, band: tuple[float, float] = (0.0, 0.0)) -> Params:
    return fitted(base, {**values, "band_ratio_low": band[0], "band_ratio_high": band[1]})


def usable(measurements: pl.DataFrame, models: pl.DataFrame, gpus: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows to compare, rows left out with their reason): the source's exclusions, then names the catalogue lacks."""
    required = ("row_id", "model", "gpu", "gpus", "precision", "input_tokens", "output_tokens", "load",
                "tok_s_per_gpu", "excluded")
    missing = [c for c in required if c not in measurements.columns]
    if missing:
        raise CalibrationError(f"measurements: missing column(s) {', '.join(missing)}")
    reason = (
        pl.when(pl.col("excluded").is_not_null()).then(pl.col("excluded"))
        .when(~pl.col("model").is_in(models["model_id"].implode())).then(pl.lit("model not in the catalogue"))
        .when(~pl.col("gpu").is_in(gpus["name"].implode())).then(pl.lit("GPU not in the catalogue"))
    )
    marked = measurements.with_columns(excluded=reason)
    return marked.filter(pl.col("excluded").is_null()), marked.filter(pl.col("excluded").is_not_null())


def _replicas(rows: pl.DataFrame, models: pl.DataFrame, gpus: pl.DataFrame, base: Params) -> pl.DataFrame:
    """Candidate replicas per row: the stated group, or every power-of-two group from the smallest that fits."""
    stated = rows.filter(pl.col("group_gpus").is_not_null()).with_columns(tp=pl.col("group_gpus"))
    free = rows.filter(pl.col("group_gpus").is_null())
    if free.height:
        smallest = estimator.serving_terms(models, gpus, _grid(free.with_columns(tp=None, streams=1)), base)["tp"]
        doublings = pl.DataFrame({"k": range(8)})
        free = free.with_columns(tp=smallest).join(doublings, how="cross").with_columns(
            tp=pl.col("tp") * (2 ** pl.col("k"))
        ).filter(pl.col("tp") <= pl.col("gpus")).drop("k")
    return pl.concat([stated, free], how="diagonal_relaxed")


def _grid(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.select(
        "model", "gpu", "precision", pl.col("input_tokens").cast(pl.Int64), pl.col("output_tokens").cast(pl.Int64),
        context_tokens=(pl.col("input_tokens") + pl.col("output_tokens")).cast(pl.Int64),
        streams=pl.col("streams").cast(pl.Int64), tp=pl.col("tp").cast(pl.Int64),
    )


def terms(rows: pl.DataFrame, models: pl.DataFrame, gpus: pl.DataFrame, base: Params) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the estimator's terms per candidate replica of each row, rows no replica can represent with the reason).

    Lengths are rounded to whole tokens (MLPerf's are dataset means).
    """
    rows = rows.with_columns(
        pl.col("input_tokens").round().cast(pl.Int64), pl.col("output_tokens").round().cast(pl.Int64),
        pl.col("group_gpus").cast(pl.Int64), pl.col("gpus").cast(pl.Int64), pl.col("concurrency").cast(pl.Int64),
    )
    candidates = _replicas(rows, models, gpus, base)
    sized = estimator.serving_terms(models, gpus, _grid(candidates.with_columns(streams=1)), base)
    candidates = candidates.with_columns(max_streams=sized["max_streams"]).filter(pl.col("max_streams") >= 1)
    candidates = candidates.with_columns(
        streams=pl.min_horizontal(pl.coalesce("concurrency", pl.lit(MAX_BATCH)), "max_streams"))
    out = estimator.serving_terms(models, gpus, _grid(candidates), base)
    out = out.with_columns(candidates.select("row_id", "load", "tok_s_per_gpu", "input_assumed"))
    lost = rows.filter(~pl.col("row_id").is_in(out["row_id"].implode())).with_columns(
        excluded=pl.lit("does not fit: no replica of the system's GPUs holds the weights and one request's KV cache"))
    return out, lost


def predict(terms_df: pl.DataFrame, params: Params) -> pl.DataFrame:
    """Estimated tokens/s per GPU per row (the best of its candidate replicas) with the measured value."""
    compute_eff, vendor_eff = estimator.efficiencies(terms_df["precision"], terms_df["vendor"], terms_df["moe"], params)
    log2_tp = terms_df["_log2_tp"]
    step = estimator.step_seconds(terms_df["_t_mem"], terms_df["_t_cmp"], log2_tp, compute_eff, vendor_eff, params)
    tok_s = estimator.request_tok_s(step, terms_df["_t_prefill"], terms_df["streams"], terms_df["output_tokens"],
                                    log2_tp, vendor_eff, params)
    per_gpu = terms_df.select("row_id", "tok_s_per_gpu", "tp", "streams", "input_assumed").with_columns(
        estimate=tok_s / terms_df["tp"])
    best = per_gpu.sort("estimate", descending=True).group_by("row_id", maintain_order=True).first()
    return best.with_columns(ratio=pl.col("estimate") / pl.col("tok_s_per_gpu").cast(pl.Float64))


def _nelder_mead(f, x0: list[float], step: float = 0.5, iterations: int = 2500, tol: float = 1e-7):
    """Minimise f from x0 (a small, dependency-free Nelder-Mead); returns (x, f(x), evaluations)."""
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] + (step if j == i else 0.0) for j in range(n)] for i in range(n)]
    scores = [f(x) for x in simplex]
    evaluations = n + 1
    for _ in range(iterations):
        order = sorted(range(n + 1), key=scores.__getitem__)
        simplex, scores = [simplex[i] for i in order], [scores[i] for i in order]
        if scores[-1] - scores[0] < tol:
            break
        centre = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]

        def towards(t: float, centre=centre, worst=worst) -> list[float]:
            return [c + t * (w - c) for c, w in zip(centre, worst, strict=True)]

        reflected = towards(-1.0)
        r = f(reflected)
        evaluations += 1
        if r < scores[0]:
            expanded = towards(-2.0)
            e = f(expanded)
            evaluations += 1
            simplex[-1], scores[-1] = (expanded, e) if e < r else (reflected, r)
        elif r < scores[-2]:
            simplex[-1], scores[-1] = reflected, r
        else:
            contracted = towards(0.5)
            c = f(contracted)
            evaluations += 1
            if c < scores[-1]:
                simplex[-1], scores[-1] = contracted, c
            else:  # shrink towards the best point
                simplex = [simplex[0]] + [[b + 0.5 * (p - b) for b, p in zip(simplex[0], q, strict=True)]
                                          for q in simplex[1:]]
                scores = [scores[0]] + [f(q) for q in simplex[1:]]
                evaluations += n
    best = min(range(n + 1), key=scores.__getitem__)
    return simplex[best], scores[best], evaluations


def fit(terms_df: pl.DataFrame, base: Params, start: dict | None = None) -> Fit:
    """The efficiencies that minimise the robust log-ratio loss over these rows (plus the weak prior)."""
    prior = _to_unbounded(PRIOR)
    terms_df = terms_df.filter(~pl.col("input_assumed") & pl.col("load").is_in(FITTED_LOADS))
    rows = terms_df["row_id"].n_unique()

    def loss(x: list[float]) -> float:
        ratios = predict(terms_df, with_values(base, _to_values(x)))["ratio"]
        misfit = (((ratios.log() / HUBER) ** 2 + 1).sqrt() - 1).mean() * HUBER
        return misfit + PRIOR_WEIGHT * sum((a - b) ** 2 for a, b in zip(x, prior, strict=True))

    x, value, evaluations = _nelder_mead(loss, _to_unbounded(start or PRIOR))
    # Restarts from the optimum escape a collapsed simplex (Nelder-Mead's usual remedy).
    for step in RESTARTS:
        x, value, more = _nelder_mead(loss, x, step=step)
        evaluations += more
    return Fit(with_values(base, _to_values(x)), rows, value, evaluations)


def cross_validate(terms_df: pl.DataFrame, base: Params, split: str = "model") -> pl.DataFrame:
    """Every row's estimate from the fit on the rows of the other models (split 'model') or the other model
    families (split 'family', stricter: no sibling of the held-out model is seen); the column `fold` names it."""
    key = pl.col("model") if split == "model" else pl.col("model").replace_strict(FAMILIES, default="other")
    folds = terms_df.with_columns(fold=key)
    out = []
    for name in sorted(folds["fold"].unique().to_list()):
        train = folds.filter(pl.col("fold") != name).drop("fold")
        held = folds.filter(pl.col("fold") == name).drop("fold")
        params = fit(train, base).params
        out.append(predict(held, params).with_columns(fold=pl.lit(name)))
    return pl.concat(out)


def summary(predictions: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per group: rows, median and p10/p90 of estimate/measured, median |ratio - 1|, share within ±25% and 2x."""
    err = (pl.col("ratio") - 1).abs()
    return predictions.group_by(by).agg(
        rows=pl.len(),
        median_ratio=pl.col("ratio").median(),
        p10_ratio=pl.col("ratio").quantile(0.1, "linear"),
        p90_ratio=pl.col("ratio").quantile(0.9, "linear"),
        median_abs_error=err.median(),
        within_25pct=(err <= WITHIN).mean(),
        within_2x=((pl.col("ratio") <= 2) & (pl.col("ratio") >= 0.5)).mean(),
    ).sort(by)


def band(predictions: pl.DataFrame) -> tuple[float, float]:
    """p10 and p90 of the out-of-fold estimate/measured (rows with published lengths): an estimate divided by them
    bounds 80% of measurements."""
    r = predictions.filter(~pl.col("input_assumed"))["ratio"]
    return r.quantile(0.1, "linear"), r.quantile(0.9, "linear")


def final(terms_df: pl.DataFrame, base: Params, out_of_fold: pl.DataFrame) -> Params:
    """The published parameters: fitted on every row, with the band from the out-of-fold ratios."""
    values = {k: getattr(fit(terms_df, base).params, k) for k in SEARCHED}
    return with_values(base, values, band(out_of_fold))


def parameters(params: Params) -> dict:
    return {k: getattr(params, k) for k in FITTED}

