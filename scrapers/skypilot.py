"""SkyPilot's catalog: every cloud's instance types and list prices, `GET {base}/catalogs/v8/{cloud}/vms.csv`.

SkyPilot keeps one CSV per cloud (`skypilot-org/skypilot-catalog`, refreshed every few hours from each cloud's own
price API). These are LIST prices, not availability: every listing says `price_basis` `catalog` (a market's
listing says `listing`), and carries the file's ETag (else the sha256 of its body) as `source_version`.

Fetch: one GET per cloud of GPULEDGER_SKYPILOT_CLOUDS, with the ETag of the newest copy in the raw archive as
If-None-Match. A 304 (unchanged) is archived as it came, then the held copy is recorded once more as this run's
answer (status 304, header `x-gpuledger-held-from` naming the archived file), so the day's parse reads it as it
reads a fresh one and a rebuild needs nothing but the day's archive. A cloud answered 404 (or any error status, or
a broken file) fails that cloud alone: the parse records it in `files` with the error, the other clouds load.

Parse, by header name (each cloud writes its own column set and order). One row is one instance type in one region
or zone; a GPU row has an AcceleratorName and a whole AcceleratorCount above 0. Known shapes:
- GCP lists a GPU's price as a row of its own (empty InstanceType) beside the host VM's row: a GPU instance costs
  the host plus its accelerators, in the same zone (GCP_HOSTS below; other GPUs attach to the smallest N1 host).
- TPU slices (`tpu-v5p-8`) are priced per slice: gpu_raw is the chip (`TPU v5p`), gpu_count its chips; a price of
  exactly TPU_PLACEHOLDER_USD is SkyPilot's placeholder, not a price (quarantined). A slice of more chips than one
  host holds is sold whole with ICI between its hosts: tier `cluster`, max_gpu_count its chips. Every other
  instance type is one host with its GPU count (docs/deployability.md).
- AWS lists prices per availability zone, Lambda and OCI every type in every region at one price: rows of one
  instance type, price kind and price collapse into ONE listing whose `region` names the regions (compact storage).
  offer_id is `cloud/instance type`, with `@zone` (the group's first) when one type has several prices.
- Resellers (RESELLERS) name the cloud that runs the machine in the instance type (`massedcompute_A6000x8`,
  `lambdalabs__8xH100_80GB__208__1800`): that cloud is `provider`, the reseller `reseller`, tier `via <reseller>`.
- No spot price, or 0, is no spot listing (0 is not a price); an empty Price with a SpotPrice (primeintellect's
  `__SPOT` types) is a spot listing only. Spot is the `interruptible` price kind, as at the markets.
- GpuInfo is a Python literal (single quotes) or JSON; per-GPU memory is `Gpus[0].MemoryInfo.SizeInMiB`, in MiB,
  or in GiB when below 1024 (shadeform writes 80 for 80 GB); primeintellect writes the instance's total there.
- The form factor is often only in the instance type (Lambda's `gpu_1x_h100_pcie`): a `pcie`/`sxm` token there is
  added to gpu_raw when the accelerator name lacks one; AcceleratorName itself stays in extras.
"""

import ast
import csv
import hashlib
import io
import json
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache

from scrapers.base import (
    CLUSTER_TIER,
    CatalogFile,
    Listing,
    ParseResult,
    RecordError,
    Rejection,
    SchemaError,
    SourceError,
)
from warehouse import archive
from warehouse.records import RawResponse

NAME = "skypilot"
SCHEMA = "v8"
PATH = "/catalogs/" + SCHEMA + "/{cloud}/vms.csv"
PARSES_EVERY_STATUS = True  # a 304's held copy and a cloud's 404 are answers about that cloud
HELD_HEADER = "x-gpuledger-held-from"
REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
RESELLERS = ("shadeform", "primeintellect")
# The reseller's name for a cloud that gpuledger names otherwise.
CLOUD_NAMES = {"lambdalabs": "lambda", "crusoecloud": "crusoe", "datacrunch": "verda"}
MEMORY_IS_TOTAL = ("primeintellect",)  # its GpuInfo SizeInMiB is the instance's, not one GPU's
TPU_PLACEHOLDER_USD = 700.0
NODE_CHIPS = 8  # the most TPU chips one TPU VM host holds (v5e/v6e; four on v2-v5p)
MAX_GPU_GB = 300.0  # no part has more memory: a larger per-GPU figure is not one GPU's
# GCP: the host VM an accelerator row comes with, by accelerator and count (the A2/A3/A4/G2 families bundle them).
GCP_HOSTS = {
    "A100": {1: "a2-highgpu-1g", 2: "a2-highgpu-2g", 4: "a2-highgpu-4g", 8: "a2-highgpu-8g", 16: "a2-megagpu-16g"},
    "A100-80GB": {1: "a2-ultragpu-1g", 2: "a2-ultragpu-2g", 4: "a2-ultragpu-4g", 8: "a2-ultragpu-8g"},
    "H100": {1: "a3-highgpu-1g", 2: "a3-highgpu-2g", 4: "a3-highgpu-4g", 8: "a3-highgpu-8g"},
    "H100-MEGA": {8: "a3-megagpu-8g"},
    "H200": {8: "a3-ultragpu-8g"},
    "B200": {8: "a4-highgpu-8g"},
    "L4": {1: "g2-standard-4", 2: "g2-standard-24", 4: "g2-standard-48", 8: "g2-standard-96"},
}
_TPU = re.compile(r"tpu-(v\d+[a-z]*?)(?:litepod|podslice)?-(\d+)", re.IGNORECASE)
_FORM = re.compile(r"(?:^|[_\-.])(pcie?|sxm\d?)(?:$|[_\-.x])", re.IGNORECASE)


@dataclass(frozen=True)
class Held:
    etag: str
    meta: dict  # the archived response's metadata (warehouse/archive.py)


def cloud_of(raw: RawResponse) -> str:
    match = re.search(r"/catalogs/[^/]+/([^/]+)/vms\.csv$", raw.path)
    if not match:
        raise SchemaError(NAME, raw.path, "not a catalogs/<version>/<cloud>/vms.csv path")
    return match[1]


def held_copies(clouds: tuple[str, ...]) -> dict[str, Held]:
    """The newest archived copy with an ETag of each cloud's file (the raw archive, newest day first)."""
    found: dict[str, Held] = {}
    for meta in archive.newest_metadata(NAME):
        if len(found) == len(clouds):
            break
        cloud = re.search(r"/catalogs/[^/]+/([^/]+)/vms\.csv$", meta.get("path", ""))
        etag = (meta.get("headers") or {}).get("etag")
        if (cloud and cloud[1] in clouds and cloud[1] not in found and etag and meta.get("bytes")
                and meta.get("status") in (200, 304)):
            found[cloud[1]] = Held(etag, meta)
    return found


async def fetch(client, settings) -> list[RawResponse]:
    clouds = settings.skypilot_clouds
    try:
        held = held_copies(clouds)
    except (OSError, archive.ArchiveError) as exc:
        client.note(f"{NAME}: no held copies read ({exc}); every file fetched whole")
        held = {}
    base = settings.skypilot_url.rstrip("/")
    for cloud in clouds:
        copy = held.get(cloud)
        try:
            answer = await client.request("GET", base + PATH.format(cloud=cloud), accept=(304,),
                                          headers={"If-None-Match": copy.etag} if copy else {})
        except SourceError as exc:  # this cloud's failure alone; the parse records it from the archived answer
            client.note(f"{NAME}: {cloud}: {exc}")
            continue
        if answer.status == 304 and copy is None:  # unchanged since nothing this archive holds: that cloud's failure
            client.note(f"{NAME}: {cloud}: HTTP 304 to a request without an ETag")
        elif answer.status == 304:
            try:
                body = archive.read_body(copy.meta)
            except archive.ArchiveError as err:
                client.note(f"{NAME}: {cloud}: unchanged, but the held copy is unreadable: {err}")
                continue
            client.record(replace(answer, body=body, headers=answer.headers | {
                "etag": copy.etag, HELD_HEADER: f"{copy.meta['_dir']}/{copy.meta['body_file']}"}))
    return client.responses


def parse(responses: list[RawResponse]) -> ParseResult:
    """Listings of every cloud whose file was read; each cloud's outcome in `files` (failed ones with the error)."""
    result = ParseResult()
    latest: dict[str, RawResponse] = {}
    for raw in responses:  # a 304's held copy follows its empty 304: the last answer with a body stands
        cloud = cloud_of(raw)
        if raw.body or cloud not in latest:
            latest[cloud] = raw
    for cloud, raw in latest.items():
        version = (raw.headers.get("etag") or "").strip() or hashlib.sha256(raw.body).hexdigest()[:16]
        status = "unchanged" if raw.status == 304 and raw.body else "changed" if raw.ok else "failed"
        file = CatalogFile(cloud, raw.status, status, raw.fetched_at, version if raw.body else None,
                           hashlib.sha256(raw.body).hexdigest() if raw.body else None)
        if status == "failed":
            result.files.append(replace(file, error=f"HTTP {raw.status}" + (" (no held copy)" if raw.status == 304
                                                                             else "")))
            continue
        try:
            rows, listings, rejected, notes = parse_cloud(cloud, raw, file.version)
        except SchemaError as exc:  # a broken file fails its cloud alone
            result.files.append(replace(file, status="failed", error=str(exc)))
            continue
        result.record_count += rows
        result.listings += listings
        result.rejected += rejected
        result.notes += notes
        result.files.append(replace(file, rows=rows, listings=len(listings)))
    if not any(f.status != "failed" for f in result.files):
        failed = "; ".join(f"{f.cloud}: {f.error}" for f in result.files) or "no catalog file answered"
        raise SchemaError(NAME, PATH.format(cloud="*"), f"no cloud's file could be read ({failed})")
    return result


def _read(cloud: str, raw: RawResponse) -> list[dict]:
    try:
        text = raw.body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SchemaError(NAME, raw.path, f"not UTF-8 text ({exc.reason})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise SchemaError(NAME, raw.path, f"{cloud}: header lacks {', '.join(missing)} (got {header[:12]})",
                          field=missing[0])
    try:
        return list(reader)
    except csv.Error as exc:
        raise SchemaError(NAME, raw.path, f"{cloud}: unreadable CSV ({exc})") from None


def _price(value: str | None, field: str) -> float | None:
    """A price cell: None when empty or 0 (0 is not a price); RecordError when not a number."""
    text = (value or "").strip()
    if not text:
        return None
    try:
        price = float(text)
    except ValueError:
        raise RecordError(field, f"non-numeric {text[:40]!r}") from None
    if price != price or price in (float("inf"), float("-inf")):
        raise RecordError(field, f"not a finite number: {text!r}")
    return price if price > 0 else None


def _count(value: str | None) -> float | None:
    text = (value or "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise RecordError("AcceleratorCount", f"non-numeric {text[:40]!r}") from None


@lru_cache(maxsize=4096)
def gpu_info(text: str) -> dict:
    """GpuInfo as a dict: JSON, else a Python literal; {} when it is neither (GCP's TPU rows name the slice)."""
    text = (text or "").strip()
    if not text.startswith("{"):
        return {}
    for reader in (json.loads, ast.literal_eval):
        try:
            value = reader(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        return value if isinstance(value, dict) else {}
    return {}


def memory_gb(cloud: str, info: dict, count: int) -> float | None:
    """Per-GPU memory in GB as the file gives it (see the module docstring); None when it gives none."""
    gpus = info.get("Gpus") if isinstance(info, dict) else None
    first = gpus[0] if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict) else {}
    size = (first.get("MemoryInfo") or {}).get("SizeInMiB") if isinstance(first.get("MemoryInfo"), dict) else None
    try:
        size = float(size)
    except (TypeError, ValueError):
        return None
    if size <= 0:
        return None
    gb = size if size < 1024 else size / 1024
    if cloud in MEMORY_IS_TOTAL and count:
        gb /= count
    return round(gb, 2) if gb <= MAX_GPU_GB else None


def seller(cloud: str, instance_type: str) -> tuple[str, str | None]:
    """(provider, reseller): the cloud itself, or for a reseller the cloud its instance type names."""
    if cloud not in RESELLERS:
        return cloud, None
    head = instance_type.split("__", 1)[0] if "__" in instance_type else instance_type.split("_", 1)[0]
    head = head.strip().lower()
    return CLOUD_NAMES.get(head, head) or cloud, cloud


def gpu_name(accelerator: str, instance_type: str) -> tuple[str, int]:
    """(gpu_raw, chips per unit): a TPU slice's chip and chip count, else the accelerator with the instance type's
    form factor when the name lacks one."""
    tpu = _TPU.fullmatch(accelerator.strip())
    if tpu:
        generation, size = tpu[1].lower(), int(tpu[2])
        # v2-v5p slices count TensorCores (two a chip); v5e (litepod) and v6e count chips
        per_chip = 1 if ("litepod" in accelerator.lower() or generation in ("v5e", "v6e")) else 2
        chip = "v5e" if "litepod" in accelerator.lower() else generation
        return f"TPU {chip}", max(size // per_chip, 1)
    form = _FORM.search(instance_type)
    if form and not re.search(r"pcie|sxm|nvl", accelerator, re.IGNORECASE):
        return f"{accelerator} {'PCIe' if form[1].lower().startswith('pci') else 'SXM'}", 1
    return accelerator, 1


def parse_cloud(cloud: str, raw: RawResponse, version: str) -> tuple[int, list[Listing], list[Rejection], list[str]]:
    """(rows read, listings, rejections, notes) of one cloud's file."""
    rows = _read(cloud, raw)
    hosts = _gcp_hosts(rows) if cloud == "gcp" else {}
    groups: dict[tuple, dict] = {}
    rejected: list[Rejection] = []
    skipped = defaultdict(int)
    for row in rows:
        accelerator = (row.get("AcceleratorName") or "").strip()
        instance_type = (row.get("InstanceType") or "").strip()
        if not accelerator:
            continue
        try:
            count = _count(row.get("AcceleratorCount"))
            if not count:
                continue
            if count != int(count):
                skipped["a fraction of a GPU"] += 1
                continue
            prices = {"on_demand": _price(row.get("Price"), "Price"),
                      "interruptible": _price(row.get("SpotPrice"), "SpotPrice") if "SpotPrice" in row else None}
        except RecordError as exc:
            rejected.append(Rejection(f"{cloud}/{instance_type or accelerator}", exc.field, exc.reason, row))
            continue
        raw_name, chips = gpu_name(accelerator, instance_type)
        gpu_count = int(count) * chips
        zone = (row.get("AvailabilityZone") or "").strip() or (row.get("Region") or "").strip()
        if raw_name.startswith("TPU "):  # a TPU slice is priced whole by its own row (GCP leaves InstanceType empty)
            instance_type = instance_type or accelerator
        elif not instance_type:  # GCP: an accelerator priced on its own; the instance adds its host VM
            host = _host_for(hosts, accelerator, int(count), zone)
            if host is None:
                skipped["an accelerator row with no host VM in its zone"] += 1
                continue
            host_type, host_prices = host
            instance_type = host_type if host_type in GCP_HOSTS.get(accelerator, {}).values() else \
                f"{host_type}+{int(count)}x{accelerator}"
            prices = {kind: (p + host_prices[kind]) if p and host_prices.get(kind) else None
                      for kind, p in prices.items()}
        if raw_name.startswith("TPU ") and prices["on_demand"] == TPU_PLACEHOLDER_USD:
            rejected.append(Rejection(f"{cloud}/{instance_type}", "Price", "placeholder price, not a list price", row,
                                      "on_demand"))
            prices["on_demand"] = None
        provider, reseller = seller(cloud, instance_type)
        memory = memory_gb(cloud, gpu_info(row.get("GpuInfo") or ""), int(count))
        region = (row.get("Region") or "").strip()
        for kind, price in prices.items():
            if price is None:
                continue
            key = (instance_type, kind, price)
            group = groups.setdefault(key, {
                "provider": provider, "reseller": reseller, "gpu_raw": raw_name, "gpu_count": gpu_count,
                "memory": memory, "accelerator": accelerator, "regions": set(), "zones": set(), "row": row,
                "vcpus": row.get("vCPUs"), "memory_gib": row.get("MemoryGiB")})
            group["regions"].add(region)
            group["zones"].add(zone)
    per_type = defaultdict(int)
    for instance_type, kind, _ in groups:
        per_type[(instance_type, kind)] += 1
    listings = []
    for (instance_type, kind, price), g in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1],
                                                                                    min(item[1]["zones"]))):
        offer_id = f"{cloud}/{instance_type}"
        if per_type[(instance_type, kind)] > 1:
            offer_id += f"@{min(g['zones'])}"
        regions = sorted(r for r in g["regions"] if r)
        # a TPU slice past one host is sold whole, its hosts joined by ICI: a provider cluster of that many chips
        pod = g["gpu_raw"].startswith("TPU ") and g["gpu_count"] > NODE_CHIPS
        listings.append(Listing(
            offer_id=offer_id, price_kind=kind, price_field="Price" if kind == "on_demand" else "SpotPrice",
            native_per_hr=price, gpu_raw=g["gpu_raw"], gpu_count=g["gpu_count"], fetched_at=raw.fetched_at,
            gpu_memory_gb=g["memory"], region=",".join(regions) or None,
            max_gpu_count=g["gpu_count"] if pod else None,
            tier=CLUSTER_TIER if pod else f"via {g['reseller']}" if g["reseller"] else "datacenter",
            provider=g["provider"], reseller=g["reseller"], price_basis="catalog", source_version=version,
            extras={"cloud": cloud, "instance_type": instance_type, "accelerator": g["accelerator"],
                    "regions": len(regions), "zones": len(g["zones"]), "vcpus": g["vcpus"],
                    "memory_gib": g["memory_gib"]},
            record=g["row"]))
    notes = [f"{NAME}: {cloud}: {n} GPU row(s) skipped: {why}" for why, n in sorted(skipped.items())]
    return len(rows), listings, rejected, notes


def _gcp_hosts(rows: list[dict]) -> dict[str, dict[str, tuple[str, dict]]]:
    """GCP host VMs without accelerators, by zone: instance type -> {on_demand, interruptible} prices."""
    hosts: dict[str, dict[str, tuple[str, dict]]] = defaultdict(dict)
    for row in rows:
        instance_type = (row.get("InstanceType") or "").strip()
        if not instance_type or (row.get("AcceleratorName") or "").strip():
            continue
        zone = (row.get("AvailabilityZone") or "").strip() or (row.get("Region") or "").strip()
        try:
            prices = {"on_demand": _price(row.get("Price"), "Price"),
                      "interruptible": _price(row.get("SpotPrice"), "SpotPrice")}
        except RecordError:
            continue
        if prices["on_demand"]:
            hosts[zone][instance_type] = (instance_type, prices)
    return hosts


def _host_for(hosts: dict, accelerator: str, count: int, zone: str) -> tuple[str, dict] | None:
    """The host VM of a GCP accelerator row: its family's type for that count, else the zone's cheapest N1 VM
    (GPUs that attach to any N1 machine)."""
    in_zone = hosts.get(zone, {})
    family = GCP_HOSTS.get(accelerator)
    if family is not None:
        name = family.get(count)
        return in_zone.get(name) if name else None
    n1 = [v for k, v in in_zone.items() if k.startswith("n1-")]
    return min(n1, key=lambda v: v[1]["on_demand"]) if n1 else None
