"""The `gpuledger` application: registers every command group's commands, quick ones directly, heavy ones lazily.

Start-up time is part of the interface: `--help`, `sql`, `status`, `gpus` and `models` answer in well under
a second because nothing here, nor in the modules imported at the top, loads polars (~0.5 s), Prefect (~1 s),
httpx or the scrapers. How to add a command:

- a quick command whose module imports only typer, duckdb, flows.cli.output and flows.cli.common at
  the top (like flows/cli/pipeline.py: heavy imports inside the command's body) is registered as usual: `app.command()(module.fn)`;
- a command whose module needs polars, the scrapers or Prefect at import is registered lazily:
  `lazy_command("name", "flows.cli.module:function", "its docstring's first sentence")`. Its module is imported
  only when that command runs (or its own --help is asked for); the listing in `gpuledger --help` shows the
  given sentence (tests/flows/test_cli.py checks it still opens the function's docstring);
- a command group (`gpuledger lake history`) is registered lazily the same way, its target a typer.Typer.
"""

import gc
import importlib
import sys

import typer
from typer.core import TyperCommand, TyperGroup

from flows import logs
from flows.cli import catalog as catalog_commands
from flows.cli import models as models_commands
from flows.cli import pipeline as pipeline_commands
from flows.cli import sql as sql_commands


class LazyGroup(TyperGroup):
    """A command group whose lazily registered commands import their module only when they run."""

    lazy: dict[str, tuple[str, str]] = {}  # name -> ("module:function", short help)

    def list_commands(self, ctx) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in self.lazy if n not in self.commands)]

    def get_command(self, ctx, cmd_name: str):
        if cmd_name in self.commands or cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        return TyperCommand(cmd_name, short_help=self.lazy[cmd_name][1])  # listed in --help, never run

    def resolve_command(self, ctx, args):
        if args and args[0] in self.lazy and args[0] not in self.commands:
            self.commands[args[0]] = load_command(args[0])
        return super().resolve_command(ctx, args)


def load_command(name: str) -> TyperCommand | TyperGroup:
    """Import a lazily registered command's module and build its click command (or group)."""
    module, function = LazyGroup.lazy[name][0].split(":")
    target = getattr(importlib.import_module(module), function)
    if isinstance(target, typer.Typer):
        return typer.main.get_command(target)
    single = typer.Typer(pretty_exceptions_enable=False)
    single.command(name)(target)
    return typer.main.get_command(single)


def lazy_command(name: str, target: str, short_help: str) -> None:
    LazyGroup.lazy[name] = (target, short_help)


app = typer.Typer(
    cls=LazyGroup,
    help="gpuledger: nightly GPU rental prices, roofline estimates and dated $/M-token tables in DuckDB.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


app.command()(catalog_commands.init)
app.command()(sql_commands.sql)
app.command()(catalog_commands.gpus)
app.add_typer(models_commands.app, name="models")
lazy_command("estimate", "flows.cli.estimate:estimate", "Throughput of one model per GPU by one estimator method: "
             "sizing, memory, decode, prefill and power.")
lazy_command("table", "flows.cli.table:table", "A dated cost table for one model: a card per GPU (estimate) or "
             "every part ranked by $/M (calculator), with live prices.")
lazy_command("frontier", "flows.cli.frontier:frontier", "$/M tokens against tokens/s per user, per GPU at its "
             "cheapest deployable live listing, beside the cheapest API.")
app.command()(pipeline_commands.status)
app.command("export")(pipeline_commands.export_cmd)
app.command()(pipeline_commands.nightly)
app.command()(pipeline_commands.rebuild)
app.command()(pipeline_commands.serve)
lazy_command("fetch", "flows.cli.sources:fetch", "Fetch, archive, parse and load the sources; exit 1 when any "
             "source failed.")
lazy_command("replay", "flows.cli.sources:replay", "Serve recorded responses on 127.0.0.1 at the providers' real "
             "paths, with optional faults, until Ctrl-C.")
lazy_command("history", "flows.cli.history:history", "The daily price series: a sparkline per GPU on the terminal, "
             "the daily numbers as csv, json or markdown.")
lazy_command("changes", "flows.cli.history:changes", "What moved since the previous published day: parts first "
             "seen, back or gone, the biggest price moves, and sources whose listing count jumped or fell.")
lazy_command("lake", "flows.cli.lake:app", "The lake's Delta tables: what was published when, upkeep, migration.")
lazy_command("report", "flows.cli.report:report", "Write the day's market page and model pages as a static site "
             "that works offline; print its path.")


def main() -> None:
    logs.terminal_safe()  # every printed line passes terminal_text, log lines included
    try:
        app(prog_name="gpuledger")
    finally:
        # The interpreter's exit ends with a full garbage collection over every object polars, DuckDB and httpx
        # loaded: 0.15-0.25 s of `fetch`'s wall, 0.06 s once they are frozen out of it. All that collection
        # would free is reference cycles, whose finalizers then do not run: the commands close their
        # connections and files themselves.
        gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
