"""SkyPilot's catalog on trimmed real files (tests/fixtures/real/skypilot, PROVENANCE.md there)."""

from datetime import date
from pathlib import Path

import httpx
import pytest

from scrapers import skypilot
from scrapers.base import CLUSTER_TIER, SchemaError
from scrapers.settings import SKYPILOT_CLOUDS, SettingsError, from_env
from tests.sources_support import fast_settings, fetch_with, raw
from warehouse import archive

CATALOGS = Path(__file__).parents[1] / "fixtures" / "real" / "skypilot" / "catalogs" / "v8"


def catalog(cloud: str, body: bytes | None = None, status: int = 200, etag: str | None = None):
    response = raw("skypilot", "GET", f"/catalogs/v8/{cloud}/vms.csv",
                   body if body is not None else (CATALOGS / cloud / "vms.csv").read_bytes(), status=status)
    return response if etag is None else response.__class__(**{**response.__dict__, "headers": {"etag": etag}})


def listings(*clouds: str):
    result = skypilot.parse([catalog(c) for c in clouds])
    return result, {(item.offer_id, item.price_kind): item for item in result.listings}


def rows(cloud: str) -> list[str]:
    return (CATALOGS / cloud / "vms.csv").read_text().splitlines()


def test_each_cloud_is_read_by_header_name_whatever_its_column_order():
    # Lambda writes Price before Region and GpuInfo, OCI GpuInfo before Price and SpotPrice after it
    assert rows("lambda")[0].split(",")[5] == "Price" and rows("oci")[0].split(",")[6] == "Price"
    _, by_id = listings("lambda", "oci")
    h100 = by_id[("lambda/gpu_8x_h100_sxm5", "on_demand")]
    assert (h100.native_per_hr, h100.gpu_count, h100.gpu_memory_gb, h100.gpu_raw) == (31.92, 8, 80.0, "H100 SXM")
    oci = by_id[("oci/BM.GPU.H100.8", "on_demand")]
    assert (oci.native_per_hr, oci.gpu_count, oci.gpu_memory_gb, oci.provider) == (80.0, 8, 80.0, "oci")
    assert oci.price_basis == "catalog" and oci.tier == "datacenter" and oci.extras["instance_type"] == "BM.GPU.H100.8"


def test_every_region_at_one_price_is_one_listing_with_its_regions_counted():
    gpu_rows = [r for r in rows("lambda")[1:] if r.startswith("gpu_8x_h100_sxm5,")]
    assert len(gpu_rows) == 3  # one row per region, each at 31.92
    result, by_id = listings("lambda")
    h100 = by_id[("lambda/gpu_8x_h100_sxm5", "on_demand")]
    assert h100.region == "europe-central-1,us-east-1,us-west-1" and h100.extras["regions"] == 3
    assert len(result.listings) == len({r.split(",")[0] for r in rows("lambda")[1:] if r.startswith("gpu_")})


def test_a_type_at_several_prices_is_one_listing_per_price_named_by_its_first_zone():
    _, by_id = listings("cudo")
    montreal = by_id[("cudo/sapphire-rapids-h100_1x2v4gb@ca-montreal-3", "on_demand")]
    norway = by_id[("cudo/sapphire-rapids-h100_1x2v4gb@no-kristiansand-1", "on_demand")]
    assert (montreal.native_per_hr, norway.native_per_hr) == (2.5354, 1.8214000000000001)


def test_the_form_factor_in_the_instance_type_joins_the_gpu_name():
    _, by_id = listings("lambda", "cudo")
    assert by_id[("lambda/gpu_1x_h100_pcie", "on_demand")].gpu_raw == "H100 PCIe"
    assert by_id[("lambda/gpu_1x_h100_sxm5", "on_demand")].gpu_raw == "H100 SXM"
    assert by_id[("cudo/intel-ice-lake-a100-pci_1x2v4gb", "on_demand")].gpu_raw == "A100 PCIe"
    assert by_id[("lambda/gpu_1x_a100", "on_demand")].extras["accelerator"] == "A100"


def test_spot_is_listed_only_where_the_cloud_prices_it():
    _, by_id = listings("nebius", "oci")
    nebius = by_id[("nebius/gpu-h100-sxm_8gpu-128vcpu-1600gb", "interruptible")]
    assert nebius.price_field == "SpotPrice" and nebius.native_per_hr == 10.0
    assert ("nebius/gpu-l40s-a_1gpu-8vcpu-32gb", "interruptible") not in by_id  # no spot for L40S
    assert ("oci/BM.GPU.H100.8", "interruptible") not in by_id and ("oci/VM.GPU3.1", "interruptible") in by_id


def test_a_spot_price_of_zero_is_no_price():
    header = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region"
    line = ('1x-H200-32-65536,H200,1,32,64.0,"{\'Gpus\': [{\'Name\': \'H200\', \'Count\': 1, \'MemoryInfo\': '
            '{\'SizeInMiB\': 143771}}], \'TotalGpuMemoryInMiB\': 143771}",2.65,0.00,"France, FR, EU"')  # vast's file
    result = skypilot.parse([catalog("vast", f"{header}\r\n{line}\r\n".encode())])
    assert [(i.price_kind, i.native_per_hr, i.region) for i in result.listings] == [("on_demand", 2.65, "France, FR, EU")]


def test_gcp_gpu_instances_cost_the_host_plus_their_accelerators():
    host = next(r for r in rows("gcp") if r.startswith("a2-highgpu-1g,") and ",us-central1-a," in r)
    assert host.endswith(",0.73948,0.36975")
    written = ",,,A100,1,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 40960}}]},us-central1,us-central1-a,2.933908,1.17"
    body = "\n".join([rows("gcp")[0], host, written]).encode()  # the A100 row is written in the file's format
    result = skypilot.parse([catalog("gcp", body)])
    a100 = {i.price_kind: i for i in result.listings}
    assert a100["on_demand"].native_per_hr == pytest.approx(0.73948 + 2.933908)
    assert a100["interruptible"].native_per_hr == pytest.approx(0.36975 + 1.17)
    assert a100["on_demand"].offer_id == "gcp/a2-highgpu-1g" and a100["on_demand"].gpu_count == 1


def test_gcp_accelerators_without_a_host_in_their_zone_are_skipped_and_counted():
    result, by_id = listings("gcp")
    assert not [k for k in by_id if "T4" in k[0] or "V100" in k[0]]
    assert "skypilot: gcp: 3 GPU row(s) skipped: an accelerator row with no host VM in its zone" in result.notes


def test_tpu_slices_are_priced_whole_by_chip_and_a_pod_slice_is_a_cluster():
    _, by_id = listings("gcp")
    v2 = by_id[("gcp/tpu-v2-8", "on_demand")]
    assert (v2.gpu_raw, v2.gpu_count, v2.native_per_hr, v2.tier) == ("TPU v2", 4, 4.5, "datacenter")
    pod = by_id[("gcp/tpu-v3-32", "on_demand")]
    assert (pod.gpu_count, pod.tier, pod.max_gpu_count) == (16, CLUSTER_TIER, 16)


def test_the_tpu_placeholder_price_is_quarantined_not_listed():
    body = f"{rows('gcp')[0]}\n,,,tpu-v5p-8,1,tpu-v5p-8,us-east5,us-east5-a,700.0,\n".encode()
    result = skypilot.parse([catalog("gcp", body)])
    assert not result.listings
    assert [(r.offer_id, r.field, r.reason) for r in result.rejected] == [
        ("gcp/tpu-v5p-8", "Price", "placeholder price, not a list price")]


def test_a_reseller_names_the_cloud_that_runs_the_machine():
    _, by_id = listings("shadeform", "primeintellect")
    massed = by_id[("shadeform/massedcompute_A6000x8", "on_demand")]
    assert (massed.provider, massed.reseller, massed.tier) == ("massedcompute", "shadeform", "via shadeform")
    assert massed.gpu_memory_gb == 48  # shadeform writes GiB under SizeInMiB
    assert by_id[("shadeform/lambdalabs_A6000x4", "on_demand")].provider == "lambda"
    prime = by_id[("primeintellect/lambdalabs__8xA100_80GB__240__1800", "on_demand")]
    assert (prime.provider, prime.reseller, prime.gpu_memory_gb) == ("lambda", "primeintellect", 80.0)
    assert prime.region == "AU,US"
    spot_only = by_id[("primeintellect/datacrunch__1xA100_80GB__22__120__SPOT", "interruptible")]
    assert spot_only.provider == "verda" and ("primeintellect/datacrunch__1xA100_80GB__22__120__SPOT",
                                              "on_demand") not in by_id


def test_the_file_version_is_kept_with_every_listing():
    result = skypilot.parse([catalog("hyperbolic", etag='W/"abc123"')])
    assert {i.source_version for i in result.listings} == {'W/"abc123"'}
    assert [(f.cloud, f.status, f.version, f.rows, f.listings) for f in result.files] == [
        ("hyperbolic", "changed", 'W/"abc123"', 3, 3)]


def test_a_missing_or_broken_cloud_file_fails_that_cloud_alone():
    result = skypilot.parse([catalog("nebius"), catalog("azure", b"404: Not Found", status=404),
                             catalog("oci", b"<html><body>rate limited</body></html>")])
    files = {f.cloud: f for f in result.files}
    assert files["nebius"].status == "changed" and files["nebius"].listings == 21
    assert (files["azure"].status, files["azure"].error) == ("failed", "HTTP 404")
    assert files["oci"].status == "failed" and "header lacks InstanceType" in files["oci"].error
    assert {i.extras["cloud"] for i in result.listings} == {"nebius"}


def test_no_cloud_read_fails_the_source():
    with pytest.raises(SchemaError, match="no cloud's file could be read"):
        skypilot.parse([catalog("azure", b"Not Found", status=404)])


def test_the_clouds_are_a_setting_with_every_gpu_cloud_but_the_markets_read_directly():
    assert not {"vast", "runpod", "verda"} & set(SKYPILOT_CLOUDS) and {"aws", "gcp", "lambda", "oci"} <= set(
        SKYPILOT_CLOUDS)
    settings = from_env({"GPULEDGER_SKYPILOT_CLOUDS": "lambda, OCI nebius", "GPULEDGER_SKYPILOT_URL": "http://x"})
    assert settings.skypilot_clouds == ("lambda", "oci", "nebius") and settings.skypilot_url == "http://x"
    with pytest.raises(SettingsError, match="GPULEDGER_SKYPILOT_CLOUDS"):
        from_env({"GPULEDGER_SKYPILOT_CLOUDS": "lambda,../etc"})


def answer_files(etags: dict[str, str], missing=()):
    def answer(request: httpx.Request) -> httpx.Response:
        cloud = request.url.path.split("/")[3]
        if cloud in missing:
            return httpx.Response(404, text="404: Not Found")
        if request.headers.get("if-none-match") == etags[cloud]:
            return httpx.Response(304, headers={"etag": etags[cloud]})
        return httpx.Response(200, content=(CATALOGS / cloud / "vms.csv").read_bytes(), headers={"etag": etags[cloud]})
    return answer


def test_one_request_per_cloud_and_a_missing_file_is_that_clouds_answer():
    settings = fast_settings(skypilot_url="http://replay.test", skypilot_clouds=("lambda", "azure", "nebius"))
    fetched = fetch_with(skypilot, settings, answer_files({"lambda": '"l1"', "nebius": '"n1"'}, missing=("azure",)))
    assert [r.url.path for r in fetched.seen] == [f"/catalogs/v8/{c}/vms.csv" for c in ("lambda", "azure", "nebius")]
    assert [r.status for r in fetched.responses] == [200, 404, 200]
    assert any("azure" in note and "404" in note for note in fetched.client.notes)


def test_an_unchanged_file_is_not_fetched_again_and_the_held_copy_is_read():
    settings = fast_settings(skypilot_url="http://replay.test", skypilot_clouds=("lambda", "nebius"))
    etags = {"lambda": '"l1"', "nebius": '"n1"'}
    first = fetch_with(skypilot, settings, answer_files(etags))
    writer = archive.ArchiveWriter(archive.run_dir("skypilot", date(2026, 11, 26), "run-1"))
    writer.directory.mkdir(parents=True)
    for response in first.responses:
        writer.write(response)
    etags["nebius"] = '"n2"'  # nebius changed upstream since; lambda did not
    second = fetch_with(skypilot, settings, answer_files(etags))
    assert [r.headers.get("if-none-match") for r in second.seen] == ['"l1"', '"n1"']
    assert [(r.status, bool(r.body)) for r in second.responses] == [(304, False), (304, True), (200, True)]
    assert second.responses[1].headers[skypilot.HELD_HEADER].endswith("0001.body.gz")
    result = skypilot.parse(second.responses)
    assert {f.cloud: (f.status, f.version) for f in result.files} == {"lambda": ("unchanged", '"l1"'),
                                                                      "nebius": ("changed", '"n2"')}
    assert len(result.listings) == len(skypilot.parse(first.responses).listings)
