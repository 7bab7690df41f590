"""The catalogue commands: `init` (create or migrate the warehouse, load the catalogues) and `gpus` (`models` has a
module of its own: flows/cli/models.py)."""

from typing import Annotated

import duckdb
import typer

from flows.cli.common import FormatOption, fail, open_read_only, within
from flows.cli.output import Format, Rows, render
from warehouse import config, db
from warehouse.lock import WriterBusy, writer_lock


def init(
    force: Annotated[bool, typer.Option(help="Reload every catalogue even when its file is unchanged.")] = False,
) -> None:
    """Create or migrate the warehouse and (re)load the reference catalogues."""
    import polars as pl

    from flows import catalogue
    from warehouse import catalog

    try:
        with writer_lock("init", wait_s=config.lock_wait_s()), db.connect() as con:
            status = catalogue.load(con, force=force)
            counts = {name: con.execute("select count(*) from models where origin = 'user'" if name == catalogue.USER_MODELS
                                        else f"select count(*) from {name}").fetchall()[0][0] for name in status}
    except (db.WarehouseError, catalog.CatalogError, duckdb.Error, WriterBusy) as exc:
        raise fail(str(exc)) from None
    render(
        pl.DataFrame({"catalog": list(status), "status": list(status.values()), "rows": list(counts.values())}),
        title=f"{config.db_path()} (schema version {db.schema_version()})",
    )


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


def gpus(
    vendor: Annotated[str | None, typer.Option(help="Only this vendor (NVIDIA, AMD, ...).")] = None,
    resolve: Annotated[str | None, typer.Option(help="Show which part a provider's raw GPU name maps to, and why.")] = None,
    memory: Annotated[float | None, typer.Option(callback=within(0, 100_000, above=True),
                                                 help="With --resolve: the per-GPU memory (GB) the listing reports.")] = None,
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

    providers = [provider] if provider else list(sources.PROVIDERS)
    parts = _catalog_frame("select name, memory_gb from gpus")
    aliases = _catalog_frame("select provider, gpu_raw, memory_gb, gpu, note from gpu_aliases")
    names = pl.DataFrame({"gpu_raw": [raw], "gpu_memory_gb": [memory]}, schema=gpu_names.NAMES_SCHEMA)
    rows = [gpu_names.resolve(names, gpu_names.catalogue(parts, aliases, p)).with_columns(provider=pl.lit(p))
            for p in providers]
    joined = pl.concat(rows).join(parts.rename({"name": "gpu", "memory_gb": "part_memory_gb"}), on="gpu", how="left")
    return joined.select("provider", "gpu_raw", "gpu_memory_gb", "gpu", "part_memory_gb", "gpu_rule")

