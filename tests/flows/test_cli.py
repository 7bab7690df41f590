import json

import pytest
from typer.testing import CliRunner

from flows.cli.app import app
from warehouse import catalog

PARTS = catalog.read_all()["gpus"].height  # the GPU catalogue's size

runner = CliRunner()


def gpuledger(*args: str, code: int = 0):
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


@pytest.fixture
def initialised():
    gpuledger("init")


def test_init_twice_reports_unchanged_catalogues():
    assert "loaded" in gpuledger("init").output
    second = gpuledger("init").output
    assert "unchanged" in second and "loaded" not in second


@pytest.mark.usefixtures("initialised")
def test_sql_prints_csv_and_json():
    counted = gpuledger("sql", "select count(*) as n from gpus", "--format", "csv").output
    assert counted.splitlines() == ["n", str(PARTS)]
    query = "select model_id from models where model_id like 'deepseek-v%' order by 1 limit 2"
    rows = json.loads(gpuledger("sql", query, "-f", "json").output)
    assert rows == [{"model_id": "deepseek-v3"}, {"model_id": "deepseek-v3.1"}]


@pytest.mark.usefixtures("initialised")
@pytest.mark.parametrize("statement", [
    "delete from gpus",
    "select 1; drop table gpus",
    "copy gpus to 'stolen.csv'",
    "attach 'other.duckdb' as other",
    "create table t as select 1",
])
def test_sql_refuses_anything_but_reads(statement):
    result = gpuledger("sql", statement, code=1)
    assert "read-only" in result.output
    assert gpuledger("sql", "select count(*) from gpus", "-f", "csv").output.splitlines()[1] == str(PARTS)


def test_sql_before_init_says_what_to_do():
    assert "run `gpuledger init` first" in gpuledger("sql", "select 1", code=1).output


@pytest.mark.usefixtures("initialised")
def test_sql_reports_errors_without_a_traceback():
    result = gpuledger("sql", "select * from no_such_table", code=1)
    assert "no_such_table" in result.output and "Traceback" not in result.output


@pytest.mark.usefixtures("initialised")
def test_catalogue_listings():
    assert "deepseek-v4.1-flash" in gpuledger("models", "-f", "csv").output
    amd = gpuledger("gpus", "--vendor", "amd", "-f", "csv").output.splitlines()
    assert len(amd) > 10 and all(",AMD," in line for line in amd[1:])


def test_every_command_has_help():
    for command in ("init", "sql", "gpus", "models"):
        assert "Usage" in gpuledger(command, "--help").output


HEAVY = ("polars", "prefect", "httpx", "scrapers.sources", "flows.fetch", "transforms.estimator")


@pytest.mark.slow
@pytest.mark.usefixtures("initialised")
@pytest.mark.parametrize("args", [["--help"], ["sql", "select 1"], ["status"], ["models"], ["gpus"]])
def test_quick_commands_never_import_the_heavy_libraries(args):
    # Start-up time is measured in bench/startup.py; this guards the reason it is short.
    import subprocess
    import sys

    probe = ("import sys; from flows.cli.app import app\n"
             "try:\n    app(prog_name='gpuledger')\nexcept SystemExit:\n    pass\n"
             f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    run = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True)
    assert "LOADED []" in run.stderr, run.stderr


def test_lazy_commands_are_listed_with_their_docstring_and_run_when_named():
    from flows.cli.app import LazyGroup, load_command

    listing = " ".join(gpuledger("--help").output.split())
    for name, (_, short_help) in LazyGroup.lazy.items():
        command = load_command(name)
        assert " ".join(command.help.split()).startswith(short_help), name
        assert f"{name} {' '.join(short_help.split()[:3])}" in listing
    assert "--fleet" in gpuledger("table", "--help").output


def _words(output: str) -> str:
    """The text of a help screen or table, box drawing and line wrapping removed."""
    return " ".join(output.replace("│", " ").split()).lower()


def test_help_describes_the_methods_by_what_they_do_never_by_reference_page_number():
    import click
    import typer

    group = typer.main.get_command(app)
    commands = group.list_commands(click.Context(group))
    screens = {"gpuledger": gpuledger("--help").output}
    for name in commands:
        screens[name] = gpuledger(name, "--help").output
    for method in ("measured", "calculator", "ceiling"):
        screens[f"estimate --params --method {method}"] = gpuledger("estimate", "--params", "--method", method).output
    assert len(commands) == 16
    for shown, output in screens.items():
        assert "page 0" not in _words(output), shown
    assert "per-step calculator" in _words(screens["table"]) and "bandwidth ceiling" in _words(screens["estimate"])
