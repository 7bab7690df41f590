import polars as pl
import pytest

from transforms import gpu_names
from warehouse import catalog

FRAMES = catalog.read_all()


def resolve(raw, memory=None, provider="vastai"):
    names = pl.DataFrame({"gpu_raw": [raw], "gpu_memory_gb": [memory]}, schema=gpu_names.NAMES_SCHEMA)
    row = gpu_names.resolve(names, gpu_names.catalogue(FRAMES["gpus"], FRAMES["gpu_aliases"], provider)).row(
        0, named=True)
    return row["gpu"], row["gpu_rule"]


@pytest.mark.parametrize(("raw", "memory", "part"), [
    # vast.ai spellings
    ("RTX 4070S Ti", 16, "GeForce RTX 4070 Ti SUPER 16GB"),
    ("RTX 4080S", 16, "GeForce RTX 4080 SUPER 16GB"),
    ("GTX 1660 S", 6, "GeForce GTX 1660 SUPER 6GB"),
    ("RTX 2060S", 8, "GeForce RTX 2060 SUPER 8GB"),
    ("RTX 6000Ada", 45, "RTX 6000 Ada 48GB"),
    ("Q RTX 6000", 22.5, "Quadro RTX 6000 24GB"),
    ("Quadro K2200", 4, "Quadro K2200 4GB"),
    ("A100 PCIE", 79.6, "A100 PCIe 80GB"),
    ("Tesla T4", 15, "Tesla T4 16GB"),
    ("A40", 45, "A40 48GB"),
    ("RTX 4090", 22.5, "GeForce RTX 4090 24GB"),
    ("Titan Xp", 12, "Titan Xp 12GB"),
    # RunPod ids, vendor words and dashes
    ("Tesla V100-SXM2-32GB", 32, "Tesla V100 SXM2 32GB"),
    ("Tesla V100-FHHL-16GB", 16, "Tesla V100 FHHL 16GB"),
    ("NVIDIA RTX 4000 Ada Generation", 20, "RTX 4000 Ada 20GB"),
    ("NVIDIA A100-SXM4-80GB", 80, "A100 SXM4 80GB"),
    ("NVIDIA GeForce RTX 3080 Ti", 12, "GeForce RTX 3080 Ti 12GB"),
    ("AMD Instinct MI300X OAM", 192, "Instinct MI300X 192GB"),
    # word order and glued spellings
    ("RTX 4000 Ada SFF", 20, "RTX 4000 SFF Ada 20GB"),
    ("RTX6000 Ada 48GB", None, "RTX 6000 Ada 48GB"),
])
def test_spellings_of_every_source_reach_their_part(raw, memory, part):
    assert resolve(raw, memory)[0] == part


@pytest.mark.parametrize(("raw", "small", "large"), [
    ("RTX 3060", ("GeForce RTX 3060 8GB", 8), ("GeForce RTX 3060 12GB", 12)),
    ("RTX 3080", ("GeForce RTX 3080 10GB", 10), ("GeForce RTX 3080 12GB", 12)),
    ("RTX 2060", ("GeForce RTX 2060 6GB", 6), ("GeForce RTX 2060 12GB", 12)),
    ("RTX 4060 Ti", ("GeForce RTX 4060 Ti 8GB", 8), ("GeForce RTX 4060 Ti 16GB", 16)),
    ("RTX A2000", ("RTX A2000 6GB", 6), ("RTX A2000 12GB", 12)),
    ("RTX 3060 laptop", ("GeForce RTX 3060 Laptop 6GB", 6), ("GeForce RTX 3060 Laptop 12GB", 12)),
    ("GTX 1060", ("GeForce GTX 1060 3GB", 3), ("GeForce GTX 1060 6GB", 6)),
    ("A100 SXM4", ("A100 SXM4 40GB", 39.4), ("A100 SXM4 80GB", 79.2)),
    ("Tesla V100", ("Tesla V100 16GB", 16), ("Tesla V100 32GB", 32)),
])
def test_the_reported_memory_picks_the_variant_and_without_it_the_name_stays_unmapped(raw, small, large):
    assert resolve(raw, small[1]) == (small[0], "name+memory")
    assert resolve(raw, large[1]) == (large[0], "name+memory")
    part, rule = resolve(raw, None)
    assert part is None and rule.startswith("unmapped: 2 parts share this name")


def test_a_laptop_part_never_maps_to_the_desktop_part_nor_the_reverse():
    assert resolve("RTX 3070 laptop", 8)[0] == "GeForce RTX 3070 Laptop 8GB"
    assert resolve("RTX 3070", 8)[0] == "GeForce RTX 3070 8GB"
    # no laptop RTX 3090 exists in the catalogue: the desktop card is not a stand-in
    part, rule = resolve("RTX 3090 Laptop", 24)
    assert part is None and rule.startswith("unmapped: unknown name")


@pytest.mark.parametrize(("raw", "memory", "why"), [
    ("RTX 4090 Ti", 24, "unmapped: unknown name"),  # never shipped
    ("RTX 9090", 48, "unmapped: unknown name"),
    ("RTX 3080", 16, "unmapped: 16.0 GB fits none of GeForce RTX 3080 10GB, GeForce RTX 3080 12GB"),
    ("RTX 4090", 48, "unmapped: 48.0 GB fits none of GeForce RTX 4090 24GB"),  # a modded 48 GB board is not the part
    ("RTX PRO 6000", 96, "unmapped: unknown name"),  # bare on RunPod: server or workstation card
])
def test_names_that_must_stay_unmapped_say_why(raw, memory, why):
    part, rule = resolve(raw, memory, provider="runpod")
    assert part is None and rule.startswith(why)


def test_aliases_come_first_and_are_per_provider():
    assert resolve("H200", 141) == ("H200 SXM", "alias (vast names the SXM part plain H200)")
    assert resolve("H200", 141, provider="runpod")[0] is None
    assert resolve("RTX PRO 6000 S", 96)[0] == "RTX PRO 6000 Blackwell Server Edition"  # S is Server, not SUPER
    assert resolve("GB200 186GB", None, provider="verda")[0] == "GB200 NVL72 GPU"
    assert resolve("GH200 SXM", 96)[0] == "GH200 96GB" and resolve("GH200 SXM", 144)[0] == "GH200 144GB"


def test_memory_in_the_name_stands_in_when_the_listing_reports_none():
    assert resolve("A100 SXM4 40GB", None, provider="verda")[0] == "A100 SXM4 40GB"
    assert resolve("A100 SXM4 40GB", 80, provider="verda")[0] == "A100 SXM4 80GB"  # the listing's memory wins


def test_the_ecc_allowance_is_below_nominal_not_far_above():
    low, high = gpu_names.MEMORY_FIT
    assert resolve("A40", 48 * low)[0] == "A40 48GB"
    assert resolve("A40", 48 * (low - 0.01))[0] is None
    assert resolve("A40", 48 * high)[0] == "A40 48GB"
    assert resolve("A40", 48 * (high + 0.01))[0] is None


def test_a_listings_frame_is_resolved_once_per_distinct_name_and_memory_and_joined_back():
    listings = pl.DataFrame({
        "offer_id": ["1", "2", "3", "4"],
        "gpu_raw": ["RTX 3080", "RTX 3080", "RTX 3080", "Mystery"],
        "gpu_memory_gb": [10.0, 12.0, 10.0, None],
    })
    out = gpu_names.resolve_listings(listings, gpu_names.catalogue(FRAMES["gpus"], FRAMES["gpu_aliases"], "vastai"))
    assert out["offer_id"].to_list() == ["1", "2", "3", "4"]
    assert out["gpu"].to_list() == ["GeForce RTX 3080 10GB", "GeForce RTX 3080 12GB", "GeForce RTX 3080 10GB", None]
    assert out["gpu_rule"][3] == "unmapped: unknown name (key 'MYSTERY')"


def test_every_catalogue_part_resolves_to_itself_by_its_own_name_and_memory():
    parts = FRAMES["gpus"].select(gpu_raw="name", gpu_memory_gb="memory_gb")
    out = gpu_names.resolve(parts, gpu_names.catalogue(FRAMES["gpus"], FRAMES["gpu_aliases"].clear(), "vastai"))
    wrong = out.filter(pl.col("gpu").is_null() | (pl.col("gpu") != pl.col("gpu_raw")))
    assert wrong.is_empty(), wrong.rows()
