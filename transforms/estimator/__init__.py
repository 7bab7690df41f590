"""Roofline LLM-inference estimator: pure polars over a whole grid (models x GPUs x precisions x contexts x streams).

Frames in, frames out: the catalogues come in as frames (warehouse tables or `catalog.read_all()`), nothing is
read or written here. The formulas and both reference pages are described in transforms/presets.py and
docs/estimator.md. One entry point, `estimate` (api.py); the modules below it, each importing only those after it:

- api: `estimate`, and the questions built on it (a curve over streams, whether a replica holds the model)
- methods: the reference methods' steady decode and the measured method's whole requests
- terms: per grid row, the catalogue's fields, the request's lengths and the decode and prefill seconds
- prefill: a prompt's FLOPs and the measured method's requests per second of a replica
- decode: one step's reads and FLOPs, the efficiencies, the group's scaling and a pass's fixed seconds
- layout: the replica's GPUs, data-parallel attention ranks, memory used and streams held
- memory: what a replica holds, the precision a preset's rule picks, power-of-two group sizes
- catalogue: a preset's overlay on the GPU specs and the per-GPU and per-model fields with their doubts
- grid: the question (make_grid), its checks and limits, and ESTIMATOR_VERSION
- fleet: prices on estimates ($/M, one replica's cost, page 001's fleet cards)
"""

from transforms.estimator.api import (
    OUTPUT_COLUMNS,
    cannot_hold,
    curve,
    estimate,
    memory_fills_at,
    refuse_unheld,
)
from transforms.estimator.catalogue import (
    COMPUTE_FIELDS,
    NO_OVERLAY,
    PAGE_ESTIMATE_SOURCE,
    SPEC_FIELDS,
    UNCERTAIN_WORDS,
    apply_overlay,
    link_gbs,
)
from transforms.estimator.decode import (
    efficiencies,
    group_scale,
    pass_seconds,
    pipeline_seconds,
    step_seconds,
)
from transforms.estimator.fleet import bare_minimum, fleet_whatif, size_for_target, usd_per_mtok, with_costs
from transforms.estimator.grid import (
    CONTEXT_TOKENS_MAX,
    ESTIMATOR_VERSION,
    GRID_SCHEMA,
    NAME_COLUMNS,
    PRECISION,
    STREAMS_MAX,
    EstimatorError,
    make_grid,
)
from transforms.estimator.memory import MAX_STREAMS, QUANTIZED
from transforms.estimator.prefill import FLOPS_PER_PARAM, request_tok_s
from transforms.estimator.terms import serving_terms

__all__ = [
    "COMPUTE_FIELDS", "CONTEXT_TOKENS_MAX", "ESTIMATOR_VERSION", "FLOPS_PER_PARAM", "GRID_SCHEMA", "MAX_STREAMS",
    "NAME_COLUMNS", "NO_OVERLAY", "OUTPUT_COLUMNS", "PAGE_ESTIMATE_SOURCE", "PRECISION", "QUANTIZED", "SPEC_FIELDS",
    "STREAMS_MAX", "UNCERTAIN_WORDS", "EstimatorError", "apply_overlay", "bare_minimum", "cannot_hold", "curve",
    "efficiencies", "estimate", "fleet_whatif", "group_scale", "link_gbs", "make_grid", "memory_fills_at", "pass_seconds",
    "pipeline_seconds", "refuse_unheld", "request_tok_s", "serving_terms", "size_for_target", "step_seconds",
    "usd_per_mtok", "with_costs",
]
