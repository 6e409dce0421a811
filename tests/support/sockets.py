"""What the kernel knows about a socket's queues, so that a test can wait until a server
process has read what a client sent (or a process has been sent something) instead of
sleeping and hoping it has. Linux only: ``/proc/net/tcp`` and ``ss``."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

_ESTABLISHED = "01"

Endpoint = tuple[str, int]


def _endpoint(field: str) -> Endpoint:
    address, port = field.split(":")
    return socket.inet_ntoa(int(address, 16).to_bytes(4, sys.byteorder)), int(port, 16)


def tcp_queues() -> dict[tuple[Endpoint, Endpoint], tuple[int, int]]:
    """(local, remote) -> (bytes sent and not acknowledged, bytes received and not read)
    of every established IPv4 TCP socket in this network namespace."""
    queues = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] != _ESTABLISHED:
            continue
        tx, rx = (int(n, 16) for n in fields[4].split(":"))
        queues[(_endpoint(fields[1]), _endpoint(fields[2]))] = (tx, rx)
    return queues


def peer_has_read(clients: list[socket.socket]) -> bool:
    """True once every byte each of ``clients`` sent has been acknowledged by the other
    end's kernel and read from its socket by the process there (a server's
    ``data_received`` has run on it). False while a socket is not found at all."""
    queues = tcp_queues()
    for sock in clients:
        mine, theirs = sock.getsockname()[:2], sock.getpeername()[:2]
        sent = queues.get((mine, theirs))
        received = queues.get((theirs, mine))
        if sent is None or received is None or sent[0] != 0 or received[1] != 0:
            return False
    return True


def unix_unread(pid: int) -> int:
    """Bytes waiting, not yet read, in the connected Unix stream sockets of process
    ``pid`` (their Recv-Q, as ``ss`` reads it from the kernel)."""
    out = subprocess.run(
        ["ss", "--unix", "--processes", "--no-header", "state", "established"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sum(int(line.split()[1]) for line in out.splitlines() if f"pid={pid}," in line)
