"""`gpuledger frontier`: what a million tokens costs at each speed per user, per GPU, beside the cheapest API."""

from typing import Annotated

import polars as pl
import typer

from flows import views
from flows.cli.common import TOKENS, FormatOption, fail, gpu_names, resolve_name
from flows.cli.output import Format, render
from flows.cli.table import load_published
from flows.derive import SPEED_CONTEXT_TOKENS
from transforms import engines, presets

NOTE = ("Per GPU, the cheapest deployable live listing at each speed: $/M output tokens (prefill paid for) from one "
        "stream to memory's (or the engine's) limit, on every replica of the fewest GPUs that hold the model up to a "
        "node, only the points no faster point beats. user_tok_s and ttft_s are means (docs/estimator.md). api: the "
        "cheapest API price of the same requests per M output tokens (its output price plus the prompt tokens at its "
        "input price).")


def frontier(
    model: Annotated[str, typer.Option(help="Model id (see `gpuledger models`).")],
    gpu: Annotated[list[str] | None, typer.Option(help="Only these GPUs (repeatable; default: every part listed that "
                                                       "day).")] = None,
    precision: Annotated[str | None, typer.Option(help="bf16, fp8, int8, int4; default the model's native.")] = None,
    context: Annotated[int, typer.Option(help="Tokens of each request (split at the cost tables' prompt:answer mix "
                                              "unless the lengths are given).", **TOKENS)] = SPEED_CONTEXT_TOKENS,
    input_tokens: Annotated[int | None, typer.Option(help="Prompt tokens per request.", **TOKENS)] = None,
    output_tokens: Annotated[int | None, typer.Option(help="Answer tokens per request.", **TOKENS)] = None,
    price_kind: Annotated[str, typer.Option(help="on_demand, interruptible, reserved, ...")] = "on_demand",
    engine: Annotated[str | None, typer.Option(help="Serving engine the measured method models: trtllm (TensorRT-LLM, "
                                               "the default), sglang or vllm.")] = None,
    day: Annotated[str | None, typer.Option("--date", help="Prices of this date (YYYY-MM-DD); default the latest.")] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """$/M tokens against tokens/s per user, per GPU at its cheapest deployable live listing, beside the cheapest API."""
    try:
        chosen_precision = presets.normalise_precision(precision) if precision else None
        engine = engines.engine_name(engine or engines.DEFAULT_ENGINE)
    except (presets.ParamError, engines.EngineError) as exc:
        raise fail(str(exc)) from None
    data = load_published(day)
    model_id = resolve_name(model, {m.lower(): m for m in data.models["model_id"]}, "model")
    names = [resolve_name(g, gpu_names(data.gpus), "GPU") for g in gpu or []]
    if input_tokens is not None and output_tokens is not None:
        context = input_tokens + output_tokens
    try:
        out, api = views.frontier(data, model_id, names, chosen_precision, context, input_tokens, output_tokens,
                                  price_kind, engine)
    except views.ViewError as exc:
        raise fail(str(exc)) from None
    out = out.with_columns(api_provider=pl.lit(api and api["api_provider"]),
                           api_usd_per_mtok=pl.lit(api and api["api_usd_per_mtok"], dtype=pl.Float64))
    if fmt in (Format.table, Format.markdown):
        api_text = (f"API: ${api['api_usd_per_mtok']:,.2f}/M out ({api['api_provider']})" if api
                    else "no API lists the model")
        shown = out.drop("api_provider", "api_usd_per_mtok").with_columns(pl.col(pl.Float64).round(3))
        render(shown, fmt, title=f"{model_id} served by {engines.ENGINES[engine]}: $/M against tokens/s per user, "
                                 f"{price_kind} prices of {data.day}; {api_text}", caption=NOTE)
    else:
        render(out.with_columns(pl.col(pl.Float64).round(4)), fmt)
