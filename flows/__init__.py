"""Orchestration: the pipeline (one run, one rebuild), its Prefect flows, fetching and loading the sources,
deriving a day's tables, the views and the report; `flows/cli/` holds the commands, `flows/replay/` the replay
server, its faults and the demo.

The top layer: it may import transforms, scrapers and warehouse; nothing below imports it. Flows wire IO
together and hold no business logic (the transforms compute, the warehouse stores).
"""
