"""Readiness for systemd's ``Type=notify`` (sd_notify(3)), without a library.

A state such as ``READY=1`` is one datagram to the Unix socket named by ``$NOTIFY_SOCKET``
(a path, or Linux's abstract namespace when it starts with ``@``). Without the variable
every call does nothing. Only the main process may speak (the unit's ``NotifyAccess=main``):
a process that ``--workers`` forks calls ``forget()`` first. A state that cannot be sent is
logged once, and the server goes on.
"""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger("ajedrez")

_failed: list[bool] = []


def send(*states: str) -> bool:
    """Send ``states`` (``READY=1``, ``STATUS=...``) in one datagram; True if it was sent."""
    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall("\n".join(states).encode())
    except OSError as e:
        if not _failed:
            _failed.append(True)
            log.warning(
                "cannot tell the service manager %s through NOTIFY_SOCKET %s: %s",
                states[0],
                os.environ.get("NOTIFY_SOCKET"),
                e.strerror or e,
            )
        return False
    return True


def ready(status: str) -> bool:
    return send("READY=1", f"STATUS={status}")


def stopping() -> bool:
    return send("STOPPING=1", "STATUS=stopping")


def forget() -> None:
    """This process is not the service's main one: it never notifies."""
    os.environ.pop("NOTIFY_SOCKET", None)
