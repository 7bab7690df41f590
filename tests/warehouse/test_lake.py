import hashlib
import os
import threading
import time
from pathlib import Path

import polars as pl
import pytest

from warehouse import lake

PREFIX = "t/date=2026-11-27"


def generation(n: int) -> list[tuple[bytes, int]]:
    """Generation n: n + 1 rows, every value n, split over two files, so any mix of two generations shows."""
    rows = n + 1
    halves = (rows // 2, rows - rows // 2)
    return [(_parquet(pl.DataFrame({"gen": [n] * k}, schema={"gen": pl.Int64})), k) for k in halves]


def _parquet(frame: pl.DataFrame) -> bytes:
    import io

    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


def test_a_reader_polling_the_manifest_never_sees_a_torn_partition(s3):
    store = lake.open_store(s3 + "/lake")
    lake.replace_partition(store, PREFIX, generation(0), "parquet", "run-0")
    seen, torn, stop = set(), [], threading.Event()

    def reader():
        reader_store = lake.open_store(s3 + "/lake")  # a reader on its own connection, as another machine
        while not stop.is_set():
            try:
                manifest, files = lake.read_partition(reader_store, PREFIX)
            except lake.LakeError as exc:  # a file unlike its manifest, or replaced five times over: torn
                torn.append(repr(exc))
                continue
            except OSError:  # a transient S3 error (seen under load): no data came back, so nothing torn
                continue
            frame = pl.concat(pl.read_parquet(data) for data in files.values())
            gens = set(frame["gen"])
            if len(gens) != 1 or frame.height != manifest["rows"] or frame.height != next(iter(gens)) + 1:
                torn.append((manifest["run_id"], gens, frame.height))
            seen.add(manifest["run_id"])

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(1, 13):
            lake.replace_partition(store, PREFIX, generation(n), "parquet", f"run-{n}")
    finally:
        stop.set()
        thread.join()
    assert torn == []
    assert len(seen) >= 3  # the reader really overlapped the replacements
    assert len(store.list(PREFIX)) == 3  # the last generation's two files and its manifest


def test_a_reader_retries_when_the_files_it_was_told_about_are_gone(tmp_path):
    store = lake.open_store(tmp_path)
    lake.replace_partition(store, PREFIX, generation(1), "parquet", "run-1")
    real_get, calls = store.get, []

    def get_while_replaced(key):  # the writer replaces the partition between the reader's two reads
        calls.append(key)
        if len(calls) == 2:
            lake.replace_partition(store, PREFIX, generation(2), "parquet", "run-2")
        return real_get(key)

    store.get = get_while_replaced
    manifest, files = lake.read_partition(store, PREFIX)
    assert manifest["run_id"] == "run-2" and sum(pl.read_parquet(d).height for d in files.values()) == 3


def test_a_file_that_does_not_match_its_manifest_is_refused(tmp_path):
    store = lake.open_store(tmp_path)
    manifest = lake.replace_partition(store, PREFIX, generation(1), "parquet", "run-1")
    store.put(f"{PREFIX}/{manifest['files'][0]['file']}", b"changed behind the manifest")
    with pytest.raises(lake.LakeError, match="sha256"):
        lake.read_partition(store, PREFIX)


def test_an_unpublished_partition_reads_as_none(tmp_path):
    assert lake.read_partition(lake.open_store(tmp_path), PREFIX) is None


@pytest.mark.parametrize("where", ["folder", "s3"])
def test_a_directory_is_published_by_name_and_a_republication_drops_what_it_lacks(where, tmp_path, request):
    site = tmp_path / "site"
    (site / "assets").mkdir(parents=True)
    (site / "index.html").write_text("<a href='assets/app.js'>v1</a>")
    (site / "assets" / "app.js").write_text("1")
    (site / "old.html").write_text("gone next time")
    location = tmp_path / "lake" if where == "folder" else request.getfixturevalue("s3") + "/lake"
    store = lake.open_store(location)
    lake.publish_directory(site, "report", "run-1", store)
    (site / "old.html").unlink()
    (site / "index.html").write_text("v2")
    manifest = lake.publish_directory(site, "report", "run-2", store)
    assert store.list("report") == ["report/_manifest.json", "report/assets/app.js", "report/index.html"]
    assert store.get("report/index.html") == b"v2"
    assert [e["file"] for e in manifest["files"]] == ["assets/app.js", "index.html"]


def test_publish_directory_sends_only_the_files_the_last_publication_lacks_or_holds_otherwise(tmp_path, s3):
    site = tmp_path / "site"
    (site / "date=2026-11-27").mkdir(parents=True)
    (site / "date=2026-11-27" / "a.html").write_text("night 1")
    (site / "index.html").write_text("v1")
    store = lake.open_store(s3 + "/lake")
    lake.publish_directory(site, "report", "run-1", store)
    (site / "date=2026-11-28").mkdir()
    (site / "date=2026-11-28" / "a.html").write_text("night 2")
    (site / "index.html").write_text("v2")
    store.delete("report/date=2026-11-27/a.html")  # gone from the store: sent again though the manifest lists it
    sent = []
    put = store.put
    store.put = lambda key, data: (sent.append(key), put(key, data))
    manifest = lake.publish_directory(site, "report", "run-2", store)
    assert sorted(sent) == ["report/_manifest.json", "report/date=2026-11-27/a.html", "report/date=2026-11-28/a.html",
                            "report/index.html"]
    sent.clear()
    lake.publish_directory(site, "report", "run-3", store)
    assert sent == ["report/_manifest.json"]
    assert [e["file"] for e in manifest["files"]] == ["date=2026-11-27/a.html", "date=2026-11-28/a.html", "index.html"]
    assert store.get("report/date=2026-11-27/a.html") == b"night 1" and store.get("report/index.html") == b"v2"


def _night_pages(site, nights: int) -> None:
    """A report root with a few nights' pages, a shared file and an index, as flows/report.py lays them out."""
    (site / "shared").mkdir(parents=True)
    (site / "shared" / "m-0123.js").write_text("window.shared = 1;")
    for night in range(nights):
        (site / f"date=2026-11-{night + 1:02d}").mkdir()
        (site / f"date=2026-11-{night + 1:02d}" / "m.html").write_text(f"night {night + 1}")
    (site / "index.html").write_text("days")


@pytest.fixture
def settled(monkeypatch):
    """Files these tests write moments before publishing count as settled: the tmp filesystem stamps times in ticks
    of a few ms at most, and a test that rewrites a file waits one out (SETTLE_S) first."""
    monkeypatch.setattr(lake, "RACY_NS", 0)


SETTLE_S = 0.05


@pytest.fixture
def reads(monkeypatch, tmp_path):
    """The files under tmp_path/site whose bytes are read (a folder store reads its manifest the same way)."""
    read, original = [], Path.read_bytes

    def read_bytes(self):
        if self.is_relative_to(tmp_path / "site"):
            read.append(self.name)
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    return read


def _sent(store) -> list:
    sent, put = [], store.put
    store.put = lambda key, data: (sent.append(key), put(key, data))
    return sent


@pytest.mark.parametrize("where", ["folder", "s3"])
def test_a_second_publication_of_an_unchanged_tree_reads_no_file(where, tmp_path, request, settled, reads):
    _night_pages(tmp_path / "site", 3)
    store = lake.open_store(tmp_path / "lake" if where == "folder" else request.getfixturevalue("s3") + "/lake")
    first = lake.publish_directory(tmp_path / "site", "report", "run-1", store)
    assert len(reads) == 5
    reads.clear()
    sent = _sent(store)
    second = lake.publish_directory(tmp_path / "site", "report", "run-2", store)
    assert reads == [] and sent == ["report/_manifest.json"]
    assert second["files"] == first["files"]


@pytest.mark.parametrize("where", ["folder", "s3"])
def test_a_file_rewritten_in_place_is_sent_even_with_its_old_size_and_mtime(where, tmp_path, request, settled, reads):
    site = tmp_path / "site"
    _night_pages(site, 2)
    store = lake.open_store(tmp_path / "lake" if where == "folder" else request.getfixturevalue("s3") + "/lake")
    lake.publish_directory(site, "report", "run-1", store)
    page = site / "date=2026-11-02" / "m.html"
    before = page.stat()
    time.sleep(SETTLE_S)
    page.write_text("night X")  # same size
    os.utime(page, ns=(before.st_atime_ns, before.st_mtime_ns))  # as `cp -p` or `tar` would leave it
    reads.clear()
    sent = _sent(store)
    manifest = lake.publish_directory(site, "report", "run-2", store)
    assert reads == ["m.html"] and sent == ["report/date=2026-11-02/m.html", "report/_manifest.json"]
    assert store.get("report/date=2026-11-02/m.html") == b"night X"
    assert lake.read_partition(store, "report")[1]["date=2026-11-02/m.html"] == b"night X"
    assert {e["file"]: e["sha256"] for e in manifest["files"]}["date=2026-11-02/m.html"] == hashlib.sha256(
        b"night X").hexdigest()


def test_a_manifest_written_before_files_kept_their_times_is_read_by_hashing(tmp_path, settled, reads):
    _night_pages(tmp_path / "site", 2)
    store = lake.open_store(tmp_path / "lake")
    first = lake.publish_directory(tmp_path / "site", "report", "run-1", store)
    old = {k: v for k, v in first.items() if k != "manifest_sha256"} | {
        "files": [{k: v for k, v in e.items() if k not in lake.STAT_FIELDS} for e in first["files"]]}
    lake._write_manifest_then_prune(store, "report", old)  # as the version before this one wrote it
    (tmp_path / "site" / "index.html").write_text("days, one more")
    reads.clear()
    sent = _sent(store)
    second = lake.publish_directory(tmp_path / "site", "report", "run-2", store)
    assert sorted(reads) == ["index.html", "m-0123.js", "m.html", "m.html"]
    assert sent == ["report/index.html", "report/_manifest.json"]
    assert all(field in e for e in second["files"] for field in lake.STAT_FIELDS)
    reads.clear()
    lake.publish_directory(tmp_path / "site", "report", "run-3", store)
    assert reads == []


def test_a_file_written_moments_before_a_publication_is_read_again_by_the_next(tmp_path, reads):
    """Within RACY_NS of the publication a rewrite could keep the file's times (one clock tick): no key is kept."""
    _night_pages(tmp_path / "site", 1)
    store = lake.open_store(tmp_path / "lake")
    first = lake.publish_directory(tmp_path / "site", "report", "run-1", store)
    assert not any(field in e for e in first["files"] for field in lake.STAT_FIELDS)
    reads.clear()
    sent = _sent(store)
    lake.publish_directory(tmp_path / "site", "report", "run-2", store)
    assert len(reads) == 3 and sent == ["report/_manifest.json"]


def test_publish_directory_defaults_to_the_exports_setting(tmp_path, monkeypatch):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("hi")
    monkeypatch.setenv("GPULEDGER_EXPORTS", str(tmp_path / "out"))
    lake.publish_directory(tmp_path / "site", "report", "run-1")
    assert (tmp_path / "out" / "report" / "index.html").read_text() == "hi"


@pytest.mark.parametrize("location", ["gs://bucket/x", "s3://", "ftp://host/x"])
def test_unsupported_locations_are_refused_as_settings(location):
    with pytest.raises(ValueError, match="s3://bucket"):
        lake.open_store(location)


@pytest.mark.parametrize("key", ["../x", "a/../../x", "/etc/passwd"])
def test_keys_cannot_leave_the_store(tmp_path, s3, key):
    for store in (lake.open_store(tmp_path / "lake"), lake.open_store(s3)):
        with pytest.raises(ValueError):
            store.put(key, b"x")


def test_objects_carry_their_content_type_so_a_published_site_is_served_as_pages(s3):
    from pyarrow import fs

    store = lake.open_store(s3 + "/site")
    store.put("report/index.html", b"<p>hi</p>")
    info = store.fs.open_input_stream(f"{store.base}/report/index.html").metadata()
    assert info["Content-Type"] == b"text/html"
    assert isinstance(store.fs, fs.S3FileSystem)


def test_an_s3_location_outside_the_fixture_goes_to_loopback_and_fails_fast(monkeypatch):
    """tests/conftest.py points every s3:// location at a closed port on 127.0.0.1: no test reaches AWS."""
    with pytest.raises(OSError, match="127.0.0.1:9"):
        lake.open_store("s3://any-real-bucket/x").put("probe", b"x")


def test_a_manifest_that_is_not_one_whole_version_is_a_torn_read(tmp_path):
    store = lake.open_store(tmp_path)
    lake.replace_partition(store, PREFIX, generation(1), "parquet", "run-1")
    whole = store.get(f"{PREFIX}/{lake.MANIFEST}")
    for torn in (whole[: len(whole) // 2], whole.replace(b'"rows": 2', b'"rows": 3'), whole[:40] + b"\xc0" * 9):
        store.put(f"{PREFIX}/{lake.MANIFEST}", torn)
        with pytest.raises(lake.TornRead):
            lake.read_manifest(store, PREFIX)
