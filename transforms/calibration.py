"""Fit the measured method's efficiencies to benchmark throughput and report its error on rows the fit did not see.

Pure: frames in, frames and numbers out (bench/calibrate.py reads the committed measurements and writes the fit).
A measurement is one benchmark result (warehouse/reference/calibration/measurements.csv): a model on `gpus` GPUs of
one part at a precision, requests of `input_tokens` in and `output_tokens` out, either at a fixed concurrency or at
max load, and the output tokens per second per GPU it reached. The estimator is asked the same question:

- the replica: `group_gpus` GPUs and the attention split (`attention_dp`) when the benchmark states its
  parallelism (TPxPP, DEP, DP-attention), else (MLPerf) every power-of-two group from the smallest that holds the
  model up to the system's GPUs, with the estimator's own choice of split, taking the best rate per GPU (a submitter
  tunes the split; the estimator is given the same choice);
- the streams: the estimator's max-load batch (what memory holds, at most the engine's documented batch limit per
  data-parallel rank: engine_batch_limit), or the stated concurrency when it is smaller.

Rows whose dataset's mean prompt length no MLCommons source publishes (MLPerf's llama2-70b and mixtral-8x7b: the
means of a third party's per-sample extract of their datasets; `input_assumed`) are estimated and reported but never
fitted on: their prefill share is not the benchmark's own statement. Legacy rows (`legacy`: DeepSeek-R1 at fixed
concurrency on early-2025 releases, SGLang 0.4.2-0.4.3, vLLM 0.7.3-0.7.4, TensorRT-LLM 0.17) are estimated and reported as a group of their own but never fitted nor accepted on: the same
GPUs beat them 8-30 times over under later releases (the TensorRT-LLM tables' DeepSeek-R1 rows), so they measure
those releases' kernels, not the hardware the cost tables price. Every other row is fitted on, at max load and at
fixed concurrency alike.

The efficiencies (presets.FITTED) are few and global: bandwidth, compute by precision, the routed experts' grouped
matmuls, vendor, engine (SGLang's and vLLM's relative to TensorRT-LLM; a row's engine from its `engine` column, a
vendor's own harness read as the reference), prefill, TP/EP scaling, a step overhead, the host's work per request and
a collective latency. None is per row or per model. They minimise a pseudo-Huber loss of log(estimate/measured) (a ratio error, so small and
large systems weigh alike; linear beyond HUBER, so a few runs of immature software cannot drag the fit) with a weak
pull to PRIOR, by a Nelder-Mead search. Validation holds out each source whole (leave-one-source-out: a publisher and
its engine, each MLPerf round; what a user on a stack none of them ran meets), each model (leave-one-model-out) and
each maker of models.csv (leave-one-vendor-out: no sibling seen): every row gets an estimate from a fit that did not
see it; the band is the leave-one-source-out ratio's p10-p90 on current releases, and band_check scores it on each
fold with the band the other folds give. The acceptance (ACCEPTANCE, REPRESENTABLE_MIN) judges every split on
max-load and current fixed-concurrency rows alike.
"""

import math
from dataclasses import dataclass

import polars as pl

from transforms import engines, estimator, presets
from transforms.presets import FITTED, Params, fitted

# vLLM's max_num_seqs is 256 on parts under 70 GiB, on A100s and before v0.9 (presets.ENGINE_MAX_RUNNING_REQUESTS).
VLLM_LARGE_PART_GB, VLLM_SMALL_PART_SEQS = 70 * 1.073741824, 256
# Starting point and prior of the search: typical serving figures (bandwidth ~70% of peak, compute ~40-50%).
PRIOR = {
    "bandwidth_efficiency": 0.7, "compute_efficiency": 0.5, "compute_efficiency_fp8": 0.4,
    "compute_efficiency_int4": 0.3, "moe_compute_efficiency": 0.7, "vendor_efficiency_amd": 0.7, "vendor_efficiency_intel": 0.5,
    "prefill_mfu": 0.4, "tp_derate": 0.05, "step_overhead_s": 0.005, "request_overhead_s": 1e-5, "tp_comm_s": 0.001,
    "dp_comm_s": 0.001, "engine_efficiency_sglang": 1.0, "engine_efficiency_vllm": 1.0,
}
SEARCHED = tuple(PRIOR)
DERATE_MAX = 0.3  # tp_derate beyond this would make an 8-GPU group slower than 0.1 of its peak
RESTARTS = (0.5, 0.2)
ITERATIONS = 2500  # per Nelder-Mead run: the fits converge (tol) well before it
PRIOR_WEIGHT = 0.01  # per parameter, in squared log units: enough to pin a parameter no training row informs
WITHIN = 0.25
LEGACY = "fixed_concurrency_legacy"
ACCEPTED_GROUPS = ("fixed_concurrency", "max_load")
# figure: (lowest, highest) allowed on held-out rows of each accepted group, for every validation split; inside_band
# is the share of held-out rows inside the band published without their fold (band_check)
ACCEPTANCE = {"median_abs_error": (None, 0.25), "within_25pct": (0.60, None), "within_2x": (0.90, None),
              "inside_band": (0.70, 0.90)}
REPRESENTABLE_MIN = 0.90  # of a group's usable rows, the share whose model and GPU the catalogue holds
# Validation splits, the one a user's question mirrors first: a user's serving stack is usually in none of our sources,
# so a source (a publisher and its engine) is held out whole; then each model, then each maker of models.
VALIDATION = ("source", "model", "vendor")
FOLD_KEYS = {"source": "source_name", "model": "model", "vendor": "model_vendor"}
# A publisher's repository -> the name a report gives it (each MLPerf round is a source of its own)
PUBLISHERS = {"NVIDIA/TensorRT-LLM": "TensorRT-LLM tables", "sgl-project/sgl-cookbook": "SGLang cookbook",
              "SemiAnalysisAI/InferenceX-app": "InferenceMAX", "dstackai/benchmarks": "dstack",
              "sgl-project/sglang": "SGLang repository"}
HUBER = 0.1  # the loss is quadratic in log ratio below this and linear above (pseudo-Huber): smooth and robust
# Prompt tokens per answer token, the edges the report splits held-out rows at (prompt_per_answer): where prefill
# carries the time (short answers to long prompts) and where decode does
PROMPT_PER_ANSWER_EDGES = (0.25, 1.0, 4.0, 12.0)
PROMPT_PER_ANSWER = pl.Enum(["< 0.25", "0.25-1", "1-4", "4-12", ">= 12"])


class CalibrationError(ValueError):
    """Measurements the calibration cannot take; the message names the row and field."""


@dataclass(frozen=True)
class Fit:
    params: Params
    rows: int
    loss: float
    evaluations: int


def _unbounded_above(name: str) -> bool:
    """Seconds, and an engine's throughput relative to TensorRT-LLM's (it may exceed 1), are searched in log."""
    return name.endswith("_s") or name.startswith("engine_efficiency")


def _to_unbounded(values: dict) -> list[float]:
    """Search coordinates: logit of fractions, log of seconds and ratios, so every point of the space is a valid
    parameter."""
    out = []
    for name in SEARCHED:
        v = values[name]
        if name == "tp_derate":
            v = v / DERATE_MAX
        out.append(math.log(v) if _unbounded_above(name) else math.log(v / (1 - v)))
    return out


def _to_values(x: list[float]) -> dict:
    values = {}
    for name, xi in zip(SEARCHED, x, strict=True):
        if _unbounded_above(name):
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


def source_name() -> pl.Expr:
    """The source a measurement row comes from, as a user meets it: each MLPerf round; elsewhere the publisher
    (PUBLISHERS, else its repository) and the engine it ran."""
    repo = pl.col("source").str.extract(r"^([^:@]+)")
    return (pl.when(pl.col("suite") == "mlperf").then(pl.lit("MLPerf ") + pl.col("version"))
            .otherwise(repo.replace(PUBLISHERS) + pl.lit(" (") + pl.col("engine") + pl.lit(")")))


def _replicas(rows: pl.DataFrame, models: pl.DataFrame, gpus: pl.DataFrame, base: Params) -> pl.DataFrame:
    """Candidate replicas per row: the stated group and attention split, or every power-of-two group from the smallest
    that fits (the estimator's max-load sizing) with the estimator's choice of attention split."""
    stated = rows.filter(pl.col("group_gpus").is_not_null()).with_columns(tp=pl.col("group_gpus"))
    free = rows.filter(pl.col("group_gpus").is_null())
    if free.height:
        asked = free.with_columns(tp=None, attention_dp=None, streams=None)
        smallest = estimator.serving_terms(models, gpus, _grid(asked), base)["tp"]
        doublings = pl.DataFrame({"k": range(8)})
        free = free.with_columns(tp=smallest, attention_dp=None).join(doublings, how="cross").with_columns(
            tp=pl.col("tp") * (2 ** pl.col("k"))
        ).filter(pl.col("tp") <= pl.col("gpus")).drop("k")
    return pl.concat([stated, free], how="diagonal_relaxed")


def _grid(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.select(
        "model", "gpu", "precision", pl.col("input_tokens").cast(pl.Int64), pl.col("output_tokens").cast(pl.Int64),
        context_tokens=(pl.col("input_tokens") + pl.col("output_tokens")).cast(pl.Int64),
        streams=pl.col("streams").cast(pl.Int64), tp=pl.col("tp").cast(pl.Int64),
        attention_dp=pl.col("attention_dp").cast(pl.Int64),
        max_running_requests=pl.col("max_running_requests").cast(pl.Int64),
        # the stated pipeline stages (TensorRT-LLM's tables: "TP2,PP4"): only each stage's GPUs all-reduce
        pipeline_stages=pl.col("parallelism").str.extract(r"\bPP(\d+)\b", 1).cast(pl.Int64)
        if "parallelism" in rows.columns else pl.lit(None, dtype=pl.Int64),
    )


def engine_batch_limit(engine: pl.Expr, software: pl.Expr, memory_gb: pl.Expr, gpu: pl.Expr) -> pl.Expr:
    """Streams a row's engine batches at most per data-parallel rank, by its documented defaults
    (presets.ENGINE_MAX_RUNNING_REQUESTS; vLLM's depends on the part and the release); None: the method's own."""
    limits = presets.ENGINE_MAX_RUNNING_REQUESTS
    small_vllm = (memory_gb < VLLM_LARGE_PART_GB) | gpu.str.contains("A100") | software.str.contains(r"vLLM 0\.[0-8]\.")
    return (pl.when((engine == "vLLM") & small_vllm).then(VLLM_SMALL_PART_SEQS)
            .otherwise(engine.replace_strict(limits, default=None, return_dtype=pl.Int64)))


def terms(rows: pl.DataFrame, models: pl.DataFrame, gpus: pl.DataFrame, base: Params) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the estimator's terms per candidate replica of each row, rows no replica can represent with the reason).

    Each candidate is asked twice: at max load (no streams: the estimator sizes the batch to memory and the row's
    engine limit, and picks the attention split where the row states none), then at the row's concurrency where it
    has one (never more streams than the max-load batch: memory or the engine would queue the rest). Lengths are
    rounded to whole tokens (MLPerf's are dataset means).
    """
    asked = rows.with_columns(
        pl.col("input_tokens").round().cast(pl.Int64), pl.col("output_tokens").round().cast(pl.Int64),
        pl.col("group_gpus").cast(pl.Int64), pl.col("gpus").cast(pl.Int64), pl.col("concurrency").cast(pl.Int64),
        pl.col("attention_dp").cast(pl.Int64), pl.col("legacy").cast(pl.Boolean),
    ).join(gpus.select(gpu="name", _memory_gb="memory_gb"), on="gpu", how="left", maintain_order="left").with_columns(
        max_running_requests=engine_batch_limit(pl.col("engine"), pl.col("software"), pl.col("_memory_gb"),
                                                pl.col("gpu")),
    ).drop("_memory_gb").join(models.select(model="model_id", model_vendor="vendor"), on="model", how="left",
                              maintain_order="left").with_columns(source_name=source_name(),
                                                                  engine_key=engines.engine_key(pl.col("engine")))
    candidates = _replicas(asked, models, gpus, base)
    at_max_load = estimator.serving_terms(models, gpus, _grid(candidates.with_columns(streams=None)), base)
    candidates = candidates.with_columns(
        attention_dp=at_max_load["attention_dp"],
        streams=pl.min_horizontal("concurrency", at_max_load["streams"]),
    ).filter(at_max_load["streams"] >= 1)
    out = estimator.serving_terms(models, gpus, _grid(candidates), base)
    out = out.with_columns(candidates.select("row_id", "load", "legacy", "model_vendor", "source_name", "engine_key",
                                             "tok_s_per_gpu", "input_assumed"))
    lost = rows.filter(~pl.col("row_id").is_in(out["row_id"].implode())).with_columns(
        excluded=pl.lit("does not fit: no replica of the system's GPUs holds the weights and one request's KV cache"))
    return out, lost


def predict(terms_df: pl.DataFrame, params: Params) -> pl.DataFrame:
    """Estimated tokens/s per GPU per row (the best of its candidate replicas) with the measured value."""
    compute_eff, vendor_eff = estimator.efficiencies(terms_df["_compute_precision"], terms_df["vendor"], params,
                                                     terms_df["engine_key"])
    log2_tp = terms_df["_log2_tp"]
    step = estimator.step_seconds(terms_df["_t_mem"], terms_df["_t_cmp"], log2_tp, compute_eff, vendor_eff, params,
                                  terms_df["_requests_per_rank"], terms_df["_x_mem"], terms_df["_x_cmp"],
                                  terms_df["_log2_dp"], terms_df["_t_link"])
    tok_s = estimator.request_tok_s(step, terms_df["_t_prefill"], terms_df["streams"], terms_df["output_tokens"],
                                    log2_tp, vendor_eff, params, terms_df["_x_prefill"], terms_df["_log2_dp"],
                                    terms_df["_t_pass_read"], terms_df["_t_link_prefill"])
    per_gpu = terms_df.select("row_id", "load", "legacy", "tok_s_per_gpu", "tp", "streams", "input_assumed").with_columns(
        estimate=tok_s / terms_df["tp"])
    best = per_gpu.sort("estimate", descending=True).group_by("row_id", maintain_order=True).first()
    return best.with_columns(ratio=pl.col("estimate") / pl.col("tok_s_per_gpu").cast(pl.Float64))


def _nelder_mead(f, x0: list[float], step: float = 0.5, iterations: int = ITERATIONS, tol: float = 1e-7):
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


def fit(terms_df: pl.DataFrame, base: Params, start: dict | None = None, iterations: int = ITERATIONS) -> Fit:
    """The efficiencies that minimise the robust log-ratio loss over these rows (plus the weak prior); `iterations`
    bounds each Nelder-Mead run (a test of the folds' bookkeeping needs no converged fit)."""
    prior = _to_unbounded(PRIOR)
    terms_df = terms_df.filter(~pl.col("input_assumed") & ~pl.col("legacy"))
    rows = terms_df["row_id"].n_unique()
    if not rows:  # nothing to learn from: the prior's values
        return Fit(with_values(base, PRIOR), 0, 0.0, 0)

    def loss(x: list[float]) -> float:
        ratios = predict(terms_df, with_values(base, _to_values(x)))["ratio"]
        misfit = (((ratios.log() / HUBER) ** 2 + 1).sqrt() - 1).mean() * HUBER
        return misfit + PRIOR_WEIGHT * sum((a - b) ** 2 for a, b in zip(x, prior, strict=True))

    x, value, evaluations = _nelder_mead(loss, _to_unbounded(start or PRIOR), iterations=iterations)
    # Restarts from the optimum escape a collapsed simplex (Nelder-Mead's usual remedy).
    for step in RESTARTS:
        x, value, more = _nelder_mead(loss, x, step=step, iterations=iterations)
        evaluations += more
    return Fit(with_values(base, _to_values(x)), rows, value, evaluations)


def cross_validate(terms_df: pl.DataFrame, base: Params, split: str = "model", iterations: int = ITERATIONS
                   ) -> pl.DataFrame:
    """Every row's estimate from the fit on the rows of the other sources (split 'source': a publisher and its engine,
    each MLPerf round; what a user on a stack none of them ran meets), of the other models (split 'model') or of the
    other models' makers (split 'vendor', models.csv's vendor: no model of the held-out maker is seen); the column
    `fold` names the held-out group. A fold with no row the fit takes (legacy or assumed lengths alone) is estimated
    by the fit on every row, which is the fit on the others."""
    folds = terms_df.with_columns(fold=pl.col(FOLD_KEYS[split]))
    fitted_on = ~pl.col("input_assumed") & ~pl.col("legacy")
    out, everything = [], None
    for name in sorted(folds["fold"].unique().to_list()):
        train = folds.filter(pl.col("fold") != name).drop("fold")
        held = folds.filter(pl.col("fold") == name).drop("fold")
        if held.filter(fitted_on).height:
            params = fit(train, base, iterations=iterations).params
        else:
            everything = everything or fit(folds.drop("fold"), base, iterations=iterations).params
            params = everything
        out.append(predict(held, params).with_columns(fold=pl.lit(name)))
    return pl.concat(out)


def grouped(predictions: pl.DataFrame) -> pl.DataFrame:
    """The predictions with the group the acceptance judges them in (`group`): max load, fixed concurrency of current
    releases, or the legacy releases (reported, never accepted on nor fitted)."""
    return predictions.with_columns(group=pl.when(pl.col("legacy")).then(pl.lit(LEGACY))
                                    .otherwise(pl.col("load")))


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
        **({"inside_band": pl.col("inside_band").mean()} if "inside_band" in predictions.columns else {}),
    ).sort(by)


def prompt_per_answer() -> pl.Expr:
    """A row's prompt tokens per answer token, as the bucket (PROMPT_PER_ANSWER) the report groups it in: at max load
    the prefill's share of the time grows with it, so a prefill priced too dear shows as estimates falling along it."""
    ratio, labels = pl.col("input_tokens") / pl.col("output_tokens"), PROMPT_PER_ANSWER.categories.to_list()
    bucket = pl.lit(labels[-1])
    for edge, label in reversed(list(zip(PROMPT_PER_ANSWER_EDGES, labels[:-1], strict=True))):
        bucket = pl.when(ratio < edge).then(pl.lit(label)).otherwise(bucket)
    return bucket.cast(PROMPT_PER_ANSWER).alias("prompt_per_answer")


def representable(measurements: pl.DataFrame, compared: pl.DataFrame) -> pl.DataFrame:
    """Per accepted group: the rows a source leaves usable (published lengths, no source exclusion), how many of them
    the estimator represents (model and GPU in the catalogue, a replica that holds it) and the share."""
    candidates = grouped(measurements.filter(pl.col("excluded").is_null() & ~pl.col("input_assumed")))
    return candidates.filter(pl.col("group").is_in(ACCEPTED_GROUPS)).group_by("group").agg(
        rows=pl.len(), represented=pl.col("row_id").is_in(compared["row_id"].implode()).sum(),
    ).with_columns(share=pl.col("represented") / pl.col("rows")).sort("group")


def acceptance(out_of_fold: dict[str, pl.DataFrame], shares: pl.DataFrame) -> pl.DataFrame:
    """The acceptance checks per validation split and accepted group, on held-out rows with published lengths: each
    figure, its threshold and whether it passes (ACCEPTANCE, REPRESENTABLE_MIN)."""
    checks = []
    for split, predictions in out_of_fold.items():
        figures = summary(grouped(predictions.filter(~pl.col("input_assumed"))), ["group"]).join(
            shares.select("group", representable="share"), on="group", how="left")
        for row in figures.filter(pl.col("group").is_in(ACCEPTED_GROUPS)).iter_rows(named=True):
            for figure, (low, high) in {**ACCEPTANCE, "representable": (REPRESENTABLE_MIN, None)}.items():
                value = row.get(figure)
                if figure not in row:
                    continue  # predictions without a band check (inside_band) are judged on the rest
                threshold = " and ".join(f"{sign} {bound:.2f}" for sign, bound in ((">=", low), ("<=", high))
                                         if bound is not None)
                passes = value is not None and (low is None or value >= low) and (high is None or value <= high)
                checks.append({"split": split, "group": row["group"], "figure": figure, "value": value,
                               "threshold": threshold, "passes": passes})
    return pl.DataFrame(checks)


def band(predictions: pl.DataFrame) -> tuple[float, float]:
    """p10 and p90 of the out-of-fold estimate/measured on rows of current releases with published lengths: an
    estimate divided by them bounds 80% of measurements."""
    r = predictions.filter(~pl.col("input_assumed") & ~pl.col("legacy"))["ratio"]
    return r.quantile(0.1, "linear"), r.quantile(0.9, "linear")


def band_check(predictions: pl.DataFrame) -> pl.DataFrame:
    """Out-of-fold predictions with `inside_band`: whether each row's measurement lies inside the band (band) of the
    other folds' out-of-fold ratios, the band a calibration without the row's fold would have published, so a
    fold's residuals never widen its own band."""
    out = []
    for name in predictions["fold"].unique().sort().to_list():
        low, high = band(predictions.filter(pl.col("fold") != name))
        out.append(predictions.filter(pl.col("fold") == name).with_columns(
            inside_band=pl.col("ratio").is_between(low, high)))
    return pl.concat(out)


def final(terms_df: pl.DataFrame, base: Params, out_of_fold: pl.DataFrame) -> Params:
    """The published parameters: fitted on every row, with the band from the out-of-fold ratios."""
    values = {k: getattr(fit(terms_df, base).params, k) for k in SEARCHED}
    return with_values(base, values, band(out_of_fold))


def parameters(params: Params) -> dict:
    return {k: getattr(params, k) for k in FITTED}
