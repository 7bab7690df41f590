import threading

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
