"""Models beside the curated catalogue: rows derived from the config.json files the Hugging Face source fetched and
from the ones users add (`gpuledger models add`), and which row stands where two name one model or repository.

Pure Python, no polars (the quick `gpuledger models` commands read it). Precedence, as warehouse.catalog.ORIGINS:
a curated row wins over a user row, a user row over a derived one; a derived row is never written where another
row already serves its repository (hf_repo or hf_ids), nor under another model's id.
"""

import json
from dataclasses import dataclass, field
from datetime import date

from scrapers import huggingface
from scrapers.base import ModelConfig
from transforms import model_config
from transforms.model_bounds import implausible
from transforms.model_config import READINGS, ModelConfigError, Reading, derive_readings, slug

# Why a repository's config could not be read, by the status Hugging Face answered.
REFUSALS = {
    401: "gated or private: set HF_TOKEN to a token with access to it",
    403: "access not granted to the HF_TOKEN account (a gated repository's terms not accepted)",
    404: "no such repository, or no config.json in it",
    410: "the repository is gone",
    **dict.fromkeys((301, 302, 303, 307, 308), "redirected to another host (a file kept in LFS/Xet storage, served "
                    "from a signed CDN URL): not followed, so the token never leaves the configured host"),
}


def refusal(config: ModelConfig) -> str:
    """Why a repository answered anything but 200 or 304 gave no config: the status, what it means, and for a status
    without a meaning of its own (400, 451, a server error through the retries) what the Hub said."""
    meaning = REFUSALS.get(config.http_status)
    if meaning:
        return f"HTTP {config.http_status}: {meaning}"
    meaning = "a server error through every retry" if config.http_status >= 500 else "no config received"
    return f"HTTP {config.http_status}: {meaning}" + (f"; the Hub said: {config.error}" if config.error else "")


# The config.json fields the reader reads into as objects: anything else there is named before it reads them (the
# language model's block is named so by model_config.text_block).
OBJECTS = ("rope_scaling", "rope_parameters", "quantization_config")  # rope_parameters: transformers 5's name
GONE = (404, 410)  # the config a derived row came from is gone: the row goes with it
NOT_FOLLOWED = ("no longer followed (no API listing names it, nor GPULEDGER_HF_MODELS): the model derived from its "
                "config.json is dropped")
WEIGHTS_TOLERANCE = 0.03  # a derived total further than this from the weights' count is flagged
PACKED_SHARE = 0.001  # integer tensors beyond this share of the count are packed weights, not indices or position ids
UNKNOWN_304 = ("HTTP 304: unchanged since a config this warehouse does not hold (rebuilt from a later day); the next "
               "run fetches it whole")


@dataclass
class Checked:
    """What one run's answers change: derived rows to write (replacing those of `refetched` repositories) and the
    model_configs rows of the repositories answered."""

    models: list[dict] = field(default_factory=list)
    refetched: list[str] = field(default_factory=list)  # repositories answered 200: their old derived rows go
    states: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def unmapped(self) -> list[dict]:
        """The states whose repository no model serves once the rows are written (the unmapped_models view's)."""
        return [s for s in self.states if s["reason"] is not None and s["model"] is None and not s.get("served")]


def _served(models: list[dict], origins: tuple[str, ...]) -> dict[str, str]:
    """Repository (lower case) -> the model of one of `origins` that serves it through hf_repo or hf_ids."""
    return {repo.lower(): m["model_id"] for m in models if m["origin"] in origins
            for repo in " ".join(filter(None, (m["hf_repo"], m["hf_ids"]))).split()}


def _model_id(repo: str, taken: dict[str, str]) -> str | None:
    """The repository's name as an id, else owner-name when another repository's model has that one; None when
    both are taken."""
    return next((candidate for candidate in (slug(repo), slug(repo.replace("/", "-")))
                 if taken.get(candidate, repo.lower()) == repo.lower()), None)


def checked(configs: list[ModelConfig], models: list[dict], states: dict[str, dict], day: date,
            run_id: str, followed: set[str] | None = None) -> Checked:
    """The rows one run's answers give: `models` are the warehouse's rows (model_id, origin, hf_repo, hf_ids) and
    `states` its model_configs rows by lower-cased repository. A state checked on a later day than `day` stands (a
    rebuild of an earlier day does not undo what later runs learnt).

    A derived row never outlives its config: a repository answered 404 or 410 loses its derived row, and so does
    one no longer `followed` (the lower-cased repositories the source follows now; None: not judged)."""
    out = Checked()
    served = _served(models, ("curated", "user"))
    taken = {m["model_id"]: (m["hf_repo"] or "").lower() for m in models}
    later = unknown = 0
    for config in sorted(configs, key=lambda c: c.repo.lower()):
        key, prior = config.repo.lower(), states.get(config.repo.lower())
        if prior and prior["checked_on"] > day:
            later += 1
            continue
        kept = ("etag", "config_sha256", "model", "reason", "changed_on", "config_run_id", "safetensors")
        held = {k: prior.get(k) for k in kept} if prior else dict.fromkeys(kept)
        state = {"repo": prior["repo"] if prior else config.repo, "http_status": config.http_status,
                 "checked_on": day, "run_id": run_id} | held
        if config.safetensors is not None:  # the model API answered beside the config (200 or 304)
            state["safetensors"] = json.dumps(config.safetensors, sort_keys=True)
        if config.http_status == 304:
            if prior is None:
                unknown += 1
                state["reason"] = UNKNOWN_304
        elif config.http_status != 200:  # the next run asks again, whole
            state |= {"etag": None, "reason": refusal(config)}
            if config.http_status in GONE and state["model"]:  # a derived row of a config gone goes too;
                out.refetched.append(config.repo)  # one refused (401, 403) or redirected stands until it is gone
                state["model"] = None
        else:
            out.refetched.append(config.repo)
            state |= {"etag": config.etag, "config_sha256": config.config_sha256, "changed_on": day,
                      "config_run_id": run_id, "model": None, "reason": config.error}
            if config.error is None and key in served:  # read all the same: a curated config gone unreadable shows
                state["reason"] = _unreadable(config)
            elif config.error is None:
                state |= _derived(config, taken, out, day)
        out.states.append(state | {"served": key in served})
    out.states += _unfollowed(models, states, followed, {c.repo.lower() for c in configs}, day, run_id, out)
    answered = {}
    for state in out.states:
        status = state["http_status"]
        kind = ("unchanged (304)" if status == 304 else "a server error (HTTP 5xx)" if status >= 500
                else "refused or redirected (HTTP 3xx/4xx)" if status != 200 else "unreadable" if state["reason"]
                else "served by the catalogue" if state["served"] else "derived")
        answered[kind] = answered.get(kind, 0) + 1
    if answered:
        out.notes.append(f"config.json of {len(out.states)} repositories: "
                         + ", ".join(f"{n} {kind}" for kind, n in sorted(answered.items())))
    if later:
        out.notes.append(f"{later} repositories were checked on a later day than this run: their state stands")
    if unknown:
        out.notes.append(f"{unknown} repositories answered 304 for a config this warehouse does not hold")
    return out


def _unfollowed(models: list[dict], states: dict[str, dict], followed: set[str] | None, answered: set[str],
                day: date, run_id: str, out: Checked) -> list[dict]:
    """The states of the derived rows' repositories no longer followed, their rows dropped (out.refetched)."""
    if followed is None:
        return []
    gone = []
    for model in models:
        repo = (model["hf_repo"] or "").lower()
        prior = states.get(repo)
        if model["origin"] != "derived" or repo in followed or repo in answered or (prior and prior["checked_on"] > day):
            continue
        out.refetched.append(model["hf_repo"])
        gone.append((prior or {"repo": model["hf_repo"], "http_status": 200, "etag": None, "config_sha256": None,
                               "changed_on": None, "config_run_id": None})
                    | {"model": None, "reason": NOT_FOLLOWED, "checked_on": day, "run_id": run_id, "served": False})
    return gone


@dataclass(frozen=True)
class Weights:
    """A count of a checkpoint's parameters, where it came from (`source`, said in the row's notes), and why it is
    not a parameter count when it is not (`packed`: a quantized checkpoint's integers)."""

    params: int
    source: str
    packed: str | None = None


def hub_weights(safetensors: dict | None, where: str) -> Weights | None:
    """The model API's safetensors field ({"parameters": {dtype: n}, "total": n}) as a count; None without one; a
    field of another shape (a user model file edited by hand) is `where`'s refusal (ModelConfigError naming the field).

    Unquantized and FP8 weights hold one parameter per value. A quantized checkpoint stores its 4-bit weights packed,
    several to an integer (I8, U8, I32: AWQ, GPTQ, MXFP4 blocks), beside their scales, so the Hub's total counts
    integers, not parameters: integers beyond PACKED_SHARE of the total make it `packed`, never compared."""
    if safetensors is None:
        return None
    if not huggingface.is_weights_count(safetensors):
        raise ModelConfigError(f"{where}: field 'safetensors' is not the model API's parameters per dtype summing to a "
                               f"total ({repr(safetensors)[:80]})")
    total, counts = safetensors["total"], safetensors["parameters"]
    integers = {dtype: n for dtype, n in counts.items() if dtype[:1] in ("I", "U")}
    packed = None
    if sum(integers.values()) > PACKED_SHARE * total:
        packed = (f"{sum(integers.values()) / 1e9:.2f}B of the weights' {total / 1e9:.2f}B are integers "
                  f"({', '.join(sorted(integers))}), a quantized checkpoint's packed weights (several to each) and "
                  "scales: the count is no parameter count")
    return Weights(total, "the Hugging Face model API's safetensors total", packed)


def read_config(config, repo: str | None, *, model_id: str | None = None, path: str | None = None,
                weights: Weights | None = None) -> dict:
    """derive_model's row within the plausibility bounds (transforms/model_bounds.py); ModelConfigError naming the
    config otherwise. The boundary of one config: whatever reading it raises is that config's reason, never its
    source's or its night's (a text_config that is a list, a YaRN factor that is NaN, zero attention heads).

    A config leaving open what its code hard-wires (the MLP gated or not, the head tied or not) is read every way it
    can be, and the weights' count (`weights`) chooses among the readings (chosen_reading)."""
    return read_reading(config, repo, model_id=model_id, path=path, weights=weights).row


def read_reading(config, repo: str | None, *, model_id: str | None = None, path: str | None = None,
                 weights: Weights | None = None) -> Reading:
    """read_config's reading: its row and the config.json fields read for it."""
    where = repo or path
    for part in (config, model_config.text_config(config, where)):
        for key in OBJECTS:
            value = part.get(key) if isinstance(part, dict) else None
            if value is not None and not isinstance(value, dict):
                raise ModelConfigError(f"{where}: config.json field '{key}' is a {type(value).__name__}, not an object")
    try:
        readings = derive_readings(config, repo, model_id=model_id, path=path)
        reading = readings[0] if len(readings) == 1 else chosen_reading(readings, weights, config, where)
    except ModelConfigError:
        raise
    except Exception as exc:  # one config's failure, whatever it is, is that config's reason
        raise ModelConfigError(f"{where}: config.json cannot be read ({type(exc).__name__}: "
                               f"{str(exc)[:160]})") from None
    problem = implausible(reading.row)
    if problem:
        raise ModelConfigError(f"{where}: config.json {problem}")
    return reading


def _described(reading: Reading) -> str:
    """'an ungated MLP and an untied output head: 7.51B total, 1.20B active'."""
    row = reading.row
    active = f", {row['active_params_b']}B active" if row["arch"] == "moe" else ""
    return f"{_taken(reading)}: {row['total_params_b']}B total{active}"


def _taken(reading: Reading) -> str:
    """'a gated MLP (gate, up and down projections) and an untied output head': what the reading takes."""
    return " and ".join(READINGS[v] for v in reading.assumed.values())


def _compared_b(reading: Reading, config: dict, where: str) -> float:
    """The reading's count of what the weights hold: its total, and a multimodal model's vision tower where it is read
    by field. ModelConfigError where the weights hold what the row does not count and cannot be read (a tower named
    and not described, multi-token-prediction layers): such a count cannot choose honestly."""
    if "mtp" in reading.left_out:
        raise ModelConfigError("the weights hold multi-token-prediction layers the readings do not count")
    if "tower_built_by_code" in reading.left_out:
        raise ModelConfigError("the weights hold a vision tower its code builds, which no field describes")
    return reading.row["total_params_b"] + (_tower_b(config, where, reading.left_out) or 0)


def chosen_reading(readings: list[Reading], weights: Weights | None, config: dict, where: str) -> Reading:
    """The one reading whose count is within WEIGHTS_TOLERANCE of the weights' count, its notes saying which and why.
    Refused (ModelConfigError naming the fields and the count) when no count is known, when the count cannot be
    compared (packed integers, parts the readings do not count), when no reading is within it, or when two are and
    their active counts disagree by more than it (a mixture of experts whose gating the count cannot tell)."""
    fields = ", ".join(f"'{f}'" for f in dict.fromkeys(f for r in readings for f in r.assumed))
    possible = "; ".join(_described(r) for r in readings)
    head = f"{where}: config.json leaves {fields} open (the family's code decides), readings possible: {possible}"
    if weights is None:
        raise ModelConfigError(f"{head}; the weights' parameter count would settle it (the Hub's model API for a "
                               "repository; `models add --weights-index` or `--params` for a config on disk)")
    if weights.packed:
        raise ModelConfigError(f"{head}; the weights' count ({weights.source}) cannot choose: {weights.packed}")
    try:
        offs = [_compared_b(r, config, where) * 1e9 / weights.params - 1 for r in readings]
    except ModelConfigError as exc:
        reason = str(exc).removeprefix(f"{where}: ")
        raise ModelConfigError(f"{head}; the weights' count ({weights.source}) cannot choose: {reason}") from None
    count = f"the weights' {weights.params:,} parameters ({weights.source})"
    near = sorted((abs(off), i) for i, off in enumerate(offs) if abs(off) <= WEIGHTS_TOLERANCE)
    if not near:
        raise ModelConfigError(f"{head}; none is within {WEIGHTS_TOLERANCE:.0%} of {count} ("
                               + ", ".join(f"{off:+.1%}" for off in offs) + ")")
    actives = [readings[i].row["active_params_b"] for _, i in near]
    if max(actives) > (1 + WEIGHTS_TOLERANCE) * min(actives):
        raise ModelConfigError(f"{head}; {len(near)} are within {WEIGHTS_TOLERANCE:.0%} of {count} and their active "
                               f"counts differ by more than {WEIGHTS_TOLERANCE:.0%} ({min(actives)}B to "
                               f"{max(actives)}B)")
    chosen = readings[near[0][1]]
    others = [f"{_described(readings[i])} ({offs[i]:+.1%})" for i in range(len(readings)) if i != near[0][1]]
    why = (f"config.json leaves {fields} open (the family's code decides): read as "
           f"{_taken(chosen)}, the reading whose total is within "
           f"{WEIGHTS_TOLERANCE:.0%} of {count} ({offs[near[0][1]]:+.1%}); the other readings: {'; '.join(others)}")
    if len(near) > 1:
        why += f" ({len(near)} within {WEIGHTS_TOLERANCE:.0%}, their active counts agreeing: the nearest taken)"
    return Reading(chosen.assumed, chosen.row | {"notes": f"{chosen.row['notes']}; {why}"}, chosen.keys,
                   chosen.left_out)


# How a check names what the row leaves out that the weights hold (Reading.left_out)
LEFT_OUT = {"vision_tower_by_field": "a vision/audio tower", "tower_built_by_code": "a vision tower its code builds",
            "mtp": "multi-token-prediction layers"}


def _tower_b(config: dict, where: str, left_out: frozenset[str]) -> float | None:
    """A multimodal model's vision tower and projector, read by field, in billions: what its weights hold beside the
    language model the row counts; None where the reading leaves out no tower stated by field. ModelConfigError for
    a tower the reader does not read (vision_tower_params names its field)."""
    if "vision_tower_by_field" not in left_out:
        return None
    return model_config.vision_tower_params(config, where) / 1e9


def weights_check(total_params_b: float, weights: Weights | None, left_out: frozenset[str] = frozenset(),
                  tower: float | None = None) -> tuple[float | None, str | None]:
    """(the weights' parameters in billions, how the derived total compares with them), from the model API's count
    (hub_weights) or a count a user gave (user_weights); (None, None) without one. The check names where the count
    came from (Weights.source); beyond WEIGHTS_TOLERANCE it says FLAGGED; a packed count is recorded, not compared.
    `left_out` (the reading's) says what the row leaves out that the weights hold (a vision tower, MTP layers); a
    `tower` read by field (weights_columns) is added to the total compared, and said, as the weights hold it."""
    if weights is None:
        return None, None
    total = weights.params
    weights_b = round(total / 1e9, 2)
    if weights.packed:
        return weights_b, f"not compared: {weights.packed}"
    off = (total_params_b + (tower or 0)) * 1e9 / total - 1
    with_tower = f" with its {tower:.2f}B vision tower read by field" if tower else ""
    if abs(off) <= WEIGHTS_TOLERANCE:  # where the count came from is said, so a user sees what the row met
        return weights_b, (f"within {WEIGHTS_TOLERANCE:.0%} of the weights ({off:+.1%}; {weights.source}"
                           + (f";{with_tower})" if tower else ")"))
    left = [words for fact, words in LEFT_OUT.items()
            if fact in left_out and not (tower and fact == "vision_tower_by_field")]
    return weights_b, (f"FLAGGED: the derived total {total_params_b}B{with_tower} is {off:+.1%} off the weights' "
                       f"{total / 1e9:.2f}B ({weights.source}"
                       + (f"; the row leaves out {' and '.join(left)})" if left else ")"))


# Bytes per value of a config's dtype (torch_dtype, or transformers 5's dtype)
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}


def index_weights(index, config: dict, name: str) -> Weights:
    """The parameters a checkpoint's weight index (model.safetensors.index.json, pytorch_model.bin.index.json) holds:
    its metadata.total_parameters where it has one (transformers' PreTrainedModel.save_pretrained in modeling_utils.py
    writes the model's num_parameters() there since huggingface/transformers#38531, merged 2025-06-02: transformers
    4.53 on; mlx-lm's save writes it too, ml-explore/mlx-lm#207), else its metadata.total_size in bytes over
    the bytes per value of the config's dtype: approximate where the checkpoint keeps some tensors in another dtype
    (norms or routers in float32 beside bfloat16 weights count a little high), as the source text says. Refused
    (ValueError naming `name` and the field) for a quantized config, whose weights are packed integers and scales
    (neither count is then the parameters'), and, without total_parameters, for a config that states no dtype."""
    metadata = index.get("metadata") if isinstance(index, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    text = model_config.text_config(config, name)
    quantized = model_config.quantization_field(config, name)
    if quantized:
        raise ValueError(f"{name}: the config is of a quantized checkpoint ({quantized}): its weights are "
                         "packed integers and scales, not a parameter count; give --params")
    counted = metadata.get("total_parameters")
    if _positive_count(counted):
        return Weights(counted, f"{name} metadata.total_parameters")
    size = metadata.get("total_size")
    if not _positive_count(size):
        raise ValueError(f"{name}: field 'metadata.total_size' is not a size in bytes ({size!r})")
    dtype = next((part.get(key) for part in (config, text) for key in ("torch_dtype", "dtype") if part.get(key)), None)
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:  # a list or an object is no dtype (nor hashable)
        raise ValueError(f"{name}: config.json field 'torch_dtype' is {dtype!r}, not a dtype whose size is known: the "
                         "index's bytes cannot be turned into parameters; give --params")
    per = DTYPE_BYTES[dtype]
    return Weights(size // per, f"{name} metadata.total_size {size:,} bytes / {per} ({dtype}; approximate where some "
                                "tensors are stored in another dtype)")


def _positive_count(value) -> bool:
    """An int above 0 (JSON's true is an int to Python, and no count)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def user_weights(entry: dict) -> Weights | None:
    """A user model's count of its weights: the model API's (a repository) or the one the user gave (`weights`:
    {"params": n, "source": what it was read from}, warehouse/user_models.py). A field of another shape (the file
    edited by hand) is that model's refusal: ModelConfigError naming its file and the field."""
    where = f"its file {entry['model_id']}.json"
    given = entry.get("weights")
    if given is None:
        return hub_weights(entry.get("safetensors"), where)
    params = given.get("params") if isinstance(given, dict) else None
    if not _positive_count(params):
        raise ModelConfigError(f"{where}: field 'weights' is not {{\"params\": a positive count, \"source\": ...}} "
                               f"({repr(given)[:80]})")
    return Weights(params, str(given.get("source") or "given by the user"))


def weights_columns(total_params_b: float, weights: Weights | None, left_out: frozenset[str], config: dict | None,
                    where: str) -> dict:
    """A row's weights_params_b and weights_check: its total (and the vision tower its config states, where read by
    field) against the weights' count; a tower not read is named as left out, never compared as nothing."""
    try:
        tower = _tower_b(config, where, left_out) if weights is not None and config is not None else None
    except ModelConfigError:
        tower = None
    weights_b, check = weights_check(total_params_b, weights, left_out, tower)
    return {"weights_params_b": weights_b, "weights_check": check}


def _unreadable(config: ModelConfig) -> str | None:
    """Why the reader cannot read a config, or None."""
    try:
        read_config(config.config, config.repo, weights=hub_weights(config.safetensors, config.repo))
    except ModelConfigError as exc:
        return str(exc)
    return None


def _derived(config: ModelConfig, taken: dict[str, str], out: Checked, day: date) -> dict:
    """The derived row of a fetched config, added to out.models; the state's model, or its reason."""
    key = config.repo.lower()
    for model_id in [m for m, repo in taken.items() if repo == key]:  # its former row is replaced
        del taken[model_id]
    model_id = _model_id(config.repo, taken)
    if model_id is None:
        return {"reason": f"model id {slug(config.repo)!r} already names another model ({taken[slug(config.repo)]})"}
    try:
        weights = hub_weights(config.safetensors, config.repo)
        reading = read_reading(config.config, config.repo, model_id=model_id, weights=weights)
    except ModelConfigError as exc:
        return {"reason": str(exc)}
    taken[model_id] = key
    out.models.append(reading.row | {"config_sha256": config.config_sha256, "derived_on": day}
                      | weights_columns(reading.row["total_params_b"], weights, reading.left_out, config.config,
                                        config.repo))
    return {"model": model_id}


def user_rows(entries: list[dict], models: list[dict]) -> tuple[list[dict], list[str]]:
    """The models rows of user model files' entries (warehouse/user_models.py), each derived again from its config
    by this version of the reader, and why any other was refused: an unreadable config, or an id or repository a
    curated model already has (`models` as in checked)."""
    curated = {m["model_id"] for m in models if m["origin"] == "curated"}
    served = _served(models, ("curated",))
    rows, refused = [], []
    for entry in entries:
        model_id, repo = entry["model_id"], entry.get("repo")
        try:
            weights = user_weights(entry)
            reading = read_reading(entry["config"], repo, model_id=model_id, path=entry.get("path"), weights=weights)
        except ModelConfigError as exc:
            refused.append(f"user model {model_id}: {exc}")
            continue
        if model_id in curated or (repo or "").lower() in served:
            holder = model_id if model_id in curated else served[repo.lower()]
            refused.append(f"user model {model_id}: the curated model {holder} already has "
                           f"{'this id' if model_id in curated else repo}")
            continue
        rows.append(reading.row | {"config_sha256": entry["config_sha256"],
                                   "derived_on": date.fromisoformat(entry["added_on"])}
                    | weights_columns(reading.row["total_params_b"], weights, reading.left_out, entry["config"],
                                      repo or entry.get("path") or model_id))
    return rows, refused
