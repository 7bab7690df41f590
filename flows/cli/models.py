"""`gpuledger models`: the model catalogue (curated, derived from Hugging Face configs, added by users); `models add`
for a model nobody tracks and `models show` for one model's fields and where each came from.

A quick command group: only typer, duckdb and the light CLI modules load at import; `add` and `show` load what they
need in their bodies (never polars for `models` and `models show`).
"""

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import duckdb
import typer

from flows.cli.common import FormatOption, fail, open_read_only, resolve_name
from flows.cli.output import Format, Rows, printed_json, render
from warehouse import config, db, queries
from warehouse.lock import WriterBusy, writer_lock

if TYPE_CHECKING:  # the command imports transforms when it runs, not at start-up
    from transforms.model_catalogue import Weights

app = typer.Typer(no_args_is_help=False)
SHOWN = ("model_id", "origin", "name", "vendor", "arch", "total_params_b", "active_params_b", "active_params_in_b",
         "experts", "experts_per_token", "shared_experts", "layers", "hidden_size", "kv_bytes_per_token",
         "kv_cache_dtype", "state_bytes_per_stream", "window_tokens", "window_kv_bytes_per_token", "attention", "kv_heads",
         "attn_flops_per_ctx_token", "context_max", "native_precision", "hf_repo", "hf_ids",
         "api_ids", "source", "uncertain", "notes", "config_sha256", "derived_on", "weights_params_b", "weights_check")
# The fields a config.json gives (the rest is the catalogue's own: names, ids, notes), by the part that reads them.
FROM_CONFIG = {"context_max": "context_max", "native_precision": "native_precision",
               **dict.fromkeys(("arch", "total_params_b", "active_params_b", "experts", "experts_per_token",
                                "shared_experts", "layers", "hidden_size", "kv_bytes_per_token",
                                "state_bytes_per_stream", "window_tokens", "window_kv_bytes_per_token", "attention",
                                "kv_heads",
                                "attn_flops_per_ctx_token"), "shape")}


@app.callback(invoke_without_command=True)
def models(ctx: typer.Context, fmt: FormatOption = Format.table) -> None:
    """List the model catalogue: curated, derived from Hugging Face configs, and added with `models add`."""
    if ctx.invoked_subcommand is not None:
        return
    con = open_read_only()
    try:
        render(Rows.of(con.sql(
            "select model_id, origin, arch, total_params_b, active_params_b, experts, experts_per_token, layers, "
            "kv_bytes_per_token, native_precision, context_max, hf_repo from models order by model_id")), fmt)
    finally:
        con.close()


@app.command()
def add(
    config_file: Annotated[Path | None, typer.Option("--config", help="A config.json on disk.", dir_okay=False)] = None,
    hf: Annotated[str | None, typer.Option("--hf", help="A Hugging Face repository (owner/name): its config.json is "
                                                        "fetched (HF_TOKEN for a gated one).")] = None,
    model_id: Annotated[str | None, typer.Option("--id", help="The id to know it by (default: the repository's name, "
                                                              "or the config's folder, in lower case).")] = None,
    weights_index: Annotated[Path | None, typer.Option(
        "--weights-index", dir_okay=False, help="With --config: the checkpoint's model.safetensors.index.json; its "
                                                "total_size over the config dtype's bytes counts the weights "
                                                "(approximate for mixed dtypes).")] = None,
    params: Annotated[int | None, typer.Option("--params", min=1, help="With --config: the weights' parameter "
                                                                       "count.")] = None,
) -> None:
    """Add a model nobody tracks, from its config.json: every command, the nightly tables and the report use it.

    Where the config leaves open what the model's code decides (its MLP gated or not, its output head tied or not),
    the weights' count chooses the reading: the Hub's for --hf, --weights-index or --params for --config."""
    from flows import catalogue
    from transforms import model_catalogue
    from transforms.model_config import slug
    from warehouse import user_models

    if (config_file is None) == (hf is None):
        raise fail("give --config FILE or --hf OWNER/NAME (one of them)")
    if hf is not None and (weights_index or params):
        raise fail("--weights-index and --params go with --config (--hf reads the Hub's count of the weights)")
    if weights_index and params:
        raise fail("give --weights-index FILE or --params N (one of them)")
    entry = _from_file(config_file) if config_file else _from_hub(hf)
    if weights_index or params:
        entry["weights"] = _weights(weights_index, params, entry["config"])
    entry["model_id"] = model_id or slug(hf or config_file.resolve().parent.name)
    if not user_models.MODEL_ID.fullmatch(entry["model_id"]):
        raise fail(f"--id {entry['model_id']!r}: {user_models.ID_RULE}")
    try:
        with writer_lock("models add", wait_s=config.lock_wait_s()), db.connect() as con:
            catalogue.load(con)  # the catalogue as it stands, before this model is weighed against it
            _, refused = model_catalogue.user_rows([entry], queries.model_keys(con))
            if refused:
                raise fail(refused[0])
            path = user_models.write(entry)
            catalogue.load(con)
            row = Rows.of(con.sql("select model_id, origin, arch, total_params_b, active_params_b, layers, "
                                  "kv_bytes_per_token, context_max, native_precision, hf_repo, weights_check from models "
                                  "where model_id = ?", params=[entry["model_id"]]))
    except (db.WarehouseError, duckdb.Error, WriterBusy) as exc:
        raise fail(str(exc)) from None
    render(row, title=f"added {entry['model_id']} (kept in {path})")


def _entry(config_data: dict, sha256: str, added: dict) -> dict:
    """A user model file's entry (warehouse/user_models.py) but its id."""
    now = config.utc_now()
    return {"repo": None, "path": None, "url": None, "etag": None, "safetensors": None, "added_on": now.date().isoformat(),
            "added_at": now.isoformat(), "config_sha256": sha256, "config": config_data} | added


def _from_file(path: Path) -> dict:
    """The config.json on disk: a regular file (a FIFO would wait, a device never end), size and depth bounded as
    every file the product reads (warehouse/bounded.py)."""
    from warehouse.bounded import read_json

    try:
        data, body = read_json(path)
    except OSError as exc:
        raise fail(f"--config {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise fail(f"--config {path}: not a config.json ({exc})") from None
    if not isinstance(data, dict):
        raise fail(f"--config {path}: not a config.json (a JSON object)")
    return _entry(data, hashlib.sha256(body).hexdigest(), {"path": str(path.resolve())})


def _weights(index: Path | None, params: int | None, config_data: dict) -> dict:
    """The user's count of the weights as a user model file keeps it ({"params": n, "source": ...})."""
    from transforms.model_catalogue import index_weights
    from warehouse.bounded import read_json

    if params:
        return {"params": params, "source": "given with --params"}
    try:
        data, _ = read_json(index, max_bytes=INDEX_BYTES)
        weights = index_weights(data, config_data, index.name)
    except OSError as exc:
        raise fail(f"--weights-index {index}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise fail(f"--weights-index {index}: {exc}") from None
    return {"params": weights.params, "source": weights.source}


INDEX_BYTES = 64 * 2**20  # a weight index lists every tensor: DeepSeek-V3's is 9 MB


def _from_hub(repo: str) -> dict:
    """The repository's config.json, fetched as the nightly Hugging Face source fetches it."""
    import asyncio

    from scrapers import huggingface
    from scrapers.base import SourceError
    from scrapers.http import SourceClient
    from scrapers.settings import REPO, SettingsError, from_env
    from transforms.model_catalogue import refusal

    if not REPO.fullmatch(repo):
        raise fail(f"--hf {repo!r} is not a Hugging Face repository (owner/name)")
    try:
        settings = from_env()
    except SettingsError as exc:
        raise fail(str(exc)) from None

    async def fetch():
        async with SourceClient(huggingface.NAME, settings) as client:
            return await huggingface.fetch_repos(client, settings, [huggingface.Tracked(repo, "user")])

    try:
        (answer,) = huggingface.parse(asyncio.run(fetch())).model_configs
    except SourceError as exc:
        raise fail(str(exc)) from None
    if answer.http_status != 200:
        raise fail(f"{repo}: {refusal(answer)}")
    if answer.error:
        raise fail(f"{repo}: {answer.error}")
    url = settings.huggingface_url.rstrip("/") + huggingface.CONFIG_PATH.format(repo=repo)
    return _entry(answer.config, answer.config_sha256, {"repo": repo, "url": url, "etag": answer.etag,
                                                        "safetensors": answer.safetensors})


@app.command()
def show(
    model: Annotated[str, typer.Argument(help="Model id (see `gpuledger models`).")],
    fmt: FormatOption = Format.table,
) -> None:
    """Every field of one model and where it came from.

    A field comes from the curated catalogue, or from the config.json a user gave or Hugging Face sent (the fields
    the reader read in it follow); a curated model whose config.json was fetched shows what that config says."""
    con = open_read_only()
    try:
        ids = {m.lower(): m for (m,) in con.execute("select model_id from models").fetchall()}
        model_id = resolve_name(model, ids, "model")
        (row,) = Rows.of(con.sql(f"select {', '.join(SHOWN)} from models where model_id = ?", params=[model_id])).dicts()
        origin = row["origin"]
        config_data, where, weights = _config_of(con, row)
    finally:
        con.close()
    read, says, left_out = {}, {}, frozenset()
    if config_data is not None:
        from transforms.model_catalogue import read_reading

        try:  # as the row was read: where the config leaves a reading open, the weights' count chooses it
            reading = read_reading(config_data, row["hf_repo"], model_id=model_id, path=row["source"], weights=weights)
            says, read, left_out = reading.row, reading.keys, reading.left_out
        except Exception as exc:  # a config the reader cannot read, whatever it raises: said, the fields still shown
            where += f" (the reader cannot read it: {exc})"
    if origin == "curated":  # a curated row is checked against the weights its repository's model API counted
        from transforms.model_catalogue import weights_columns

        row |= weights_columns(row["total_params_b"], weights, left_out, config_data, row["hf_repo"])
    fields = [{"field": name, "value": row[name], "from": _from(name, origin, bool(read)),
               **({"config_json_says": says.get(name)} if origin == "curated" and says else {})}
              for name in SHOWN]
    keys = [{"part": part, "field": key, "value": json.dumps(value)[:120]} for part, found in read.items()
            for key, value in found.items()]
    if fmt is Format.json:
        import sys

        sys.stdout.write(printed_json({"model": model_id, "origin": origin, "config": where, "fields": fields,
                                    "config_fields_read": keys}))
        return
    render(_rows(fields), fmt, title=f"{model_id} ({origin})", caption=where)
    if keys and fmt is not Format.csv:
        render(_rows(keys), fmt, title="config.json fields the reader read")


def _rows(dicts: list[dict]) -> Rows:
    columns = list(dicts[0])
    return Rows(columns, [False] * len(columns), [tuple(str(d[c]) if d[c] is not None else None for c in columns)
                                                  for d in dicts])


def _from(field: str, origin: str, read: bool) -> str:
    if field in ("weights_params_b", "weights_check"):
        return ("the weights' count (the Hugging Face model API's safetensors total, or `models add --weights-index` or "
                "`--params`), compared with total_params_b")
    if field in ("model_id", "origin", "config_sha256", "derived_on"):
        return "gpuledger"
    if origin == "curated":
        return "warehouse/reference/models.csv"
    return f"config.json: {FROM_CONFIG[field]}" if field in FROM_CONFIG and read else "gpuledger"


def _config_of(con: duckdb.DuckDBPyConnection, row: dict) -> tuple[dict | None, str, "Weights | None"]:
    """(the config.json the row came from or was checked against, where that config came from, the weights' count
    held beside it)."""
    from transforms.model_catalogue import hub_weights, user_weights
    from transforms.model_config import ModelConfigError
    from warehouse import user_models

    origin = row["origin"]
    if origin == "user":
        entries, _ = user_models.read_all()
        entry = next((e for e in entries if e["model_id"] == row["model_id"]), None)
        if entry is None:
            return None, f"its file {user_models.path_of(row['model_id'])} is gone", None
        fetched = entry["url"] or entry["path"]
        where = f"added {entry['added_on']} from {fetched} (sha256 {entry['config_sha256']})"
        try:
            return entry["config"], where, user_weights(entry)
        except ModelConfigError as exc:  # the file edited since its row was written: shown, not read
            return entry["config"], f"{where}; its weights' count cannot be read ({exc})", None
    found = con.execute(
        "select c.repo, c.checked_on, c.changed_on, c.http_status, c.config_sha256, f.archive_dir, c.safetensors "
        "from model_configs c "
        "left join fetches f on f.run_id = c.config_run_id and f.source = 'huggingface' "
        "where lower(c.repo) = lower(?) and c.config_run_id is not null", [row["hf_repo"] or ""]).fetchall()
    if not found:
        held = "curated in warehouse/reference/models.csv" if origin == "curated" else "no config.json held"
        return None, f"{held}; no config.json of {row['hf_repo']} fetched yet" if row["hf_repo"] else held, None
    repo, checked, changed, status, sha256, archive_dir, safetensors = found[0]
    where = (f"{'curated in warehouse/reference/models.csv; ' if origin == 'curated' else ''}{repo} config.json "
             f"fetched {changed} (sha256 {sha256}), last checked {checked} (HTTP {status})")
    try:
        weights = hub_weights(json.loads(safetensors) if safetensors else None, repo)
    except ModelConfigError as exc:
        where, weights = f"{where}; its weights' count cannot be read ({exc})", None
    return _archived_config(archive_dir, repo), where, weights


def _archived_config(archive_dir: str | None, repo: str) -> dict | None:
    """The config.json of the repository among a run's archived answers."""
    from scrapers import huggingface
    from scrapers.base import loads
    from warehouse import archive

    if archive_dir is None or not Path(archive_dir).exists():
        return None
    for raw in archive.read_responses(Path(archive_dir)):
        if not huggingface.is_model_api(raw) and huggingface.repo_of(raw).lower() == repo.lower():
            return loads(raw.body)
    return None
