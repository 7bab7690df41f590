"""The sources: one module per provider behind one small interface (base), and the shared HTTP client (http)."""

import sys

# httpx imports its own command-line client (click, rich's console, pygments) whenever they are installed, as
# they are here for typer: ~70 ms on every command that fetches, for a client gpuledger never runs. A None entry
# makes that optional import fail, and httpx carries on without it.
sys.modules.setdefault("httpx._main", None)
