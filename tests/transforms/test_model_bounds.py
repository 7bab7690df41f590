"""Plausibility bounds on a model from a config.json: every curated config is within them, and a row beyond them
is refused naming the field."""

import json
from pathlib import Path

import pytest

from transforms.model_bounds import CONFIG_MAX, ROW_BOUNDS, config_range, implausible, refused_rows
from transforms.model_config import ModelConfigError, derive_model

CONFIGS = Path(__file__).parents[1] / "fixtures" / "hf_configs"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    """The row of every real config.json the reader reads (tests/fixtures/hf_configs)."""
    out = []
    for path in sorted(CONFIGS.glob("*/*/config.json")):
        try:
            out.append(derive_model(json.loads(path.read_text()), f"{path.parent.parent.name}/{path.parent.name}"))
        except ModelConfigError:
            continue
    return out


def test_every_real_config_is_within_the_bounds(rows):
    assert len(rows) > 40 and refused_rows(rows) == {}


def test_the_bounds_leave_room_above_the_largest_real_model(rows):
    for name in ("total_params_b", "layers", "context_max", "kv_bytes_per_token"):
        largest = max(r[name] for r in rows if r[name] is not None)
        assert largest * 4 <= ROW_BOUNDS[name][1], name
    assert config_range("num_hidden_layers") == (1, CONFIG_MAX["num_hidden_layers"])
    assert config_range("n_shared_experts")[0] == 0  # a count that may be none


def test_a_row_beyond_a_bound_names_the_field_and_quotes_a_huge_number_briefly(rows):
    row = rows[0]
    assert implausible(row | {"total_params_b": 800_000_000.0}).startswith(
        "derived field 'total_params_b' is 800000000.0, outside the plausible [0.0, 50,000.0]")
    assert implausible(row | {"context_max": -8192}).startswith("derived field 'context_max' is -8192")
    digits = int("2" * 4096)
    assert implausible(row | {"context_max": digits}) == (
        "derived field 'context_max' is 222222222222222222222222... (4,096 characters), outside the plausible "
        "[1, 268,435,456]")
    assert implausible(row | {"kv_bytes_per_token": float("nan")}).startswith("derived field 'kv_bytes_per_token'")
    assert "above total_params_b" in implausible(row | {"active_params_b": row["total_params_b"] + 1})
    assert implausible(row | {"experts": None, "experts_per_token": None}) is None
