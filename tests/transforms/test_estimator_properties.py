"""Properties every estimate keeps, for any catalogue model and GPU, both presets, any context and concurrency."""

from dataclasses import dataclass

import polars as pl
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from transforms import estimator
from transforms.estimator import estimate, make_grid
from transforms.presets import CALCULATOR, CEILING, PRECISIONS, Params
from warehouse import catalog

FRAMES = catalog.read_all()
MODELS = FRAMES["models"]
GPUS = {p.name: estimator.apply_overlay(FRAMES["gpus"], FRAMES["gpu_overlays"], p.name) for p in (CEILING, CALCULATOR)}
SLACK = 1e-12  # relative float noise allowed in monotonicity
FEW = settings(max_examples=40, deadline=None)


@dataclass(frozen=True)
class Case:
    params: Params
    model: str
    gpu: str
    precision: str | None
    context_tokens: int
    streams: int

    @property
    def gpus(self) -> pl.DataFrame:
        return GPUS[self.params.name]

    def grid(self, **change) -> pl.DataFrame:
        axes = {"models": [self.model], "gpus": [self.gpu], "precisions": [self.precision],
                "contexts": [self.context_tokens], "streams": [self.streams]} | change
        return make_grid(**axes)

    def replica(self, context_tokens: int | None = None) -> dict:
        """The smallest group holding one stream at this context: the fixed replica a curve is drawn for."""
        grid = self.grid(contexts=[context_tokens or self.context_tokens], streams=[1])
        return estimate(MODELS, self.gpus, grid, self.params).row(0, named=True)


@st.composite
def cases(draw, presets=(CEILING, CALCULATOR)) -> Case:
    return Case(
        params=draw(st.sampled_from(presets)),
        model=draw(st.sampled_from(MODELS["model_id"].to_list())),
        gpu=draw(st.sampled_from(FRAMES["gpus"]["name"].to_list())),
        precision=draw(st.sampled_from([None, *PRECISIONS])),
        context_tokens=draw(st.integers(1, estimator.CONTEXT_TOKENS_MAX)),
        streams=draw(st.integers(1, estimator.STREAMS_MAX)),
    )


def stream_counts(limit: int, fractions: list[float]) -> list[int]:
    return sorted({1 + int(f * (limit - 1)) for f in fractions})


@FEW
@given(case=cases(), factor=st.floats(1.0, 8.0))
def test_more_bandwidth_never_lowers_throughput(case, factor):
    part = case.gpus.filter(pl.col("name") == case.gpu)
    faster = part.with_columns(name=pl.lit("faster"), bandwidth_gbs=pl.col("bandwidth_gbs") * factor)
    slow, fast = estimate(MODELS, pl.concat([part, faster]), case.grid(gpus=[case.gpu, "faster"]), case.params).rows(
        named=True)
    assert fast["tp"] == slow["tp"]
    for column in ("single_stream_tok_s", "per_stream_tok_s", "agg_tok_s", "prefill_tok_s"):
        if slow[column] is not None:
            assert fast[column] >= slow[column] * (1 - SLACK), column


@FEW
@given(case=cases(), fractions=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=8))
def test_more_streams_never_lower_agg_tok_s_before_memory_fills(case, fractions):
    replica = case.replica()
    limit = min(replica["max_streams"] or estimator.STREAMS_MAX, estimator.STREAMS_MAX)
    assume(limit >= 1 and replica["agg_tok_s"] is not None)
    grid = case.grid(streams=stream_counts(limit, fractions)).with_columns(tp=pl.lit(replica["tp"]))
    agg = estimate(MODELS, case.gpus, grid, case.params)["agg_tok_s"].to_list()
    assert all(b >= a * (1 - SLACK) for a, b in zip(agg, agg[1:], strict=False))


@FEW
@given(case=cases(), fractions=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=8))
def test_per_stream_tok_s_never_rises_with_streams(case, fractions):
    replica = case.replica()
    grid = case.grid(streams=stream_counts(estimator.STREAMS_MAX, fractions)).with_columns(tp=pl.lit(replica["tp"]))
    per_stream = estimate(MODELS, case.gpus, grid, case.params)["per_stream_tok_s"].to_list()
    assert all(b <= a * (1 + SLACK) for a, b in zip(per_stream, per_stream[1:], strict=False))


@FEW
@given(
    case=cases(),
    model=st.sampled_from(MODELS.filter(pl.col("arch") == "dense")["model_id"].to_list()),
    experts=st.integers(1, 512),
    top_k=st.integers(1, 16),
    shared=st.integers(0, 4),
)
def test_a_dense_model_ignores_the_expert_terms(case, model, experts, top_k, shared):
    dense = MODELS.filter(pl.col("model_id") == model)
    routed = dense.with_columns(
        pl.lit(v, dtype=pl.Int64).alias(c)
        for c, v in (("experts", experts), ("experts_per_token", min(top_k, experts)), ("shared_experts", shared))
    ).with_columns(model_id=pl.lit("with experts"))
    grid = case.grid(models=[model, "with experts"])
    plain, with_experts = estimate(pl.concat([dense, routed]), case.gpus, grid, case.params).drop("model").rows()
    assert plain == with_experts


@FEW
@given(case=cases(), other_context=st.integers(1, estimator.CONTEXT_TOKENS_MAX))
def test_a_bigger_context_never_raises_max_streams(case, other_context):
    shorter, longer = sorted((case.context_tokens, other_context))
    replica = case.replica(longer)
    grid = case.grid(contexts=[shorter, longer], streams=[1]).with_columns(tp=pl.lit(replica["tp"]))
    at_shorter, at_longer = estimate(MODELS, case.gpus, grid, case.params)["max_streams"].to_list()
    assert (at_shorter is None and at_longer is None) or at_longer <= at_shorter
