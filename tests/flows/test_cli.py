import json

import pytest

from flows.cli.app import app
from tests.cli_support import invoke
from warehouse import catalog

PARTS = catalog.read_all()["gpus"].height  # the GPU catalogue's size



@pytest.fixture
def initialised():
    invoke("init")


def test_init_twice_reports_unchanged_catalogues():
    assert "loaded" in invoke("init").output
    second = invoke("init").output
    assert "unchanged" in second and "loaded" not in second


@pytest.mark.usefixtures("initialised")
def test_sql_prints_csv_and_json():
    counted = invoke("sql", "select count(*) as n from gpus", "--format", "csv").output
    assert counted.splitlines() == ["n", str(PARTS)]
    query = "select model_id from models where model_id like 'deepseek-v%' order by 1 limit 2"
    rows = json.loads(invoke("sql", query, "-f", "json").output)
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
    result = invoke("sql", statement, code=1)
    assert "read-only" in result.output
    assert invoke("sql", "select count(*) from gpus", "-f", "csv").output.splitlines()[1] == str(PARTS)


@pytest.mark.usefixtures("initialised")
@pytest.mark.parametrize(("statement", "refusal"), [
    ("CALL enable_logging(storage='file', storage_path='{tmp}/logs')", "the configuration has been locked"),
    ("PRAGMA enable_checkpoint_on_shutdown", "the configuration has been locked"),
    ("select * from read_parquet('http://127.0.0.1:9/prices.parquet')", "file system operations are disabled"),
    ("select * from read_csv('{tmp}/outside.csv')", "file system operations are disabled"),
    ("select * from glob('/etc/*')", "file system operations are disabled"),
    ("select 1; set enable_external_access = true", "read-only"),
    ("load httpfs", "read-only"),
])
def test_read_only_sql_writes_no_file_reads_nothing_outside_and_downloads_nothing(statement, refusal, tmp_path,
                                                                                monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # where DuckDB would install an extension (~/.duckdb)
    (tmp_path / "outside.csv").write_text("a\n1\n")
    before = sorted(tmp_path.rglob("*"))
    result = invoke("sql", statement.format(tmp=tmp_path), code=1)
    assert refusal in result.output and "Traceback" not in result.output
    assert sorted(tmp_path.rglob("*")) == before  # no log, no profile, no ~/.duckdb


@pytest.mark.usefixtures("initialised")
def test_read_only_sql_reads_the_warehouse_and_the_exports_folder(tmp_path, monkeypatch):
    import polars as pl

    monkeypatch.setenv("GPULEDGER_EXPORTS", str(tmp_path / "exports"))
    (tmp_path / "exports").mkdir()
    pl.DataFrame({"usd_per_hr": [2.5]}).write_parquet(tmp_path / "exports" / "prices.parquet")
    query = f"select usd_per_hr from read_parquet('{tmp_path}/exports/prices.parquet')"
    assert invoke("sql", query, "-f", "csv").output.splitlines() == ["usd_per_hr", "2.5"]
    assert invoke("sql", "select count(*) from gpus", "-f", "csv").output.splitlines()[1] == str(PARTS)


@pytest.mark.usefixtures("initialised")
def test_sql_latest_day_is_null_before_the_first_published_day():
    assert invoke("sql", "select latest_day() is null as none_yet", "-f", "csv").output.splitlines()[1] == "true"


def test_sql_before_init_says_what_to_do():
    assert "run `gpuledger init` first" in invoke("sql", "select 1", code=1).output


@pytest.mark.usefixtures("initialised")
def test_sql_reports_errors_without_a_traceback():
    result = invoke("sql", "select * from no_such_table", code=1)
    assert "no_such_table" in result.output and "Traceback" not in result.output


@pytest.mark.usefixtures("initialised")
def test_catalogue_listings():
    assert "deepseek-v4.1-flash" in invoke("models", "-f", "csv").output
    amd = invoke("gpus", "--vendor", "amd", "-f", "csv").output.splitlines()
    assert len(amd) > 10 and all(",AMD," in line for line in amd[1:])


def test_every_command_has_help():
    for command in ("init", "sql", "gpus", "models"):
        assert "Usage" in invoke(command, "--help").output


HEAVY = ("polars", "prefect", "httpx", "scrapers.sources", "flows.fetch", "transforms.estimator", "deltalake")


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

    listing = " ".join(invoke("--help").output.split())
    for name, (_, short_help) in LazyGroup.lazy.items():
        command = load_command(name)
        assert " ".join(command.help.split()).startswith(short_help), name
        assert f"{name} {' '.join(short_help.split()[:3])}" in listing
    assert "--fleet" in invoke("table", "--help").output


def _words(output: str) -> str:
    """The text of a help screen or table, box drawing and line wrapping removed."""
    return " ".join(output.replace("│", " ").split()).lower()


def test_help_describes_the_methods_by_what_they_do_never_by_reference_page_number():
    import click
    import typer
    from typer.core import TyperGroup

    def walk(group: TyperGroup, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        """Every command's words, the commands of sub-groups (`lake history`, ...) included."""
        found = []
        for name in group.list_commands(click.Context(group)):
            found.append((*path, name))
            _, command, _ = group.resolve_command(click.Context(group), [name])  # a lazy command's own, loaded
            if isinstance(command, TyperGroup):
                found += walk(command, (*path, name))
        return found

    commands = walk(typer.main.get_command(app))
    screens = {"gpuledger": invoke("--help").output}
    for words in commands:
        screens[" ".join(words)] = invoke(*words, "--help").output
    for method in ("measured", "calculator", "ceiling"):
        screens[f"estimate --params --method {method}"] = invoke("estimate", "--params", "--method", method).output
    assert {"table", "estimate", "nightly", "lake history", "report"} <= set(screens)
    for shown, output in screens.items():
        assert "page 0" not in _words(output), shown
    assert "per-step calculator" in _words(screens["table"]) and "bandwidth ceiling" in _words(screens["estimate"])
