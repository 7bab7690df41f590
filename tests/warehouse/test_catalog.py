import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from transforms import gpu_names
from warehouse import catalog, db

SHARED_PROVIDERS_NAMES = {
    # providers.md §1.5 (vast gpu_name), §2.3 (RunPod type ids), §3.3 (Verda gpu.description without "Nx ");
    # (name, memory) where one name covers two sizes
    "vastai": ["H200", "H200 NVL", "H100 SXM", "H100 PCIE", "H100 NVL", "B200", ("GH200 SXM", 96), ("A100 SXM4", 40),
               ("A100 PCIE", 80), ("A100 SXM", 80), "A100X", "A800 PCIE", "L40S", "L40", "L4", "A40", "A30", "A10",
               "A10g", ("Tesla V100", 32), "Tesla T4", "RTX 5090", "RTX 5080", "RTX 4090", "RTX 4090D", "RTX 4080S",
               "RTX 4070S Ti", "RTX 3090", "RTX 3090 Ti", "RTX A6000", "RTX 6000Ada", "RTX 5880Ada", "RTX PRO 6000",
               "RTX PRO 6000 S", "RTX PRO 6000 WS", "RTX PRO 6000 Max-Q", "Q RTX 8000", "InstinctMI250X",
               "RX 7900 XTX", "PRO W7900", "B300", "B300 PC"],
    "runpod": ["NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL",
               "NVIDIA B200", "NVIDIA B300 SXM6 AC", "NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA L40S",
               "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
               "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
               "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
               "NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb", "AMD Instinct MI300X OAM"],
    "verda": ["B200 SXM6 180GB", "B300 SXM6 268GB", "B300 SXM6 262GB", "H200 SXM5 141GB", "H100 SXM5 80GB",
              "A100 SXM4 80GB", "A100 SXM4 40GB", "RTX6000 Ada 48GB", "RTX 6000 Ada 48GB", "RTX PRO 6000 96GB",
              "RTX A6000 48GB", "Tesla V100 16GB", "L40S 48GB", "AMD 7900XTX", "GB200 186GB", "GB300 288GB"],
}
# vast lists "RTX 4090 Ti", a card that never shipped: no specs to map it to, so it is left to unmapped_gpus.
DELIBERATELY_UNMAPPED = {("vastai", "RTX 4090 Ti")}


@pytest.fixture
def reference(tmp_path) -> Path:
    """A writable copy of the reference catalogues."""
    return Path(shutil.copytree(catalog.REFERENCE_DIR, tmp_path / "reference"))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_the_reference_catalogues_cover_both_pages():
    frames = catalog.read_all()
    gpus = frames["gpus"]
    assert gpus.height >= 108
    assert gpus.filter(pl.col("label_001").is_not_null()).height == 105
    assert gpus.filter(pl.col("label_000").is_not_null()).height == 18
    assert {"deepseek-v4-flash", "deepseek-v4.1-flash"} <= set(frames["models"]["model_id"])
    assert frames["models"].height >= 8
    assert set(frames["models"]["arch"]) == {"dense", "moe"}


def test_values_solved_from_a_page_stay_marked():
    gpus = catalog.read_all()["gpus"]
    solved = gpus.filter(pl.col("solved_from_page"))
    assert solved.height > 0
    assert all("page 00" in source for source in solved["source"])


def resolved(provider: str, names: list) -> pl.DataFrame:
    frames = catalog.read_all()
    pairs = [(n, None) if isinstance(n, str) else (n[0], float(n[1])) for n in names]
    return gpu_names.resolve(pl.DataFrame(pairs, schema=gpu_names.NAMES_SCHEMA, orient="row"),
                             gpu_names.catalogue(frames["gpus"], frames["gpu_aliases"], provider))


def test_every_provider_string_in_the_fixtures_and_the_notes_resolves_to_a_part():
    import json

    fixtures = Path(__file__).parents[1] / "fixtures" / "sources"
    names = {p: set(ns) for p, ns in SHARED_PROVIDERS_NAMES.items()}
    names["vastai"] |= {(o["gpu_name"], o["gpu_ram"] / 1024)
                        for o in json.loads((fixtures / "vastai_bundles.json").read_text())["offers"]}
    names["runpod"] |= {(t["id"], t["memoryInGb"])
                        for t in json.loads((fixtures / "runpod_gputypes.json").read_text())["data"]["gpuTypes"]}
    for t in json.loads((fixtures / "verda_instance_types.json").read_text()):
        if t["gpu"]["number_of_gpus"]:
            names["verda"].add(re.sub(r"^\d+x ", "", t["gpu"]["description"]))
    for provider, ns in names.items():
        frame = resolved(provider, sorted(ns, key=str))
        unmapped = {(provider, raw) for raw in frame.filter(pl.col("gpu").is_null())["gpu_raw"]}
        assert unmapped == DELIBERATELY_UNMAPPED & unmapped, frame.filter(pl.col("gpu").is_null()).rows()


def test_aliases_are_only_the_exceptions_the_resolver_cannot_read():
    frames = catalog.read_all()
    aliases = frames["gpu_aliases"].join(frames["gpus"].select("name", "memory_gb"), left_on="gpu", right_on="name")
    for row in aliases.iter_rows(named=True):
        without = gpu_names.catalogue(frames["gpus"], frames["gpu_aliases"].clear(), row["provider"])
        memory = row["memory_gb"] or row["memory_gb_right"]
        got = gpu_names.resolve(pl.DataFrame({"gpu_raw": [row["gpu_raw"]], "gpu_memory_gb": [memory]}), without)
        assert got["gpu"][0] != row["gpu"], f"{row['provider']} {row['gpu_raw']!r}: the resolver alone finds it"


def test_aliases_never_merge_form_factors():
    frames = catalog.read_all()
    aliases = frames["gpu_aliases"]
    for raw, gpu in zip(aliases["gpu_raw"], aliases["gpu"], strict=True):
        for tag in ("PCIe", "NVL", "MIG"):  # as a word: NVLINK (the SXM board's fabric) is not NVL (a PCIe card)
            if re.search(rf"(?<![a-z]){tag}(?![a-z])", raw, re.IGNORECASE):
                assert tag.lower() in gpu.lower(), (raw, gpu)


def test_hardware_prices_keep_the_quoted_currency_and_date():
    prices = catalog.read_all()["hardware_prices"]
    assert set(prices["currency"]) == {"CNY"}
    h200 = prices.filter((pl.col("gpu") == "H200 SXM") & (pl.col("price_kind") == "market")).row(0, named=True)
    # the page shows $224,393-$233,369 at 6.68 CNY per USD (quoted ¥1.50M-¥1.56M)
    assert h200["price_low"] == pytest.approx(224393 * 6.6847, abs=5)
    assert str(h200["quoted_on"]) == "2026-09-16"


def test_a_missing_column_names_the_file_and_the_column(reference):
    edit(reference / "gpus.csv", ",tdp_w,", ",tdp_watts,")
    with pytest.raises(catalog.CatalogError, match=r"^gpus.csv:1: missing column 'tdp_w'$"):
        catalog.read_all(reference)


def test_a_duplicate_key_names_both_lines(reference):
    path = reference / "models.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[3]]) + "\n")
    with pytest.raises(catalog.CatalogError, match=rf"^models.csv:{len(lines) + 1}: column 'model_id': "
                                                   r"duplicate key \('llama-3.3-70b',\) \(first on line 4\)$"):
        catalog.read_all(reference)


def test_a_non_numeric_value_names_file_line_and_column(reference):
    edit(reference / "gpus.csv", "H200 SXM,NVIDIA,141,4800,", "H200 SXM,NVIDIA,141,fast,")
    line = next(i for i, row in enumerate((reference / "gpus.csv").read_text().splitlines(), 1)
                if row.startswith("H200 SXM,"))
    with pytest.raises(catalog.CatalogError,
                       match=rf"^gpus.csv:{line}: column 'bandwidth_gbs': 'fast' is not a number$"):
        catalog.read_all(reference)


def test_an_alias_to_an_unknown_gpu_is_refused(reference):
    edit(reference / "gpu_aliases.csv", "vastai,H200,,H200 SXM,", "vastai,H200,,H200 SXMX,")
    with pytest.raises(catalog.CatalogError, match=r"^gpu_aliases.csv:2: column 'gpu': 'H200 SXMX' is not a name"):
        catalog.read_all(reference)


def test_a_required_value_cannot_be_empty(reference):
    edit(reference / "models.csv", "llama-3.3-70b,Llama 3.3 70B Instruct,Meta,dense,70.55",
         "llama-3.3-70b,Llama 3.3 70B Instruct,Meta,dense,")
    with pytest.raises(catalog.CatalogError, match=r"models.csv:4: column 'total_params_b': a value is required"):
        catalog.read_all(reference)


def test_loading_twice_changes_nothing():
    with db.connect() as con:
        assert set(catalog.load_catalogs(con).values()) == {"loaded"}
        before = {t: con.sql(f"select * from {t} order by all").fetchall() for t in ("gpus", "models", "catalog_versions")}
        assert set(catalog.load_catalogs(con).values()) == {"unchanged"}
        after = {t: con.sql(f"select * from {t} order by all").fetchall() for t in ("gpus", "models", "catalog_versions")}
    assert before == after


def test_a_changed_file_replaces_its_table_and_a_bad_one_leaves_the_old_tables(reference):
    with db.connect() as con:
        catalog.load_catalogs(con, reference)
        edit(reference / "models.csv", "Llama 3.3 70B Instruct", "Llama 3.3 70B")
        assert catalog.load_catalogs(con, reference)["models"] == "loaded"
        assert con.execute("select name from models where model_id = 'llama-3.3-70b'").fetchall() == [("Llama 3.3 70B",)]
        edit(reference / "gpus.csv", "H200 SXM,NVIDIA,141,4800,", "H200 SXM,NVIDIA,141,fast,")
        with pytest.raises(catalog.CatalogError):
            catalog.load_catalogs(con, reference)
        assert con.execute("select count(*) from gpus").fetchall()[0][0] >= 108


def test_curated_rows_win_over_user_rows_and_user_rows_over_derived_ones(reference):
    def row(model_id: str, repo: str | None, **fields) -> dict:
        return {"model_id": model_id, "name": model_id, "vendor": "v", "arch": "dense", "total_params_b": 1.0,
                "active_params_b": 1.0, "native_precision": "bf16", "source": "test", "hf_repo": repo} | fields

    def origins(con) -> dict[str, str]:
        return dict(con.execute("select model_id, origin from models where origin <> 'curated' or model_id in "
                                "('qwen3-8b', 'phi-4')").fetchall())

    with db.connect() as con:
        catalog.load_catalogs(con, reference)
        catalog.replace_models(con, "derived", catalog.models_frame(
            [row("vl-8b", "Qwen/Qwen3-VL-8B-Instruct"), row("mine-too", "owner/mine"), row("soon-curated", "x/soon")]))
        catalog.replace_models(con, "user", catalog.models_frame([row("mine", "OWNER/Mine"), row("phi-4-mine", None)]))
        assert origins(con) == {"qwen3-8b": "curated", "phi-4": "curated", "vl-8b": "derived", "soon-curated": "derived",
                                "mine": "user", "phi-4-mine": "user"}  # mine-too gave way: its repository is mine's
        edit(reference / "models.csv", "Qwen/Qwen3-14B,,", "Qwen/Qwen3-14B,x/soon,")  # a curated row takes x/soon
        catalog.load_catalogs(con, reference)
        assert origins(con) == {"qwen3-8b": "curated", "phi-4": "curated", "vl-8b": "derived", "mine": "user",
                                "phi-4-mine": "user"}
        catalog.replace_models(con, "derived", catalog.models_frame([row("vl-8b", "Qwen/Qwen3-VL-8B-Instruct",
                                                                         total_params_b=8.19)]),
                               repos=["qwen/qwen3-vl-8b-instruct"])  # one repository's row replaced, the rest stay
        assert con.execute("select total_params_b from models where model_id = 'vl-8b'").fetchall() == [(8.19,)]
        assert con.execute("select count(*) from models where origin <> 'curated'").fetchall() == [(3,)]


def test_every_model_names_its_hugging_face_repository_once():
    models = catalog.read_all()["models"]
    assert models.filter(pl.col("hf_repo").is_null()).height == 0
    assert models["hf_repo"].str.to_lowercase().n_unique() == models.height


def test_a_repository_or_api_id_naming_two_models_is_refused(reference):
    edit(reference / "models.csv", ",meta-llama/Llama-3.1-8B-Instruct,", ",meta-llama/llama-3.3-70b-instruct,")
    with pytest.raises(catalog.CatalogError, match=r"^models.csv:6: column 'hf_repo': 'meta-llama/llama-3.3-70b-instruct'"
                                                   r" already names llama-3.3-70b \(line 4\)$"):
        catalog.read_all(reference)


def test_an_api_id_must_be_owner_and_name(reference):
    edit(reference / "models.csv", ",meta-llama/llama-3.1-8b-instruct\n", ",llama-3.1-8b-instruct\n")
    with pytest.raises(catalog.CatalogError, match=r"^models.csv:6: column 'api_ids': 'llama-3.1-8b-instruct' is not owner/name$"):
        catalog.read_all(reference)


def test_another_checkpoint_naming_two_models_is_refused(reference):
    """hf_repo and hf_ids are one set of Hugging Face ids: a listing of one must map to one model."""
    edit(reference / "models.csv", ",meta-llama/Meta-Llama-3.1-8B-Instruct,", ",meta-llama/Llama-3.3-70B-Instruct,")
    with pytest.raises(catalog.CatalogError, match=r"^models.csv:6: column 'hf_ids': 'meta-llama/Llama-3.3-70B-Instruct'"
                                                   r" already names llama-3.3-70b \(line 4\)$"):
        catalog.read_all(reference)


def test_a_checkpoint_listed_twice_in_its_own_row_is_refused(reference):
    edit(reference / "models.csv", ",meta-llama/Meta-Llama-3.1-8B-Instruct,",
         ",meta-llama/Meta-Llama-3.1-8B-Instruct meta-llama/Llama-3.1-8B-Instruct,")
    with pytest.raises(catalog.CatalogError, match=r"^models.csv:6: column 'hf_ids': 'meta-llama/Llama-3.1-8B-Instruct'"
                                                   r" already names llama-3.1-8b \(line 6\)$"):
        catalog.read_all(reference)


def test_an_hf_id_must_be_owner_and_name(reference):
    edit(reference / "models.csv", ",meta-llama/Meta-Llama-3.1-8B-Instruct,", ",Meta-Llama-3.1-8B-Instruct,")
    with pytest.raises(catalog.CatalogError, match=r"^models.csv:6: column 'hf_ids': 'Meta-Llama-3.1-8B-Instruct' is not owner/name$"):
        catalog.read_all(reference)


def test_the_curated_catalogue_has_fifty_models_with_their_state_windows_and_attention():
    models = catalog.read_all()["models"]
    assert models.height >= 50
    with_state = set(models.filter(pl.col("state_bytes_per_stream").is_not_null())["model_id"])
    assert {"qwen3-next-80b-a3b", "nemotron-3-nano", "qwen3.5-397b-a17b"} <= with_state
    windowed = set(models.filter(pl.col("window_tokens").is_not_null())["model_id"])
    assert {"gpt-oss-120b", "llama-4-scout", "gemma-4-26b-a4b"} <= windowed and not windowed & with_state
    assert models.filter(pl.col("window_tokens").is_null() != pl.col("window_kv_bytes_per_token").is_null()).is_empty()
    assert models["attention"].null_count() == 0 and set(models["attention"]) == {"gqa", "mla"}
    assert set(models.filter(pl.col("attention") == "mla")["kv_heads"]) == {1}  # one latent serves every head
    presets_models = models.filter(pl.col("model_id").is_in(["deepseek-v4-flash", "deepseek-v4.1-flash"]))
    assert presets_models["state_bytes_per_stream"].null_count() == 2  # the reference pages' models hold no state


def test_an_attention_kind_must_be_known(reference):
    edit(reference / "models.csv", ",gqa,8,meta-llama/Llama-3.1-8B-Instruct,", ",mha,8,meta-llama/Llama-3.1-8B-Instruct,")
    with pytest.raises(catalog.CatalogError, match=r"^models.csv:\d+: column 'attention': 'mha' is not one of gqa, mla, none$"):
        catalog.read_all(reference)


# SkyPilot's accelerator names for the legacy cloud parts (catalogs/v8/common/accelerators.csv of
# skypilot-org/skypilot-catalog, commit 001ca549: K80, M60 and Radeon MI25 on Azure, Radeon Pro V520 on AWS), with
# the memory per GPU a cloud reports where it says (AWS DescribeInstanceTypes: g4ad's Radeon Pro V520 8192 MiB).
LEGACY_CLOUD_PARTS = {("K80", None): "Tesla K80 12GB", ("M60", None): "Tesla M60 8GB",
                      ("Radeon MI25", None): "Radeon Instinct MI25 16GB", ("Radeon Pro V520", 8): "Radeon Pro V520 8GB"}


def test_the_legacy_parts_the_cloud_catalogs_list_resolve_to_a_part_with_cited_figures():
    frame = resolved("skypilot", [raw if memory is None else (raw, memory) for raw, memory in LEGACY_CLOUD_PARTS])
    assert dict(zip(frame["gpu_raw"], frame["gpu"], strict=True)) == {raw: part for (raw, _), part in
                                                                     LEGACY_CLOUD_PARTS.items()}
    parts = catalog.read_all()["gpus"].filter(pl.col("name").is_in(list(LEGACY_CLOUD_PARTS.values())))
    for part in parts.iter_rows(named=True):  # every figure a row holds, and a published source named for them
        assert part["memory_gb"] and part["bandwidth_gbs"] and part["bf16_tflops"] and part["tdp_w"], part
        assert "techpowerup.com/gpu-specs/" in part["source"] and not part["solved_from_page"], part
