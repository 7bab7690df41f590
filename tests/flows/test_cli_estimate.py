import csv
import io
import json

import pytest
from typer.testing import CliRunner

from flows.cli.app import app
from tests.reference_pages import observed
from transforms.display import PAGE_000_PRECISION, compact_label, integer_label

runner = CliRunner()
CSV_LEAD = "gpu,precision,tp,memory_used_pct,single_stream_tok_s,per_stream_tok_s,agg_tok_s,prefill_tok_s,power_kw,max_streams"
PAGE_001 = ("--model", "deepseek-v4-flash", "--method", "calculator", "--precision", "int4", "--context", "32768",
            "--streams", "32")


def gpuledger(*args: str, code: int = 0):
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


def message(*args: str) -> str:
    """The error of a failing command, unwrapped."""
    return " ".join(gpuledger(*args, code=1).output.split())


def rows(output: str, key: str = "gpu") -> dict[str, dict]:
    return {r[key]: r for r in csv.DictReader(io.StringIO(output))}


def number(text: str) -> float | None:
    return float(text) if text else None


@pytest.fixture(autouse=True)
def initialised():
    gpuledger("init")


def test_page_000_from_the_command_line():
    out = rows(gpuledger("estimate", "--model", "deepseek-v4.1-flash", "--method", "ceiling", "-f", "csv").output)
    shown = {
        page["catalog_key"]: (
            PAGE_000_PRECISION[out[page["catalog_key"]]["precision"]], out[page["catalog_key"]]["tp"],
            *(integer_label(number(out[page["catalog_key"]][c])) for c in ("single_stream_tok_s", "agg_tok_s", "prefill_tok_s")),
        )
        for page in observed("seed000_table").to_dicts()
    }
    assert shown == {
        page["catalog_key"]: (page["precision"], page["gpus"], *(f"{int(page[c]):,}" for c in (
            "decode_tok_s", "batched_out_tok_s", "batched_in_tok_s")))
        for page in observed("seed000_table").to_dicts()
    }


def test_page_001_from_the_command_line():
    result = gpuledger("estimate", *PAGE_001, "-f", "csv")
    assert result.output.startswith(CSV_LEAD + ",")
    out = rows(result.output)
    for page in observed("seed001_table").to_dicts():
        mine = out[page["catalog_key"]]
        approx = mine["fp4_estimated"] == "true"
        assert (mine["tp"], compact_label(number(mine["agg_tok_s"]), approx=approx),
                compact_label(number(mine["per_stream_tok_s"]))) == (page["tp"], page["agg_tok_s"], page["single_tok_s"])
        assert (compact_label(number(mine["power_kw"])) if mine["power_kw"] else "") == (page["power_kw"] or "")


def test_the_table_shows_the_page_labels():
    output = gpuledger("estimate", *PAGE_001, "--gpu", "TPU 8t announced", "--gpu", "B200 SXM").output
    assert "TPU 8t" in output and "~1.4k" in output and "1.5k" in output and "100%" in output


def test_a_page_label_or_a_unique_prefix_names_the_canonical_gpu():
    out = rows(gpuledger("estimate", *PAGE_001, "--gpu", "H200 141GB", "--gpu", "gb300", "-f", "csv").output)
    assert list(out) == ["H200 SXM", "GB300 NVL72 GPU"]


def test_unknown_names_get_close_matches():
    assert "unknown model 'deepseek-v4-flsh'; did you mean deepseek-v4-flash," in message(
        "estimate", "--model", "deepseek-v4-flsh")
    assert "unknown GPU 'H200'; did you mean H200 NVL, H200 SXM" in message(
        "estimate", "--model", "llama-3.1-8b", "--gpu", "H200")
    assert "--model is required" in message("estimate")


def test_set_overrides_a_parameter_and_names_an_unknown_one():
    base = rows(gpuledger("estimate", *PAGE_001, "--gpu", "H200 SXM", "-f", "csv").output)["H200 SXM"]
    faster = rows(gpuledger("estimate", *PAGE_001, "--gpu", "H200 SXM", "--set", "bandwidth_efficiency=0.9", "-f",
                            "csv").output)["H200 SXM"]
    assert float(faster["per_stream_tok_s"]) == pytest.approx(float(base["per_stream_tok_s"]) * 0.9 / 0.75, rel=1e-4)
    assert faster["method"] == "calculator[bandwidth_efficiency=0.9]"
    assert "unknown parameter 'bandwith'" in message("estimate", *PAGE_001, "--set", "bandwith=1")


def test_a_parameter_or_an_option_out_of_its_range_is_a_clear_error_not_a_number():
    assert "bandwidth_efficiency must lie in (0, 1], not -5.0" in message(
        "estimate", *PAGE_001, "--set", "bandwidth_efficiency=-5")
    assert "bandwidth_efficiency must lie in (0, 1], not nan" in message(
        "estimate", *PAGE_001, "--set", "bandwidth_efficiency=nan")
    for option, value in (("--context", "0"), ("--streams", "-1"), ("--tp", "0"), ("--output-tokens", "1000000000")):
        refused = gpuledger("estimate", "--model", "deepseek-v4-flash", option, value, code=2).output
        assert f"Invalid value for '{option}'" in refused and "is not in the range" in refused, refused


def test_the_curve_runs_from_one_stream_to_where_memory_fills():
    points = json.loads(gpuledger("estimate", *PAGE_001, "--gpu", "GB300 NVL72 GPU", "--curve", "-f", "json").output)
    assert points[0]["streams"] == 1 and points[-1]["streams"] == points[-1]["max_streams"] == 417
    assert "--curve needs exactly one --gpu" in message("estimate", *PAGE_001, "--curve")


def test_help_and_parameter_listing():
    assert "--curve" in gpuledger("estimate", "--help").output
    listing = rows(gpuledger("estimate", "--method", "ceiling", "--params", "-f", "csv").output, key="parameter")
    assert listing["batch_gain_max"]["value"] == "1.7" and listing["bytes_int4"]["value"] == "0.5"


def test_estimate_before_init_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv("GPULEDGER_HOME", str(tmp_path / "empty"))
    assert "run `gpuledger init` first" in message("estimate", *PAGE_001)


def test_max_load_batches_what_memory_and_the_engine_allow():
    at = rows(gpuledger("estimate", "--model", "deepseek-r1", "--gpu", "B200 SXM", "--precision", "fp8", "--context",
                        "2000", "--max-load", "-f", "csv").output)["B200 SXM"]
    # data-parallel attention over the group: a batch limit per rank, past the single-scheduler limit
    assert int(at["streams"]) == int(at["max_streams"]) > 4096
    assert "max load (no streams) is a question for the measured method" in message("estimate", *PAGE_001, "--max-load")
