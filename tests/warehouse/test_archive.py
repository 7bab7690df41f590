import gzip
import hashlib
import json
import os

import pytest

from tests.sources_support import NOW, SNAPSHOT, fixture, raw
from warehouse import archive, config


def directory():
    return archive.run_dir("vastai", SNAPSHOT, "run-1")


def test_the_run_directory_is_under_raw_source_date_run():
    assert directory() == config.raw_dir() / "vastai" / "2026-11-27" / "run-1"


def test_bodies_are_archived_untouched_with_metadata_and_read_back():
    body = fixture("vastai_bundles.json")
    response = raw("vastai", "POST", "/api/v0/bundles/", body, request_body='{"limit": 3000}')
    writer = archive.ArchiveWriter(directory())
    meta_path = writer.write(response)
    writer.write(raw("vastai", "POST", "/api/v0/bundles/", "{}", status=500))
    assert sorted(p.name for p in directory().iterdir()) == ["0001.body.gz", "0001.meta.json", "0002.body.gz",
                                                             "0002.meta.json"]
    assert gzip.decompress((directory() / "0001.body.gz").read_bytes()) == body
    meta = json.loads(meta_path.read_text())
    assert meta | {"fetched_at": None} == meta | {
        "source": "vastai", "method": "POST", "url": "http://replay.test/api/v0/bundles/", "path": "/api/v0/bundles/",
        "status": 200, "content_type": "application/json", "sha256": hashlib.sha256(body).hexdigest(),
        "bytes": len(body), "request_body": '{"limit": 3000}', "redacted": False, "fetched_at": None}
    assert meta["fetched_at"] == NOW.isoformat()
    back = list(archive.read_responses(directory()))
    assert back == [response]  # the failed response is skipped unless asked for
    assert [r.status for r in archive.read_responses(directory(), ok_only=False)] == [200, 500]


def test_a_redacted_body_says_so():
    response = raw("verda", "POST", "/v1/oauth2/token", '{"access_token": "[REDACTED]"}')
    meta = json.loads(archive.ArchiveWriter(directory()).write(
        type(response)(**{**response.__dict__, "redacted": True})).read_text())
    assert meta["redacted"] and "replaced with [REDACTED]" in meta["note"]


def test_a_tampered_body_is_refused():
    archive.ArchiveWriter(directory()).write(raw("vastai", "POST", "/x", '{"offers": []}'))
    (directory() / "0001.body.gz").write_bytes(gzip.compress(b'{"offers": [1]}'))
    with pytest.raises(archive.ArchiveError, match="sha256 does not match"):
        list(archive.read_responses(directory()))


def test_a_crash_mid_write_leaves_no_half_file(monkeypatch):
    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        archive.ArchiveWriter(directory()).write(raw("vastai", "POST", "/x", "{}"))
    assert list(directory().iterdir()) == []  # neither the body nor its temporary file


def test_a_body_without_metadata_is_ignored_and_numbering_continues():
    writer = archive.ArchiveWriter(directory())
    writer.write(raw("vastai", "POST", "/x", '{"a": 1}'))
    (directory() / "0002.body.gz").write_bytes(gzip.compress(b"orphan"))  # a crash between body and metadata
    assert len(list(archive.read_responses(directory()))) == 1
    assert archive.ArchiveWriter(directory()).write(raw("vastai", "POST", "/y", "{}")).name == "0002.meta.json"


def test_the_summary_is_required_to_reload():
    with pytest.raises(archive.ArchiveError, match="no fetch summary"):
        archive.read_summary(directory())
    archive.ArchiveWriter(directory()).write_summary({"status": "ok"})
    assert archive.read_summary(directory()) == {"status": "ok"}
