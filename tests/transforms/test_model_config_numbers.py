"""Every number a config.json states, set to a hostile value (1e308, beyond 64 bits, negative, fractional, NaN,
infinite; or text, a boolean, null where the number was), is read or refused naming that field, through the reader's boundary (transforms.model_catalogue.
read_config, the pure parse every config goes through): never a bare arithmetic error (an OverflowError, a
ZeroDivisionError) that names no field, and never a row beyond the bounds."""

import copy
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transforms.model_bounds import implausible
from transforms.model_catalogue import read_config
from transforms.model_config import ModelConfigError

CONFIGS = Path(__file__).parent.parent / "fixtures" / "hf_configs"
# Real configs (tests/fixtures/hf_configs, with their PROVENANCE) of each kind the reader reads: dense, a mixture of
# experts, MLA with experts, a multimodal text_config with sliding windows, hybrid linear attention.
REPOS = ("Qwen/Qwen3-8B", "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3", "google/gemma-3-27b-it",
         "Qwen/Qwen3-Next-80B-A3B-Thinking")
HOSTILE = st.sampled_from(["12", "abc", True, None, 1e308, -1e308, 2**64, -(2**64), -1, 0.5, 3.5, math.nan, math.inf, 2**40, 1e20])


def numbers(node, path=()) -> list[tuple]:
    """The path of every number (not a boolean) in a config, nested objects and lists included."""
    if isinstance(node, dict):
        return [p for key, value in node.items() for p in numbers(value, (*path, key))]
    if isinstance(node, list):
        return [p for index, value in enumerate(node) for p in numbers(value, (*path, index))]
    return [path] if isinstance(node, int | float) and not isinstance(node, bool) else []


FIELDS = [(repo, path) for repo in REPOS
          for path in numbers(json.loads((CONFIGS / repo / "config.json").read_text()))]


def with_value(config: dict, path: tuple, value) -> dict:
    edited = copy.deepcopy(config)
    node = edited
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return edited


def test_the_fields_cover_each_kind_of_config():
    assert len(FIELDS) > 120 and {path[-1] for _, path in FIELDS} >= {
        "num_experts_per_tok", "num_hidden_layers", "hidden_size", "kv_lora_rank", "sliding_window", "head_dim"}


@pytest.mark.parametrize("field", FIELDS, ids=[f"{repo}:{'.'.join(map(str, path))}" for repo, path in FIELDS])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=HOSTILE)
def test_a_hostile_number_in_any_field_is_read_or_refused_naming_that_field(field, value):
    repo, path = field
    config = with_value(json.loads((CONFIGS / repo / "config.json").read_text()), path, value)
    try:
        row = read_config(config, repo)
    except ModelConfigError as exc:
        message = str(exc)
        assert "cannot be read" not in message, message  # the reader's catch-all: no field named
        named = [str(step) for step in path if isinstance(step, str)]
        # the field itself (at its place: rope_scaling.factor), or the derived row's field it made implausible
        assert f"'{path[-1]}'" in message or f"'{'.'.join(named[-2:])}'" in message \
            or "derived field '" in message, message
        return
    assert implausible(row) is None


@pytest.mark.parametrize(("key", "value"), [("num_experts_per_tok", 1e308), ("num_experts", 1e308),
                                             ("num_experts_per_tok", -1), ("num_experts", 2.5)])
def test_the_experts_counts_are_refused_naming_the_field(key, value):
    repo = "Qwen/Qwen3-30B-A3B"
    config = json.loads((CONFIGS / repo / "config.json").read_text()) | {key: value}
    with pytest.raises(ModelConfigError, match=rf"^{repo}: config.json field '{key}' is not a count"):
        read_config(config, repo)
