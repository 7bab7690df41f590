"""The catalogues a run, a rebuild and `gpuledger init` load: the reference CSVs (warehouse/catalog) and the user
models (their files under $GPULEDGER_HOME/models, derived again by this version's reader each time). The models
derived from the config.json files the Hugging Face source fetched load with that source (flows/ingest.py).
"""

import logging

import duckdb

from transforms import model_catalogue
from warehouse import catalog, queries, user_models
from warehouse.db import transaction

log = logging.getLogger("gpuledger.catalogue")
USER_MODELS = "models (user)"  # the status key of the user models


def load(con: duckdb.DuckDBPyConnection, *, force: bool = False) -> dict[str, str]:
    """Each reference catalogue's status (loaded | unchanged), then the user models' ("N read", and any refused:
    a file that cannot be read never stops the others, and is logged)."""
    status = catalog.load_catalogs(con, force=force)
    entries, problems = user_models.read_all()
    rows, refused = model_catalogue.user_rows(entries, queries.model_keys(con))
    with transaction(con):
        catalog.replace_models(con, "user", catalog.models_frame(rows))
    for problem in (*problems, *refused):
        log.warning("%s", problem)
    status[USER_MODELS] = f"{len(rows)} read" + (f"; refused: {'; '.join(problems + refused)}" if refused or problems
                                                 else "")
    return status
