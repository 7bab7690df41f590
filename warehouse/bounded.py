"""The one JSON reader of everything the product reads, from a source or from disk: orjson, else the standard
library for what orjson refuses but Python accepts; bounded in size (files) and depth (configs), so that no input
can make a reader recurse until the interpreter's stack runs out or read without end."""

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

import orjson

# A config.json nests a few levels (quantization_config.config_groups.group_0.weights.num_bits is the deepest the
# reader reads: 5); a user model file holds its config one level down. Deeper is no config, and a config nested
# ~1,000 deep, written back and read with the standard library, ran the stack out in every later run.
CONFIG_DEPTH = 32
# The largest config.json published is tens of KB (a multimodal model's, with its tower's fields); a user model
# file is its config and a few fields.
CONFIG_BYTES = 4 * 2**20


def loads(text: bytes | str, *, max_depth: int | None = None) -> Any:
    """JSON: orjson, else the standard library (NaN, numbers beyond a double); a ValueError for JSON nested too deep
    to read (orjson refuses past 1,024 levels, the standard library would recurse) or deeper than max_depth."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(text)
        except RecursionError:
            raise ValueError("nested too deep to read") from None
    if max_depth is not None and deeper_than(value, max_depth):
        raise ValueError(f"nested deeper than {max_depth} levels")
    return value


def deeper_than(value: Any, limit: int) -> bool:
    """Whether value nests objects or arrays more than `limit` levels (a top-level object is one), walked without
    recursion."""
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in children)
    return False


def read_regular(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most max_bytes; OSError otherwise. Opened without blocking and judged on
    the open file: a FIFO would wait for a writer, a device (/dev/zero) never ends."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        with os.fdopen(os.dup(fd), "rb") as file:
            body = file.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(body) > max_bytes:
        raise OSError(errno.EFBIG, f"larger than {max_bytes:,} bytes")
    return body


def read_json(path: Path, *, max_bytes: int = CONFIG_BYTES, max_depth: int = CONFIG_DEPTH) -> tuple[Any, bytes]:
    """(the JSON of a regular file, its bytes), bounded as read_regular and loads; OSError or ValueError."""
    body = read_regular(path, max_bytes)
    return loads(body, max_depth=max_depth), body
