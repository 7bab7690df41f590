"""A catalogue model row derived from a Hugging Face config.json: the model a user asks about, priced from its shape.

Pure: `derive_model(config, repo)` takes the parsed config.json and returns a row with the columns of
warehouse/reference/models.csv; nothing is read or written here. The structure is read from the fields the config
(its text model's, for a multimodal one) states, under their common spellings (_ALIASES; a size under none of them
by the meaning of its name, _MEANINGS, named in the row's notes: for a transformers class's config, only a size it
cannot do without) and inside the nested blocks some families keep them
in (_NESTED: MPT's and DBRX's attn_config, ffn_config), whatever its model_type or none: attention (multi-head,
grouped, multi-query, latent; values narrower than keys by `v_head_dim`), windowed layers (sized apart by `swa_*`
where stated), chunked and linear-attention layers, Mamba and Mamba-2 mixers, short convolutions, per-layer blocks,
dense, gated and expert MLPs (OLMo's block kinds among them: _OLMO_BLOCKS), shared experts and which layers route (by
a count, a rule or a per-layer list). A field the config leaves to its transformers class is read at that class's
default (hf_class_defaults). A model_type matters only for a true quirk: a family's
defaults for fields its configs leave out (_FAMILIES, named in the row's notes), what its code does that no field
says (_QUIRKS), or a layout of its own (_READERS). A config it cannot read, or one carrying a field that changes the
count and is not read (_UNREAD; or, unread and on, whose name says it shapes the model: _unread_structure), raises
ModelConfigError naming the repository and the field, never a guessed number.

What the row counts, as the curated rows do (the tests compare every curated row with its config.json):
- Parameters of the language model in billions: embeddings (the output head apart unless tied), attention, dense
  MLPs, routers, routed and shared experts. Norms and biases of norms (well under 0.1%) and learned position
  embeddings (GPT-2's wpe, under 1%) are left out; vision and audio towers are not counted (a multimodal model is
  priced by its language model; vision_tower_params counts a CLIP, SigLIP or Qwen (2-VL, 2.5-VL, 3-VL, 3.5) tower and
  its projector apart, for a whole-model figure and the row's notes); multi-token-prediction layers
  (`num_nextn_predict_layers`, `mtp_*`) are not served and not counted: `num_hidden_layers` excludes them.
- Active parameters: everything but the routed experts a token does not use, embeddings included (Mixtral
  8x7B's 12.88B, Llama 4's 17.17B). Vendors that quote active counts without the input embedding (gpt-oss's
  5.13B) are counted the same way here, so that rows compare.
- KV cache per token at 2 bytes per value (the catalogue's basis; the estimator halves it where serving keeps it
  in FP8), for the layers whose cache grows with the context: full attention keeps K and V per KV head, MLA one
  latent (kv_lora_rank + qk_rope_head_dim) per layer, plus the key of a sparse-attention indexer (DSA).
- Windowed layers (sliding-window and chunked-local attention) hold the KV of at most `window_tokens` past tokens,
  `window_kv_bytes_per_token` bytes each (same 2-byte basis): a stream holds min(context, window) of them. One
  window per model: a config whose layers slide over two different windows is refused (naming the field).
- State per stream (`state_bytes_per_stream`), bytes that do not depend on the context at all, on the same 2-byte
  basis: linear-attention (Gated DeltaNet) and Mamba layers hold a fixed recurrent state plus a short convolution
  state.
- The hidden size (`hidden_size`): the width of the vector each layer reads and writes (`hidden_size` or its
  spellings; the language model's for a multimodal one), which a tensor-parallel group all-reduces.
- The attention kind (`attention`): `mla` when every attention layer caches one multi-head latent, `gqa` when they
  cache K and V per KV head (multi-head and multi-query attention included), `none` for a state-space model (no
  attention layer, `kv_heads` empty); `kv_heads`, the KV heads of the layers
  whose cache grows with the context (1 for MLA: one latent serves every head), which a tensor-parallel group wider
  than it must replicate.
- Attention FLOPs per token of context, on the layers whose attention grows with the context: GQA 4 x query heads
  x head_dim (QK and AV, a multiply-add each), MLA absorbed 2 x heads x (kv_lora_rank + rope + kv_lora_rank), a
  DSA indexer 2 x index heads x index_head_dim (its top-k attention is bounded, like a window, and left out);
  windowed layers' attention (at most the window) is left out too.
- context_max: max_position_embeddings, or original_max_position_embeddings x factor for YaRN rope scaling (the
  served length vLLM derives from the config); a longer context a model card offers by editing the config is not.
- native_precision from quantization_config (FP8 blocks: fp8, MXFP4/NVFP4: fp4, 4-bit AWQ/GPTQ/compressed-tensors
  integers: int4) or MLX's `quantization` (its bits: int4, int8) or GPTQ-for-LLaMa's top-level `wbits`, else the
  16-bit dtype: bf16.
"""

import functools
import re
from dataclasses import dataclass, field

from transforms.hf_class_defaults import CLASS_DEFAULTS
from transforms.model_bounds import MLP_RATIO_MAX, TOWER_PARAMS_MAX, config_range

KV_BYTES = 2  # bytes per cached value as the catalogue stores it (16 bits)
KV_CACHE_DTYPE = "bf16"
GATED_ACTS = ("silu", "swiglu")  # gate, up and down projections
# gated or not by family (_QUIRKS' gated_gelu_mlp, ungated_mlp): ReLU is ungated in OPT and gated in ReLU-Llamas
EITHER_ACTS = ("gelu", "gelu_pytorch_tanh", "gelu_new", "relu")
# up and down projections only: squared ReLU (NemotronMLP, Nemotron-H, ArceeMLP), xIELU (ApertusMLP); no family gates
# either
UNGATED_ACTS = ("relu2", "xielu")
# per-layer kinds of `layer_types`; "attention" and "mamba" are Granite 4.0-H's (GraniteMoeHybridConfig)
KNOWN_LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention", "attention",
                     "mamba", "conv")  # "conv": LFM2's short-convolution layers


COUNT_MAX = 2**40  # above every size or count a config holds (vocabularies, contexts: millions)


class ModelConfigError(ValueError):
    """A config.json the reader cannot turn into a row; the message names the repository and the field."""


class AmbiguousConfig(ModelConfigError):
    """A field the config leaves out (or states without saying enough) that more than one reading fits: the MLP gated
    or not, the output head tied or not. derive_readings counts each reading; derive_model, alone, refuses."""

    def __init__(self, message: str, field: str, options: tuple[str, ...]):
        super().__init__(message)
        self.field, self.options = field, options


# What each reading of an ambiguous field builds, as the row's notes and refusals name it.
READINGS = {"gated": "a gated MLP (gate, up and down projections)", "ungated": "an ungated MLP (up and down)",
            "tied": "the output head tied to the input embedding", "untied": "an untied output head"}


@dataclass
class _Layer:
    """One decoder layer: its parameters and what it caches."""

    mixer: str = "full attention"  # what mixes tokens: named in the row's notes
    attention: str = ""  # gqa | mla for an attention layer, empty for a recurrent mixer or an MLP
    kv_heads: int = 0  # KV heads cached (MLA: one latent)
    attention_params: float = 0.0
    kv_bytes_per_token: float = 0.0  # grows with the context
    window_tokens: int = 0  # a windowed layer's window: its KV stops growing there
    window_field: str = ""  # the config field the window comes from
    window_kv_bytes_per_token: float = 0.0  # KV per token of a windowed layer, up to its window
    state_bytes: float = 0.0  # per stream, fixed (recurrent states)
    attn_flops_per_ctx_token: float = 0.0
    dense_params: float = 0.0  # dense MLP, shared experts, router: read for every token
    expert_params: float = 0.0  # one routed expert
    experts: int = 0
    experts_per_token: int = 0


@dataclass
class _Shape:
    layers: list[_Layer]
    embedding_params: float  # input embeddings (and per-layer input embeddings)
    head_params: float  # output head; 0 when tied to the input embedding
    shared_experts: int | None = None
    notes: list[str] = field(default_factory=list)


# The block a multimodal config holds its language model's config in: transformers' text_config, or InternVL's
# llm_config (InternVLChatConfig, OpenGVLab's remote code configuration_internvl_chat.py, which builds the language
# model's class from it by llm_config.architectures[0]: LlamaConfig(**llm_config), InternLM2Config, Phi3Config,
# Qwen2Config, Qwen3Config, Qwen3MoeConfig, GptOssConfig)
TEXT_BLOCKS = ("text_config", "llm_config")
# The classes InternVLChatModel builds its language model as (modeling_internvl_chat.py of InternVL2 to 3.5), each a
# plain causal LM of one model_type, the family the reader reads llm_config by. Any other (Mono-InternVL's
# InternLM2VEForCausalLM: InternLM2Config's fields, a second MLP per layer for visual tokens) is refused, not read as
# its model_type.
LLM_CLASSES = {"LlamaForCausalLM": "llama", "InternLM2ForCausalLM": "internlm2", "Phi3ForCausalLM": "phi3",
               "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3", "Qwen3MoeForCausalLM": "qwen3_moe",
               "GptOssForCausalLM": "gpt_oss"}  # InternVL3_5-GPT-OSS-20B-A4B-Preview


def text_block(config: dict, repo: str | None) -> tuple[str | None, dict]:
    """(the key of the block holding the language model's config, its fields): the first of TEXT_BLOCKS stated non-null
    and non-empty (a text_config: null beside an llm_config leaves llm_config the block; an empty one holds nothing, so
    the top level is read, and checked, as the language model's), else (None, the config) for a text model's config.
    A block that is no object is refused naming it, never read as the top level."""
    block = next((key for key in TEXT_BLOCKS if config.get(key) not in (None, {})), None)
    if block is None:
        return None, config
    if not isinstance(config[block], dict):
        raise ModelConfigError(f"{repo}: config.json field '{block}' is a {type(config[block]).__name__}, not an "
                               f"object")
    return block, config[block]


def text_config(config, repo: str | None) -> dict:
    """The language model's block (text_block), else nothing (a text model's config, or a config that is no object)."""
    if not isinstance(config, dict):
        return {}
    block, fields = text_block(config, repo)
    return fields if block else {}


class _Config:
    """The text model's fields: the config's language-model block (TEXT_BLOCKS) when it has one, then its top
    level. A tower's block (`prefix`: "vision_config.") is read by its own fields only: its class (Qwen2VLVisionConfig,
    SiglipVisionConfig, ...) takes no language-model block, and a text_config stated inside it is not the tower's."""

    def __init__(self, config: dict, repo: str, prefix: str = "", assume: dict[str, str] | None = None):
        if not isinstance(config, dict):
            raise ModelConfigError(f"{repo}: config.json {prefix or 'is'} not a JSON object")
        self.top, self.repo, self.prefix = config, repo, prefix  # prefix: the block read ("vision_config.")
        block, self.text = (None, config) if prefix else text_block(config, repo)
        self.in_text_config = block is not None  # sizes left out fall to the text class (_TEXT_CONFIG_DEFAULTS)
        # a vision tower beside the language model: a language-model block, a vision_config, Phi-3-vision's
        # img_processor, or MiniCPM-V's vision_encoder (a timm model's name: the tower is named, its sizes are not
        # stated)
        self.multimodal = any(config.get(key) not in (None, {}) for key in (*TEXT_BLOCKS, "vision_config",
                                                                             "img_processor", "vision_encoder"))
        self.model_type = self.text.get("model_type") or config.get("model_type")
        if not isinstance(self.model_type, str | None):  # a list or object names no class (and keys no table)
            where = f"{block}." if self.text.get("model_type") and self.text is not config else ""
            raise ModelConfigError(f"{repo}: config.json field '{prefix}{where}model_type' is not a name "
                                   f"({self.model_type!r})")
        # InternVLChatConfig builds its language model by llm_config.architectures, the reader by its model_type: read
        # only where the class is the plain causal LM of that model_type (LLM_CLASSES); none stated, by model_type
        classes = self.text.get("architectures") if block == "llm_config" else None
        if classes is not None and (not isinstance(classes, list) or not classes or any(
                not isinstance(name, str) or LLM_CLASSES.get(name) != self.model_type for name in classes)):
            raise self.error("llm_config.architectures", f"names a class that is not the plain causal LM of its "
                                                         f"model_type InternVL builds ({classes!r:.80})")
        self.part = "shape"  # what the fields read now count towards (derive_with_keys)
        self.read: dict[str, dict] = {"shape": {"model_type": self.model_type}}
        self.defaulted: dict[str, object] = {}  # fields the config leaves out, read at the family's class default
        self.notes: list[str] = []  # what the row's notes must say about how a field was read
        self.assume = assume or {}  # the reading taken of each ambiguous field (derive_readings), by field
        self.meant: dict[str, tuple[str, int] | ModelConfigError | None] = {}  # by_name's finding, by size

    def get(self, key: str, default=None):
        """The field, else one of its other spellings (_ALIASES), else the family's default (_FAMILIES), else the one
        field whose name says the same size (_MEANINGS: where the reader would otherwise refuse it as missing or take
        it as unstated). Not so for a model_type transformers has a class for (CLASS_DEFAULTS): the class ignores a key
        it does not define and builds the size it leaves unstated at its default, so only a size `need` would refuse
        as missing is read by its name there."""
        for name in (key, *_ALIASES.get(key, ())):
            for where in (self.text, self.top, self._nested(name)):
                if where.get(name) is not None:
                    self.read.setdefault(self.part, {})[self._spelled(name)] = where[name]
                    return where[name]
        family = _FAMILIES.get(self.model_type, {}) | (_TEXT_CONFIG_DEFAULTS.get(self.model_type, {})
                                                        if self.in_text_config else {})
        if key in family:
            self.defaulted[key] = family[key]
            return family[key]
        meant = self.by_name(key) if self.model_type not in CLASS_DEFAULTS else None
        return default if meant is None else meant

    def by_name(self, key: str):
        """A size no spelling of the tables names, read from the one field of the text model (its top level, or a
        nested block _NESTED reads: DBRX's ffn_config) whose name says it (_MEANINGS), named in the row's notes; None
        where no field does, or where another of its spellings is stated (the expert counts' are tried one by one by
        _experts: read by that name). A field naming it with no count of it (a list, a string, a flag, a fraction, NaN,
        0 but for the routed experts), and fields naming it with different values, are refused, naming them. Never in a tower's block
        (prefix): only the language model's sizes are read so. The fields are searched once per size (a per-layer
        lookup of a size left out would otherwise search them on every layer)."""
        if key not in _MEANINGS or self.prefix or any(self.get(name) is not None for name in _spellings(key)[1:]):
            return None
        if key not in self.meant:
            try:
                self.meant[key] = self._named(key)
            except ModelConfigError as refusal:
                self.meant[key] = refusal
        found = self.meant[key]
        if isinstance(found, ModelConfigError):
            raise found
        if found is None:
            return None
        name, value = found
        self.read.setdefault(self.part, {})[name] = value
        return value

    def _named(self, key: str) -> tuple[str, int] | None:
        """(the field, its count) whose name says `key`, noted; None where none does; refused as by_name says."""
        what = _MEANINGS[key][0]
        least, most = config_range(key)
        least = 0 if key == _EXPERT_COUNTS[0] else max(least, 1)  # no routed experts: a dense model's count
        fields = [*self.text.items(), *((f"{block}.{name}", value) for block in _NESTED
                                        if isinstance(self.text.get(block), dict)
                                        for name, value in self.text[block].items())]
        # not its own spellings (the first expert-per-token spelling stated 0, for one: refused as missing by _experts)
        spellings = _spellings(key)
        said = {name: value for name, value in fields if value is not None
                and (last := name.rsplit(".", 1)[-1]) not in spellings and _says(last) == key}
        # the range before int(): NaN and the infinities are within none, and int() of them raises
        found = {name: int(value) for name, value in said.items()
                 if isinstance(value, int | float) and not isinstance(value, bool) and least <= value <= most
                 and value == int(value)}
        if len(found) < len(said):
            raise self.error(key, "is missing", {name: value for name, value in said.items() if name not in found})
        if len(set(found.values())) > 1:
            raise self.error(key, "is missing, and " + ", ".join(f"'{n}' ({v:,})" for n, v in found.items())
                             + f" could each be {what} by their names: the reader does not choose")
        if not found:
            return None
        name, value = next(iter(found.items()))
        self.notes.append(f"read '{name}' as {what} ({key}) by its name")
        return name, value

    def class_default(self, key: str):
        """A field the config leaves out, at the default of its model_type's transformers class (hf_class_defaults:
        what transformers and vLLM build the model with), named in the row's notes; None for a model_type transformers
        does not have (remote code) or a class without it."""
        tied, act = CLASS_DEFAULTS.get(self.model_type, (None, None))
        value = {"tie_word_embeddings": tied, "hidden_act": act}[key]
        if value is not None:
            self.defaulted[key] = value
        return value

    def _nested(self, name: str) -> dict:
        """The nested block (MPT's and DBRX's attn_config, ffn_config) that may hold `name`, else nothing. Only the
        fields _NESTED lists are read there: the blocks also carry PretrainedConfig's defaults (DBRX's attn_config
        says tie_word_embeddings true beside the model's false)."""
        block = next((b for b, names in _NESTED.items() if name in names), None)
        value = self.text.get(block) if block else None
        return value if isinstance(value, dict) else {}

    def _spelled(self, name: str) -> str:
        """A field as the config nests it: 'ffn_config.moe_top_k'."""
        block = next((b for b, names in _NESTED.items() if name in names), None)
        spelled = f"{block}.{name}" if block and name not in self.text and name not in self.top else name
        return self.prefix + spelled

    def need(self, key: str, default=None):
        """The field (get), else, for a size the reader cannot do without, the field whose name says it (by_name:
        in a config of a transformers class too, where get does not read it), else refused as missing."""
        value = self.get(key, default)
        if value is None:
            value = self.by_name(key)
        if value is None:
            raise self.error(key, "is missing")
        return value

    def number(self, key: str, default=None) -> int:
        """A size or count: a whole number from 0 to COUNT_MAX (a config sent with 1e308 layers describes no model,
        and a fractional or infinite one would reach the arithmetic below as a guess)."""
        value = self.need(key, default)
        if (not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= COUNT_MAX
                or value != int(value)):
            raise self.error(key, f"is not a count ({value!r})")
        least, most = config_range(self.prefix + key)  # plausibility (model_bounds.py), before any loop over it
        if not least <= value <= most:
            raise self.error(key, f"is {int(value):,}, outside the plausible [{least:,}, {most:,}]")
        return int(value)

    def quirk(self, name: str) -> bool:
        """Whether the family's code does what `name` says (_QUIRKS)."""
        return name in _QUIRKS.get(self.model_type, ())

    def has(self, *keys: str) -> bool:
        """Whether the config states any of these fields (under any spelling)."""
        return any(self.get(key) is not None for key in keys)

    def reading(self, key: str, options: tuple[str, ...], what: str) -> str:
        """The reading taken of a field more than one reading fits (READINGS); AmbiguousConfig, refusing as `what`
        says, until derive_readings assumes one."""
        if key in self.assume:
            return self.assume[key]
        refusal = self.error(key, what)
        raise AmbiguousConfig(str(refusal), key, options)

    def error(self, key: str, what: str, no_count: dict | None = None, top: bool = False) -> ModelConfigError:
        """The refusal of `key`, naming the fields whose names say it but hold no count of it (`no_count`:
        by_name's, OpenELM's per-layer lists); `top`: a field of the top-level config (a multimodal class's
        connector), named with the top level's model_type, not the language model's."""
        spelled = f" (or {', '.join(repr(a) for a in _ALIASES[key])})" if _ALIASES.get(key) and "missing" in what else ""
        said = [f"; '{name}' says it by its name but is no count of it ({value!r:.40})"
                for name, value in (no_count or {}).items()]
        model_type = self.top.get("model_type") if top else self.model_type
        return ModelConfigError(f"{self.repo}: config.json field '{key if top else self._spelled(key)}'{spelled} "
                                f"{what} (model_type {model_type!r})" + "".join(said))


# --- building blocks -------------------------------------------------------------------------------------------


_FFN_TYPES = {"mptmlp": 2, "mptglu": 3}  # projections of MPT's MLP kinds (llm-foundry's FFN_CLASS_REGISTRY)


def _mlp_params(c: _Config, hidden: int, width: int, act_key: str = "hidden_act") -> float:
    """A feed-forward block of `width`: gate, up and down for gated activations, up and down otherwise."""
    kind = c.get("ffn_type")  # MPT's ffn_config names its block: mptmlp (up, down) or mptglu (gate, up, down)
    if kind is not None and (not isinstance(kind, str) or kind not in _FFN_TYPES):
        raise c.error("ffn_type", f"names an MLP the reader does not know ({kind!r})")
    act = c.get(act_key) or c.get("hidden_activation") or (c.class_default("hidden_act") if act_key == "hidden_act"
                                                           else None)
    if isinstance(act, dict):  # DBRX's ffn_act_fn: {"name": "silu"}
        act = act.get("name")
    if kind is not None:  # the block's kind says its projections, whatever (or whether) the activation is stated
        return _FFN_TYPES[kind] * hidden * width
    if act in GATED_ACTS or (act in EITHER_ACTS and c.quirk("gated_gelu_mlp")):
        return 3 * hidden * width
    if act in UNGATED_ACTS or (act in EITHER_ACTS and c.quirk("ungated_mlp")):
        return 2 * hidden * width
    if act is None:  # remote code hard-wires it: gated SiLU (Llama's), or an ungated GELU (GPT-2's)
        gating = c.reading(act_key, ("gated", "ungated"), "is missing: the MLP's activation says whether it is gated")
    elif act in EITHER_ACTS:
        gating = c.reading(act_key, ("gated", "ungated"),
                           f"is {act!r}: GELU and ReLU MLPs are gated in some families (Gemma, ReLU-Llama) and not in "
                           "others (GPT-2, StarCoder 2, OPT), and the config does not say which")
    else:
        raise c.error(act_key, f"names an activation the reader does not know ({act!r})")
    return (3 if gating == "gated" else 2) * hidden * width


def _gqa(c: _Config, hidden: int, heads: int, kv_heads: int, head_dim: int, *, output_gate: bool = False,
         v_head_dim: int | None = None) -> _Layer:
    """Grouped-query (or multi-head, multi-query) attention: q, k, v, o projections and its K and V per token. V
    (and o_proj's input) may be narrower than Q and K (`v_head_dim`: MiMo-V2's 192-wide keys, 128-wide values)."""
    v_dim = head_dim if v_head_dim is None else v_head_dim
    q_width = heads * head_dim * (2 if output_gate else 1)  # a gated output doubles q_proj (Qwen3-Next, Qwen3.5)
    params = hidden * q_width + hidden * kv_heads * (head_dim + v_dim) + heads * v_dim * hidden
    if c.get("attention_bias", False):  # q, k and v biases (an output bias, where there is one, is left out)
        params += q_width + kv_heads * (head_dim + v_dim)
    return _Layer(attention="gqa", kv_heads=kv_heads, attention_params=params,
                  kv_bytes_per_token=kv_heads * (head_dim + v_dim) * KV_BYTES,
                  attn_flops_per_ctx_token=2 * heads * (head_dim + v_dim))


def _windowed(c: _Config, layer: _Layer, field: str) -> _Layer:
    """A sliding-window or chunked-local layer: its KV stops at the window (`field`), its attention does not grow."""
    window = c.number(field)
    stated = {key: c.text[key] for key in ("sliding_window", "sliding_window_size") if c.text.get(key) is not None}
    if field == "sliding_window" and len(set(map(repr, stated.values()))) > 1:  # which one a family's code reads varies
        raise c.error("sliding_window_size", f"is {stated['sliding_window_size']!r} beside sliding_window "
                                             f"{stated['sliding_window']!r}: two windows for the same layers")
    layer.mixer = f"{window}-token windowed attention"
    layer.window_tokens, layer.window_field = window, field
    layer.window_kv_bytes_per_token = layer.kv_bytes_per_token
    layer.kv_bytes_per_token = 0.0
    layer.attn_flops_per_ctx_token = 0.0
    return layer


# A config stating any of these has multi-head latent attention (DeepSeek V2/V3, Kimi K2, GLM 4.7 Flash), and must
# state them all; any of _DSA, a DeepSeek sparse-attention indexer beside it (DeepSeek V3.2, GLM 5).
_MLA = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank")
# v_head_dim alone is no latent: beside grouped-query attention it is the values' own width (MiMo-V2: _value_width)
_MLA_MARKERS = tuple(key for key in _MLA if key != "v_head_dim")
_DSA = ("index_n_heads", "index_head_dim", "index_topk")


def _mla(c: _Config, hidden: int, indexer: bool = True) -> _Layer:
    """Multi-head latent attention (DeepSeek-V2/V3 and kin): one latent of kv_lora_rank + rope per token; `indexer`
    False for a layer of a DSA model that reuses an earlier layer's top-k (_indexers)."""
    heads, kv_rank, rope = c.number("num_attention_heads"), c.number("kv_lora_rank"), c.number("qk_rope_head_dim")
    nope, v_dim = c.number("qk_nope_head_dim"), c.number("v_head_dim")
    q_rank = c.get("q_lora_rank") and c.number("q_lora_rank")  # none (or 0): the query is not compressed
    q = hidden * heads * (nope + rope) if not q_rank else hidden * q_rank + q_rank * heads * (nope + rope)
    params = q + hidden * (kv_rank + rope) + kv_rank * heads * (nope + v_dim) + heads * v_dim * hidden
    layer = _Layer(mixer="MLA", attention="mla", kv_heads=1, attention_params=params,
                   kv_bytes_per_token=(kv_rank + rope) * KV_BYTES,
                   attn_flops_per_ctx_token=2 * heads * (kv_rank + rope + kv_rank))
    if c.has(*_DSA) and not indexer:  # the top-k an earlier layer's indexer picked: no indexer, key or scoring here
        layer.attn_flops_per_ctx_token = 0.0  # its attention reads index_topk tokens, bounded like a window
        layer.mixer = (f"MLA over the top {c.number('index_topk')} tokens an earlier layer's DSA indexer picked "
                       "(indexer_types 'shared': bounded)")
    elif c.has(*_DSA):  # an indexer picks index_topk past tokens for the attention
        index_heads, index_dim = c.number("index_n_heads"), c.number("index_head_dim")
        if not q_rank:
            raise c.error("q_lora_rank", "is missing: the DSA indexer reads the query latent")
        layer.attention_params += q_rank * index_heads * index_dim + hidden * index_dim + hidden * index_heads
        layer.kv_bytes_per_token += index_dim * KV_BYTES  # the indexer's key of every past token
        layer.attn_flops_per_ctx_token = 2 * index_heads * index_dim  # top-k attention is bounded, like a window
        layer.mixer = (f"MLA with a DSA indexer (attention over the top {c.number('index_topk')} tokens, bounded: "
                       "attn_flops_per_ctx_token counts the indexer)")
    return layer


def _gated_deltanet(c: _Config, hidden: int) -> _Layer:
    """A Gated DeltaNet linear-attention layer (Qwen3-Next, Qwen3.5): a fixed recurrent state per stream."""
    key_heads, key_dim = c.number("linear_num_key_heads"), c.number("linear_key_head_dim")
    value_heads, value_dim = c.number("linear_num_value_heads"), c.number("linear_value_head_dim")
    kernel = c.number("linear_conv_kernel_dim")
    conv_width = 2 * key_heads * key_dim + value_heads * value_dim  # q, k and v pass the short convolution
    params = (hidden * (conv_width + value_heads * value_dim + 2 * value_heads)  # qkv, z, and the a and b gates
              + conv_width * kernel + value_heads * value_dim * hidden)
    state = value_heads * key_dim * value_dim + conv_width * (kernel - 1)
    return _Layer(mixer="Gated DeltaNet linear attention", attention_params=params, state_bytes=state * KV_BYTES)


# A Mamba-2 mixer's sizes under each spelling, by the field that tells them apart: (heads, head size, groups, state
# size, convolution kernel). Nemotron-H's; Bamba's and Granite 4.0-H's (BambaConfig, GraniteMoeHybridConfig:
# mamba_d_head "auto" is mamba_expand x hidden / heads); Mamba2Config's (Mamba-Codestral).
_MAMBA2_SPELLINGS = {
    "mamba_num_heads": ("mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel"),
    "mamba_n_heads": ("mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv"),
    "n_groups": ("num_heads", "head_dim", "n_groups", "state_size", "conv_kernel"),
}


def _mamba2(c: _Config, hidden: int) -> _Layer:
    """A Mamba-2 mixer: in and out projections, a short convolution and a fixed SSM state."""
    spelling = next((key for key in _MAMBA2_SPELLINGS if c.get(key) is not None), "mamba_num_heads")
    heads_key, head_dim_key, groups_key, state_key, kernel_key = _MAMBA2_SPELLINGS[spelling]
    heads = c.number(heads_key)
    if c.get(head_dim_key) == "auto":
        head_dim = c.number("mamba_expand") * hidden // max(heads, 1)
    else:
        head_dim = c.number(head_dim_key)
    groups, state_size, kernel = c.number(groups_key), c.number(state_key), c.number(kernel_key)
    inner = heads * head_dim
    conv_width = inner + 2 * groups * state_size  # x, B and C pass the convolution
    params = hidden * (inner + conv_width + heads) + conv_width * (kernel + 1) + inner * hidden
    state = heads * head_dim * state_size + conv_width * (kernel - 1)
    return _Layer(mixer="Mamba-2", attention_params=params, state_bytes=state * KV_BYTES)


def _mamba1(c: _Config, hidden: int) -> _Layer:
    """A Mamba (selective state-space) mixer: in and out projections, a short depthwise convolution, the x, dt
    projections and A, D; a fixed state of inner x d_state plus the convolution's last d_conv - 1 inputs. Jamba's
    fields (mamba_*: inner mamba_expand x hidden), else MambaConfig's and FalconMambaConfig's (inner
    intermediate_size, which the class sets to expand x hidden and a stated one overrides; state_size, conv_kernel,
    time_step_rank, use_conv_bias, use_bias)."""
    jamba = c.get("mamba_d_state") is not None
    if jamba:
        inner = c.number("mamba_expand") * hidden
    else:
        inner = c.number("intermediate_size") if c.has("intermediate_size") else c.number("expand") * hidden
    state_size = c.number("mamba_d_state" if jamba else "state_size")
    kernel = c.number("mamba_d_conv" if jamba else "conv_kernel")
    rank_key = "mamba_dt_rank" if jamba else "time_step_rank"
    dt_rank = -(-hidden // 16) if c.get(rank_key, "auto") == "auto" else c.number(rank_key)  # transformers' "auto"
    biased = 1 if c.get("mamba_proj_bias" if jamba else "use_bias", False) else 0
    conv_bias = c.get("mamba_conv_bias" if jamba else "use_conv_bias", True)
    params = (hidden * 2 * inner + biased * 2 * inner  # in_proj: x and the gate z
              + inner * kernel + (inner if conv_bias else 0)  # depthwise conv1d
              + inner * (dt_rank + 2 * state_size)  # x_proj: dt, B, C
              + dt_rank * inner + inner  # dt_proj and its bias
              + inner * state_size + inner  # A_log, D
              + inner * hidden + biased * hidden)  # out_proj
    state = inner * state_size + inner * (kernel - 1)
    return _Layer(mixer="Mamba", attention_params=params, state_bytes=state * KV_BYTES)


def _short_conv(c: _Config, hidden: int) -> _Layer:
    """LFM2's gated short-convolution mixer (Lfm2ShortConv): in_proj to B, C and x (3 x hidden), a depthwise
    convolution over conv_L_cache tokens, out_proj; biases by conv_bias. Its state: the convolution's window."""
    kernel = c.number("conv_L_cache")
    params = 3 * hidden * hidden + hidden * kernel + hidden * hidden
    if c.get("conv_bias", False):
        params += 3 * hidden + hidden + hidden
    return _Layer(mixer="short convolution", attention_params=params, state_bytes=hidden * kernel * KV_BYTES)


def _read_state_space(c: _Config) -> _Shape:
    """A state-space model without attention (MambaConfig, FalconMambaConfig, Mamba2Config): every layer one mixer
    and a norm, no MLP; Mamba-2 where the config groups its B and C (`n_groups`), Mamba otherwise."""
    beside = [key for key in ("num_attention_heads", "layer_types") if key in c.text]
    if beside:  # attention beside the mixers: a hybrid not read
        raise c.error("state_size", f"is set beside {beside[0]}: a hybrid of attention and state-space layers the "
                                    "reader does not read")
    hidden, layers = c.number("hidden_size"), c.number("num_hidden_layers")
    mixer = _mamba2 if c.get("n_groups") is not None else _mamba1
    out = [mixer(c, hidden) for _ in range(layers)]
    embedding, head = _embeddings(c, hidden)
    return _Shape(out, embedding, head)


# The spellings of the expert counts, tried in order (the first stated is read; the others may repeat it, as
# gpt-oss's experts_per_token beside num_experts_per_tok).
_EXPERT_COUNTS = ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts", "n_experts",
                  "num_moe_experts", "moe_num_primary_experts")  # the last SmallThinker's (SmallThinkerMoeBlock)
_EXPERTS_PER_TOKEN = ("num_experts_per_tok", "experts_per_token", "moe_k", "top_k_experts", "moe_top_k", "moe_topk",
                      "num_experts_per_token", "num_selected_experts", "moe_num_active_primary_experts")
_SHARED_EXPERTS = ("n_shared_experts", "moe_num_shared_experts", "num_shared_experts")


def _experts(c: _Config) -> tuple[int, int]:
    """(routed experts, experts per token) under the names the families use; (0, 0) for a dense model, and for one
    whose `use_moe` is false: MiniMind's config keeps its MoE variant's expert fields beside it (MiniMindBlock builds
    its FeedForward unless use_moe)."""
    if c.get("use_moe") is False:
        c.notes.append("use_moe false: no layer routes to experts (the expert fields describe the MoE variant)")
        return 0, 0
    count = next((k for k in _EXPERT_COUNTS if c.get(k)), None)
    if count is None:
        return 0, 0
    per_token = next((k for k in _EXPERTS_PER_TOKEN if c.get(k)), None)
    # by its name where no spelling states it (a class's config too: without it the experts cannot be counted)
    if per_token is None and not c.by_name(_EXPERTS_PER_TOKEN[0]):
        raise c.error("num_experts_per_tok", "is missing for a mixture of experts")
    # by the name found, so a refusal names the field the config has
    return c.number(count), c.number(per_token or _EXPERTS_PER_TOKEN[0])


def _embeddings(c: _Config, hidden: int) -> tuple[float, float]:
    """(input embedding, output head) parameters; the head is free when tied to the embedding."""
    vocab = c.number("vocab_size")
    if c.get("embedding_size") is not None:  # OLMo's (LLaDA's, Molmo's) embedding and head rows, padded up from the
        rows = c.number("embedding_size")  # vocabulary (wte and ff_out are embedding_size x d_model)
        if rows < vocab:  # not OLMo's padding (ALBERT's factorized embedding_size is smaller than its hidden size)
            raise c.error("embedding_size", f"is {rows:,}, fewer rows than the vocabulary's {vocab:,}")
        vocab = rows
    tied = c.get("tie_word_embeddings")
    if c.get("share_embedding") is True:  # MobileLLM's remote code assigns the head the embedding's weight by this
        if tied is False:  # tie_word_embeddings false only stops transformers' own tying, not that assignment
            c.notes.append("output head shares the embedding by share_embedding, whatever tie_word_embeddings says")
        tied = True
    if tied is None:  # left to the class: PretrainedConfig ties by default, yet most families' classes untie
        tied = c.class_default("tie_word_embeddings")
    # Remote code (no transformers class): both readings, for the weights to choose. Not "absent means True": transformers
    # 4's PretrainedConfig.to_diff_dict writes a key unless its value equals both PretrainedConfig's default (True here)
    # and the class's (configuration_utils.py), so a file save_pretrained wrote omits it only when True; but a
    # transformers_version key does not prove save_pretrained wrote the file: DeepSeek-V2-Lite-Chat's (4.33.1) omits it
    # while DeepseekV2Config defaults to False (transformers' port of the remote class: hf_class_defaults) and its card's
    # 2.4B active count is the untied reading's (2.45B; tied, 2.24B). In
    # transformers 5 tie_word_embeddings is no PreTrainedConfig field at all (written whenever the class has it).
    if tied is None:
        tied = c.reading("tie_word_embeddings", ("tied", "untied"),
                         "is missing: whether the output head shares the embedding is the family's class default, and "
                         "transformers has no class for this model_type") == "tied"
    width = c.number("word_embed_proj_dim", hidden)  # OPT: embeddings this wide, projected in and out (OPTDecoder)
    projections = 2 * width * hidden if width != hidden else 0
    return vocab * width + projections, 0 if tied else vocab * width


# Other spellings of a field, tried in order after its own name (GPT-2/GPT-J's n_embd, n_layer, n_head; ChatGLM's
# num_layers, ffn_hidden_size, kv_channels, padded_vocab_size, seq_length; MPT's and DBRX's d_model, n_layers,
# max_seq_len and nested kv_n_heads, ffn_act_fn; OPT's and XGLM's ffn_dim; GPT-Neo's num_heads and window_size;
# XGLM's attention_heads; Falcon's n_head_kv and activation; OLMo's own config vocabulary, which LLaDA's remote code
# keeps: activation_type, weight_tying, include_qkv_bias; Meta's LLaMA params.json dim, which MiniMind keeps): the same
# quantity.
_ALIASES = {
    "hidden_size": ("d_model", "n_embd", "dim"),
    "num_hidden_layers": ("num_layers", "n_layer", "n_layers"),
    "num_attention_heads": ("n_head", "n_heads", "num_heads", "attention_heads"),
    "num_key_value_heads": ("num_kv_heads", "n_kv_heads", "n_head_kv", "kv_n_heads"),
    "intermediate_size": ("ffn_hidden_size", "n_inner", "ffn_dim", "block_ff_dim"),
    "vocab_size": ("padded_vocab_size",),
    # vLLM's keys for the model's length (_get_and_verify_max_len's possible_keys)
    "max_position_embeddings": ("seq_length", "n_positions", "max_seq_len", "model_max_length", "max_sequence_length",
                                "max_seq_length", "seq_len"),
    "head_dim": ("kv_channels", "attention_head_dim"),  # Megatron-LM's and ChatGLM's; HunYuan's
    "hidden_act": ("activation_function", "activation", "ffn_act_fn", "activation_type"),
    # GPT-Neo's local attention window; SmallThinker's and MiMo-V2's window of the layers their per-layer lists slide
    "sliding_window": ("window_size", "sliding_window_size"),
    "attention_bias": ("add_qkv_bias", "use_qkv_bias", "qkv_bias", "include_qkv_bias"),
    "tie_word_embeddings": ("weight_tying",),
    "rope_scaling": ("rope_parameters",),  # transformers 5's name
    # an expert's width: Megatron-LM's moe_ffn_hidden_size (--moe-ffn-hidden-size), which SmallThinker keeps
    "moe_intermediate_size": ("moe_ffn_hidden_size",),
}

# The sizes read by the meaning of a field's name where no spelling above is stated (_Config.by_name), so that a
# spelling met for the first time is read, not refused as missing (ffn_dim, dim, n_layers, num_heads, n_head_kv,
# max_seq_len, kv_channels, moe_ffn_hidden_size, moe_num_primary_experts, num_selected_experts were each added to the
# tables by hand after a config stated it). A name is split on "_"; it says the size when it holds a word of each group
# and no word outside the groups and the words beside them; any other word (vision, audio, expert or moe for a dense
# width, shared, swa, window, per, layer, lora, rope, head for a count that is not of heads, ...) says something else.
# The word pairs excluded say another size in a vocabulary some configs keep: Meta's params.json and the
# LLMs-from-scratch configs name the MLP's width hidden_dim beside the hidden size's dim or emb_dim; Llama 4's
# intermediate_size_mlp is its dense layers' width beside intermediate_size, the experts'. The words are the
# spellings of transformers' and vLLM's configs, Megatron-LM's arguments (ffn_hidden_size, kv_channels,
# moe_router_topk; num_query_groups is not read so: it counts only under group_query_attention), nanoGPT-style and
# from-scratch configs (n_kv_head, emb_dim, context_length). No "groups" says KV heads: the from-scratch configs'
# num_kv_groups counts them, transformers' num_key_value_groups is the query heads per KV head. The head size needs a
# head word: a bare "channels" is an image's or a tower's. Only a plausible count is read (config_range, at least 1;
# 0 routed experts, a dense model's, too); a field naming the size with any other value (a flag, a list, a string, a
# ratio, NaN) is refused naming it, as are fields naming it with different values. In a config of a model_type
# transformers has a class for (CLASS_DEFAULTS), only a size the reader would refuse as missing is read so: the class
# ignores a key it does not define, so a size it leaves unstated (KV heads, head size, context, experts, an expert's
# width where the MLP's stands for it) is built at its default whatever another name says.
# key: (what the notes call it, groups of words the name holds one of each, the words it may hold beside them,
# word pairs that say another size)
_COUNT_WORDS = frozenset({"num", "n", "number", "total", "count"})
_MEANINGS = {
    "hidden_size": ("the hidden size", (("hidden", "model", "embd", "embed", "emb", "dim"),),
                    frozenset({"d", "n", "width"}), (("hidden", "dim"),)),
    "num_hidden_layers": ("the layer count", (("layers", "layer"),),
                          _COUNT_WORDS | {"hidden", "decoder", "transformer"}, ()),
    "num_attention_heads": ("the query heads", (("heads", "head"),),
                            _COUNT_WORDS | {"attention", "attn", "query", "q"}, ()),
    "num_key_value_heads": ("the KV heads", (("kv", "key"), ("heads", "head")),
                            _COUNT_WORDS | {"value", "attention", "attn"}, ()),
    "intermediate_size": ("the MLP width", (("ffn", "ff", "mlp", "intermediate", "inter", "inner", "feedforward"),),
                          frozenset({"size", "dim", "d", "hidden", "n", "width", "block"}), (("intermediate", "mlp"),)),
    "moe_intermediate_size": ("an expert's width", (("moe", "expert", "experts"),
                                                    ("ffn", "ff", "mlp", "intermediate", "inter", "inner", "hidden",
                                                     "dim", "size", "width")), frozenset({"d"}), ()),
    "vocab_size": ("the vocabulary", (("vocab", "vocabulary"),), _COUNT_WORDS | {"size", "padded"}, ()),
    "max_position_embeddings": ("the context length", (("position", "positions", "seq", "sequence", "context",
                                                         "ctx"),),
                                _COUNT_WORDS | {"max", "len", "length", "embeddings", "size"}, ()),
    "head_dim": ("the head size", (("head",), ("dim", "size", "channels", "width", "d")),
                 frozenset({"attention", "attn", "kv"}), ()),
    _EXPERT_COUNTS[0]: ("the routed experts", (("experts", "expert"),),
                        _COUNT_WORDS | {"routed", "local", "moe", "primary"}, ()),
    _EXPERTS_PER_TOKEN[0]: ("the experts per token", (("experts", "expert", "moe", "router"),
                                                      ("per", "tok", "token", "top", "k", "topk", "active", "activated",
                                                       "selected")), _COUNT_WORDS | {"primary", "routed"}, ()),
}


@functools.cache  # a pure function of the name, asked of every field of every config read
def _says(name: str) -> str | None:
    """The size a field's name says by its words (_MEANINGS); None for a name saying none, or more than one."""
    tokens = set(name.lower().split("_"))
    said = [key for key, (_, groups, words, excluded) in _MEANINGS.items()
            if tokens <= words.union(*groups) and all(tokens & set(group) for group in groups)
            and not any(tokens >= set(pair) for pair in excluded)]
    return said[0] if len(said) == 1 else None


def _spellings(key: str) -> tuple[str, ...]:
    """Every name the tables read `key` by: its own, its aliases, the expert counts' spellings."""
    listed = next((names for names in (_EXPERT_COUNTS, _EXPERTS_PER_TOKEN) if names[0] == key), (key,))
    return (*listed, *_ALIASES.get(key, ()))


# Fields read inside a nested block (MPT, DBRX): the MLP's width, activation and kind, experts, KV heads, attention kind.
_NESTED = {"attn_config": ("kv_n_heads", "attn_type"),
           "ffn_config": ("ffn_hidden_size", "ffn_act_fn", "ffn_type", "moe_num_experts", "moe_top_k")}

# The families' defaults: the fields a config of that model_type may leave to its class (read at these values, and
# named in the row's notes). Every other model_type (and a config without one) is read by its fields alone.
_FAMILIES = {
    # transformers' Gemma3TextConfig: google/gemma-3-27b-it's config.json states neither its vocabulary, its context,
    # its activation nor which layers slide, and transformers (as vLLM, which loads the config through it) fills them
    "gemma3_text": {"vocab_size": 262_208, "max_position_embeddings": 131_072,
                    "hidden_activation": "gelu_pytorch_tanh", "sliding_window_pattern": 6},
    "gemma4_text": {"tie_word_embeddings": True},  # Gemma4TextConfig (after transformers 4.57.1, hf_class_defaults)
    # Gemma2Config: every other layer slides (layer_types' default: the even layers)
    "gemma2": {"sliding_window_pattern": 2},
    # Qwen (v1, remote code QWenLMHeadModel): a SwiGLU MLP whose w1 and w2 are intermediate_size / 2 wide each, and
    # a biased c_attn (q, k and v); no activation field
    "qwen": {"hidden_act": "silu", "attention_bias": True},
    # ChatGLM2/3 (remote code ChatGLMModel): SwiGLU (dense_h_to_4h is 2 x ffn_hidden_size wide); no activation
    # field; multi_query_group_num KV heads when multi_query_attention
    "chatglm": {"hidden_act": "swiglu"},
    # Laguna (poolside's remote code; transformers' LagunaConfig, hidden_act: str = "silu"): the released configs state
    # no activation; LagunaMLP is gate_proj, up_proj, down_proj around ACT2FN[hidden_act], and SGLang's laguna.py
    # refuses any activation but "silu" (gated SiLU)
    "laguna": {"hidden_act": "silu"},
    # LFM2 (Lfm2Config): no activation field; Lfm2MLP is w1, w3, w2 around F.silu (gated)
    "lfm2": {"hidden_act": "silu"},
    # Baichuan (remote code BaichuanConfig, vendored in vLLM's transformers_utils/configs/baichuan*.py): hidden_act
    # "silu" (its MLP gate_proj, up_proj, down_proj), tie_word_embeddings False
    "baichuan": {"hidden_act": "silu", "tie_word_embeddings": False},
    # BloomConfig: no activation field (BloomGelu); no length at all (ALiBi, no position table), read at vLLM's 2048
    "bloom": {"hidden_act": "gelu"},
    # FalconConfig: activation "gelu"; the first Falcon repos' remote-code RWConfig ("RefinedWebModel", "RefinedWeb",
    # which vLLM reads as Falcon) states neither it nor tie_word_embeddings (RWConfig's True: RWForCausalLM ties)
    "falcon": {"hidden_act": "gelu"},
    **dict.fromkeys(("RefinedWebModel", "RefinedWeb"), {"hidden_act": "gelu", "tie_word_embeddings": True}),
    # MPTConfig (remote code, and transformers' MptConfig): expansion_ratio 4; its MLP's activation is GELU unless
    # ffn_config says otherwise (llm-foundry's MPTMLP, transformers' MptMLP, vLLM's mpt.py); attn_config's attn_type
    # defaults to multihead_attention (llm-foundry's attn_config_defaults), whatever kv_n_heads (only grouped-query
    # attention reads it) says
    "mpt": {"hidden_act": "gelu", "expansion_ratio": 4, "attn_type": "multihead_attention"},
    # Molmo (AllenAI's remote code config_molmo.py / modeling_molmo.py): no activation field; its MLP is SwiGLU
    # (MolmoSequentialBlock: ff_proj to intermediate_size, SwiGLU halving it, ff_out from intermediate_size / 2)
    "molmo": {"hidden_act": "swiglu"},
    # TeleChat (China Telecom's remote code): TelechatMLP is gate_proj, up_proj (ffn_hidden_size) and down_proj
    # around F.silu whatever hidden_act says (TelechatConfig's default "fastgelu" reaches no layer), and
    # TelechatConfig takes no tie_word_embeddings (PretrainedConfig's True: TeleChat-7B's weight index holds
    # 14,400,036,864 bytes, its tied count at 2 bytes). TeleChat-52B's own code (TELECHATMLP) reads the
    # activation_function its config states, and TeleChat2's configs state tie_word_embeddings false: read by them.
    "telechat": {"hidden_act": "silu", "tie_word_embeddings": True},
    # CodeShell (remote code, model_type "kclgpt"): CodeShellForCausalLM's lm_head is tied to the input embedding
    # (_tied_weights_keys; its config states no tie_word_embeddings, PretrainedConfig's True)
    "kclgpt": {"tie_word_embeddings": True},
    # MiniMind (remote code model.py, LLaMA's params.json vocabulary): FeedForward is w1, w3 and w2 around F.silu, and
    # MiniMindLM assigns the output head's weight to the embedding (tok_embeddings.weight = output.weight); its config
    # states neither
    "minimind": {"hidden_act": "silu", "tie_word_embeddings": True},
    # SmallThinker (PowerInfer's remote code modeling_smallthinker.py): no activation field; SmallThinkerExpert is
    # up(x) * F.relu(gate(x)) then down (gated: _QUIRKS)
    "smallthinker": {"hidden_act": "relu"},
}
# A multimodal config's text_config may leave sizes out: its class builds the text model's config as
# CONFIG_MAPPING[text_config["model_type"]](**text_config) (LlavaConfig.__init__, which also defaults the model_type to
# "llama") and saves only what differs from that class's defaults, so llava-hf/llava-1.5-7b-hf's text_config states
# its vocabulary and context and nothing else. Those defaults, read only inside a text_config (a top-level config of
# these families states its sizes):
_TEXT_CONFIG_DEFAULTS = {
    # transformers' LlamaConfig.__init__: vocab_size 32000, hidden_size 4096, intermediate_size 11008,
    # num_hidden_layers 32, num_attention_heads 32, num_key_value_heads None (= num_attention_heads), hidden_act
    # "silu", max_position_embeddings 2048, tie_word_embeddings False, attention_bias False
    "llama": {"vocab_size": 32_000, "hidden_size": 4096, "intermediate_size": 11_008, "num_hidden_layers": 32,
              "num_attention_heads": 32, "hidden_act": "silu", "max_position_embeddings": 2048,
              "tie_word_embeddings": False},
    # transformers' Gemma3TextConfig.__init__ (configuration_gemma3.py): num_attention_heads 8, num_key_value_heads 4,
    # head_dim 256 (vocabulary, context, activation and pattern: _FAMILIES). google/gemma-3-4b-it's text_config states
    # its widths and depth and leaves these out; its widths and depth (the class's 2,304, 9,216, 26 are no released
    # model's) are read only as stated
    "gemma3_text": {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256},
}
# What a family's code does that no field says.
_QUIRKS = {
    # GemmaMLP (and Gemma 2, 3, 4's): gate, up and down projections around a GELU
    **dict.fromkeys(("gemma", "gemma2", "gemma3_text", "gemma4_text"), {"gated_gelu_mlp"}),
    "qwen": {"mlp_width_is_both_halves"},  # w1 and w2 are intermediate_size / 2 wide each
    "smallthinker": {"gated_gelu_mlp"},  # SmallThinkerExpert: gate, up and down around a ReLU
    # Molmo's ff_proj is intermediate_size wide, the gate and up halves together (Molmo-7B-D: 37,888, Qwen2-7B's
    # 18,944 twice); its vision backbone (a CLIP ViT and connector) is built by its code, not stated in the config
    "molmo": {"mlp_width_is_both_halves", "vision_tower_in_code"},
    "llama4_text": {"one_shared_expert"},  # every token also goes to one shared expert of the experts' width
    # Up and down projections around a GELU, no gate: GPT2MLP (c_fc, c_proj), GPTJMLP (fc_in, fc_out), GPTBigCodeMLP
    # (c_fc, c_proj), Microsoft's phi-msft MLP (fc1, fc2); and n_inner null is 4 x hidden wide (GPT2Block, GPTJBlock,
    # GPTBigCodeBlock, phi-msft's MLP, CodeGenBlock (CodeGenMLP fc_in, fc_out):
    # `n_inner if n_inner is not None else 4 * n_embd`)
    **dict.fromkeys(("gpt2", "gptj", "gpt_bigcode", "phi-msft", "codegen"), {"ungated_mlp", "mlp_width_4x_hidden"}),
    "phi": {"ungated_mlp"},  # transformers' PhiMLP (Phi-1.5, Phi-2 converted): fc1, fc2 around gelu_new
    # CodeShellMLP (remote code, model_type "kclgpt"): c_fc, c_proj around its activation_function, as GPT2MLP;
    # ruGPT-3 XL converted (remote code "rugpt3xl"): up_proj, down_proj around gelu_new (Megatron-LM's
    # dense_h_to_4h, dense_4h_to_h)
    # MOSS (remote code modeling_moss.py, "Copied from transformers.models.gptj.modeling_gptj.GPTJMLP"): MossMLP is
    # fc_in, fc_out around its activation_function
    **dict.fromkeys(("kclgpt", "rugpt3xl", "moss"), {"ungated_mlp"}),
    "gpt_neox": {"ungated_mlp"},  # GPTNeoXMLP: dense_h_to_4h, dense_4h_to_h
    # OPTDecoderLayer and XGLMDecoderLayer: fc1, fc2 around the activation (ReLU, GELU); MptMLP: up_proj, down_proj
    **dict.fromkeys(("opt", "xglm", "mpt"), {"ungated_mlp"}),
    # Up and down around a GELU, and a width of 4 x hidden when the config gives none: GPTNeoBlock (`intermediate_size
    # if not None else 4 * hidden_size`), FalconConfig (`ffn_hidden_size` None: `hidden_size * 4`), BloomMLP
    # (dense_h_to_4h is 4 x hidden_size, whatever the config says)
    **dict.fromkeys(("gpt_neo", "falcon", "RefinedWebModel", "RefinedWeb", "bloom"), {"ungated_mlp", "mlp_width_4x_hidden"}),
    # Starcoder2MLP: c_fc, c_proj; Starcoder2Attention slides over sliding_window on every layer
    "starcoder2": {"ungated_mlp", "every_layer_slides"},
    # A sliding_window with no layer_types slides on every layer: MistralAttention and MixtralAttention (transformers'
    # modeling_mistral.py, modeling_mixtral.py) and Phi3Attention (modeling_phi3.py) pass config.sliding_window to the
    # attention of every layer, as Microsoft's remote-code Phi3V (Phi-3.5-vision's modeling_phi3_v.py, its Phi 3
    # attention) does; as do JambaAttention, MiniMaxAttention, PhimoeAttention and Phi4MultimodalAttention (transformers
    # 4.57: `sliding_window=getattr(self.config, "sliding_window", None)` on every attention layer)
    **dict.fromkeys(("mistral", "mixtral", "phi3", "phi3_v", "jamba", "minimax", "phimoe", "phi4_multimodal"),
                    {"every_layer_slides"}),
}


def _layer_types(c: _Config, layers: int) -> list[str]:
    """Per layer: full, sliding, chunked or linear attention, from `layer_types` or the family's rule."""
    types = c.get("layer_types")
    listed, windows = _window_list(c, layers)
    if types is None and listed:
        return windows
    if types is None and c.get("attn_type_list") is not None:  # MiniMax: 1 softmax attention, 0 lightning attention
        kinds = c.get("attn_type_list")
        if not isinstance(kinds, list) or len(kinds) != layers or set(kinds) - {1}:
            raise c.error("attn_type_list", "names lightning-attention layers (0), which the reader does not read, or "
                                            f"is not one kind per layer ({repr(kinds)[:60]})")
        return ["full_attention"] * layers
    if types is None:
        if c.get("attn_layer_period") is not None:  # Jamba: one attention layer in a period, Mamba the others
            period, offset = _every(c, "attn_layer_period"), c.number("attn_layer_offset")
            return ["full_attention" if i % period == offset else "mamba" for i in range(layers)]
        if c.get("full_attn_idxs") is not None:  # LFM2: attention on the layers listed, short convolutions on the others
            listed = _layer_list(c, "full_attn_idxs", layers)
            return ["full_attention" if i in listed else "conv" for i in range(layers)]
        if c.get("attn_layer_indices") is not None:  # Bamba: attention on the layers listed, Mamba-2 on the others
            if not c.has("mamba_n_heads", "mamba_d_state"):
                raise c.error("attn_layer_indices", "lists attention layers among Mamba layers, but no mamba_* field "
                                                    "sizes them")
            listed = _layer_list(c, "attn_layer_indices", layers)
            return ["full_attention" if i in listed else "mamba" for i in range(layers)]
        if c.get("full_attention_interval"):  # Qwen3-Next: every n-th layer attends fully, the rest are linear
            step = c.number("full_attention_interval")
            return ["full_attention" if (i + 1) % step == 0 else "linear_attention" for i in range(layers)]
        if c.get("attention_chunk_size"):  # Llama 4: chunked-local attention on the RoPE layers
            no_rope = c.get("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(layers)]  # transformers' rule
            if not isinstance(no_rope, list) or len(no_rope) != layers or not all(f in (0, 1) for f in no_rope):
                raise c.error("no_rope_layers", f"is not 0 or 1 per layer ({repr(no_rope)[:60]})")
            return ["chunked_attention" if uses_rope else "full_attention" for uses_rope in no_rope]
        if c.get("attention_layers") is not None or c.get("attention_types") is not None:
            return _global_local(c, layers)
        pattern = c.get("sliding_window_pattern")
        if isinstance(pattern, str) and pattern and set(pattern) <= {"L", "G"}:  # EXAONE 4: "LLLG", L slides
            return ["sliding_attention" if pattern[i % len(pattern)] == "L" else "full_attention" for i in range(layers)]
        if pattern is not None:  # Gemma 2 and 3: every n-th layer global, the others slide
            step = _every(c, "sliding_window_pattern")
            return ["full_attention" if (i + 1) % step == 0 else "sliding_attention" for i in range(layers)]
        if c.get("sliding_window") is not None and c.quirk("every_layer_slides"):
            return ["sliding_attention"] * layers
        if c.get("sliding_window") is not None and c.get("use_sliding_window") and c.has("max_window_layers"):
            # Qwen2Config (and Qwen2-MoE's, Qwen3's): with use_sliding_window on, the layers from max_window_layers
            # on slide, the ones below attend fully (its layer_types default)
            first = c.number("max_window_layers")
            return ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]
        if c.get("sliding_window") is not None and c.get("use_sliding_window") is not False:
            if c.number("sliding_window") >= _context(c):  # whichever layers slide, they see the whole context
                c.notes.append(f"sliding_window {c.get('sliding_window')} is no shorter than the served context: read "
                               "as full attention")
                return ["full_attention"] * layers
            raise c.error("sliding_window", "is set but no layer_types say which layers slide")
        return ["full_attention"] * layers
    if not isinstance(types, list):
        raise c.error("layer_types", f"is not a list of layer types ({repr(types)[:60]})")
    if len(types) != layers:
        raise c.error("layer_types", f"has {len(types)} entries for {layers} layers")
    unknown = sorted({kind if isinstance(kind, str) else repr(kind)[:20] for kind in types} - set(KNOWN_LAYER_TYPES))
    if unknown:
        raise c.error("layer_types", f"names a layer type the reader does not know ({', '.join(unknown)})")
    types = ["full_attention" if kind == "attention" else kind for kind in types]
    if listed and windows != types:  # which one a family's code reads varies: never one of them silently
        first = next(i for i, (a, b) in enumerate(zip(windows, types, strict=True)) if a != b)
        raise c.error(listed, f"says {windows[first]} for layer {first} where layer_types says {types[first]}: two "
                              "layouts of the same layers")
    return types


def _window_list(c: _Config, layers: int) -> tuple[str | None, list[str]]:
    """(the field, the layers' kinds) of a 0/1 list per layer, 1 sliding window, 0 full attention: MiMo-V2's
    hybrid_layer_pattern (MiMoV2FlashDecoderLayer), SmallThinker's sliding_window_layout (SmallThinkerAttention);
    (None, []) where the config states neither."""
    listed = next((key for key in ("hybrid_layer_pattern", "sliding_window_layout") if c.get(key) is not None), None)
    if not listed:
        return None, []
    pattern = c.get(listed)
    if (not isinstance(pattern, list) or len(pattern) != layers
            or not all(type(k) is int and k in (0, 1) for k in pattern)):
        raise c.error(listed, f"is not 0 (full) or 1 (sliding window) per layer ({repr(pattern)[:60]})")
    return listed, ["sliding_attention" if kind == 1 else "full_attention" for kind in pattern]


def _global_local(c: _Config, layers: int) -> list[str]:
    """GPT-Neo's per-layer kinds: `attention_layers` ("global", "local"), else `attention_types` ([[kinds, times]],
    which GPTNeoConfig expands into attention_layers); local layers slide over `window_size`."""
    named = c.get("attention_layers")
    key = "attention_layers" if named is not None else "attention_types"
    try:
        if named is None:  # counted first: a hostile [[kinds, 10**12]] is never expanded
            groups = [(list(kinds), times) for kinds, times in c.get("attention_types")]
            if not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t <= layers for _, t in groups):
                raise TypeError
            count = sum(len(kinds) * times for kinds, times in groups)
            named = [kind for kinds, times in groups for _ in range(times) for kind in kinds] if count == layers else []
        kinds = [{"global": "full_attention", "local": "sliding_attention"}[kind] for kind in named]
    except (KeyError, TypeError, ValueError):
        raise c.error(key, f"is not a list of global and local layers ({repr(c.get(key))[:80]})") from None
    if len(kinds) != layers:
        raise c.error(key, f"has {count if key == 'attention_types' else len(kinds)} entries for {layers} layers")
    return kinds


# The sizes of sliding-window layers, where a config gives them apart from the full-attention layers' (MiMo-V2:
# MiMoV2FlashDecoderLayer builds its windowed layers from the swa_* fields, the others from the plain ones)
_SWA_SIZES = ("swa_num_attention_heads", "swa_num_key_value_heads", "swa_head_dim", "swa_v_head_dim")


def _attention(c: _Config, hidden: int, kind: str, *, output_gate: bool = False,
               sizes: tuple[int, int | None] | None = None) -> _Layer:
    """The attention of one layer of a GQA family, windowed where its type says so; `sizes`, this layer's query and
    KV heads where the config gives them per layer (_heads_per_layer; None KV heads: the model's)."""
    if kind == "sliding_attention" and c.has(*_SWA_SIZES):
        return _own_sized_window(c, hidden)
    heads = c.number("num_attention_heads") if sizes is None else sizes[0]
    kv_heads = _kv_heads(c, heads) if sizes is None or sizes[1] is None else sizes[1]
    head_dim = c.number("head_dim", hidden // heads)
    if kind == "linear_attention":
        return _gated_deltanet(c, hidden)
    if kind == "conv":
        return _short_conv(c, hidden)
    if kind == "mamba":  # Mamba-2 where a Mamba-2 spelling says so (Bamba, Granite 4.0-H), else Mamba (Jamba)
        return _mamba2(c, hidden) if c.has(*_MAMBA2_SPELLINGS) else _mamba1(c, hidden)
    v_head_dim = _value_width(c, head_dim)
    layer = _gqa(c, hidden, heads, kv_heads, head_dim, output_gate=output_gate, v_head_dim=v_head_dim)
    layer.attention_params += hidden * heads * _gate_width(c, head_dim)
    if c.get("add_full_attention_sink_bias", False):  # a learned sink logit per head (MiMoV2Attention)
        layer.attention_params += heads
    if kind == "sliding_attention" and c.number("sliding_window") >= _context(c):
        note = (f"sliding_window {c.get('sliding_window')} is no shorter than the served context: its layers attend "
                "to the whole context, read as full attention")
        if note not in c.notes:  # Phi-3.5-vision's 262,144 beside 131,072 positions
            c.notes.append(note)
        return layer
    if kind == "sliding_attention":
        return _windowed(c, layer, "sliding_window")
    if kind == "chunked_attention":
        return _windowed(c, layer, "attention_chunk_size")
    return layer


# Laguna's `gating`: a g_proj from the hidden state to one gate per head, or one per element of each head. SGLang's
# laguna.py builds one per head for `true` and poolside's 2025 LagunaConfig docstring one per element: `true` is refused
_GATING = {"per-head": lambda head_dim: 1, "per-element": lambda head_dim: head_dim}


def _gate_width(c: _Config, head_dim: int) -> int:
    """The gates per query head of an attention output gate stated by name (`gating`, per layer in `gating_types`,
    which must agree with it), 0 where none is stated."""
    gating = c.get("gating")
    if gating is None or gating is False:
        return 0
    if not isinstance(gating, str) or gating not in _GATING:
        raise c.error("gating", f"names an attention output gate the reader does not read ({gating!r}: "
                                "'per-head' or 'per-element'; true is read both ways by the code found)")
    kinds = c.get("gating_types")
    if kinds is not None and (not isinstance(kinds, list) or {k.replace("_", "-") if isinstance(k, str) else k
                                                                for k in kinds} != {gating}):
        raise c.error("gating_types", f"gives per-layer gates other than gating's {gating!r}")
    return _GATING[gating](head_dim)


def _value_width(c: _Config, head_dim: int) -> int | None:
    """A grouped-query layer's value width where the config gives one of its own, else None (head_dim's). No
    transformers GQA class reads v_head_dim (LlamaAttention builds V head_dim wide), so one differing from head_dim
    is read only in a config that also states the windowed layers' own value width (swa_v_head_dim: MiMo-V2, whose
    MiMoV2Attention builds V of each kind of layer apart); elsewhere it would narrow V and o_proj silently: refused."""
    if not c.has("v_head_dim"):
        return None
    width = c.number("v_head_dim")
    if width != head_dim and not c.has("swa_v_head_dim"):
        raise c.error("v_head_dim", f"is {width} beside head_dim {head_dim} in grouped-query attention: a value width "
                                    "of its own is read only beside swa_v_head_dim (MiMo-V2's values)")
    return width


def _own_sized_window(c: _Config, hidden: int) -> _Layer:
    """A sliding-window layer sized by the swa_* fields (each stated: a missing one is refused, never taken from the
    full-attention layers), over its sliding_window (MiMo-V2's code reads sliding_window_size: _windowed holds the two equal), with a
    learned sink logit per head where add_swa_attention_sink_bias says so."""
    heads, kv_heads = c.number("swa_num_attention_heads"), c.number("swa_num_key_value_heads")
    head_dim, v_head_dim = c.number("swa_head_dim"), c.number("swa_v_head_dim")
    layer = _gqa(c, hidden, heads, kv_heads, head_dim, v_head_dim=v_head_dim)
    if c.get("add_swa_attention_sink_bias", False):
        layer.attention_params += heads
    if c.number("sliding_window") >= _context(c):
        raise c.error("sliding_window", "is no shorter than the served context beside swa_* sizes of its own")
    return _windowed(c, layer, "sliding_window")


# Head counts given per layer (Laguna's LagunaDecoderLayer builds layer i with num_attention_heads_per_layer[i] query
# heads beside the model's num_key_value_heads; llama.cpp's converter reads num_key_value_heads_per_layer beside it)
_HEADS_PER_LAYER = ("num_attention_heads_per_layer", "num_key_value_heads_per_layer")


def _heads_per_layer(c: _Config, layers: int) -> list[tuple[int, int | None]] | None:
    """Each layer's query and KV heads where the config lists them per layer (None: it does not): one positive count
    per layer, and a head_dim stated beside per-layer query heads (hidden / heads would differ by layer), else refused
    naming the field."""
    if not c.has(*_HEADS_PER_LAYER):
        return None
    lists = {}
    for key in _HEADS_PER_LAYER:
        value = c.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            raise c.error(key, f"is not a list of per-layer head counts ({value!r})")
        counts = _per_layer(c, key, layers)
        if not all(counts):
            raise c.error(key, "gives a layer no heads")
        lists[key] = counts
    if "num_attention_heads_per_layer" in lists and not c.has("head_dim"):
        raise c.error("num_attention_heads_per_layer", "gives per-layer query heads without a head_dim")
    if c.has(*_SWA_SIZES, *_MLA_MARKERS, *_DSA):
        raise c.error(next(iter(lists)), "gives per-layer head counts beside attention sized apart (swa_* or latent)")
    queries = lists.get("num_attention_heads_per_layer") or [c.number("num_attention_heads")] * layers
    kv = lists.get("num_key_value_heads_per_layer") or [None] * layers
    return list(zip(queries, kv, strict=True))


def _kv_heads(c: _Config, heads: int) -> int:
    """KV heads: num_key_value_heads (GQA; 1 is multi-query), ChatGLM's multi_query_group_num when its
    multi_query_attention is on, Megatron-LM's num_query_groups when its group_query_attention is on, Falcon's and
    StarCoder's multi_query flag (one); else one per query head (MHA, as transformers reads a config without the
    field). MPT's attn_config names its kind (attn_type), which its
    kv_n_heads (a default of llm-foundry's, stated under multi-head attention too) only counts for grouped-query."""
    kind = c.get("attn_type")
    if kind is not None:
        kinds = {"multihead_attention": lambda: heads, "multiquery_attention": lambda: 1,
                 "grouped_query_attention": lambda: c.number("num_key_value_heads")}
        if not isinstance(kind, str) or kind not in kinds:
            raise c.error("attn_type", f"names an attention the reader does not know ({kind!r})")
        return kinds[kind]()
    if c.get("new_decoder_architecture") is not None:  # FalconAttention: num_kv_heads groups in the new decoder,
        if c.get("new_decoder_architecture"):  # else one KV head under multi_query, else one per head (a
            return c.number("num_key_value_heads")  # transformers-saved Falcon config states num_kv_heads anyway)
        return 1 if c.get("multi_query") else heads
    if c.get("num_key_value_heads") is not None:
        return c.number("num_key_value_heads")
    if c.get("multi_query_attention") is not None:
        return c.number("multi_query_group_num") if c.get("multi_query_attention") else heads
    if c.get("group_query_attention") is not None:  # Megatron-LM's names (CodeShell): num_query_groups KV heads
        return c.number("num_query_groups") if c.get("group_query_attention") else heads
    if c.get("multi_query") is not None:
        return 1 if c.get("multi_query") else heads
    return heads


# The fields _moe_layers reads (a config may state several that agree: GLM 5.2's mlp_layer_types beside them)
_ROUTING = {"moe_layers", "mlp_layer_types", "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step",
            "interleave_moe_layer_step", "mlp_only_layers", "moe_layer_start_index", "moe_layer_end_index",
            "moe_layer_interval", "expert_layer_period", "expert_layer_offset"}


def _every(c: _Config, key: str) -> int:
    """A period of layers (one layer in every n): a count of at least 1, its default when left out (0 would divide by
    zero)."""
    step = c.number(key, 1)
    if not step:
        raise c.error(key, "is 0: one layer in every 0 is no period")
    return step


def _layer_list(c: _Config, key: str, layers: int) -> set[int]:
    """A list of layer indices (Llama 4's moe_layers, Qwen MoE's mlp_only_layers, LFM2's full_attn_idxs, Bamba's
    attn_layer_indices), else refused naming it."""
    listed = c.get(key)
    if not isinstance(listed, list) or not all(type(i) is int and 0 <= i < layers for i in listed):
        raise c.error(key, f"is not a list of layer indices ({repr(listed)[:60]})")
    return set(listed)


def _moe_layers(c: _Config, layers: int) -> list[bool]:
    """Which layers route to experts, under each family's rule."""
    if c.get("moe_layers") is not None:  # Llama 4 may list them
        listed = _layer_list(c, "moe_layers", layers)
        return [i in listed for i in range(layers)]
    if c.get("mlp_layer_types") is not None:  # GLM 5.2: "dense" or "sparse" per layer
        kinds = c.get("mlp_layer_types")
        if not isinstance(kinds, list) or len(kinds) != layers or set(kinds) - {"dense", "sparse"}:
            raise c.error("mlp_layer_types", f"is not dense or sparse per layer ({repr(kinds)[:60]})")
        return [kind == "sparse" for kind in kinds]
    if isinstance(c.get("moe_layer_freq"), list):  # 1 routes, 0 is dense, per layer: MiMo-V2's (MiMoV2FlashDecoderLayer
        flags = c.get("moe_layer_freq")  # .is_moe_layer) and Megatron-LM's list form of --moe-layer-freq
        if len(flags) != layers or not all(type(f) is int and f in (0, 1) for f in flags):
            raise c.error("moe_layer_freq", f"is not 0 (dense) or 1 (experts) per layer ({repr(flags)[:60]})")
        return [flag == 1 for flag in flags]
    first_dense = c.number("first_k_dense_replace", 0)  # DeepSeek, GLM: the first k layers are dense
    every = _every(c, "moe_layer_freq")  # DeepSeek: one MoE layer in `every`
    step = _every(c, "decoder_sparse_step")  # Qwen MoE
    interleave = _every(c, "interleave_moe_layer_step")  # Llama 4: one MoE layer in `interleave`
    only_dense = _layer_list(c, "mlp_only_layers", layers) if c.get("mlp_only_layers") else set()
    start = c.number("moe_layer_start_index", 0)  # ERNIE 4.5: experts from this layer ...
    end = c.get("moe_layer_end_index", -1)  # ... to this one (-1: the last), one layer in moe_layer_interval
    end = layers - 1 if end == -1 else c.number("moe_layer_end_index")
    ernie_step = _every(c, "moe_layer_interval")
    period = _every(c, "expert_layer_period")  # Jamba: experts on one layer in a period, from its offset
    offset = c.number("expert_layer_offset", 0)
    return [i >= first_dense and i % every == 0 and (i + 1) % step == 0 and i % interleave == interleave - 1
            and i not in only_dense and start <= i <= end and (i + 1) % ernie_step == 0 and i % period == offset
            for i in range(layers)]


# --- readers ---------------------------------------------------------------------------------------------------


def _read_transformer(c: _Config) -> _Shape:
    """Decoder-only transformers with GQA or MLA attention, Gated DeltaNet hybrids, dense or MoE MLPs."""
    hidden, layers = c.number("hidden_size"), c.number("num_hidden_layers")
    experts, per_token = _experts(c)
    moe = _moe_layers(c, layers) if experts else [False] * layers
    mla = c.has(*_MLA_MARKERS, *_DSA)
    types = _mla_layers(c, layers) if mla else _layer_types(c, layers)
    expert_width = c.number("moe_intermediate_size", c.get("intermediate_size")) if experts else 0
    # use_moe false: the MoE variant's shared-expert field describes nothing either (MiniMind's is a flag, true)
    shared_width, shared = _shared_experts(c, expert_width) if c.get("use_moe") is not False else (0, 0)
    sizes = _heads_per_layer(c, layers)
    indexers = _indexers(c, layers) if mla else None
    out = []
    for i in range(layers):
        layer = _mla(c, hidden, indexers[i]) if mla else _attention(c, hidden, types[i], output_gate=c.get("attn_output_gate", False),
                                                       sizes=sizes[i] if sizes else None)
        if moe[i]:
            layer.expert_params = _mlp_params(c, hidden, expert_width)
            layer.experts, layer.experts_per_token = experts, per_token
            layer.dense_params = hidden * experts + (_mlp_params(c, hidden, shared_width) if shared_width else 0)
            if c.get("shared_expert_intermediate_size"):  # Qwen's shared expert has a sigmoid gate
                layer.dense_params += hidden
        else:
            layer.dense_params = _mlp_params(c, hidden, _dense_width(c))
        out.append(layer)
    embedding, head = _embeddings(c, hidden)
    return _Shape(out, embedding, head, shared_experts=shared if experts else None)


# Which layers of a DSA model run an indexer of their own: GLM-5.2's indexer_types, 'full' (an indexer, its key cache)
# or 'shared' (the previous full layer's top-k reused: public GLM-5.2 serving notes run the indexer on the 21 full
# layers only, the other 57 reusing the last full layer's indices, and a public NumPy reference forward of GLM-5.2
# loads indexer weights and writes indexer keys on full layers only; a third party's HYV4 layer on SGLang, whose
# config has the same field, loads indexer weights on full layers and refuses other kinds and a shared layer 0);
# index_topk_freq and
# index_topk_pattern say the layout another way, read only beside indexer_types (else refused, never read as an
# indexer on every layer).
_INDEXER_KINDS = {"full": True, "shared": False}


def _indexers(c: _Config, layers: int) -> list[bool]:
    """Per layer, whether it runs its own DSA indexer (True on every layer unless indexer_types says otherwise)."""
    kinds = c.get("indexer_types")
    if kinds is not None and not c.has(*_DSA):  # a layout of indexers the config sizes nowhere
        raise c.error("indexer_types", "lays out DSA indexers, but index_n_heads, index_head_dim and index_topk are "
                                       "not stated")
    if kinds is None:
        for field in ("index_topk_freq", "index_topk_pattern"):
            value = c.get(field)
            if value is not None and (isinstance(value, bool) or value != 1):  # true is no frequency of 1
                raise c.error(field, "lays out which layers run the DSA indexer, which the reader reads only from "
                                     "indexer_types")
        return [True] * layers
    if not isinstance(kinds, list) or len(kinds) != layers:
        raise c.error("indexer_types", f"is not one kind per layer ({len(kinds) if isinstance(kinds, list) else kinds!r}"
                                       f" for {layers} layers)")
    unknown = sorted({str(k) for k in kinds if not isinstance(k, str) or k not in _INDEXER_KINDS})
    if unknown or kinds[0] != "full":
        raise c.error("indexer_types", f"names a kind the reader does not read ({', '.join(unknown)})" if unknown else
                                       "starts with a shared layer, which has no earlier indexer to share")
    return [_INDEXER_KINDS[k] for k in kinds]


def _mla_layers(c: _Config, layers: int) -> list[str]:
    """Latent attention on every layer (its code windows none); a 0/1 window list marking a layer sliding beside it
    is refused, never dropped."""
    listed, windows = _window_list(c, layers)
    if "sliding_attention" in windows:
        marker = next(key for key in (*_MLA_MARKERS, *_DSA) if c.has(key))
        raise c.error(listed, f"marks layer {windows.index('sliding_attention')} sliding beside the latent attention "
                              f"'{marker}' states, which the reader reads on every layer: two layouts of the same layers")
    return ["full_attention"] * layers


def _dense_width(c: _Config) -> int:
    """A dense MLP's width: Llama 4's dense layers are wider than its experts (intermediate_size_mlp); Qwen (v1)'s
    intermediate_size is w1's and w2's widths together, the gated MLP's two halves; MPT's is expansion_ratio x
    hidden; GPT-2-style families (GPT-Neo, Falcon, BLOOM) build 4 x hidden when the config gives no width."""
    if c.get("block_type") is not None:  # OLMo's config vocabulary (LLaDA): the width by the block's kind, whatever
        return _olmo_width(c)  # an intermediate_size spelled otherwise or read by its name would say
    if not c.has("intermediate_size", "intermediate_size_mlp") and c.has("expansion_ratio"):  # MPT: a multiple
        width = c.number("expansion_ratio") * c.number("hidden_size")
        c.notes.append(f"MLP width expansion_ratio x hidden_size ({width})")
        return width
    # n_inner stated null: GPT2Config's field (GPT-J's, CodeGen's, GPTBigCode's, and the remote codes that copy them:
    # MOSS's MossBlock, phi-msft), whose blocks all build `n_inner if n_inner is not None else 4 * n_embd`. Read so
    # only beside the n_embd those configs spell the width with: a stray null in a hidden_size config (Llama's
    # vocabulary, whose MLP is intermediate_size wide) says nothing of a width its code builds
    stated_null = "n_inner" in c.text and c.text["n_inner"] is None and c.text.get("n_embd") is not None
    if not c.has("intermediate_size", "intermediate_size_mlp") and (stated_null or c.quirk("mlp_width_4x_hidden")):
        width = 4 * c.number("hidden_size")
        if c.quirk("mlp_width_4x_hidden"):
            c.defaulted["intermediate_size"] = f"4 x hidden_size ({width})"
        else:
            c.notes.append(f"n_inner null: an MLP 4 x hidden_size wide ({width})")
        return width
    if not c.has("intermediate_size") and c.text.get("dim") is not None and c.get("hidden_dim") is not None:
        return c.number("hidden_dim")  # MiniMind's FeedForward: w1, w3 dim -> hidden_dim, w2 back (beside dim only)
    if c.get("shared_intermediate_size"):  # GraniteMoeHybridDecoderLayer: its shared_mlp is the MLP of every layer,
        return c.number("shared_intermediate_size")  # the experts (none in a dense Granite 4.0-H) beside it
    width = c.number("intermediate_size_mlp" if c.has("intermediate_size_mlp") else "intermediate_size")
    if c.get("block_ff_dim") is not None:  # Lfm2Config: `kwargs.get("block_ff_dim", intermediate_size)`, it wins
        width = c.number("block_ff_dim")
    if c.get("block_auto_adjust_ff_dim"):  # LFM2 (Lfm2MLP): two thirds of the width, then its multiplier, rounded up
        width = int(2 * width / 3)  # to block_multiple_of (only where a multiplier is given, as Lfm2MLP does)
        if c.get("block_ffn_dim_multiplier") is not None:
            multiple, factor = c.number("block_multiple_of"), c.get("block_ffn_dim_multiplier")
            if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor <= 64:
                raise c.error("block_ffn_dim_multiplier", f"is not a multiplier ({factor!r})")
            width = int(factor * width)
            width = multiple * -(-width // multiple) if multiple else width
        c.notes.append(f"MLP width adjusted by block_auto_adjust_ff_dim ({width})")
    return width // 2 if c.quirk("mlp_width_is_both_halves") else width


# OLMo's block kinds (OLMo's and LLaDA's modeling code, OLMoBlock.build): "llama" is ff_proj (the gate) and up_proj,
# each mlp_hidden_size wide, around the activation, then ff_out; "sequential" is ff_proj mlp_hidden_size wide whose
# SwiGLU halves it (output_multiplier 0.5), then ff_out. mlp_hidden_size null: mlp_ratio x d_model.
_OLMO_BLOCKS = ("llama", "sequential")


def _olmo_width(c: _Config) -> int:
    """The gated MLP width of an OLMo-vocabulary block (block_type, mlp_hidden_size or mlp_ratio, activation_type)."""
    kind = c.get("block_type")
    if kind not in _OLMO_BLOCKS:
        raise c.error("block_type", f"names a block the reader does not know ({kind!r})")
    if c.get("mlp_hidden_size") is not None:
        width = c.number("mlp_hidden_size")
    else:
        width = c.number("mlp_ratio") * c.number("hidden_size")
    if kind == "sequential":  # one projection holds the gate and up halves; only SwiGLU splits it so
        if c.get("hidden_act") != "swiglu":
            raise c.error("hidden_act", f"is {c.get('hidden_act')!r} in a sequential block: only its SwiGLU form "
                                        "(ff_proj halved) is read")
        width //= 2
    c.notes.append(f"OLMo {kind} block: a gated MLP {width} wide")
    return width


def _shared_experts(c: _Config, expert_width: int) -> tuple[int, int]:
    """(width of the always-on shared expert MLP, shared experts counted as the catalogue does)."""
    # DeepSeek, ERNIE 4.5, Bailing (Ling: its remote-code BailingMoeSparseMoeBlock builds one shared MLP of
    # moe_intermediate_size x num_shared_experts): shared experts of the experts' width
    for key in _SHARED_EXPERTS:
        if c.get(key):
            return c.number(key) * expert_width, c.number(key)
    if c.get("shared_expert_intermediate_size"):
        return c.number("shared_expert_intermediate_size"), 1
    if c.get("shared_intermediate_size"):  # Granite MoE shared, Granite 4.0: a gated shared MLP of its own width
        return c.number("shared_intermediate_size"), 1
    if c.quirk("one_shared_expert"):
        return expert_width, 1
    return 0, 0


def _block(c: _Config, i: int, part: str) -> dict:
    """Layer i's attention or ffn block of `block_configs`, its fields checked."""
    blocks = c.get("block_configs")
    block = blocks[i].get(part) if isinstance(blocks[i], dict) else None
    if not isinstance(block, dict):
        raise c.error("block_configs", f"has no {part} block for layer {i}")
    unread = sorted(k for k, v in block.items() if v not in (None, False) and k not in _BLOCK_FIELDS[part])
    if unread:  # a window, a sparsification, a mixture of experts ... changes what the layer is
        raise c.error("block_configs", f"layer {i}'s {part} states {', '.join(unread)}, which the reader does not read")
    return block


_BLOCK_FIELDS = {"attention": ("n_heads_in_group", "no_op", "replace_with_linear"),
                 "ffn": ("ffn_mult", "no_op", "replace_with_linear")}


def _read_blocks(c: _Config) -> _Shape:
    """Per-layer blocks (DeciLM, Llama-Nemotron's NAS models: `block_configs`): each layer's attention is grouped-query
    with num_attention_heads / n_heads_in_group KV heads, a single hidden x hidden linear (replace_with_linear) or
    nothing (no_op); its gated MLP is ffn_mult wide (DeciLM's _ffn_mult_to_intermediate_size: 2/3 x ffn_mult x
    hidden, rounded up to a multiple of 256), a linear or nothing."""
    hidden, heads = c.number("hidden_size"), c.number("num_attention_heads")
    blocks = c.get("block_configs")
    layers = c.number("num_hidden_layers", len(blocks) if isinstance(blocks, list) else None)
    if not isinstance(blocks, list) or len(blocks) != layers:
        raise c.error("block_configs", f"is not one block per layer ({layers} layers)")
    head_dim = c.number("head_dim", hidden // heads)
    out = []
    for i in range(layers):
        attention, ffn = _block(c, i, "attention"), _block(c, i, "ffn")
        if attention.get("no_op"):
            layer = _Layer(mixer="no attention")
        elif attention.get("replace_with_linear"):
            layer = _Layer(mixer="a linear layer for attention", attention_params=hidden * hidden)
        else:
            group = attention.get("n_heads_in_group")
            if isinstance(group, bool) or not isinstance(group, int) or not group or heads % group:
                raise c.error("block_configs", f"layer {i}'s n_heads_in_group ({group!r}) does not divide "
                                               f"{heads} heads")
            layer = _gqa(c, hidden, heads, heads // group, head_dim)
        if ffn.get("replace_with_linear"):
            layer.dense_params = hidden * hidden
        elif not ffn.get("no_op"):
            mult = ffn.get("ffn_mult")
            if isinstance(mult, bool) or not isinstance(mult, int | float) or not 0 < mult <= 64:
                raise c.error("block_configs", f"layer {i}'s ffn_mult is not a multiplier ({mult!r})")
            width = int(2 * mult * hidden / 3)
            layer.dense_params = _mlp_params(c, hidden, -(-width // 256) * 256)
        out.append(layer)
    embedding, head = _embeddings(c, hidden)
    return _Shape(out, embedding, head)


def _read_nemotron_h(c: _Config) -> _Shape:
    """Nemotron-H (Nemotron 3): one mixer per layer from hybrid_override_pattern: Mamba-2 (M), attention (*),
    MLP (-) or MoE (E), the MLPs with squared-ReLU (up and down only), experts optionally in a latent space."""
    hidden = c.number("hidden_size")
    if c.get("layers_block_type") is not None:  # newer configs name each layer instead
        names = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}
        unknown = sorted(set(c.get("layers_block_type")) - set(names))
        if unknown:
            raise c.error("layers_block_type", f"names a layer type the reader does not know ({', '.join(unknown)})")
        pattern = "".join(names[name] for name in c.get("layers_block_type"))
    else:
        pattern = c.need("hybrid_override_pattern")
    if len(pattern) != c.number("num_hidden_layers", len(pattern)) or set(pattern) - set("M*-E"):
        raise c.error("hybrid_override_pattern", f"is not one of M, *, - or E per layer ({pattern!r})")
    experts, per_token = _experts(c)
    latent = c.get("moe_latent_size")
    out = []
    for kind in pattern:
        if kind == "M":
            out.append(_mamba2(c, hidden))
        elif kind == "*":
            out.append(_attention(c, hidden, "full_attention"))
        elif kind == "-":
            out.append(_Layer(mixer="MLP", dense_params=_mlp_params(c, hidden, c.number("intermediate_size"),
                                                                     "mlp_hidden_act")))
        else:
            width = c.number("moe_intermediate_size")
            shared = _mlp_params(c, hidden, c.number("moe_shared_expert_intermediate_size"), "mlp_hidden_act")
            # experts work in the latent space, entered and left through two projections shared by all of them
            inside = c.number("moe_latent_size") if latent else hidden
            out.append(_Layer(mixer="MoE", expert_params=_mlp_params(c, inside, width, "mlp_hidden_act"), experts=experts,
                              experts_per_token=per_token,
                              dense_params=hidden * experts + shared + (2 * hidden * latent if latent else 0)))
    embedding, head = _embeddings(c, hidden)
    return _Shape(out, embedding, head, shared_experts=c.number("n_shared_experts", 0) if experts else None)


def _read_gemma4(c: _Config) -> _Shape:
    """Gemma 4: sliding and full layers; full layers may use a wider head, fewer KV heads and keys that double as
    values, the last layers may reuse earlier layers' KV, a MoE may run beside the dense MLP, and the small models
    feed every layer a per-layer embedding (transformers' Gemma4TextModel)."""
    hidden, layers, heads = c.number("hidden_size"), c.number("num_hidden_layers"), c.number("num_attention_heads")
    types = _layer_types(c, layers)
    first_shared = layers - c.number("num_kv_shared_layers", 0)
    per_layer_width = c.number("hidden_size_per_layer_input", 0)
    experts, per_token = _experts(c) if c.get("enable_moe_block", False) else (0, 0)
    out = []
    for i, kind in enumerate(types):
        full = kind == "full_attention"
        head_dim = c.number("global_head_dim") if full and c.get("global_head_dim") else c.number("head_dim")
        keys_are_values = full and c.get("attention_k_eq_v", False)
        kv_heads = c.number("num_global_key_value_heads" if keys_are_values else "num_key_value_heads")
        reuses_kv = i >= first_shared  # KV computed by an earlier layer: no k, v projections, nothing cached
        layer = _Layer(attention="gqa", kv_heads=kv_heads, attention_params=2 * hidden * heads * head_dim,
                       attn_flops_per_ctx_token=4 * heads * head_dim)
        if reuses_kv:
            layer.mixer = "attention reusing an earlier layer's KV"
        else:
            layer.attention_params += hidden * kv_heads * head_dim * (1 if keys_are_values else 2)
            layer.kv_bytes_per_token = 2 * kv_heads * head_dim * KV_BYTES  # K and V both cached, equal or not
        if kind == "sliding_attention":
            _windowed(c, layer, "sliding_window")
        wide = 2 if reuses_kv and c.get("use_double_wide_mlp", False) else 1
        layer.dense_params = _mlp_params(c, hidden, wide * c.number("intermediate_size"), "hidden_activation")
        layer.dense_params += 2 * hidden * per_layer_width  # per-layer input gate and projection
        if experts:
            layer.expert_params = _mlp_params(c, hidden, c.number("moe_intermediate_size"), "hidden_activation")
            layer.experts, layer.experts_per_token = experts, per_token
            layer.dense_params += hidden * experts
        out.append(layer)
    embedding, head = _embeddings(c, hidden)
    notes = []
    if per_layer_width:  # per-layer embeddings: one table of layers x width per token, and its projection
        table = c.number("vocab_size_per_layer_input") * layers * per_layer_width
        embedding += table + hidden * layers * per_layer_width
        notes.append(f"per-layer embeddings ({table / 1e9:.2f}B) count as active like the input embedding, though "
                     "a token reads one row of them")
    return _Shape(out, embedding, head, shared_experts=0 if experts else None, notes=notes)


def _per_layer(c: _Config, key: str, layers: int) -> list[int]:
    """A count the config gives once or per layer (HunYuan's moe_topk, num_shared_expert), one value per layer."""
    value = c.get(key)
    if not isinstance(value, list):
        return [c.number(key)] * layers
    if len(value) != layers or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= COUNT_MAX
                                       for v in value):
        raise c.error(key, f"is not one count per layer ({len(value)} values for {layers} layers)")
    return value


def _read_hunyuan(c: _Config) -> _Shape:
    """HunYuan MoE (Hunyuan-A13B; the remote-code model_type 'hunyuan', transformers' hunyuan_v1_moe), as vLLM's
    hunyuan_v1.py builds it: every layer routes to `num_experts` experts of moe_intermediate_size (else
    intermediate_size), `moe_topk` of them per token, beside a shared MLP of intermediate_size x num_shared_expert
    (use_mixed_mlp_moe); with cross-layer attention (use_cla) only every cla_share_factor-th layer projects and
    caches K and V, the layers between attend to its KV with their own queries."""
    hidden, layers, heads = c.number("hidden_size"), c.number("num_hidden_layers"), c.number("num_attention_heads")
    if c.get("use_mla", False):
        raise c.error("use_mla", "is set: HunYuan's latent attention is not among the families checked")
    kv_heads = c.number("num_key_value_heads", heads)
    head_dim = c.number("head_dim", hidden // heads)
    share = c.number("cla_share_factor") if c.get("use_cla", False) else 1
    experts = c.number("num_experts", 1)
    if experts > 1:
        per_token = _per_layer(c, "moe_topk", layers)
        shared = _per_layer(c, "num_shared_expert", layers) if c.get("use_mixed_mlp_moe", False) else [0] * layers
        widths = (_per_layer(c, "moe_intermediate_size", layers) if c.get("moe_intermediate_size") is not None
                  else [c.number("intermediate_size")] * layers)
    out = []
    for i in range(layers):
        layer = _gqa(c, hidden, heads, kv_heads, head_dim)
        if i % share:  # cross-layer attention: q and o only, the KV of the layer it shares
            layer.mixer = "attention reusing a sharing layer's KV (CLA)"
            layer.attention_params -= hidden * 2 * kv_heads * head_dim
            layer.kv_bytes_per_token = 0.0
        if experts > 1:
            layer.expert_params = _mlp_params(c, hidden, widths[i])
            layer.experts, layer.experts_per_token = experts, per_token[i]
            layer.dense_params = hidden * experts + _mlp_params(c, hidden, c.number("intermediate_size") * shared[i])
        else:
            layer.dense_params = _mlp_params(c, hidden, c.number("intermediate_size"))
        out.append(layer)
    embedding, head = _embeddings(c, hidden)
    return _Shape(out, embedding, head, shared_experts=max(shared) if experts > 1 else None)


# The layouts no field describes, read by their own reader (a true quirk each); every other config, whatever its
# model_type or none, is read by _read_transformer from its fields.
_READERS = {
    "nemotron_h": _read_nemotron_h,  # one mixer per layer from a pattern string, squared-ReLU MLPs, latent MoE
    "gemma4_text": _read_gemma4,  # per-layer head widths, keys doubling as values, shared KV, per-layer embeddings
    **dict.fromkeys(("hunyuan", "hunyuan_v1_moe"), _read_hunyuan),  # per-layer expert counts, cross-layer attention
}
# Fields that change the count in a way _read_transformer does not read: a config carrying one is refused, naming it
# (the most telling first), never read as if it were not there.
_UNREAD = {
    "compress_ratios": "compressed attention (DeepSeek V4)",
    "linear_attn_config": "Kimi linear attention",
    "hybrid_override_pattern": "a Nemotron-H layer pattern outside model_type nemotron_h",
    "layers_block_type": "a hybrid layer pattern",
    "ssm_state_size": "state-space layers outside model_type nemotron_h",
    "num_kv_shared_layers": "layers sharing KV (Gemma 4)",
    "hidden_size_per_layer_input": "per-layer embeddings (Gemma 4)",
    "use_cla": "cross-layer attention (HunYuan)",
    "use_mla": "HunYuan's latent attention",
    "is_encoder_decoder": "an encoder-decoder model (T5, BART ...): the reader counts decoder-only language models",
    "moe_latent_size": "experts in a latent space outside model_type nemotron_h",
    "moe_shared_expert_intermediate_size": "a shared expert of its own width",
    "cross_attention_layers": "cross-attention layers (Mllama)",
    "rescale_every": "RWKV's recurrent time-mixing and channel-mixing layers (no attention)",
    # a recurrent mixer whose other fields read like a transformer's: refused by the field that says what it is,
    # before those are misread
    "lru_width": "RG-LRU recurrent layers (RecurrentGemma)",
    "mb_per_layer": "Mamba layers between attention layers, and gated memory units sharing a cache (SambaY: "
                    "Phi-4-mini-flash)",
    # Hymba (remote code modeling_hymba.py): every layer runs attention heads and num_mamba Mamba heads in parallel,
    # prepends num_memory_tokens meta tokens and shares KV across kv_reuse_group: no sequence of layer kinds the
    # reader builds, and its mamba_* fields would otherwise be refused as Mamba layers with no layout
    "num_mamba": "Mamba heads in parallel with the attention heads of each layer (Hymba)",
}


def _reader(c: _Config):
    if c.model_type in _READERS:
        return _READERS[c.model_type]
    for key, what in _UNREAD.items():
        if c.get(key):  # stated and on (MiniMax states shared_intermediate_size 0: no shared expert)
            raise c.error(key, f"describes {what}, which the reader does not read")
    if c.get("block_configs") is not None:  # per-layer blocks (DeciLM, Llama-Nemotron NAS)
        return _read_blocks
    if c.get("state_size") is not None:  # Mamba-2's num_heads and Mamba's intermediate_size are not a transformer's
        return _read_state_space
    placed = ("attn_layer_period", "attn_layer_indices", "layer_types")
    for key in ("mamba_n_heads", "mamba_d_state"):
        if c.get(key) and not c.has(*placed):  # Falcon-H1: Mamba-2 beside attention in every layer
            raise c.error(key, "describes Mamba layers, but no attn_layer_period, attn_layer_indices or layer_types "
                               "says which")
    return _read_transformer


# --- the row ---------------------------------------------------------------------------------------------------


def _precision(c: _Config) -> str:
    """The checkpoint's weight precision: its quantization, else its 16-bit dtype."""
    quant = c.get("quantization_config")
    mlx = c.get("quantization")  # MLX's affine integer quantization: {"group_size": 64, "bits": 4}
    if quant and isinstance(mlx, dict) and "quant_method" not in quant and quant == mlx:
        quant = None  # MLX writes its block under both names (mlx-lm's save_config); no method: read as MLX's
    if quant:
        method = str(quant.get("quant_method", "")).lower()
        if method == "fp8":
            return "fp8"
        if method == "mxfp4":
            return "fp4"
        if method == "modelopt":
            algo = str(quant.get("quant_algo", "")).upper()
            if "NVFP4" in algo or "FP4" in algo:
                return "fp4"
            if "FP8" in algo:
                return "fp8"
            raise c.error("quantization_config.quant_algo", f"is not one the reader knows ({algo!r})")
        if method == "fbgemm_fp8":  # FP8 weights, one scale per row
            return "fp8"
        if method == "bitsandbytes":  # 4-bit NF4/FP4 blocks (load_in_4bit), or LLM.int8 (load_in_8bit)
            if quant.get("load_in_4bit"):
                return "int4"
            if quant.get("load_in_8bit"):
                return "int8"
            raise c.error("quantization_config.load_in_4bit", "nor load_in_8bit is set for bitsandbytes")
        if method in ("awq", "gptq"):
            return _integer_bits(c, quant.get("bits"), "quantization_config.bits")
        if method == "compressed-tensors":
            return _compressed_tensors(c, quant)
        raise c.error("quantization_config.quant_method", f"is not one the reader knows ({method!r})")
    if isinstance(mlx, dict) and "bits" in mlx:
        return _integer_bits(c, mlx.get("bits"), "quantization.bits")
    if quantization_field(c.top, c.repo) == "wbits":
        wbits = c.get("wbits")
        c.notes.append(f"GPTQ stated by the top-level wbits ({wbits}), not by a quantization_config")
        return _integer_bits(c, wbits, "wbits")
    dtype = c.get("torch_dtype") or c.get("dtype")
    if dtype in ("bfloat16", "float16", "float32"):  # served at 16 bits
        return "bf16"
    if dtype is None:  # no quantization_config: unquantized weights, served at 16 bits whatever their file's dtype
        c.notes.append("no torch_dtype: read as unquantized (no quantization_config), served at 16 bits")
        return "bf16"
    raise c.error("torch_dtype", f"is not a precision the reader knows ({dtype!r})")


UNQUANTIZED_WBITS = (16, 32)  # GPTQ-for-LLaMa's wbits for weights left unquantized


def quantization_field(config: dict, where: str | None) -> str | None:
    """The field saying the checkpoint's weights are quantized (stored as packed integers or low-bit floats, with
    scales), else None: a quantization_config, MLX's quantization, or GPTQ-for-LLaMa's top-level wbits below 16 (MOSS's
    int4/int8 checkpoints: MossForCausalLM quantizes its linears with GPTQ when wbits is 4 or 8; 32 is unquantized)."""
    for part in (config, text_config(config, where)):
        for key in ("quantization_config", "quantization"):
            if key in part:
                return key
        if part.get("wbits") is not None and part.get("wbits") not in UNQUANTIZED_WBITS:
            return "wbits"
    return None


def _integer_bits(c: _Config, bits, key: str) -> str:
    if bits == 4:
        return "int4"
    if bits == 8:
        return "int8"
    raise c.error(key, f"is not 4 or 8 ({bits!r})")


def _compressed_tensors(c: _Config, quant: dict) -> str:
    """The weights of compressed-tensors' config groups: 4-bit integers, 4-bit floats (NVFP4, MXFP4) or FP8."""
    kinds = {(w.get("num_bits"), w.get("type")) for g in (quant.get("config_groups") or {}).values()
             if (w := g.get("weights"))}
    if len(kinds) != 1:
        raise c.error("quantization_config.config_groups", f"has weights the reader cannot reduce to one ({kinds})")
    ((bits, kind),) = kinds
    if kind == "int":
        return _integer_bits(c, bits, "quantization_config.config_groups.weights.num_bits")
    if kind == "float" and bits in (4, 8):
        return "fp4" if bits == 4 else "fp8"
    raise c.error("quantization_config.config_groups.weights", f"are not a kind the reader knows ({bits}, {kind})")


def _context(c: _Config) -> int:
    """The served context: max_position_embeddings, or YaRN's original length x factor (as vLLM derives it)."""
    scaling = c.get("rope_scaling") or {}
    if (scaling.get("rope_type") or scaling.get("type")) == "yarn" and scaling.get("original_max_position_embeddings"):
        sizes = [(key, scaling.get(key)) for key in ("original_max_position_embeddings", "factor")]
        for key, value in sizes:  # a factor "2" would repeat the text; NaN, inf or 0 are no factor
            least, most = config_range(f"rope_scaling.{key}")
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= most or value < least:
                raise c.error(f"rope_scaling.{key}", f"is not a length or factor YaRN scales by ({value!r})")
        return int(sizes[0][1] * sizes[1][1])
    if not c.has("max_position_embeddings"):  # vLLM serves a config that states no length at 2048, and says so
        c.notes.append("no length field (max_position_embeddings or another of vLLM's keys): vLLM's default 2048")
        return 2048
    return c.number("max_position_embeddings")


def slug(name: str) -> str:
    """A model id from a repository's name (its last part): lower case, runs of other characters as one '-'."""
    return re.sub(r"[^a-z0-9.]+", "-", name.split("/")[-1].lower()).strip("-")


def _b(params: float) -> float:
    return round(params / 1e9, 2 if params >= 1e9 else 3)  # three significant figures under 1B (GPT-2 0.124)


def derive_model(config: dict, repo: str | None, *, model_id: str | None = None, path: str | None = None) -> dict:
    """A models.csv row from a Hugging Face config.json of `repo` (owner/name); ModelConfigError if unreadable.

    A config read from disk instead has no repository (repo None, path the file, model_id required): its row is
    named by the id and maps no API listing, which only a repository can."""
    return derive_with_keys(config, repo, model_id=model_id, path=path)[0]


@dataclass
class Reading:
    """One reading of a config whose fields more than one reading fits: what was taken of each ambiguous field (field
    -> a READINGS key), the row it gives, the fields read, and what the weights hold that the row does not count
    (`left_out`, derive_with_keys: the notes say it to users, this says it to the code)."""

    assumed: dict[str, str]
    row: dict
    keys: dict[str, dict]
    left_out: frozenset[str] = frozenset()


# Three two-way fields give eight readings, each derived and scored; a config leaving a fourth open is refused at the
# first reading that meets it (its AmbiguousConfig, naming that field), before 16 are derived
MAX_READINGS = 8


def derive_readings(config: dict, repo: str | None, *, model_id: str | None = None,
                    path: str | None = None) -> list[Reading]:
    """Every reading of the config: one where its fields settle the model; one per combination of the readings of
    the fields it leaves open (AmbiguousConfig's options: the MLP gated or not, the head tied or not) otherwise, each
    counted. A refusal for anything else (a field not read, a count out of bounds) refuses the config whatever the
    reading, and is raised as derive_model raises it."""
    pending: list[dict[str, str]] = [{}]
    readings: list[Reading] = []
    while pending:
        assumed = pending.pop(0)
        try:
            row, keys, left_out = derive_with_keys(config, repo, model_id=model_id, path=path, assume=assumed)
        except AmbiguousConfig as exc:
            if len(pending) + len(readings) + len(exc.options) > MAX_READINGS:
                raise
            pending += [assumed | {exc.field: option} for option in exc.options]
            continue
        readings.append(Reading(assumed, row, keys, left_out))
    return readings


def derive_with_keys(config: dict, repo: str | None, *, model_id: str | None = None, path: str | None = None,
                     assume: dict[str, str] | None = None) -> tuple[dict, dict[str, dict], frozenset[str]]:
    """derive_model's row, the config.json fields the reader read for it (with their values), per part:
    "shape" (parameters, layers, experts, KV cache, state, attention FLOPs), "context_max", "native_precision", and
    what the weights hold that the row does not count: "vision_tower_by_field" (a vision/audio tower the config
    describes), "tower_built_by_code" (a vision tower no field states), "mtp" (multi-token-prediction layers). `assume`: the reading taken of each field the config
    leaves open (derive_readings)."""
    where = repo or path
    c = _Config(config, where, assume=assume)
    shape = _reader(c)(c)
    hidden = c.number("hidden_size")  # every reader has read it: the width a tensor-parallel group all-reduces
    layers = shape.layers
    moe = any(layer.experts for layer in layers)
    _unread_structure(c, moe)
    per_layer_total = sum(ly.attention_params + ly.dense_params + ly.experts * ly.expert_params for ly in layers)
    per_layer_active = sum(ly.attention_params + ly.dense_params + ly.experts_per_token * ly.expert_params
                           for ly in layers)
    outer = shape.embedding_params + shape.head_params
    routed = [ly for ly in layers if ly.experts]
    kv = sum(ly.kv_bytes_per_token for ly in layers)
    state = sum(ly.state_bytes for ly in layers)
    window = _window(c, layers)
    attention, kv_heads = _attention_kind(c, layers)
    mixers = {}
    for layer in layers:
        mixers[layer.mixer] = mixers.get(layer.mixer, 0) + 1
    notes = ["; ".join(f"{n} x {mixer}" for mixer, n in mixers.items()) + " layers", *shape.notes]
    if window:
        notes.append(f"windowed layers hold the KV of at most {window} tokens per stream (window_tokens, "
                     "window_kv_bytes_per_token); only the other layers' KV grows with the context and counts in "
                     "attn_flops_per_ctx_token")
    if state:
        notes.append("recurrent layers keep a fixed state per stream (state_bytes_per_stream, at 2 bytes per value); "
                     "only the attention layers' KV grows with the context")
    c.part = "context_max"
    context = _context(c)
    c.part = "native_precision"
    precision = _precision(c)
    c.part = "notes"
    notes += dict.fromkeys(c.notes)  # once each: a per-layer reading (an MLP's width) notes itself on every layer
    if c.model_type is None:
        notes.append("no model_type: read by its fields")
    if c.defaulted:
        notes.append(f"fields the config leaves out read at the {c.model_type} family's defaults: "
                     + ", ".join(f"{key} {value}" for key, value in c.defaulted.items()))
    left_out = set()
    if c.multimodal:
        left_out.add("vision_tower_by_field")
        notes.append("language model only: the vision/audio tower is not counted" + _tower_note(config, where))
    elif c.quirk("vision_tower_in_code"):  # a tower the config does not state: nothing to count it from
        left_out.add("tower_built_by_code")
        notes.append("language model only: the vision tower its code builds (not stated in the config) is not counted")
    if c.get("num_nextn_predict_layers") or c.get("mtp_num_hidden_layers") or c.get("num_mtp_modules"):
        left_out.add("mtp")
        notes.append("multi-token-prediction layers are not served and not counted")
    return {
        "model_id": model_id or slug(repo),
        "name": repo.split("/")[-1] if repo else model_id,
        "vendor": repo.split("/")[0] if repo else "user",
        "arch": "moe" if moe else "dense",
        "total_params_b": _b(outer + per_layer_total),
        "active_params_b": _b(outer + per_layer_active),
        "active_params_in_b": None,
        "experts": routed[0].experts if moe else None,
        "experts_per_token": routed[0].experts_per_token if moe else None,
        "shared_experts": shape.shared_experts if moe else None,
        "layers": len(layers),
        "hidden_size": hidden,
        "kv_bytes_per_token": float(kv),
        "kv_cache_dtype": KV_CACHE_DTYPE,
        "context_max": context,
        "native_precision": precision,
        "source": f"derived from {repo} config.json" if repo else f"derived from {path}",
        "uncertain": None,
        "notes": "; ".join(notes),
        "attn_flops_per_ctx_token": float(sum(ly.attn_flops_per_ctx_token for ly in layers)),
        "hf_repo": repo,
        "api_ids": None,
        "hf_ids": None,
        "state_bytes_per_stream": float(state) if state else None,
        "window_tokens": window,
        "window_kv_bytes_per_token": float(sum(ly.window_kv_bytes_per_token for ly in layers)) if window else None,
        "attention": attention,
        "kv_heads": kv_heads,
    }, {part: keys for part, keys in c.read.items() if part != "notes"}, frozenset(left_out)


def _switch(c: _Config, key: str, default: bool) -> bool:
    """A true-or-false field of a tower's or connector's class, read from the block's own fields as the class reads
    it: its default when left out, and a stated null as false, for each class builds nothing for None
    (SiglipVisionTransformer: use_head = config.vision_use_head when the config has the field, then `if
    self.use_head`; LlavaMultiModalProjector and InternAttention pass multimodal_projector_bias and qkv_bias as
    nn.Linear's bias, which adds one only `if bias`; InternAttention builds q_norm and k_norm `if
    self.qk_normalization`). Anything else is refused naming the field."""
    value = c.top.get(key, default)
    if value is not None and not isinstance(value, bool):
        raise c.error(key, f"is not true or false ({value!r:.40})", top=c.prefix == "")
    return bool(value)


# The vision towers read by field, each as the transformers class named beside it builds it (a field the config leaves
# out read at that class's default only where said), keyed by the vision_config's model_type, else (a Qwen2.5-VL
# config written before its vision config had one) the family's: the class its ForConditionalGeneration builds.
def _vit_block(dim: int, width: int, norms: int, gated: bool = False) -> int:
    """One encoder block of the ViTs read: biased q, k, v and output projections, a biased MLP (fc1 and fc2, or gated:
    gate, up and down) `width` wide, and its two norms' `norms` parameters (LayerNorms 4 x dim, RMSNorms 2 x dim)."""
    mlp = 3 * dim * width + 2 * width + dim if gated else 2 * dim * width + width + dim
    return 4 * dim * dim + 4 * dim + mlp + norms


def _clip_tower(v: _Config) -> float:
    """CLIPVisionTransformer (modeling_clip.py): CLIPVisionEmbeddings' unbiased patch convolution, class and position
    embeddings (the patches and the class token); CLIPEncoderLayer's biased q, k, v, o and ungated fc1, fc2, two
    LayerNorms; the pre- and post-LayerNorms. num_channels 3 when left out (CLIPVisionConfig)."""
    hidden, width, layers = v.number("hidden_size"), v.number("intermediate_size"), v.number("num_hidden_layers")
    positions = (v.number("image_size") // v.number("patch_size")) ** 2 + 1
    params = v.number("num_channels", 3) * v.number("patch_size") ** 2 * hidden + hidden + positions * hidden + 4 * hidden
    return params + layers * _vit_block(hidden, width, 4 * hidden)


def _siglip_tower(v: _Config) -> float:
    """SiglipVisionTransformer (modeling_siglip.py): SiglipVisionEmbeddings' biased patch convolution and a position
    embedding per patch (no class token); SiglipEncoderLayer's biased q, k, v, out_proj, two LayerNorms and SiglipMLP's
    ungated, biased fc1, fc2; the post-LayerNorm; and SiglipMultiheadAttentionPoolingHead (a probe, nn.MultiheadAttention's
    in_proj and out_proj with biases, a LayerNorm, a SiglipMLP) unless `vision_use_head` is false or null (the class
    builds it when the config has no such field: _switch). num_channels 3 when left out (SiglipVisionConfig)."""
    hidden, width, layers = v.number("hidden_size"), v.number("intermediate_size"), v.number("num_hidden_layers")
    params = v.number("num_channels", 3) * v.number("patch_size") ** 2 * hidden + hidden
    params += (v.number("image_size") // v.number("patch_size")) ** 2 * hidden + 2 * hidden  # positions, post_layernorm
    params += layers * _vit_block(hidden, width, 4 * hidden)
    head = hidden + _vit_block(hidden, width, 2 * hidden)  # the probe, attention, one LayerNorm, the MLP
    return params + (head if _switch(v, "vision_use_head", True) else 0)


def _qwen2_vl_tower(v: _Config) -> float:
    """Qwen2VisionTransformerPretrainedModel (modeling_qwen2_vl.py): PatchEmbed's unbiased Conv3d over
    temporal_patch_size x patch_size x patch_size; per Qwen2VLVisionBlock two LayerNorms, VisionAttention's biased qkv
    and proj, VisionMlp's ungated, biased fc1, fc2 of int(embed_dim x mlp_ratio); PatchMerger: a LayerNorm (ln_q) and
    two biased linears, embed_dim x spatial_merge_size^2 wide, out to `hidden_size` (the language model's width)."""
    dim, ratio = v.number("embed_dim"), v.need("mlp_ratio")
    if not isinstance(ratio, int | float) or isinstance(ratio, bool) or not 0 < ratio <= MLP_RATIO_MAX:
        raise v.error("mlp_ratio", f"is not a width in embed_dims ({ratio!r})")
    width = int(dim * ratio)
    if not width:  # int(1,280 x 1e-4): an MLP of no width describes no tower
        raise v.error("mlp_ratio", f"gives an MLP int({dim:,} x {ratio!r}) = 0 wide")
    return (_qwen_patches(v, dim) + v.number("depth") * _vit_block(dim, width, 4 * dim)
            + _merger(v, dim, v.number("hidden_size"), 2 * dim))


def _qwen2_5_vl_tower(v: _Config) -> float:
    """Qwen2_5_VisionTransformerPretrainedModel (modeling_qwen2_5_vl.py): Qwen2_5_VisionPatchEmbed's unbiased Conv3d;
    per Qwen2_5_VLVisionBlock two RMSNorms, a biased qkv and proj, and Qwen2_5_VLMLP(bias=True): gated, biased
    gate_proj, up_proj, down_proj of `intermediate_size` (Qwen2-VL's is ungated); Qwen2_5_VLPatchMerger: an RMSNorm
    (ln_q) and two biased linears, hidden_size x spatial_merge_size^2 wide, out to `out_hidden_size`."""
    dim, width = v.number("hidden_size"), v.number("intermediate_size")
    return (_qwen_patches(v, dim) + v.number("depth") * _vit_block(dim, width, 2 * dim, gated=True)
            + _merger(v, dim, v.number("out_hidden_size"), dim))


def _qwen3_vl_tower(v: _Config, deepstack: bool = True) -> float:
    """Qwen3VLVisionModel (modeling_qwen3_vl.py; Qwen3-VL-MoE's is the same class): Qwen3VLVisionPatchEmbed's biased
    Conv3d; pos_embed, `num_position_embeddings` x hidden_size; per Qwen3VLVisionBlock two LayerNorms, a biased qkv and
    proj, Qwen3VLVisionMLP's ungated, biased linear_fc1, linear_fc2 of `intermediate_size`; the merger
    (Qwen3VLVisionPatchMerger: a LayerNorm of hidden_size, then hidden_size x spatial_merge_size^2 in, as wide, out to
    `out_hidden_size`) and one more per `deepstack_visual_indexes` entry, its LayerNorm over the merged width
    (use_postshuffle_norm)."""
    dim, width = v.number("hidden_size"), v.number("intermediate_size")
    params = (_qwen_patches(v, dim) + dim + v.number("num_position_embeddings") * dim
              + v.number("depth") * _vit_block(dim, width, 4 * dim))
    out, wide = v.number("out_hidden_size"), dim * v.number("spatial_merge_size") ** 2
    params += _merger(v, dim, out, 2 * dim)
    if not deepstack:
        return params
    # one merger per entry: each a layer of the tower whose features it merges, so at most `depth` distinct ones
    stack, depth = v.need("deepstack_visual_indexes"), v.number("depth")
    if not isinstance(stack, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < depth
                                              for i in stack) or len(set(stack)) != len(stack):
        raise v.error("deepstack_visual_indexes", f"is not a list of distinct layers from 0 to {depth - 1} "
                                                  f"({stack!r:.60})")
    return params + len(stack) * _merger(v, dim, out, 2 * wide)


def _qwen3_5_tower(v: _Config) -> float:
    """Qwen3_5VisionModel (modeling_qwen3_5.py; Qwen3.5-MoE's the same): Qwen3VLVisionModel less the deepstack mergers,
    which its __init__ deletes whatever the config says (a quirk of the class, by its model_type)."""
    return _qwen3_vl_tower(v, deepstack=False)


def _qwen_patches(v: _Config, dim: int) -> int:
    """The Conv3d the Qwen ViTs embed patches with (its bias apart: Qwen3-VL's has one): in_channels (3 when left out,
    as Qwen2VLVisionConfig, Qwen2_5_VLVisionConfig and Qwen3VLVisionConfig default) x temporal_patch_size x
    patch_size^2 per output. The Hub's Qwen2-VL and 2.5-VL configs write in_chans, which no class reads: read only
    where it says what in_channels does, refused naming it where it says otherwise."""
    channels = v.number("in_channels", 3)
    chans = v.top.get("in_chans")
    if chans is not None and (not isinstance(chans, int) or isinstance(chans, bool)):
        raise v.error("in_chans", f"is not a count ({chans!r:.40})")
    if chans is not None and chans != channels:
        raise v.error("in_chans", f"is {chans:,}, where in_channels (the field the class reads) is {channels}: the "
                                  f"reader does not choose")
    return channels * v.number("temporal_patch_size") * v.number("patch_size") ** 2 * dim


def _merger(v: _Config, dim: int, out: int, norm: int) -> int:
    """A Qwen PatchMerger: its ln_q (`norm` parameters), then dim x spatial_merge_size^2 in, as wide, out to `out`."""
    wide = dim * v.number("spatial_merge_size") ** 2
    return norm + wide * wide + wide + wide * out + out


# InternViT's norms by norm_type: NORM2FN in OpenGVLab's modeling_intern_vit.py (InternRMSNorm, a weight; nn.LayerNorm,
# a weight and a bias), parameters per width
_INTERN_VIT_NORMS = {"rms_norm": 1, "layer_norm": 2}


def _intern_vit_tower(v: _Config) -> float:
    """InternVisionModel (OpenGVLab's remote code modeling_intern_vit.py, as InternVL2, 2.5 and 3 ship it; vLLM's
    vllm/model_executor/models/intern_vit.py builds the same weights): InternVisionEmbeddings' class_embedding, a
    biased patch Conv2d over 3 channels (in_channels=3, whatever num_channels says) and a position_embedding for
    (image_size / patch_size)^2 patches and the class token; per InternVisionEncoderLayer InternAttention's qkv (biased
    by qkv_bias) and biased proj, a q_norm and k_norm (InternRMSNorm of the width) when qk_normalization, InternMLP's
    ungated, biased fc1 and fc2, norm1 and norm2 (NORM2FN[norm_type]) and the layer-scale vectors ls1, ls2. No final
    norm. InternVisionEncoder builds all num_hidden_layers and the checkpoint holds them all, whatever layer
    InternVLChatModel's select_layer takes its features from (vLLM's internvl.py builds only the layers up to it,
    num_hidden_layers_override: with -1, as the configs found state, that is all of them). Left out,
    qkv_bias, qk_normalization and norm_type read at InternVisionConfig's defaults (false, true, "rms_norm":
    configuration_intern_vit.py)."""
    hidden, width, layers = v.number("hidden_size"), v.number("intermediate_size"), v.number("num_hidden_layers")
    patch = v.number("patch_size")
    positions = (v.number("image_size") // patch) ** 2 + 1
    switches = {key: _switch(v, key, default) for key, default in (("qkv_bias", False), ("qk_normalization", True))}
    # InternViT-300M-448px-V2_5's vision_config (InternVL3's) carries mixture-of-experts fields (num_experts 8,
    # moe_intermediate_size, shared experts) beside use_moe false: read as the dense InternMLP the class builds, and
    # any use_moe but false or absent refused, never counted as one dense MLP
    if v.get("use_moe") not in (None, False):
        raise v.error("use_moe", f"makes InternViT's MLP a mixture of experts the reader does not count "
                                 f"({v.get('use_moe')!r})")
    norm = v.get("norm_type", "rms_norm")
    if not isinstance(norm, str) or norm not in _INTERN_VIT_NORMS:
        raise v.error("norm_type", f"is not a norm InternViT builds ({norm!r}; NORM2FN: 'rms_norm', 'layer_norm')")
    attention = 3 * hidden * hidden + (3 * hidden if switches["qkv_bias"] else 0) + hidden * hidden + hidden
    attention += 2 * hidden if switches["qk_normalization"] else 0
    block = attention + 2 * hidden * width + width + hidden + 2 * _INTERN_VIT_NORMS[norm] * hidden + 2 * hidden
    return hidden + 3 * patch * patch * hidden + hidden + positions * hidden + layers * block


_VISION_TOWERS = {"clip_vision_model": _clip_tower, "siglip_vision_model": _siglip_tower, "qwen2_vl": _qwen2_vl_tower,
                  "qwen2_5_vl": _qwen2_5_vl_tower, "qwen3_vl": _qwen3_vl_tower, "qwen3_vl_moe": _qwen3_vl_tower,
                  "qwen3_5": _qwen3_5_tower, "qwen3_5_moe": _qwen3_5_tower, "intern_vit_6b": _intern_vit_tower}


# The connector each multimodal class puts between its tower and the language model, by the config's top-level
# model_type: (the config's fields, vision hidden size, the language model's) -> parameters. The Qwen ViTs end in
# their own merger.
def _llava_projector(c: _Config, vision: int, text: int) -> int:
    """LlavaMultiModalProjector (modeling_llava.py): linear_1 (vision hidden x the number of `vision_feature_layer`s
    concatenated -> text hidden) and linear_2 (text -> text), biased unless `multimodal_projector_bias` is false
    (LlavaConfig: one feature layer, -2, and biases when left out)."""
    layers, bias = c.top.get("vision_feature_layer", -2), _switch(c, "multimodal_projector_bias", True)
    if isinstance(layers, list) and layers and all(isinstance(n, int) for n in layers):
        vision *= len(layers)
    elif not isinstance(layers, int) or isinstance(layers, bool):
        raise c.error("vision_feature_layer", f"is not a layer or a list of layers ({layers!r})", top=True)
    return vision * text + text * text + (2 * text if bias else 0)


def _gemma3_projector(c: _Config, vision: int, text: int) -> int:
    """Gemma3MultiModalProjector (modeling_gemma3.py): mm_input_projection_weight (vision x text hidden, no bias) and
    mm_soft_emb_norm, an RMSNorm of the vision width; its average pooling holds no parameters."""
    return vision * text + vision


def _internvl_projector(c: _Config, vision: int, text: int) -> int:
    """InternVLChatModel's mlp1 (OpenGVLab's remote code modeling_internvl_chat.py): after the pixel shuffle that
    folds (1 / downsample_ratio)^2 patches into one, a LayerNorm of vision hidden x int(1 / downsample_ratio)^2, a
    Linear from that width to the language model's hidden size, a GELU, a Linear from it to itself (downsample_ratio
    0.5 when left out: InternVLChatConfig). Refused, not counted: LoRA adapters (use_backbone_lora, use_llm_lora: a
    rank, 0 for none), which get_peft_model adds to the tower's or the language model's linears as weights of their
    own; and InternVL3.5-Flash's flash_mode, flash_relative_threshold, flash_absolute_threshold, stated beside the
    mlp2, pooling_before_gating and gating modules its remote code builds beside mlp1 in flash mode (any flash_*
    field stated, whatever its value). These are the top-level InternVLChatConfig's fields, named with its
    model_type, not the language model's."""
    for key in ("use_backbone_lora", "use_llm_lora"):
        rank = c.top.get(key)
        if rank not in (None, 0, False):
            raise c.error(key, f"adds LoRA adapters the reader does not count ({rank!r})", top=True)
    flash = next((key for key in ("flash_mode", *sorted(c.top)) if key.startswith("flash_")
                  and c.top.get(key) is not None), None)
    if flash:
        raise c.error(flash, f"configures InternVL's flash mode, whose mlp2, pooling_before_gating and gating modules "
                             f"beside mlp1 the reader does not count ({c.top[flash]!r:.40})", top=True)
    ratio = c.top.get("downsample_ratio", 0.5)
    if not isinstance(ratio, int | float) or isinstance(ratio, bool) or not 1 / 16 <= ratio <= 1:
        raise c.error("downsample_ratio", f"is not a pixel-shuffle ratio from 1/16 to 1 ({ratio!r})", top=True)
    wide = vision * int(1 / ratio) ** 2
    return 2 * wide + wide * text + text + text * text + text


# The Qwen families, whose ViT ends in its own merger (no projector beside it)
_OWN_MERGER = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe")
_PROJECTORS = {"llava": _llava_projector, "gemma3": _gemma3_projector,
               "internvl_chat": _internvl_projector} | dict.fromkeys(_OWN_MERGER)


def vision_tower_params(config: dict, repo: str) -> float:
    """The parameters of a multimodal config's vision tower and projector, which the row does not count (it prices the
    language model), read by field as its transformers class builds it (_VISION_TOWERS, _PROJECTORS), so that a
    publisher's whole-model figure is compared with the whole model. Any other tower, or a projector whose class is not
    read, is refused naming the field that describes it, never counted as nothing."""
    if not isinstance(config, dict) or not isinstance(config.get("vision_config"), dict):
        field = next((k for k in ("img_processor", "vision_encoder", "vision_config", "embd_layer")
                      if k in (config or {})),
                     "vision_config")
        raise ModelConfigError(f"{repo}: config.json field '{field}' does not state the vision tower's sizes")
    v = _Config(config["vision_config"], repo, prefix="vision_config.")
    family = config.get("model_type")
    kind = v.model_type or family  # a vision config without a model_type is its family's class
    if not isinstance(kind, str) or kind not in _VISION_TOWERS:
        what = (f"names a vision tower the reader does not count ({kind!r})" if v.model_type else
                f"is not stated, and the family's own tower ({family!r}) is not one the reader counts")
        raise v.error("model_type", what)
    if not isinstance(family, str) or family not in _PROJECTORS:
        raise ModelConfigError(f"{repo}: config.json field 'model_type' names a family whose projector the reader "
                               f"does not count ({family!r}, beside a {kind} tower)")
    # A Qwen family's class builds its own ViT from vision_config whatever model_type it names there
    # (Qwen2VLConfig.sub_configs), whose merger is the only connector: "no projector" holds for that tower alone, and
    # a Qwen ViT is counted only under its own family
    if (family in _OWN_MERGER or kind in _OWN_MERGER) and kind != family:
        raise ModelConfigError(f"{repo}: config.json field 'model_type' names a family ({family!r}) that does not "
                               f"build the {kind} tower its vision_config describes with the connector the reader "
                               f"counts")
    params = _VISION_TOWERS[kind](v)
    if _PROJECTORS[family]:
        c = _Config(config, repo)
        text = c.number("hidden_size")  # the language model's, at its class default if left out
        params += _PROJECTORS[family](c, v.number("hidden_size"), text)
    if not params <= TOWER_PARAMS_MAX:  # each size within its bounds, their product need not be
        raise ModelConfigError(f"{repo}: config.json field 'vision_config' describes a tower of {params:.3g} "
                               f"parameters with its projector, above the plausible {TOWER_PARAMS_MAX:.3g}")
    return float(params)


def _tower_note(config: dict, where: str) -> str:
    """The size of the tower left out, where the reader can count it."""
    try:
        return f" ({vision_tower_params(config, where) / 1e9:.2f}B with its projector, read from vision_config)"
    except ModelConfigError:
        return ""


# Words of a field's name that say it shapes the layers (which route to experts, how many, per-layer kinds and sizes):
# such a field, stated and not read, is refused naming it, never read as absent. Experts: any non-zero count; the
# layers that route (only where there are experts); per-layer lists and kinds (non-empty).
_EXPERT_WORDS = (("expert",),)
_ROUTING_WORDS = (("dense", "layer"), ("moe", "layer"), ("moe", "freq"), ("moe", "interval"), ("moe", "step"),
                  ("sparse", "step"), ("sparse", "layer"))
_PER_LAYER_WORDS = (("per_layer",), ("layer", "types"), ("block", "type"), ("type_list",))
# a switch saying the output head shares the input embedding, under a name other than the ones read
# (tie_word_embeddings, share_embedding): stated true and not read, the head would be counted twice
_TIED_WORDS = (("emb", "shar"), ("emb", "tie"))
# a switch turning the experts off (MiniMind's use_moe, read), under a name not read: stated false in a config whose
# expert fields are read, the experts would be counted for a model that builds none
_MOE_SWITCH_WORDS = (("use", "moe"), ("enable", "moe"))
# an attention output gate (a g_proj beside q_proj: Laguna's `gating`, per head or per element by generation) under
# a name other than the one read (attn_output_gate): stated and not read, its projection would count as nothing
_GATING_WORDS = (("gating",),)
_NOT_STRUCTURE = {"attention_types"}  # GPT-Neo's attention_layers spelled again (GPTNeoConfig expands one to the other)
# Any other field whose name speaks of the model's shape, stated on (true, a positive number, a non-empty list or
# object) and not read, is refused naming it: a new mechanism under a new spelling would otherwise read as absent.
# Nandi-Mini-150M's factorized_embedding / embedding_rank (a 131,072 x 196 table and a projection) and layer_sharing /
# layer_sharing_repeats (16 layers run twice) read 0.236B for a 0.15B model, and HRM-Text's H_cycles / L_cycles (its
# layers run in repeated cycles) would multiply the compute per token unseen. A name speaks of the shape by a word of
# a group (split on "_" and "."): layers shared, repeated or run in cycles; a factorized or low-rank part; an
# embedding with a rank, a factor, a projection or a width; layers, blocks or stacks with a counting word.
_SHAPE_WORDS = (
    {"share", "sharing", "shared", "reuse", "reused", "repeat", "repeats", "repeated", "recur", "recurrent",
     "recurrence", "recursive", "recursion", "cycle", "cycles", "loop", "loops", "iteration", "iterations", "iters"},
    {"factorized", "factorised", "factorization", "factorisation", "rank", "lowrank"},
)
_SHAPE_PAIRS = (
    ({"embedding", "embeddings", "embed", "emb", "embd"}, {"rank", "factor", "proj", "projection", "dim", "size",
                                                          "width"}),
    ({"layer", "layers", "block", "blocks", "stack", "stacks", "depth"}, {"num", "n", "number", "count", "total"}),
    # a universal transformer's steps: Ouro's total_ut_steps runs every layer that many times, each with its KV cache
    ({"ut", "universal"}, {"steps", "step"}),
)
# Fields no unread value of which changes the parameter count, the active count, the KV cache or the compute per
# token, by a word of their name (or, where a word would say too much, the whole name); consulted only for a name
# the words above flag. Chosen from every fixture config's fields the reader does not read; the guard's cost and catch,
# set by set with only the words earlier sets taught, are measured in tests/transforms/test_model_config.py.
_HARMLESS_WORDS = frozenset({
    # labels: which class, not how many weights (token ids, caches and kernels hold no shape word to excuse: a
    # shared_layer_ids or kv_cache_share_layers is a shape, so those words excuse nothing)
    "label", "label2id", "id2label",
    # training only: dropout, initialisation, auxiliary losses and their weights
    "dropout", "pdrop", "init", "initializer", "xavier", "std", "aux", "loss", "coef",
    # numerics: norm epsilons, precision and fused kernels, scaling factors and multipliers (muP, softcapping)
    "eps", "epsilon", "fp32", "fp16", "dtype", "fusion", "fused", "kernels", "upcast", "overlap", "scale",
    "scaling", "scaled", "scalar", "multiplier", "mult", "mup", "softcapping",
    # positions: rope, YaRN, ALiBi and their bases (the served context is read by its own fields)
    "rope", "rotary", "theta", "yarn", "alibi", "ntk", "logn", "xpos",
    # generation defaults (PretrainedConfig writes no_repeat_ngram_size into config.json)
    "beams", "beam", "penalty", "temperature", "sample", "ngram",
    # a vision, audio or video tower's fields: the row counts the language model (vision_tower_params the tower)
    "vision", "visual", "vit", "image", "img", "video", "audio", "media", "patch",
    # multi-token-prediction layers: not served and not counted
    "mtp", "nextn",
})
# Whole names: read where they count (HunYuan's cla_share_factor under use_cla, which the reader reads; Mamba's
# time_step_rank, the dt rank the Mamba-1 reader reads and a Mamba-2 config keeps beside no dt rank)
_HARMLESS_NAMES = frozenset({"cla_share_factor", "time_step_rank"})


def _words(name: str) -> set[str]:
    return set(re.split(r"[_.]", name.lower()))


def _shapes(name: str) -> bool:
    """Whether a field's name speaks of the model's shape (_SHAPE_WORDS, _SHAPE_PAIRS) and of nothing harmless."""
    words = _words(name)
    if name in _HARMLESS_NAMES or words & _HARMLESS_WORDS:
        return False
    return any(words & group for group in _SHAPE_WORDS) or any(words & a and words & b for a, b in _SHAPE_PAIRS)


def _on(value) -> bool:
    """Stated and switched on: true, a positive number, a non-empty list or object."""
    if isinstance(value, bool):
        return value
    return bool(value) and (isinstance(value, list | dict) or isinstance(value, int | float) and value > 0)


def _unread_structure(c: _Config, moe: bool) -> None:
    """Refuse a field that shapes the layers stated under a name the reader did not read: a spelling it does not know
    would read as absent (Ling-lite-1.5's num_shared_experts, before it was known, gave 2.27B active for 2.75B;
    MobileLLM's share_embedding, an untied head for a tied one: 0.143B for 124.6M)."""
    read = {name.rsplit(".", 1)[-1] for name in c.read.get("shape", {})}
    known = read | set(_EXPERT_COUNTS) | set(_EXPERTS_PER_TOKEN) | set(_SHARED_EXPERTS) | _NOT_STRUCTURE | _ROUTING
    # the name check (_shapes) reads every field of the text model: its own, the top level beside a text_config (read
    # where the text_config leaves a field out) and the nested blocks read; the checks by kind read its own fields
    fields = [(key, value, True) for key, value in c.text.items()]
    fields += [(key, value, False) for key, value in (c.top.items() if c.text is not c.top else ())]
    fields += [(f"{block}.{key}", value, False) for block in _NESTED if isinstance(c.text.get(block), dict)
               for key, value in c.text[block].items()]
    for key, value, own in fields:
        name = key.lower()
        if own and key not in known and value is True and any(all(w in name for w in words) for words in _TIED_WORDS):
            raise c.error(key, "says whether the output head shares the embedding under a name the reader does not "
                               "read (true)")
        if (own and key not in known and value is False and moe
                and any(all(w in name for w in words) for words in _MOE_SWITCH_WORDS)):
            raise c.error(key, "may switch the experts off under a name the reader does not read (false)")
        if (own and key not in known and value not in (False, None, "", [], "none")
                and any(all(w in name for w in words) for words in _GATING_WORDS)):
            raise c.error(key, f"may gate the attention output under a name the reader does not read ({repr(value)[:60]})")
        if key.rsplit(".", 1)[-1] in known or name.startswith("mtp_") or "nextn" in name:
            continue  # multi-token-prediction layers are not served and not counted
        said = _says(key) or next((size for size, names in _ALIASES.items() if key in names), None)
        if said and any(c.text.get(spelled) == value for spelled in _spellings(said) if spelled != key):
            continue  # the size read, repeated under a name that says it (gpt-oss's experts_per_token, Mamba's n_layer)
        count = own and not isinstance(value, bool) and isinstance(value, int | float) and value
        if count and any(all(w in name for w in words) for words in _EXPERT_WORDS):
            raise c.error(key, f"counts experts under a name the reader does not read ({value!r})")
        if count and moe and any(all(w in name for w in words) for words in _ROUTING_WORDS):
            raise c.error(key, f"says which layers route to experts under a name the reader does not read ({value!r})")
        if (own and isinstance(value, list) and value
                and any(all(w in name for w in words) for words in _PER_LAYER_WORDS)):
            raise c.error(key, f"gives per-layer kinds or sizes the reader does not read ({repr(value)[:60]})")
        if _on(value) and _shapes(key):
            raise c.error(key, "shapes the model by its name (layers shared, repeated or cycled, a factorized "
                               "embedding, a count of layers) under a name the reader does not read "
                               f"({repr(value)[:60]})")


def _window(c: _Config, layers: list[_Layer]) -> int | None:
    """The one window of the model's windowed layers (None: none); two different windows are refused."""
    windows = {ly.window_tokens: ly.window_field for ly in layers if ly.window_tokens}
    if len(windows) > 1:
        field = windows[max(windows)]
        raise c.error(field, f"gives a window of {max(windows)} tokens beside one of {min(windows)}: the catalogue "
                             "holds one window per model")
    return next(iter(windows), None)


def _attention_kind(c: _Config, layers: list[_Layer]) -> tuple[str, int | None]:
    """(gqa | mla | none, the KV heads of the layers whose cache grows with the context, else of the windowed layers)."""
    kinds = {ly.attention for ly in layers if ly.attention}
    if not kinds:  # state-space layers only: nothing cached per token, no KV head to split
        return "none", None
    # where every attention layer is windowed (StarCoder 2), the windowed layers' heads are the ones held
    heads = ({ly.kv_heads for ly in layers if ly.kv_bytes_per_token}
             or {ly.kv_heads for ly in layers if ly.window_kv_bytes_per_token})
    if len(kinds) != 1 or len(heads) != 1:  # every reader gives one kind, one head count where the cache grows
        raise c.error("num_key_value_heads", f"gives attention the reader cannot reduce to one kind and head count "
                                             f"({sorted(kinds)}, {sorted(heads)})")
    return kinds.pop(), heads.pop()
