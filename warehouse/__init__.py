"""The warehouse: DuckDB schema and migrations, loading, read queries, the raw archive and its mirror, the lake
and exports; the record types more than one layer holds (records.py) and the clock and paths (config.py).

The lowest layer: it imports nothing of scrapers, transforms or flows.
"""
