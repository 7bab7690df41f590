"""Network guard for tests: any connection or name lookup outside loopback raises at once.

Installed by tests/conftest.py, and by sitecustomize.py beside it in every Python subprocess a test starts
(this folder is on their PYTHONPATH), so a stray request fails loudly instead of reaching the internet.
"""

import ipaddress
import socket

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "ip6-localhost", ""}


class NetworkBlocked(OSError):
    """A test tried to reach the network outside 127.0.0.1."""


def _loopback(host) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def install() -> None:
    if getattr(socket, "_gpuledger_guard", False):
        return
    real_connect, real_connect_ex, real_getaddrinfo = (
        socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo)

    def check(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
            raise NetworkBlocked(f"network access blocked in tests: {address[0]}:{address[1]}")

    def connect(self, address):
        check(self, address)
        return real_connect(self, address)

    def connect_ex(self, address):
        check(self, address)
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if not _loopback(host):
            raise NetworkBlocked(f"name lookup blocked in tests: {host}")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
    socket._gpuledger_guard = True
