"""Orchestration: the pipeline (one run, one rebuild), its Prefect flows, fetching and loading the sources,
deriving a day's tables, the views and the report; `flows/cli/` holds the commands, `flows/replay/` the replay
server, its faults and the demo.

The top layer: it may import transforms, scrapers and warehouse; nothing below imports it. Flows wire IO
together and hold no business logic (the transforms compute, the warehouse stores).
"""

import os

# Polars' allocator (jemalloc) keeps the pages a frame freed for 10 s by default, so a step's frames still held
# memory while the next step allocated its own: the nightly's peak was the sum of its steps'. Returned at once,
# the derive step's peak on the demo day is 441 MB instead of 502, at the same CPU time (docs/performance.md).
# jemalloc reads this when polars loads, which every command does after importing this package; a value the
# environment already sets is kept.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
