"""The TCP transport: a concurrent, connection-oriented server (seed 3.2, 3.4.2).

One thread per connection, up to ``max_connections``; past that a new client gets
``E_BUSY`` and is closed. Each thread runs one read loop: bytes into a
:class:`~ajedrez.wire.LineBuffer`, lines into its :class:`~ajedrez.session.Session`, replies
out in a single ``sendall`` with ``TCP_NODELAY`` so they leave at once. A client that
misbehaves or vanishes only ends its own thread.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from dataclasses import dataclass

from .codes import Reply
from .service import Accounts, Games
from .session import Session
from .wire import MAX_LINE, OVERLONG, LineBuffer, encode_reply

log = logging.getLogger("ajedrez.server")

DEFAULT_PORT = 1995  # the year of ESPOL 2.0; above 1024 so no privileges are needed
DEFAULT_HOST = "127.0.0.1"


@dataclass(frozen=True)
class Limits:
    max_connections: int = 1000
    idle_timeout: float = 1800.0  # seconds without a byte from the client
    max_line: int = MAX_LINE
    stop_grace: float = 10.0  # seconds commands in progress get to finish at shutdown


class Server:
    def __init__(
        self,
        accounts: Accounts,
        games: Games,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        limits: Limits | None = None,
    ) -> None:
        self.accounts = accounts
        self.games = games
        self.limits = limits or Limits()
        self._listener = socket.create_server((host, port), reuse_port=False, backlog=512)
        self._listener.settimeout(0.5)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._clients: dict[threading.Thread, socket.socket] = {}

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._listener.getsockname()[:2]
        return host, port

    def serve_forever(self) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    conn, addr = self._listener.accept()
                except TimeoutError:
                    continue
                except OSError as e:
                    if self._stopping.is_set():
                        break
                    log.error("accept failed: %s", e)
                    continue
                self._admit(conn, f"{addr[0]}:{addr[1]}")
        finally:
            self._listener.close()
            self._finish()

    def stop(self) -> None:
        """Ask the accept loop to end; safe from a signal handler."""
        self._stopping.set()

    def _admit(self, conn: socket.socket, peer: str) -> None:
        with self._lock:
            full = len(self._clients) >= self.limits.max_connections
            if not full:
                thread = threading.Thread(
                    target=self._serve_client,
                    args=(conn, peer),
                    name=f"client {peer}",
                    daemon=True,
                )
                self._clients[thread] = conn
        if full:
            log.warning("refusing %s: %d connections open", peer, self.limits.max_connections)
            _send_quietly(conn, encode_reply(Reply.E_BUSY, "too many connections; try again later"))
            conn.close()
            return
        thread.start()

    def _serve_client(self, conn: socket.socket, peer: str) -> None:
        session = Session(self.accounts, self.games, peer)
        buffer = LineBuffer(self.limits.max_line)
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.settimeout(self.limits.idle_timeout)
            while True:
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    log.info("closing idle connection %s", session.who())
                    return
                if not data:
                    return
                for item in buffer.feed(data):
                    if item is OVERLONG:
                        outcome = session.overlong(self.limits.max_line)
                    else:
                        assert isinstance(item, bytes)
                        outcome = session.handle_line(item)
                    if outcome.replies:
                        conn.sendall(b"".join(outcome.replies))
                    if outcome.close:
                        return
        except OSError as e:
            log.debug("connection %s lost: %s", peer, e)
        except Exception:
            log.exception("connection %s ended by an internal error", peer)
        finally:
            with self._lock:
                self._clients.pop(threading.current_thread(), None)
            conn.close()

    def _finish(self) -> None:
        """Let commands in progress complete, then end every session."""
        with self._lock:
            clients = dict(self._clients)
        for conn in clients.values():
            # Ends a blocked recv; a command being processed still sends its reply.
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RD)
        deadline = time.monotonic() + self.limits.stop_grace
        for thread in clients:
            thread.join(max(0.0, deadline - time.monotonic()))
        log.info("all sessions closed")


def _send_quietly(conn: socket.socket, data: bytes) -> None:
    try:
        conn.settimeout(1.0)
        conn.sendall(data)
    except OSError:
        pass
