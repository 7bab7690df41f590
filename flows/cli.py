"""The `gpuledger` command line: the one place, with the flows, that opens the warehouse for users."""

import sys
from typing import Annotated

import duckdb
import polars as pl
import typer

from flows import cli_estimate, cli_history, cli_pipeline, cli_sources, cli_table
from flows.cli_common import FormatOption, fail, open_read_only
from flows.output import Format, render
from warehouse import catalog, config, db
from warehouse.lock import WriterBusy, writer_lock

app = typer.Typer(
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
        result = con.sql(query)
        df = result.pl() if result is not None else pl.DataFrame()
    except duckdb.Error as exc:
        raise fail(str(exc)) from None
    finally:
        con.close()
    render(df, fmt)


def _catalog_frame(query: str) -> pl.DataFrame:
    con = open_read_only()
    try:
        return con.sql(query).pl()
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
    df = _catalog_frame(
        "select name, vendor, memory_gb, bandwidth_gbs, bf16_tflops, fp8_tflops, int8_tops, fp4_tflops, tdp_w, "
        "fabric, announced, solved_from_page, uncertain from gpus order by vendor, bandwidth_gbs desc"
    )
    if vendor:
        df = df.filter(pl.col("vendor").str.to_lowercase() == vendor.lower())
    render(df, fmt)




def _resolved(raw: str, memory: float | None, provider: str | None) -> pl.DataFrame:
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
        _catalog_frame(
            "select model_id, arch, total_params_b, active_params_b, experts, experts_per_token, layers, "
            "kv_bytes_per_token, native_precision, context_max from models order by model_id"
        ),
        fmt,
    )


app.command()(cli_estimate.estimate)
app.command()(cli_table.table)
app.command()(cli_pipeline.status)
app.command("export")(cli_pipeline.export_cmd)
app.command()(cli_pipeline.nightly)
app.command()(cli_pipeline.rebuild)
app.command()(cli_pipeline.serve)
app.command()(cli_sources.fetch)
app.command()(cli_sources.replay)
app.command()(cli_history.history)
app.command()(cli_history.changes)


def main() -> None:
    app(prog_name="gpuledger")


if __name__ == "__main__":
    sys.exit(main())
