"""Run a script with every connection off this machine refused and logged: ``python offline.py LOG SCRIPT``.

The SDK process is started through this, so a test can assert that nothing (telemetry, version checks,
model catalogues) tried to leave 127.0.0.1. Standard library only: it runs in the SDK's own venv.
"""

from __future__ import annotations

import ipaddress
import runpy
import socket
import sys
from typing import Any

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def _loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    if not isinstance(host, str):
        return False
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def guard(log_path: str) -> None:
    """Refuse and log any name lookup or connection that is not to loopback."""

    def refuse(what: str) -> OSError:
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(what + "\n")
        return OSError(f"offline: refused {what}")

    real_getaddrinfo = socket.getaddrinfo
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _loopback(host):
            raise refuse(f"lookup {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    def checked(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
            raise refuse(f"connect {address!r}")

    def connect(self: socket.socket, address: Any) -> None:
        checked(self, address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        checked(self, address)
        return real_connect_ex(self, address)

    socket.getaddrinfo = getaddrinfo
    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]


if __name__ == "__main__":
    log_file, script = sys.argv[1], sys.argv[2]
    guard(log_file)
    sys.argv = sys.argv[2:]
    runpy.run_path(script, run_name="__main__")
