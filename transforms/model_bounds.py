"""Plausibility bounds on a model described by a config.json (fetched from Hugging Face or added by a user): the
sizes and counts the reader reads, and the row it derives, each within what any published model has with wide
room. A config beyond them describes no model anyone serves: one with hidden_size 2^30 derived an 800-trillion-
parameter model whose tensor-parallel group (2^35 GPUs) overflowed the estimates and failed the night; one with
4 million layers took a run 34 s and 1.7 GB to read. The refusal names the field.

Pure Python, no polars (the quick `gpuledger models` commands read it through transforms.model_catalogue).
"""

# The longest context any model serves is ~10M tokens (Llama 4 Scout's 10,485,760).
CONTEXT_MAX = 2**28
# config.json sizes and counts, read by transforms.model_config's number reader: the largest published are 126
# layers, hidden size 16,384, 262,208 vocabulary entries; every other size or count (widths, heads, experts,
# ranks) is at most 2^20 (the widest published MLP: 53,248).
SIZE_MAX = 2**20
CONFIG_MAX = {"num_hidden_layers": 1024, "hidden_size": 2**17, "vocab_size": 2**22, "vocab_size_per_layer_input": 2**22,
              "max_position_embeddings": CONTEXT_MAX, "sliding_window": CONTEXT_MAX,
              "attention_chunk_size": CONTEXT_MAX, "rope_scaling.original_max_position_embeddings": CONTEXT_MAX,
              "expansion_ratio": 64}  # MPT's MLP width in hiddens (published: 4)
# A vision tower's sizes (transforms.model_config's tower readers, keyed by the block they are read from): the
# largest published towers are InternViT-6B's (3,200 wide, 48 layers, a 12,800-wide MLP) and ViT-22B's (6,144 wide,
# a 24,576-wide MLP); patches of 14 or 16 pixels over images of at most a few thousand; 3 channels; a Qwen ViT's temporal patch and
# spatial merge of 2 and its 2,304 learned positions; a Qwen2-VL tower's hidden_size, like every tower's
# out_hidden_size, is the language model's width. Each is a whole number from 1 (a patch or merge of 0 divides by
# zero or reads the merger as nothing), bounded before it is multiplied out.
TOWER_MAX = {"hidden_size": 2**15, "embed_dim": 2**15, "intermediate_size": 2**17, "num_hidden_layers": 256,
             "depth": 256, "image_size": 2**14, "patch_size": 2**10, "num_channels": 64, "in_channels": 64,
             "temporal_patch_size": 16, "spatial_merge_size": 16, "out_hidden_size": CONFIG_MAX["hidden_size"],
             "num_position_embeddings": 2**20}
CONFIG_MAX |= {f"vision_config.{key}": most for key, most in TOWER_MAX.items()}
# A tower and its projector in parameters (InternViT-6B and its mlp1: 6.0B), and the widest MLP a Qwen2-VL tower's
# mlp_ratio may give in embed_dims (published: 4)
TOWER_PARAMS_MAX = 100e9
MLP_RATIO_MAX = 64
# Counts a model cannot have none of (a hidden size of 0 or 0 attention heads divides by zero; a value head or a
# windowed layer's heads of width or count 0 would read its parameters and KV as nothing); others may be 0 (shared
# experts, dense layers first).
CONFIG_MIN = dict.fromkeys(("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size", "head_dim",
                            "v_head_dim", "swa_num_attention_heads", "swa_num_key_value_heads", "swa_head_dim",
                            "swa_v_head_dim", "rope_scaling.original_max_position_embeddings",
                            *(f"vision_config.{key}" for key in TOWER_MAX)), 1)

# A derived row's numbers: (least, most), both included. Parameters in billions (the largest published: 2.4T);
# bytes at the catalogue's 2-byte basis.
ROW_BOUNDS = {
    "total_params_b": (0.0, 50_000.0),
    "active_params_b": (0.0, 50_000.0),
    "layers": (1, 1024),
    "hidden_size": (CONFIG_MIN["hidden_size"], CONFIG_MAX["hidden_size"]),
    "experts": (1, 16_384),
    "experts_per_token": (1, 16_384),
    "shared_experts": (0, 16_384),
    "kv_bytes_per_token": (0.0, 2.0**26),
    "window_tokens": (1, CONTEXT_MAX),
    "window_kv_bytes_per_token": (0.0, 2.0**26),
    "state_bytes_per_stream": (0.0, 2.0**36),
    "attn_flops_per_ctx_token": (0.0, 2.0**30),
    "kv_heads": (1, 2**16),
    "context_max": (1, CONTEXT_MAX),
}


def config_range(key: str) -> tuple[int, int]:
    """(the least, the most) a config.json size or count `key` may be."""
    return CONFIG_MIN.get(key, 0), CONFIG_MAX.get(key, SIZE_MAX)


def _shown(value) -> str:
    """A value as a reason quotes it: a number of thousands of digits (a YaRN factor "2" repeated the original
    length 4,096 times) by its first digits and its length."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:24]}... ({len(text):,} characters)"


def implausible(row: dict) -> str | None:
    """Why a derived model row is beyond the bounds (naming the first field), or None. A field left empty (a dense
    model's experts) is not judged; NaN is within no bounds."""
    for name, (least, most) in ROW_BOUNDS.items():
        value = row.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not least <= value <= most:
            return f"derived field '{name}' is {_shown(value)}, outside the plausible [{least:,}, {most:,}]"
    if row.get("active_params_b") is not None and row["active_params_b"] > row["total_params_b"]:
        return (f"derived field 'active_params_b' is {row['active_params_b']!r}, above total_params_b "
                f"{row['total_params_b']!r}")
    if row.get("experts_per_token") is not None and row.get("experts") is not None \
            and row["experts_per_token"] > row["experts"]:
        return f"derived field 'experts_per_token' is {row['experts_per_token']!r}, above experts {row['experts']!r}"
    return None


def refused_rows(rows: list[dict]) -> dict[str, str]:
    """model_id -> why, for the rows beyond the bounds (a stored row derived by a version without them)."""
    return {row["model_id"]: reason for row in rows if (reason := implausible(row))}


def within_bounds(models):
    """(the models frame without the rows beyond the bounds, model_id -> why for those): the derive step's guard
    against a row stored before these bounds, so that one model never stops a day's tables."""
    refused = refused_rows(models.to_dicts())
    return (models.filter(~models["model_id"].is_in(list(refused))) if refused else models), refused
