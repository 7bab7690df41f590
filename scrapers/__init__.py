"""The sources: one module per provider behind one small interface (base: a fetch that returns raw responses, a
pure parse that returns typed rows), the shared HTTP client (http) and the settings (settings).

May import warehouse (the shared record types, the clock); never transforms or flows.
"""

import sys

# httpx imports its own command-line client (click, rich's console, pygments) whenever they are installed, as
# they are here for typer: ~70 ms on every command that fetches, for a client gpuledger never runs. A None entry
# makes that optional import fail, and httpx carries on without it.
sys.modules.setdefault("httpx._main", None)
