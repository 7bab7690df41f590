"""The lake's stores: a folder or an object store (`s3://bucket/prefix`), and folders published behind manifests.

The published tables are Delta tables (warehouse/delta.py); what is kept here serves the files beside them: the CSV
exports (`csv/<table>/date=YYYY-MM-DD/`), the report site and the raw mirror. A partition (`<table>/date=YYYY-MM-DD/`) is replaced in three steps, so a reader that follows its manifest
never sees half a file or a mix of two runs:
  1. the new files are written under keys no earlier run used (`part-<run_id>-<hex>-<n>.<fmt>`);
  2. `_manifest.json` (files with rows, bytes and sha256, schema version, run id) is written last, in one
     PUT (an object store) or one rename (a folder), and is from that moment the partition's content;
  3. every other object in the partition is removed (the previous files, anything a crash left).
A manifest reader that finds a listed file gone read the manifest just before a replacement: it reads the
manifest again (`read_partition` does). A reader that lists the folder instead (a glob) may, for the
moment between steps 2 and 3, or after a crash in it until the next run, see both generations.

Object stores are reached through pyarrow's S3 client with the standard AWS variables (credentials,
AWS_REGION/AWS_DEFAULT_REGION, AWS_ENDPOINT_URL for S3-compatible stores); pyarrow's S3FileSystem()
ignores AWS_ENDPOINT_URL when constructed directly (measured with pyarrow 26), so it is passed explicitly.
"""

import hashlib
import json
import mimetypes
import os
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from warehouse import config
from warehouse.archive import atomic_write

MANIFEST = "_manifest.json"
READ_ATTEMPTS = 5  # a manifest reader retries this often when partitions are replaced under it


class LakeError(OSError):
    """A partition that cannot be read back faithfully (bad settings and keys are ValueErrors)."""


def s3_endpoint() -> str | None:
    """AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL: an S3-compatible store (None: AWS itself)."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def s3_region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


class LocalStore:
    """A folder: each object is written to a temporary name, fsynced and renamed into place."""

    def __init__(self, root: Path):
        self.root = root.absolute()
        self.url = str(self.root)

    def _path(self, key: str) -> Path:
        target = (self.root / key).resolve()
        if not target.is_relative_to(self.root.resolve()):
            raise ValueError(f"{key!r} leaves the lake folder {self.root}")
        return target

    def put(self, key: str, data: bytes) -> None:
        atomic_write(self._path(key), data)

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.url}/{key}") from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def folders(self) -> list[str]:
        """The names of the folders at the top of the store."""
        return sorted(p.name for p in self.root.iterdir() if p.is_dir()) if self.root.is_dir() else []

    def list(self, prefix: str) -> list[str]:
        """Every object key under prefix (recursive), relative to the root."""
        folder = self._path(prefix)
        if not folder.is_dir():
            return []
        base = folder.relative_to(self.root.resolve()).as_posix()
        return sorted(name if base == "." else f"{base}/{name}" for name, _ in _files(str(folder)))

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)


class S3Store:
    """An S3 (or S3-compatible) bucket and prefix; a PUT makes an object appear whole or not at all."""

    def __init__(self, url: str):
        from pyarrow import fs  # imported only when an object store is configured: it is slow to import

        parts = urlsplit(url)
        if not parts.netloc:
            raise ValueError(f"{url!r}: an object-store URL names a bucket: s3://bucket/prefix")
        self.url = f"s3://{parts.netloc}{parts.path}".rstrip("/")
        self.base = f"{parts.netloc}{parts.path}".rstrip("/")
        self.fs = fs.S3FileSystem(
            endpoint_override=s3_endpoint(),
            region=s3_region(),
            connect_timeout=10, request_timeout=60,
            retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=3),
        )
        self._fs_module = fs

    def _key(self, key: str) -> str:
        if any(part in ("", ".", "..") for part in key.split("/")):
            raise ValueError(f"{key!r} is not a plain object key")
        return f"{self.base}/{key}"

    def put(self, key: str, data: bytes) -> None:
        kind = mimetypes.guess_type(key)[0] or "application/octet-stream"  # a published site is served as typed
        with self.fs.open_output_stream(self._key(key), metadata={"Content-Type": kind}) as out:
            out.write(data)

    def get(self, key: str) -> bytes:
        try:
            with self.fs.open_input_stream(self._key(key)) as stream:
                return stream.read()
        except FileNotFoundError:
            raise
        except OSError as exc:  # removed between pyarrow's HEAD and its GET: pyarrow says so only in words
            if "NOT_FOUND" in str(exc) or "NoSuchKey" in str(exc):
                raise FileNotFoundError(f"{self.url}/{key}") from None
            raise

    def exists(self, key: str) -> bool:
        return self.fs.get_file_info(self._key(key)).type == self._fs_module.FileType.File

    def folders(self) -> list[str]:
        """The names of the folders (common prefixes) at the top of the store."""
        selector = self._fs_module.FileSelector(self.base, recursive=False, allow_not_found=True)
        return sorted(info.base_name for info in self.fs.get_file_info(selector)
                      if info.type == self._fs_module.FileType.Directory)

    def list(self, prefix: str) -> list[str]:
        selector = self._fs_module.FileSelector(self._key(prefix), recursive=True, allow_not_found=True)
        start = len(self.base) + 1
        return sorted(info.path[start:] for info in self.fs.get_file_info(selector)
                      if info.type == self._fs_module.FileType.File)

    def delete(self, key: str) -> None:
        self.fs.delete_file(self._key(key))



Store = LocalStore | S3Store


def open_store(location: str | Path) -> Store:
    """A folder path, file:// URL or s3:// URL as a store; any other scheme is refused (ValueError: a setting)."""
    text = str(location)
    scheme = urlsplit(text).scheme if "://" in text else ""
    if scheme == "s3":
        return S3Store(text)
    if scheme in ("", "file"):
        return LocalStore(Path(urlsplit(text).path if scheme else text))
    raise ValueError(f"{text!r}: unsupported location; use a folder or s3://bucket/prefix")


def exports_store() -> Store:
    """Where exports and the report are published: $GPULEDGER_EXPORTS."""
    return open_store(config.exports_location())


def _file_entry(name: str, data: bytes, rows: int | None) -> dict:
    return {"file": name, "rows": rows, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _digest(manifest: dict) -> str:
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _write_manifest_then_prune(store: Store, prefix: str, manifest: dict, before: list[str] | None = None) -> dict:
    """Steps 2 and 3: the manifest makes the new files the content; then nothing else stays under prefix (before:
    the keys under prefix listed before step 1, when the caller listed them already)."""
    manifest = manifest | {"manifest_sha256": _digest(manifest)}
    before = store.list(prefix) if before is None else before
    # One line: with indent, json encodes in Python (~10x slower), and the report's manifest lists a file a model a night.
    store.put(f"{prefix}/{MANIFEST}", json.dumps(manifest, sort_keys=True).encode())
    keep = {f"{prefix}/{entry['file']}" for entry in manifest["files"]} | {f"{prefix}/{MANIFEST}"}
    for key in before:
        if key not in keep:
            store.delete(key)
    return manifest


def replace_partition(store: Store, prefix: str, parts: list[tuple[bytes, int]], fmt: str, run_id: str,
                      **about) -> dict:
    """Replace the partition at prefix with parts (data, rows) in the three steps above; return the manifest."""
    token = f"{run_id}-{uuid.uuid4().hex[:12]}"
    entries = []
    for number, (data, rows) in enumerate(parts):
        name = f"part-{token}-{number}.{fmt}"
        store.put(f"{prefix}/{name}", data)
        entries.append(_file_entry(name, data, rows))
    from warehouse.db import schema_version

    manifest = about | {"format": fmt, "run_id": run_id, "schema_version": schema_version(),
                        "written_at": config.utc_now().isoformat(), "rows": sum(r for _, r in parts),
                        "files": entries}
    return _write_manifest_then_prune(store, prefix, manifest)


# A published file's stat key: size, mtime_ns and ctime_ns, as git's index keeps them. Size and mtime alone (rsync's
# quick check) miss a rewrite that keeps both: tools that copy or unpack with the old times (`cp -p`, `tar`,
# `rsync -t`, os.utime) set mtime but cannot set ctime, which the kernel sets on every write and rename. A file whose
# key equals the previous manifest's entry was not written since, so that entry (its sha256) is reused unread.
STAT_FIELDS = ("mtime_ns", "ctime_ns")
# A file written within one filesystem timestamp tick of the publication may be written again in that same tick,
# after it was read, and keep its key ("racily clean", as git calls it). Such a file's entry gets no key, so the next
# publication reads it again. 2 s covers the coarsest clocks (FAT, some network filesystems; local ones tick in ms).
RACY_NS = 2_000_000_000


def _stat_key(stat: os.stat_result) -> dict:
    return {"bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns, "ctime_ns": stat.st_ctime_ns}


def _unchanged(entry: dict | None, key: dict) -> bool:
    """Whether entry (a previous manifest's) recorded this very key; an entry without one (a racy file, or a manifest
    written before keys were kept) never matches: its file is read and hashed as before."""
    return entry is not None and all(field in entry for field in STAT_FIELDS) and all(
        entry[field] == value for field, value in key.items())


def _files(folder: str, prefix: str = "") -> list[tuple[str, str]]:
    """Every file under folder as (its name relative to folder with / between parts, its path), in Path order.
    os.scandir rather than Path.rglob: a report holds a file a model a night, and this runs every night."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir():
                found += _files(entry.path, f"{prefix}{entry.name}/")
            elif entry.is_file():
                found.append((f"{prefix}{entry.name}", entry.path))
    return sorted(found, key=lambda item: item[0].split("/"))


def _published_entry(path: str, name: str, previous: dict | None, started_ns: int) -> tuple[dict, bytes | None]:
    """The file's manifest entry and, when it had to be read, its bytes (None: the previous entry holds, unread)."""
    key = _stat_key(os.stat(path))
    if _unchanged(previous, key):
        return previous, None
    data = Path(path).read_bytes()
    after = _stat_key(os.stat(path))  # written while read: keep no key, so the next publication reads it again
    entry = _file_entry(name, data, None)
    if after == key and max(key["mtime_ns"], key["ctime_ns"]) < started_ns - RACY_NS:
        entry |= key
    return entry, data


def publish_directory(local_dir: Path, prefix: str, run_id: str, store: Store | None = None) -> dict:
    """Publish every file under local_dir to `<exports>/<prefix>/` with its relative name (a static site
    links its files by name), then a manifest, then remove what the previous publication had and this lacks.

    For the report: `publish_directory(Path("build/report"), "report", run_id)`; local or s3 alike. A file the
    previous publication lists with the same sha256, and the store still holds, is not sent again: a night sends its
    own pages, not every night's (what it sends does not grow with the history). A file whose size and times equal
    those the previous publication recorded (STAT_FIELDS) is not read either: what a night reads does not grow with
    the history.
    """
    store = store or exports_store()
    started_ns = time.time_ns()  # the wall clock the filesystem stamps files with, not config.utc_now (pinnable)
    files = _files(str(local_dir)) if local_dir.is_dir() else []
    if not files:
        raise ValueError(f"{local_dir}: nothing to publish")
    try:
        previous = read_manifest(store, prefix) or {}
    except TornRead:  # replaced while read: send everything, as with no manifest
        previous = {}
    before = store.list(prefix)
    present = set(before) if previous else set()
    held = {e["file"]: e for e in previous.get("files", []) if f"{prefix}/{e['file']}" in present}
    entries = []
    for name, path in files:
        entry, data = _published_entry(path, name, held.get(name), started_ns)
        entries.append(entry)
        if data is not None and held.get(name, {}).get("sha256") != entry["sha256"]:
            store.put(f"{prefix}/{name}", data)
    manifest = {"run_id": run_id, "written_at": config.utc_now().isoformat(), "files": entries}
    return _write_manifest_then_prune(store, prefix, manifest, before)


class TornRead(ValueError):
    """Bytes that are not one whole manifest: it was being replaced while read."""


def read_manifest(store: Store, prefix: str) -> dict | None:
    """The partition's manifest (None when it has none), checked against its own sha256.

    The check matters: pyarrow's S3 reader asks for the object's size, then its bytes, so a manifest
    replaced in between comes back cut short or padded with bytes of neither version (measured against
    the local S3 server).
    """
    try:
        data = store.get(f"{prefix}/{MANIFEST}")
    except FileNotFoundError:
        return None
    try:
        manifest = json.loads(data)
    except ValueError:
        raise TornRead(f"{store.url}/{prefix}/{MANIFEST}: not one whole manifest") from None
    if not isinstance(manifest, dict) or manifest.get("manifest_sha256") != _digest(manifest):
        raise TornRead(f"{store.url}/{prefix}/{MANIFEST}: its sha256 does not match its content")
    return manifest


def read_partition(store: Store, prefix: str) -> tuple[dict, dict[str, bytes]] | None:
    """The manifest and the bytes of every file it lists, all of one publication; None when unpublished.

    A listed file gone means the partition was replaced after the manifest was read, and a torn manifest was
    read while being replaced: either way, read it again.
    """
    for _ in range(READ_ATTEMPTS):
        try:
            manifest = read_manifest(store, prefix)
            if manifest is None:
                return None
            files = {e["file"]: store.get(f"{prefix}/{e['file']}") for e in manifest["files"]}
        except (FileNotFoundError, TornRead):
            continue
        for entry in manifest["files"]:
            if hashlib.sha256(files[entry["file"]]).hexdigest() != entry["sha256"]:
                raise LakeError(f"{store.url}/{prefix}/{entry['file']}: sha256 does not match the manifest")
        return manifest, files
    raise LakeError(f"{store.url}/{prefix}: replaced {READ_ATTEMPTS} times while being read")
