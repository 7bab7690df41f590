"""One GPU name resolver for every source: a raw name and the listing's reported memory -> a catalogue part.

A raw name is reduced to a key: upper case, vendor words (NVIDIA, GeForce, Tesla, Quadro, AMD, Radeon,
Instinct) dropped, glued spellings split (`RTX6000`, `6000Ada`, `7900XTX`), the GeForce `S` suffix read as
SUPER (`RTX 4070S Ti`, `GTX 1660 S`), `SXM2/4/5/6` read as `SXM`, `Laptop/Mobile` as `LAPTOP`, a size token
(`80GB`) taken out as the name's memory, and the remaining words sorted, so word order does not matter
(`RTX 4000 Ada SFF` = `RTX 4000 SFF Ada`). Each catalogue part's name is reduced the same way.

Resolution, first rule that applies:
1. `alias`: gpu_aliases.csv names the part for this provider's exact spelling (true exceptions only, such as
   vast's bare `H200` for the SXM part); an alias with a memory size applies within the memory allowance.
2. `name`: the key matches one part and the reported memory fits it (or nothing is reported).
3. `name+memory`: the key matches several parts (RTX 3080 10/12 GB, A100 40/80 GB) and the reported memory
   fits exactly one of them.
Anything else stays unmapped and says why: an unknown name, several parts and no memory to tell them apart,
or a memory no variant fits. A laptop part never matches a desktop part: `LAPTOP` is part of the key.

Reported memory may sit below the nominal size (ECC or driver-reserved memory: an A40 reports ~45 GB, a T4
~15 GB) or a little above it (GiB against GB): a part fits when reported / nominal is within MEMORY_FIT.
Pure polars; `resolve` works on distinct (gpu_raw, gpu_memory_gb) pairs, so callers resolve each spelling once
and join the result back to their listings.
"""

from dataclasses import dataclass

import polars as pl

MEMORY_FIT = (0.88, 1.03)  # reported / nominal memory: ECC and reserved memory below, GiB rounding above
RULES = ("alias", "name", "name+memory")
_VENDOR_WORDS = ("NVIDIA", "GEFORCE", "TESLA", "QUADRO", "AMD", "RADEON", "INSTINCT", "GENERATION", "OAM",
                 "HBM2", "HBM2E", "HBM3", "HBM3E")
_MEMORY_TOKEN = r"^(\d+(?:\.\d+)?)GB$"
NAMES_SCHEMA = {"gpu_raw": pl.String, "gpu_memory_gb": pl.Float64}


@dataclass(frozen=True)
class Catalogue:
    """What the resolver matches against: each part's key and memory, and one provider's aliases."""

    parts: pl.DataFrame  # name, memory_gb, key
    aliases: pl.DataFrame  # provider, gpu_raw, memory_gb, gpu, note


def _tokens(name: pl.Expr) -> pl.Expr:
    """A raw name as a list of normalised words (memory tokens included)."""
    text = name.str.to_uppercase().str.replace_all(r"[_\-/,()]", " ")
    for pattern, replacement in (
        (r"\b(RTX|GTX)(\d)", "${1} ${2}"),  # RTX6000 Ada
        (r"(\d)(ADA|XTX|XT)\b", "${1} ${2}"),  # 6000Ada, 7900XTX
        (r"(\d)\s+GB\b", "${1}GB"),  # 16 GB
        (r"\b((?:RTX|GTX) \d{4}) ?S\b", "${1} SUPER"),  # RTX 4070S Ti, GTX 1660 S (RTX PRO 6000 S is not SUPER)
        (r"\bSXM\d\b", "SXM"),  # the SXM generation follows from the chip
        (r"\bMAX Q\b", "MAXQ"),
        (r"\b(MOBILE|NOTEBOOK)\b", "LAPTOP"),
        (r"^Q RTX\b", "RTX"),  # vast's Quadro spelling
    ):
        text = text.str.replace_all(pattern, replacement)
    return text.str.split(" ").list.eval(
        pl.element().filter((pl.element() != "") & ~pl.element().is_in(list(_VENDOR_WORDS))))


def keyed(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Add `key` (sorted words without memory tokens) and `name_memory_gb` (a size written in the name)."""
    words = _tokens(pl.col(column))
    is_memory = pl.element().str.contains(_MEMORY_TOKEN)
    return frame.with_columns(
        key=words.list.eval(pl.element().filter(~is_memory)).list.sort().list.join(" "),
        name_memory_gb=words.list.eval(pl.element().filter(is_memory).str.extract(_MEMORY_TOKEN).cast(pl.Float64))
        .list.first(),
    )


def catalogue(gpus: pl.DataFrame, aliases: pl.DataFrame, provider: str) -> Catalogue:
    """The catalogue as the resolver needs it, for one provider's aliases."""
    parts = keyed(gpus.select("name", "memory_gb"), "name").select("name", "memory_gb", "key")
    return Catalogue(parts, aliases.filter(pl.col("provider") == provider))


def _fits(reported: pl.Expr, nominal: pl.Expr) -> pl.Expr:
    ratio = reported / nominal
    return (ratio >= MEMORY_FIT[0]) & (ratio <= MEMORY_FIT[1])


def resolve(names: pl.DataFrame, cat: Catalogue) -> pl.DataFrame:
    """Add `gpu` (the part or null) and `gpu_rule` (the rule used, or why it stays unmapped) to distinct names.

    `names` holds gpu_raw and gpu_memory_gb (per-GPU GB as reported, may be null); other columns pass through.
    """
    frame = keyed(names.with_row_index("_name"), "gpu_raw").with_columns(
        _memory=pl.coalesce("gpu_memory_gb", "name_memory_gb"))
    alias = (
        frame.select("_name", "gpu_raw", "_memory")
        .join(cat.aliases.select("gpu_raw", "gpu", "note", alias_gb="memory_gb"), on="gpu_raw")
        .filter(pl.col("alias_gb").is_null() | _fits(pl.col("_memory"), pl.col("alias_gb")).fill_null(False))
        .sort("_name", pl.col("alias_gb").is_null())
        .unique("_name", keep="first")
        .select("_name", alias_gpu="gpu",
                alias_rule=pl.when(pl.col("note").is_not_null()).then(pl.format("alias ({})", "note"))
                .otherwise(pl.lit("alias")))
    )
    candidates = frame.select("_name", "key", "_memory").join(cat.parts, on="key")
    by_name = (
        candidates.with_columns(_fit=_fits(pl.col("_memory"), pl.col("memory_gb")))
        .group_by("_name")
        .agg(
            parts=pl.len(),
            fitting=pl.col("name").filter(pl.col("_fit")).sort(),
            every=pl.col("name").sort(),
            memory=pl.col("_memory").first(),
        )
        .with_columns(
            name_gpu=pl.when(pl.col("memory").is_null() & (pl.col("parts") == 1)).then(pl.col("every").list.first())
            .when(pl.col("fitting").list.len() == 1).then(pl.col("fitting").list.first()),
        )
        .with_columns(
            name_rule=pl.when(pl.col("name_gpu").is_null() & pl.col("memory").is_null())
            .then(pl.format("unmapped: {} parts share this name and no memory tells them apart",
                            pl.col("parts")))
            .when(pl.col("name_gpu").is_null() & (pl.col("fitting").list.len() == 0))
            .then(pl.format("unmapped: {} GB fits none of {}", pl.col("memory").round(1),
                            pl.col("every").list.join(", ")))
            .when(pl.col("name_gpu").is_null())
            .then(pl.format("unmapped: {} GB fits several parts: {}", pl.col("memory").round(1),
                            pl.col("fitting").list.join(", ")))
            .when(pl.col("parts") == 1).then(pl.lit("name"))
            .otherwise(pl.lit("name+memory"))
        )
        .select("_name", "name_gpu", "name_rule")
    )
    return (
        frame.join(alias, on="_name", how="left")
        .join(by_name, on="_name", how="left")
        .sort("_name")
        .with_columns(
            gpu=pl.coalesce("alias_gpu", "name_gpu"),
            gpu_rule=pl.coalesce("alias_rule", "name_rule", pl.format("unmapped: unknown name (key '{}')", "key")),
        )
        .drop("_name", "key", "name_memory_gb", "_memory", "alias_gpu", "alias_rule", "name_gpu", "name_rule")
    )


def resolve_listings(frame: pl.DataFrame, cat: Catalogue) -> pl.DataFrame:
    """`resolve` over the distinct (gpu_raw, gpu_memory_gb) pairs of a listings frame, joined back."""
    pairs = frame.select(list(NAMES_SCHEMA)).unique()
    resolved = resolve(pairs, cat)
    return frame.join(resolved, on=list(NAMES_SCHEMA), how="left", nulls_equal=True)
