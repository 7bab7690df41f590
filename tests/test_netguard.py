import socket

import pytest
from gpuledger_netguard import NetworkBlocked


def test_connections_outside_loopback_are_refused():
    with pytest.raises(NetworkBlocked, match="203.0.113.5"), socket.socket() as s:
        s.connect(("203.0.113.5", 443))


def test_name_lookups_outside_loopback_are_refused():
    with pytest.raises(NetworkBlocked, match="console.vast.ai"):
        socket.getaddrinfo("console.vast.ai", 443)


def test_loopback_stays_open():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=2):
            pass


def test_subprocesses_inherit_the_guard():
    import subprocess
    import sys

    code = "import socket; socket.getaddrinfo('api.runpod.io', 443)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert "name lookup blocked in tests: api.runpod.io" in result.stderr
