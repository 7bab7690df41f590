"""The one JSON reader: what orjson refuses but Python reads, depth and size bounds, and regular files only."""

import os
import threading

import pytest

from warehouse.bounded import deeper_than, loads, read_json, read_regular


def test_reads_what_python_reads_and_refuses_what_would_recurse():
    assert loads(b'{"a": NaN, "b": 123456789012345678901234567890}')["b"] == 123456789012345678901234567890
    with pytest.raises(ValueError, match="nested too deep to read"):
        loads("[" * 100_000 + "]" * 100_000)


def test_a_depth_bound_refuses_deeper_json_and_counts_the_top_level_as_one():
    assert not deeper_than({"a": [1, {"b": 2}]}, 3) and deeper_than({"a": [1, {"b": {}}]}, 3)
    assert loads('{"a": {"b": 1}}', max_depth=2) == {"a": {"b": 1}}
    with pytest.raises(ValueError, match="nested deeper than 2 levels"):
        loads('{"a": {"b": []}}', max_depth=2)
    assert not deeper_than(7, 0) and deeper_than([], 0)


def test_only_a_regular_file_within_the_size_is_read(tmp_path):
    small = tmp_path / "small.json"
    small.write_text('{"model_type": "llama"}')
    assert read_json(small) == ({"model_type": "llama"}, small.read_bytes())
    with pytest.raises(OSError, match="larger than 10 bytes"):
        read_regular(small, 10)
    with pytest.raises(OSError, match="not a regular file"):
        read_regular(tmp_path, 10)
    with pytest.raises(OSError, match="not a regular file"):
        read_regular("/dev/zero", 10)


def test_a_fifo_is_refused_at_once_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    refused = []

    def read():
        try:
            read_regular(fifo, 10)
        except OSError as exc:
            refused.append(exc.strerror)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # release it before failing
        with open(fifo, "w"):
            pass
    assert refused == ["not a regular file"]
