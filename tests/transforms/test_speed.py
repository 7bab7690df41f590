"""Per-user speed and time to first token, and answers at a speed target: properties over models, parts and targets."""

import dataclasses
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from transforms import engines, estimator, speed
from transforms.presets import CALCULATOR, MEASURED, PRECISIONS, with_overrides
from warehouse import catalog

FRAMES = catalog.read_all()
MODELS = FRAMES["models"]
GPUS = estimator.apply_overlay(FRAMES["gpus"], FRAMES["gpu_overlays"], MEASURED.name)
SERVER_PARTS = ["B200 SXM", "H100 SXM5 80GB", "H200 SXM", "A100 SXM4 80GB", "Instinct MI300X 192GB", "L40S 48GB",
                "RTX PRO 6000 Blackwell Server Edition"]
# Speculative decoding as a user states it (--set): an MTP head's one draft, kept at the DeepSeek-V3 report's 85 %.
SPECULATIVE = with_overrides(MEASURED, {"draft_tokens": "1", "tokens_per_step": "1.85"})
FEW = settings(max_examples=25, deadline=None)
SLACK = 1e-9


def grid(model: str, gpu: str, precision: str | None, prompt: int, answer: int, tp: int | None = None) -> pl.DataFrame:
    return estimator.make_grid([model], [gpu], [precision], [prompt + answer], [1]).with_columns(
        tp=pl.lit(tp, dtype=pl.Int64), input_tokens=pl.lit(prompt, dtype=pl.Int64),
        output_tokens=pl.lit(answer, dtype=pl.Int64))


def at_each(g: pl.DataFrame, reps: pl.DataFrame, streams: list[int], params=MEASURED) -> list[dict]:
    """The estimate of each of grid g's replicas (`speed.replicas`' rows) at its count of `streams`, with the speed
    columns: one estimate for them all."""
    asked = reps.select("tp", "attention_dp", "top", streams=pl.Series(streams, dtype=pl.Int64))
    grid_rows = pl.concat([g.drop("tp")] * reps.height).with_columns(asked.select("tp", "attention_dp", "streams"))
    out = estimator.estimate(MODELS, GPUS, grid_rows, params).with_columns(asked.select("top"))
    return speed.with_speed(out, pl.col("top"), params).to_dicts()


def keeps(row: dict, target: speed.Target) -> bool:
    tok_s, ttft = target.columns
    return ((target.min_user_tok_s is None or row[tok_s] >= target.min_user_tok_s)
            and (target.max_ttft_s is None or row[ttft] <= target.max_ttft_s))


@st.composite
def questions(draw):
    return (draw(st.sampled_from(MODELS["model_id"].to_list())), draw(st.sampled_from(SERVER_PARTS)),
            draw(st.sampled_from([None, *PRECISIONS])), draw(st.integers(16, 8192)), draw(st.integers(16, 2048)),
            speed.Target(draw(st.one_of(st.none(), st.floats(5, 250))), draw(st.one_of(st.none(), st.floats(0.05, 5))),
                         draw(st.sampled_from(speed.PERCENTILES))))


@pytest.mark.parametrize("params", [MEASURED, SPECULATIVE], ids=["plain", "speculative"])
def test_one_stream_sees_the_replicas_decode_speed(params):
    """Alone, a user decodes at the step's pace and waits for nothing but its own prefill pass and the step (with
    speculative decoding a step keeps tokens_per_step tokens: an answer takes fewer, longer steps)."""
    row = speed.with_speed(estimator.estimate(MODELS, GPUS, grid("llama-3.3-70b", "B200 SXM", "fp8", 2000, 500, 2),
                                              params), speed.slots(params), params).row(0, named=True)
    assert row["streams"] == 1
    assert row["user_tok_s"] == pytest.approx(row["per_stream_tok_s"]) == pytest.approx(row["user_tok_s_p99"])
    per_token, step = 1 / row["per_stream_tok_s"], params.tokens_per_step / row["per_stream_tok_s"]
    prefill = row["output_tokens"] / row["agg_tok_s"] - per_token * row["output_tokens"]
    assert prefill < row["ttft_s"] < prefill + step + prefill
    assert row["ttft_p99_s"] == pytest.approx(step + prefill)  # no one queues ahead: a whole step, then its own pass


def test_the_tail_is_slower_than_the_mean_and_grows_with_the_load():
    """Under random arrivals the 99th percentile waits longer and decodes slower than the mean, more so as the
    streams near what the replica runs at once; at that limit the queue for a free slot has no bound."""
    g = grid("llama-3.3-70b", "B200 SXM", "fp8", 2000, 500, 2)
    reps = speed.replicas(MODELS, GPUS, g, MEASURED)
    top = reps["top"][0]
    rows = at_each(g, pl.concat([reps[:1]] * 5), [2, 16, 128, top - 1, top])
    for row in rows[:-1]:
        assert row["ttft_s"] < row["ttft_p99_s"] < math.inf and row["user_tok_s_p99"] < row["user_tok_s"]
    tail = [row["ttft_p99_s"] - row["ttft_s"] for row in rows]
    assert tail == sorted(tail) and rows[-1]["ttft_p99_s"] == math.inf


def erlang_c(offered: float, servers: int) -> float:
    """Erlang C from its definition, the Poisson terms summed in logs."""
    terms = [k * math.log(offered) - math.lgamma(k + 1) for k in range(servers)]
    last = servers * math.log(offered) - math.lgamma(servers + 1) + math.log(servers / (servers - offered))
    top = max([*terms, last])
    return math.exp(last - top) / (sum(math.exp(t - top) for t in terms) + math.exp(last - top))


@pytest.mark.parametrize(("offered", "servers"), [(0.5, 1), (1.0, 2), (7.5, 10), (90.0, 100), (1900.0, 2000),
                                                  (300.0, 2048)])
def test_the_wait_for_a_slot_is_erlang_c(offered, servers):
    """The recursion started ten standard deviations below the load gives Erlang C's definition."""
    got = speed._erlang_c(np.array([offered]), np.array([servers]))[0]
    assert got == pytest.approx(erlang_c(offered, servers), rel=1e-6, abs=1e-12)


def test_methods_without_requests_have_no_user_speed():
    out = speed.with_speed(estimator.estimate(MODELS, estimator.apply_overlay(FRAMES["gpus"], FRAMES["gpu_overlays"],
                                                                             "calculator"),
                                              estimator.make_grid(["llama-3.3-70b"], ["B200 SXM"]), CALCULATOR),
                           speed.slots(CALCULATOR), CALCULATOR)
    assert all(out[c].is_null().all() for c in speed.SPEED_COLUMNS)


def test_the_issue_example_spans_speeds():
    """Llama 3.3 70B FP8 on two B200s, 2,000 in + 500 out: a chat speed costs streams, a batch speed packs memory."""
    g = grid("llama-3.3-70b", "B200 SXM", "fp8", 2000, 500, 2)
    fast = speed.at_target(MODELS, GPUS, g, MEASURED, speed.Target(70, 2)).row(0, named=True)
    chat = speed.at_target(MODELS, GPUS, g, MEASURED, speed.Target(50, 2)).row(0, named=True)
    batch = speed.at_target(MODELS, GPUS, g, MEASURED, speed.Target()).row(0, named=True)
    assert fast["reaches"] and chat["reaches"] and batch["reaches"]
    assert fast["streams"] < chat["streams"] < batch["streams"]
    assert fast["agg_tok_s"] < chat["agg_tok_s"] < batch["agg_tok_s"]
    assert batch["stopped_by"] in ("memory", "batch limit") and chat["stopped_by"] == "target"


@pytest.mark.parametrize(("percentile", "params"), [("mean", MEASURED), ("p99", MEASURED), ("p99", SPECULATIVE)],
                         ids=["mean", "p99", "p99-speculative"])
@settings(max_examples=9, deadline=None)  # about FEW's examples, shared between the three
@given(questions())
def test_an_answer_meets_its_target_and_one_more_stream_would_not(percentile, params, question):
    """At the means and at the 99th percentiles (MLPerf's), decoding speculatively or not, every answer keeps its
    target and one more stream would not, unless memory or the batch limit stops it first."""
    model, gpu, precision, prompt, answer, target = question
    target = dataclasses.replace(target, percentile=percentile)
    assume(not target.none)
    g = grid(model, gpu, precision, prompt, answer)
    assume(prompt + answer <= (MODELS.filter(pl.col("model_id") == model)["context_max"][0] or 1 << 20))
    everyone = speed.answers(MODELS, GPUS, g, params, target)
    assume(everyone.height)
    reps = speed.replicas(MODELS, GPUS, g, params)
    # one stream more than each answer (capped at the top, where memory or the batch limit stops it), and one stream
    more = at_each(g, pl.concat([reps, reps]), [*(min(n + 1, t) for n, t in zip(everyone["streams"], reps["top"],
                                                                                 strict=True)), *[1] * reps.height],
                   params)
    for row, rep, after, one in zip(everyone.iter_rows(named=True), reps.iter_rows(named=True), more[:reps.height],
                                    more[reps.height:], strict=True):
        assert row["streams"] <= rep["top"]
        if not row["reaches"]:
            assert row["streams"] == 1 and not keeps(one, target)
            continue
        assert keeps(row, target)
        if row["streams"] == rep["top"]:
            assert row["stopped_by"] in ("memory", "batch limit")
        else:
            assert row["stopped_by"] == "target" and not keeps(after, target)


@FEW
@given(questions(), st.floats(5, 120), st.floats(1.1, 3))
def test_a_tighter_target_never_buys_more_tokens_per_gpu(question, speed_tok_s, tighter):
    """Per part, the tokens/s per GPU (what $/M divides a per-GPU price by) never rise as the target tightens (a
    faster speed, or the same limits held at the 99th percentile rather than the mean), and a part that cannot
    reach a tier reaches no tighter one."""
    model, gpu, precision, prompt, answer, _ = question
    assume(prompt + answer <= (MODELS.filter(pl.col("model_id") == model)["context_max"][0] or 1 << 20))
    g = grid(model, gpu, precision, prompt, answer)
    tiers = [speed.Target(), speed.Target(speed_tok_s, 2.0), speed.Target(speed_tok_s, 2.0, "p99"),
             speed.Target(speed_tok_s * tighter, 2.0, "p99")]
    rows = [speed.at_target(MODELS, GPUS, g, MEASURED, t) for t in tiers]
    assume(all(r.height for r in rows))
    per_gpu = [r["agg_tok_s"][0] / r["tp"][0] if r["reaches"][0] else None for r in rows]
    for looser, tight in zip(per_gpu, per_gpu[1:], strict=False):
        if looser is None:
            assert tight is None
        elif tight is not None:
            assert tight <= looser * (1 + SLACK)


def offers(gpu: str, tp: int, usd_per_hr: float, deployable: bool = True) -> pl.DataFrame:
    return pl.DataFrame({"snapshot_date": [None], "gpu": [gpu], "tp": [tp], "provider": ["vastai"],
                         "price_kind": ["on_demand"], "replica_pricing": ["one_listing"],
                         "replica_usd_per_hr": [usd_per_hr], "offer_ids": ["1"], "deployable": [deployable],
                         "not_deployable_reason": [None]}, schema_overrides={"snapshot_date": pl.Date})


def test_a_part_that_cannot_reach_a_target_is_never_priced():
    g = grid("llama-3.3-70b", "A100 SXM4 80GB", "bf16", 2000, 500, 2)
    slow, fast = (speed.at_target(MODELS, GPUS, g, MEASURED, speed.Target(s, 2)) for s in (5, 500))
    assert slow["reaches"][0] and not fast["reaches"][0]
    price = offers("A100 SXM4 80GB", 2, 3.0)
    assert speed.priced(slow, price).height == 1 and speed.priced(fast, price).is_empty()
    assert speed.cost_at_speed(speed.answers_each(MODELS, GPUS, g, MEASURED, (speed.Target(500, 2),)), price).is_empty()
    assert speed.cost_at_speed(speed.answers_each(MODELS, GPUS, g, MEASURED, (speed.Target(5, 2),)),
                               offers("A100 SXM4 80GB", 2, 3.0, deployable=False)).is_empty()  # only fakeable


def test_cost_at_speed_names_the_engine_its_answers_model():
    g = grid("llama-3.3-70b", "A100 SXM4 80GB", "bf16", 2000, 500, 2)
    price, tier = offers("A100 SXM4 80GB", 2, 3.0), (speed.Target(5, 2),)
    trtllm = speed.cost_at_speed(speed.answers_each(MODELS, GPUS, g, MEASURED, tier), price)
    vllm = speed.cost_at_speed(speed.answers_each(MODELS, GPUS, g, engines.for_engine(MEASURED, "vllm"), tier), price)
    assert trtllm["engine"].to_list() == ["trtllm"] and vllm["engine"].to_list() == ["vllm"]
    assert vllm["usd_per_mtok"][0] != trtllm["usd_per_mtok"][0]  # its own efficiency: its own price


def test_the_frontier_keeps_only_points_no_faster_point_beats():
    points = pl.DataFrame({"gpu": ["a"] * 4, "user_tok_s": [10.0, 20.0, 30.0, 40.0],
                           "usd_per_mtok": [1.0, 3.0, 2.0, 5.0]})
    kept = speed.envelope(points, ["gpu"])
    assert kept["user_tok_s"].to_list() == [10.0, 30.0, 40.0]  # 20 tok/s at $3 loses to 30 tok/s at $2
