import dataclasses
import math
import re

import pytest

from transforms import presets
from transforms.presets import CALCULATOR, CEILING, ParamError, with_overrides


def test_both_presets_set_every_parameter_and_document_it():
    for field in dataclasses.fields(presets.Params):
        assert field.metadata["doc"], field.name
        assert getattr(CEILING, field.name) is not None and getattr(CALCULATOR, field.name) is not None
    assert [name for name, _ in presets.parameter_docs()] == [f.name for f in dataclasses.fields(presets.Params)][1:]


def test_the_presets_differ_where_the_pages_do():
    assert (CEILING.bytes_int4, CALCULATOR.bytes_int4) == (0.5, 0.5625)  # page 001 stores 4.5 bits per parameter
    assert (CEILING.batch_gain_max, CEILING.pcie_penalty) == (1.7, 0.6)
    assert math.isinf(CALCULATOR.batch_gain_max) and CALCULATOR.pcie_penalty == 1


def test_overrides_by_name_convert_to_the_parameter_type_and_rename_the_method():
    changed = with_overrides(CALCULATOR, {"bandwidth_efficiency": "0.8", "min_tp": "2", "expert_coverage": "no"})
    assert (changed.bandwidth_efficiency, changed.min_tp, changed.expert_coverage) == (0.8, 2, False)
    assert changed.name == "calculator[bandwidth_efficiency=0.8,expert_coverage=False,min_tp=2]"
    assert with_overrides(CALCULATOR, {}) is CALCULATOR


def test_an_unknown_parameter_is_named_with_close_matches():
    with pytest.raises(ParamError, match=r"unknown parameter 'bandwith_efficiency'; did you mean bandwidth_efficiency"):
        with_overrides(CALCULATOR, {"bandwith_efficiency": "0.8"})


@pytest.mark.parametrize(("name", "value", "message"), [
    ("min_tp", "two", "min_tp takes a whole number"),
    ("tp_derate", "5%", "tp_derate takes a number"),
    ("expert_coverage", "maybe", "expert_coverage takes true or false"),
    ("step_time", "product", "step_time must be one of sum, max"),
    ("precision_ladder", "bf16,fp3", "unknown precision 'fp3'"),
    ("tokens_per_step", "1.5", r"tokens_per_step \(1.5\) is more than the 1 \+ draft_tokens = 1 tokens"),
])
def test_a_bad_value_is_refused_with_the_parameter_named(name, value, message):
    with pytest.raises(ParamError, match=message):
        with_overrides(CEILING, {name: value})


@pytest.mark.parametrize(("name", "value", "interval"), [
    ("bandwidth_efficiency", "-5", "(0, 1]"), ("bandwidth_efficiency", "nan", "(0, 1]"),
    ("bandwidth_efficiency", "1.01", "(0, 1]"), ("tp_derate", "1", "[0, 1)"), ("step_overhead_s", "inf", "[0, 10]"),
    ("batch_gain_max", "0.5", "[1, inf]"), ("min_tp", "0", "[1, 4096]"), ("runtime_gb", "-1", "[0, 10000]"),
])
def test_a_number_outside_its_interval_is_refused_naming_it(name, value, interval):
    with pytest.raises(ParamError, match=re.escape(f"{name} must lie in {interval}, not {float(value)!r}")
                       if name != "min_tp" else f"min_tp must lie in {re.escape(interval)}, not 0"):
        with_overrides(CALCULATOR, {name: value})


def test_every_number_has_an_interval_its_presets_lie_in():
    for field in dataclasses.fields(presets.Params):
        if field.type in ("float", "int", float, int):
            assert field.metadata["range"], field.name
    assert presets.MEASURED.bandwidth_efficiency and with_overrides(CALCULATOR, {"batch_gain_max": "inf"})
    assert dict(presets.parameter_docs())["bandwidth_efficiency"].endswith("(0, 1]")


def test_assignments_parse_and_a_malformed_one_is_named():
    assert presets.parse_assignments(["min_tp=4", " runtime_gb = 6.5"]) == {"min_tp": "4", "runtime_gb": " 6.5"}
    with pytest.raises(ParamError, match="NAME=VALUE, not 'min_tp'"):
        presets.parse_assignments(["min_tp"])


@pytest.mark.parametrize(("spelling", "canonical"), [("FP16", "bf16"), ("fp4", "int4"), ("INT4/FP4", "int4"), ("fp8", "fp8")])
def test_precision_spellings(spelling, canonical):
    assert presets.normalise_precision(spelling) == canonical


def test_an_unknown_method_is_named():
    with pytest.raises(ParamError, match="unknown method 'roofline': use one of ceiling, calculator"):
        presets.preset("roofline")
