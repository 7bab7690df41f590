"""The `gpuledger` command line: one module per command group (catalog, sql, pipeline, sources, table, estimate,
history, report), the output helpers (output, progress) and what every command shares (common); app.py registers
them. Commands read through the flows and warehouse layers; they hold no business logic of their own.
"""
