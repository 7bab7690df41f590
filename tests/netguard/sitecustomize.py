"""Runs at start-up of Python subprocesses started by the tests: installs the network guard."""

import os

if os.environ.get("GPULEDGER_NETGUARD") == "1":
    import gpuledger_netguard

    gpuledger_netguard.install()
