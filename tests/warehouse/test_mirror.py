import socket
from datetime import date

from warehouse import archive, lake, mirror

DAY = date(2026, 11, 27)


def archived_run(raw, source="vastai", run_id="run-1", responses=2):
    directory = archive.run_dir(source, DAY, run_id, raw)
    for n in range(1, responses + 1):
        archive.atomic_write(directory / f"{n:04d}.body.gz", f"body {n}".encode())
        archive.atomic_write(directory / f"{n:04d}.meta.json", b"{}")
    archive.atomic_write(directory / archive.SUMMARY, b"{}")
    return directory


def test_sync_copies_every_archived_file_once_under_the_same_key(tmp_path):
    raw, store = tmp_path / "raw", lake.open_store(tmp_path / "mirror")
    archived_run(raw)
    assert mirror.pending(raw)[0][1] == ["0001.body.gz", "0001.meta.json", "0002.body.gz", "0002.meta.json",
                                         "fetch.json"]
    assert mirror.sync(store, raw) == mirror.SyncResult(copied=5, pending=0)
    assert store.get("vastai/2026-11-27/run-1/0002.body.gz") == b"body 2"
    assert mirror.pending(raw) == [] and mirror.sync(store, raw).copied == 0
    assert mirror.MARKER not in " ".join(store.list("vastai"))


def test_a_mirror_that_is_down_keeps_the_files_pending_and_local_then_the_next_sync_copies_them(
        tmp_path, s3, s3_server, monkeypatch):
    raw = tmp_path / "raw"
    directory = archived_run(raw)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{sock.getsockname()[1]}")
    failed = mirror.sync(lake.open_store(s3), raw)
    assert (failed.copied, failed.pending) == (0, 5) and s3 in failed.error
    assert len(list(directory.iterdir())) == 5 + 1  # the archive untouched (and the marker: nothing mirrored)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    assert mirror.sync(lake.open_store(s3), raw) == mirror.SyncResult(copied=5, pending=0)
    assert len(lake.open_store(s3).list("vastai/2026-11-27")) == 5


def test_restore_brings_back_a_day_on_a_machine_without_it(tmp_path):
    raw, store = tmp_path / "raw", lake.open_store(tmp_path / "mirror")
    archived_run(raw, "vastai")
    archived_run(raw, "fx", responses=1)
    archive.atomic_write(archive.run_dir("fx", date(2026, 11, 28), "run-2", raw) / "0001.body.gz", b"next day")
    mirror.sync(store, raw)
    fresh = tmp_path / "fresh"
    assert mirror.restore(store, fresh, DAY, ["fx", "vastai", "runpod"]) == 5 + 3
    restored = sorted(str(p.relative_to(fresh)) for p in fresh.rglob("*") if p.is_file())
    original = sorted(str(p.relative_to(raw)) for p in raw.glob("*/2026-11-27/*/*") if p.is_file())
    assert restored == original
    assert (fresh / "vastai/2026-11-27/run-1/0001.body.gz").read_bytes() == b"body 1"
    assert mirror.pending(fresh) == []  # what came from the mirror is on the mirror
    assert mirror.restore(store, fresh, DAY, ["fx", "vastai"]) == 0
