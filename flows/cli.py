"""The `gpuledger` command line: the one place, with the flows, that opens the warehouse for users.

Start-up time is part of the interface: `--help`, `sql`, `status`, `gpus` and `models` answer in well under
a second because nothing here, nor in the modules imported at the top, loads polars (~0.5 s), Prefect (~1 s),
httpx or the scrapers. How to add a command:

- a quick command whose module imports only typer, duckdb and flows.output/cli_common at the top (like
  cli_pipeline: heavy imports inside the command's body) is registered as usual: `app.command()(module.fn)`;
- a command whose module needs polars, the scrapers or Prefect at import is registered lazily:
  `lazy_command("name", "flows.module:function", "its docstring's first sentence")`. Its module is imported
  only when that command runs (or its own --help is asked for); the listing in `gpuledger --help` shows the
  given sentence (tests/flows/test_cli.py checks it still opens the function's docstring).
"""

import gc
import importlib
import sys
from typing import Annotated

import duckdb
import typer
from typer.core import TyperCommand, TyperGroup

from flows import cli_pipeline
from flows.cli_common import FormatOption, fail, open_read_only
from flows.output import Format, Rows, render
from warehouse import config, db
from warehouse.lock import WriterBusy, writer_lock


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


def load_command(name: str) -> TyperCommand:
    """Import a lazily registered command's module and build its click command."""
    module, function = LazyGroup.lazy[name][0].split(":")
    single = typer.Typer(pretty_exceptions_enable=False)
    single.command(name)(getattr(importlib.import_module(module), function))
    return typer.main.get_command(single)


def lazy_command(name: str, target: str, short_help: str) -> None:
    LazyGroup.lazy[name] = (target, short_help)


app = typer.Typer(
    cls=LazyGroup,
    help="gpuledger: nightly GPU rental prices, roofline estimates and dated $/M-token tables in DuckDB.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN", "PRAGMA", "CALL"}


@app.command()
def init(
    force: Annotated[bool, typer.Option(help="Reload every catalogue even when its file is unchanged.")] = False,
) -> None:
    """Create or migrate the warehouse and (re)load the reference catalogues."""
    import polars as pl

    from warehouse import catalog

    try:
        with writer_lock("init", wait_s=config.lock_wait_s()), db.connect() as con:
            status = catalog.load_catalogs(con, force=force)
            counts = {name: con.execute(f"select count(*) from {name}").fetchall()[0][0] for name in status}
    except (db.WarehouseError, catalog.CatalogError, duckdb.Error, WriterBusy) as exc:
        raise fail(str(exc)) from None
    render(
        pl.DataFrame({"catalog": list(status), "status": list(status.values()), "rows": list(counts.values())}),
        title=f"{config.db_path()} (schema version {db.schema_version()})",
    )


def read_only_statements(query: str) -> None:
    """Refuse any statement that could change the warehouse or write files."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise fail(str(exc)) from None
    for number, statement in enumerate(statements, 1):
        kind = statement.type.name
        if kind not in READ_ONLY_STATEMENTS:
            raise fail(
                f"gpuledger sql is read-only: statement {number} is {kind}, only "
                f"{', '.join(sorted(READ_ONLY_STATEMENTS))} are run"
            )


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL to run; read-only statements only.")],
    fmt: FormatOption = Format.table,
) -> None:
    """Run ad-hoc SQL on a read-only connection to the warehouse."""
    read_only_statements(query)
    con = open_read_only()
    try:
        df = Rows.of(con.sql(query))
    except duckdb.Error as exc:
        raise fail(str(exc)) from None
    finally:
        con.close()
    render(df, fmt)


def _catalog_frame(query: str):
    con = open_read_only()
    try:
        return con.sql(query).pl()
    finally:
        con.close()


def _catalog_rows(query: str, params: list | None = None) -> Rows:
    con = open_read_only()
    try:
        return Rows.of(con.sql(query, params=params))
    finally:
        con.close()


@app.command()
def gpus(
    vendor: Annotated[str | None, typer.Option(help="Only this vendor (NVIDIA, AMD, ...).")] = None,
    resolve: Annotated[str | None, typer.Option(help="Show which part a provider's raw GPU name maps to, and why.")] = None,
    memory: Annotated[float | None, typer.Option(help="With --resolve: the per-GPU memory (GB) the listing reports.")] = None,
    provider: Annotated[str | None, typer.Option(help="With --resolve: only this provider's aliases (default: each).")] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """List the GPU catalogue, or resolve a raw GPU name (--resolve) as the nightly load does."""
    if resolve is not None:
        render(_resolved(resolve, memory, provider), fmt)
        return
    render(_catalog_rows(
        "select name, vendor, memory_gb, bandwidth_gbs, bf16_tflops, fp8_tflops, int8_tops, fp4_tflops, tdp_w, "
        "fabric, announced, solved_from_page, uncertain from gpus where $vendor is null or lower(vendor) = $vendor "
        "order by vendor, bandwidth_gbs desc", {"vendor": vendor.lower() if vendor else None}), fmt)


def _resolved(raw: str, memory: float | None, provider: str | None):
    import polars as pl

    from scrapers import sources
    from transforms import gpu_names

    providers = [provider] if provider else [s for s in sources.SOURCES if s != "fx"]
    parts = _catalog_frame("select name, memory_gb from gpus")
    aliases = _catalog_frame("select provider, gpu_raw, memory_gb, gpu, note from gpu_aliases")
    names = pl.DataFrame({"gpu_raw": [raw], "gpu_memory_gb": [memory]}, schema=gpu_names.NAMES_SCHEMA)
    rows = [gpu_names.resolve(names, gpu_names.catalogue(parts, aliases, p)).with_columns(provider=pl.lit(p))
            for p in providers]
    joined = pl.concat(rows).join(parts.rename({"name": "gpu", "memory_gb": "part_memory_gb"}), on="gpu", how="left")
    return joined.select("provider", "gpu_raw", "gpu_memory_gb", "gpu", "part_memory_gb", "gpu_rule")


@app.command()
def models(fmt: FormatOption = Format.table) -> None:
    """List the model catalogue."""
    render(
        _catalog_rows(
            "select model_id, arch, total_params_b, active_params_b, experts, experts_per_token, layers, "
            "kv_bytes_per_token, native_precision, context_max from models order by model_id"
        ),
        fmt,
    )


lazy_command("estimate", "flows.cli_estimate:estimate", "Roofline throughput of one model per GPU: sizing, memory, "
             "decode, prefill and power.")
lazy_command("table", "flows.cli_table:table", "A dated cost table for one model: page 000's estimate cards or "
             "page 001's calculator, with live prices.")
app.command()(cli_pipeline.status)
app.command("export")(cli_pipeline.export_cmd)
app.command()(cli_pipeline.nightly)
app.command()(cli_pipeline.rebuild)
app.command()(cli_pipeline.serve)
lazy_command("fetch", "flows.cli_sources:fetch", "Fetch, archive, parse and load the sources; exit 1 when any "
             "source failed.")
lazy_command("replay", "flows.cli_sources:replay", "Serve recorded responses on 127.0.0.1 at the providers' real "
             "paths, with optional faults, until Ctrl-C.")
lazy_command("history", "flows.cli_history:history", "The daily price series: a sparkline per GPU on the terminal, "
             "the daily numbers as csv, json or markdown.")
lazy_command("changes", "flows.cli_history:changes", "What moved since the previous published day: parts first "
             "seen, back or gone, the biggest price moves, and sources whose listing count jumped or fell.")
lazy_command("report", "flows.cli_report:report", "Write the day's market page and model pages as a static site "
             "that works offline; print its path.")


def main() -> None:
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
