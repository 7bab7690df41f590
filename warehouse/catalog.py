"""Reference catalogues: CSV files in warehouse/reference/, validated, then loaded into their tables."""

import csv
import hashlib
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import duckdb
import polars as pl

from warehouse import config
from warehouse.db import transaction

REFERENCE_DIR = Path(__file__).parent / "reference"

_POLARS = {"str": pl.String, "float": pl.Float64, "int": pl.Int64, "bool": pl.Boolean, "date": pl.Date}
_TRUE, _FALSE = {"true", "yes", "1"}, {"false", "no", "0"}


class CatalogError(ValueError):
    """A catalogue file that cannot be loaded; the message names file, line and column."""


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "str"  # str | float | int | bool | date
    required: bool = False


@dataclass(frozen=True)
class Catalog:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    references: dict[str, str] = field(default_factory=dict)  # column -> catalogue whose key it must name

    @property
    def file(self) -> str:
        return f"{self.name}.csv"


def _cols(spec: str) -> tuple[Column, ...]:
    """'name:type!' pairs separated by spaces; '!' marks a required column, the type defaults to str."""
    out = []
    for item in spec.split():
        name, _, rest = item.partition(":")
        required = item.endswith("!")
        out.append(Column(name.rstrip("!"), rest.rstrip("!") or "str", required))
    return tuple(out)


CATALOGS: tuple[Catalog, ...] = (
    Catalog(
        "gpus",
        _cols(
            "name! vendor! memory_gb:float! bandwidth_gbs:float! bf16_tflops:float fp8_tflops:float "
            "int8_tops:float fp4_tflops:float tdp_w:float form_factor fabric! interconnect announced:bool! "
            "label_000 label_001 source! solved_from_page:bool! uncertain notes"
        ),
        key=("name",),
    ),
    Catalog(
        "gpu_aliases",
        _cols("provider! gpu_raw! memory_gb:float gpu! note"),
        key=("provider", "gpu_raw", "memory_gb"),
        references={"gpu": "gpus"},
    ),
    Catalog(
        "gpu_overlays",
        _cols("preset! gpu! field! value:float source! note"),  # an empty value: the page has none (unknown)
        key=("preset", "gpu", "field"),
        references={"gpu": "gpus"},
    ),
    Catalog(
        "models",
        _cols(
            "model_id! name! vendor! arch! total_params_b:float! active_params_b:float! active_params_in_b:float "
            "experts:int experts_per_token:int shared_experts:int layers:int "
            "hidden_size:int "  # the width each layer reads and writes (config.json's); empty where no source states it
            "kv_bytes_per_token:float "
            "kv_cache_dtype context_max:int native_precision! source! uncertain notes attn_flops_per_ctx_token:float "
            "state_bytes_per_stream:float "  # per stream, whatever the context: recurrent states
            # windowed layers hold min(context, window_tokens) tokens of KV, window_kv_bytes_per_token each
            "window_tokens:int window_kv_bytes_per_token:float "
            "attention kv_heads:int "  # gqa | mla; the KV heads of the layers whose cache grows (MLA: 1)
            # API listings map through a Hugging Face id (hf_repo, the stable key, or another checkpoint of the model
            # in hf_ids), then through the extra ids in api_ids
            "hf_repo hf_ids api_ids"
        ),
        key=("model_id",),
    ),
    Catalog(
        "hardware_prices",
        _cols(
            "gpu! price_kind! gpu_count:int! currency! price_low:float! price_high:float! quoted_on:date! "
            "source! page_usd_low:float page_usd_high:float page_cny_per_usd:float notes"
        ),
        key=("gpu", "price_kind", "source"),
        references={"gpu": "gpus"},
    ),
)


def _parse(value: str, col: Column):
    text = value.strip()
    if text == "":
        return None
    if col.type == "str":
        return text
    if col.type == "float":
        number = float(text)  # ValueError names the text
        if number != number or number in (float("inf"), float("-inf")):
            raise ValueError(f"{text!r} is not a finite number")
        return number
    if col.type == "int":
        return int(text)
    if col.type == "bool":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError(f"{text!r} is not true/false")
    return date.fromisoformat(text)


_KINDS = {"float": "a number", "int": "a whole number", "bool": "true or false", "date": "a date (YYYY-MM-DD)"}


def read_catalog(catalog: Catalog, path: Path) -> pl.DataFrame:
    """Parse and check one catalogue file; raise CatalogError naming file, line and column."""
    where = path.name
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise CatalogError(f"{where}:1: the file is empty")
        header = [h.strip() for h in header]
        missing = [c.name for c in catalog.columns if c.name not in header]
        if missing:
            raise CatalogError(f"{where}:1: missing column {', '.join(repr(m) for m in missing)}")
        index = {name: i for i, name in enumerate(header)}
        rows, seen = [], {}
        for values in reader:
            line = reader.line_num
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(header):
                raise CatalogError(f"{where}:{line}: {len(values)} fields where the header has {len(header)}")
            row = {}
            for col in catalog.columns:
                raw = values[index[col.name]]
                try:
                    row[col.name] = _parse(raw, col)
                except ValueError:
                    raise CatalogError(
                        f"{where}:{line}: column '{col.name}': {raw.strip()!r} is not {_KINDS[col.type]}"
                    ) from None
                if col.required and row[col.name] is None:
                    raise CatalogError(f"{where}:{line}: column '{col.name}': a value is required")
            key = tuple(row[k] for k in catalog.key)
            if key in seen:
                raise CatalogError(
                    f"{where}:{line}: column '{catalog.key[0]}': duplicate key {key} (first on line {seen[key]})"
                )
            seen[key] = line
            row["_line"] = line
            rows.append(row)
    schema = {c.name: _POLARS[c.type] for c in catalog.columns} | {"_line": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _check_references(frames: dict[str, pl.DataFrame]) -> None:
    for catalog in CATALOGS:
        for column, target in catalog.references.items():
            known = set(frames[target][_catalog(target).key[0]].to_list())
            bad = frames[catalog.name].filter(~pl.col(column).is_in(list(known)))
            if bad.height:
                row = bad.row(0, named=True)
                raise CatalogError(
                    f"{catalog.file}:{row['_line']}: column '{column}': {row[column]!r} is not a "
                    f"{_catalog(target).key[0]} in {target}.csv"
                )
    gpu_fields = {c.name for c in _catalog("gpus").columns if c.type == "float"}
    bad = frames["gpu_overlays"].filter(~pl.col("field").is_in(sorted(gpu_fields)))
    if bad.height:
        row = bad.row(0, named=True)
        raise CatalogError(f"gpu_overlays.csv:{row['_line']}: column 'field': {row['field']!r} is not a numeric gpus column")
    _check_api_keys(frames["models"])
    bad = frames["models"].filter(~pl.col("attention").is_in(ATTENTION_KINDS))
    if bad.height:
        row = bad.row(0, named=True)
        raise CatalogError(f"models.csv:{row['_line']}: column 'attention': {row['attention']!r} is not one of "
                           f"{', '.join(ATTENTION_KINDS)}")


# grouped-query attention (K and V per KV head; multi-head and multi-query too), multi-head latent attention, or none
# (a state-space model: nothing cached per token, kv_heads empty)
ATTENTION_KINDS = ("gqa", "mla", "none")
_REPO = re.compile(r"[\w.-]+/[\w.:-]+")


def _check_api_keys(models: pl.DataFrame) -> None:
    """hf_repo, every id of hf_ids and of api_ids are owner/name and name one model only (compared without case);
    hf_repo and hf_ids are one set of Hugging Face ids, api_ids another."""
    owner = {}
    for row in models.iter_rows(named=True):
        keys = [("hf_repo", row["hf_repo"])] if row["hf_repo"] else []
        keys += [(column, key) for column in ("hf_ids", "api_ids") for key in (row[column] or "").split()]
        for column, key in keys:
            where = f"models.csv:{row['_line']}: column '{column}'"
            if not _REPO.fullmatch(key):
                raise CatalogError(f"{where}: {key!r} is not owner/name")
            space = ("api" if column == "api_ids" else "hf", key.lower())
            if space in owner:  # in another row, or twice in this one
                first = owner[space]
                raise CatalogError(f"{where}: {key!r} already names {first['model_id']} (line {first['_line']})")
            owner[space] = row


def _catalog(name: str) -> Catalog:
    return next(c for c in CATALOGS if c.name == name)


def read_all(directory: Path = REFERENCE_DIR) -> dict[str, pl.DataFrame]:
    """Every catalogue, checked on its own and against the others."""
    frames = {}
    for catalog in CATALOGS:
        path = directory / catalog.file
        if not path.exists():
            raise CatalogError(f"{catalog.file}: file not found in {directory}")
        frames[catalog.name] = read_catalog(catalog, path)
    _check_references(frames)
    return frames


def load_catalogs(
    con: duckdb.DuckDBPyConnection, directory: Path = REFERENCE_DIR, *, force: bool = False
) -> dict[str, str]:
    """Replace each catalogue table whose file changed since it was loaded; one transaction for all."""
    frames = read_all(directory)
    loaded = dict(con.execute("select catalog, sha256 from catalog_versions").fetchall())
    status = {}
    with transaction(con):
        for catalog in CATALOGS:
            digest = hashlib.sha256((directory / catalog.file).read_bytes()).hexdigest()
            if loaded.get(catalog.name) == digest and not force:
                status[catalog.name] = "unchanged"
                continue
            frame = frames[catalog.name].drop("_line")
            if catalog.name == "models":  # the table also holds derived and user rows, which stay
                replace_models(con, "curated", frame)
            else:
                con.register("catalog_frame", frame)
                con.execute(f"delete from {catalog.name}")
                con.execute(f"insert into {catalog.name} by name select * from catalog_frame")
                con.unregister("catalog_frame")
            con.execute(
                "insert or replace into catalog_versions values (?, ?, ?, ?)",
                [catalog.name, digest, frame.height, config.utc_now()],
            )
            status[catalog.name] = "loaded"
    return status


# a derived or user row's, beside the catalogue's: the config it was read from, and the weights' count (migration 0021)
MODEL_PROVENANCE = {"config_sha256": pl.String, "derived_on": pl.Date, "weights_params_b": pl.Float64,
                    "weights_check": pl.String}


def models_frame(rows: list[dict]) -> pl.DataFrame:
    """Rows with the columns of models.csv (and a derived or user row's provenance), in the catalogue's types."""
    schema = {c.name: _POLARS[c.type] for c in _catalog("models").columns} | MODEL_PROVENANCE
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")


ORIGINS = ("curated", "user", "derived")  # who wins where two rows name one model or one repository: the first


def replace_models(con: duckdb.DuckDBPyConnection, origin: str, frame: pl.DataFrame,
                   repos: list[str] | None = None) -> None:
    """Replace the `models` rows of one origin by frame's (all of them, or only those whose hf_repo is one of
    `repos`), under the caller's transaction. Rows of a later origin in ORIGINS that name one of the new rows'
    models or repositories give way; frame must hold none that a row of an earlier origin already names."""
    later = list(ORIGINS[ORIGINS.index(origin) + 1:])
    # registered without a finally: an aborted transaction refuses unregister, and the error to see is the first
    con.register("models_frame", frame.with_columns(origin=pl.lit(origin)))
    con.register("models_replaced", pl.DataFrame({"repo": [r.lower() for r in repos or []]}, schema={"repo": pl.String}))
    only = " and lower(hf_repo) in (select repo from models_replaced)" if repos is not None else ""
    con.execute(f"delete from models where origin = ?{only}", [origin])
    if later:
        con.execute(
            """
            delete from models where origin in ? and (
                model_id in (select model_id from models_frame)
                or lower(hf_repo) in (select lower(r) from (
                    select unnest(string_split(concat_ws(' ', hf_repo, hf_ids), ' ')) as r from models_frame)
                    where r <> ''))
            """, [later])
    con.execute("insert into models by name select * from models_frame")
    con.unregister("models_frame")
    con.unregister("models_replaced")
