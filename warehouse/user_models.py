"""User models: one JSON file per model under $GPULEDGER_HOME/models/<model_id>.json, outside the warehouse file, so
they survive `init`, `rebuild`, a lost warehouse and upgrades (the row is derived again from the config each time
the catalogues load). A file holds:

    model_id      the id every command knows the model by
    repo          the Hugging Face repository it was fetched from (owner/name), or null for a file on disk
    path          the file it was read from (a config on disk), or null
    url           where it was fetched from (a repository), or null
    etag          the ETag Hugging Face sent with it, or null
    safetensors   the model API's count of the weights ({"parameters": {dtype: n}, "total": n}), or null
    weights       the count a user gave for a config on disk (`models add --weights-index` or `--params`):
                  {"params": n, "source": where it was read from}; absent otherwise
    added_on      the day it was added (YYYY-MM-DD); added_at, the moment (UTC)
    config_sha256 sha256 of the config as received
    config        the config.json itself
"""

import json
import re
from pathlib import Path

from warehouse import config
from warehouse.archive import atomic_write
from warehouse.bounded import CONFIG_BYTES, CONFIG_DEPTH, read_json

MODEL_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")  # a user model's id, and so its file's name
ID_RULE = "a model id is lower-case letters, digits, '.', '_' and '-'"


def directory() -> Path:
    return config.home() / "models"


def path_of(model_id: str) -> Path:
    return directory() / f"{model_id}.json"


def read_all() -> tuple[list[dict], list[str]]:
    """Every user model's entry, and a problem naming each file that is not one (the others still load): read as
    `models add` reads a config (a regular file, size and depth bounded: its config one level down), named by an
    id `models add --id` would take."""
    entries, problems = [], []
    for path in sorted(directory().glob("*.json")):
        if not MODEL_ID.fullmatch(path.stem):
            problems.append(f"{path}: not a user model file ({ID_RULE})")
            continue
        try:
            entry, _ = read_json(path, max_bytes=CONFIG_BYTES, max_depth=CONFIG_DEPTH + 1)
        except (OSError, ValueError) as exc:
            problems.append(f"{path}: not a user model file ({getattr(exc, 'strerror', None) or exc})")
            continue
        if not isinstance(entry, dict) or entry.get("model_id") != path.stem or not isinstance(entry.get("config"), dict):
            problems.append(f"{path}: not a user model file (model_id {path.stem!r} and a config are required)")
            continue
        entries.append(entry)
    return entries, problems


def write(entry: dict) -> Path:
    """Write (or replace) a user model's file, atomically."""
    path = path_of(entry["model_id"])
    atomic_write(path, json.dumps(entry, indent=1, sort_keys=True).encode())
    return path
