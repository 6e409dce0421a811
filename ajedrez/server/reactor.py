"""The asyncio transport: one event loop holds every connection, a bounded pool of threads
runs the commands.

An idle session costs a few kilobytes (a protocol object, its transport, a
:class:`Session`) instead of a thread stack, so thousands of players can stay connected;
the database work, which is blocking (SQLAlchemy, python-chess), runs in at most
``command_threads`` threads, except for the commands cheaper than a thread hand-off
(``Runs.LOOP`` and ``Runs.QUEUE`` in the command table: HELP, QUIT, and STAT, SPAR and
JGDA, whose work goes to the store's queue). Each connection (``connection.py``) runs
its commands one at a time, in order, and a reply leaves in one write with
``TCP_NODELAY`` set.
``docs/performance.md`` compares this with thread-per-connection; ``docs/security.md``
lists the limits enforced here.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import ssl
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.games import Games
from ajedrez.protocol.codes import Reply
from ajedrez.protocol.commands import Runs
from ajedrez.server.connection import Connection
from ajedrez.server.metrics import Metrics
from ajedrez.server.ratelimit import RateLimit
from ajedrez.server.settings import Limits
from ajedrez.server.stream import Hub
from ajedrez.server.throttle import LoginThrottle
from ajedrez.store.moves import Moves

log = logging.getLogger("ajedrez.server")

LISTEN_BACKLOG = 1024
TLS_HANDSHAKE_TIMEOUT = 10.0


class Reactor:
    def __init__(
        self,
        accounts: Accounts,
        games: Games,
        moves: Moves,
        host: str,
        port: int,
        limits: Limits | None = None,
        command_threads: int = 16,
        tls: ssl.SSLContext | None = None,
        tls_port: int | None = None,
        sockets: dict[str, socket.socket] | None = None,
        hub: Hub | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``sockets``: listening sockets opened already ("plain", "tls"), shared by the
        worker processes of ``--workers``; without them the reactor opens its own."""
        self.metrics = metrics or Metrics()
        self.accounts = accounts
        self.games = games
        self.moves = moves
        self._hub = hub  # EVEN's: None where nothing streams (tests of the transport)
        self.host = host
        self.port = port
        self.limits = limits or Limits()
        self.tls = tls
        self.tls_port = tls_port
        self.sockets = sockets or {}
        lim = self.limits
        self.throttle = LoginThrottle(
            lim.login_delay_base,
            lim.login_delay_max,
            lim.login_forget_after,
            lim.login_name_budget,
            lim.login_name_window,
        )
        self.subs_limit = RateLimit(lim.subs_per_address, lim.subs_window)
        self.pool = ThreadPoolExecutor(command_threads, thread_name_prefix="command")
        # Commands that hash a password run in their own few threads: that caps the
        # argon2 work at once (19 MiB each), and glibc keeps a freed argon2 buffer in the
        # arena of the thread that used it, so few threads also means little memory kept
        # (bench/idle.py: ~345 MiB of arenas when every command thread may hash).
        self.hash_pool = ThreadPoolExecutor(lim.max_password_checks, thread_name_prefix="password")
        # SUBS hashes in threads of their own: a flood of requests never takes a login's turn.
        self.subs_pool = ThreadPoolExecutor(
            lim.max_subscription_hashes, thread_name_prefix="subscription"
        )
        self.pools = {
            Runs.THREAD: self.pool,
            Runs.PASSWORD: self.hash_pool,
            Runs.SUBSCRIPTION: self.subs_pool,
        }
        self.stopping = False
        self._servers: list[asyncio.Server] = []
        self._connections: set[Connection] = set()
        self._stop_requested = asyncio.Event()
        self._all_left = asyncio.Event()  # set once stopping and no connection is left
        self._per_address: Counter[str] = Counter()
        self._unauthenticated: dict[Connection, None] = {}  # insertion-ordered set

    @property
    def hub(self) -> Hub:
        if self._hub is None:
            raise RuntimeError("this reactor has no event hub")
        return self._hub

    async def start(self) -> list[tuple[str, str, int]]:
        """Open the listeners; returns (kind, host, port) of each."""
        listeners: list[tuple[str, int | None, ssl.SSLContext | None]] = [
            ("plain", self.port, None)
        ]
        if self.tls is not None and self.tls_port is not None:
            listeners.append(("tls", self.tls_port, self.tls))
        opened = []
        for kind, port, context in listeners:
            shared = self.sockets.get(kind)
            where = {"sock": shared} if shared else {"host": self.host, "port": port}
            server = await asyncio.get_running_loop().create_server(
                lambda: Connection(self),
                **where,
                backlog=LISTEN_BACKLOG,
                ssl=context,
                ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT if context else None,
            )
            self._servers.append(server)
            host, bound = server.sockets[0].getsockname()[:2]
            opened.append((kind, host, bound))
        return opened

    def stop(self) -> None:
        """Begin a graceful stop; safe to call from a signal handler on the loop."""
        if self.stopping:
            return
        self.stopping = True
        self._stop_requested.set()
        for server in self._servers:
            server.close()
        for conn in list(self._connections):
            if conn.idle:
                conn.close()  # nothing in progress: end the session now
        self._check_all_left()

    async def serve_until_stopped(self) -> None:
        await self._stop_requested.wait()
        try:
            await asyncio.wait_for(self._all_left.wait(), self.limits.stop_grace)
        except TimeoutError:
            for conn in list(self._connections):
                conn.abort()
        for server in self._servers:
            await server.wait_closed()
        for pool in (self.pool, self.hash_pool, self.subs_pool):
            pool.shutdown(wait=True, cancel_futures=True)
        log.info("all sessions closed")

    # -- connections (called by connection.Connection) --------------------------------

    def refusal(self, address: str) -> tuple[Reply, str] | None:
        """Why a new connection from ``address`` cannot be served, or None. When the
        server is full, or holds its most connections that have not logged in, one of
        those (never a logged-in player's) is dropped at random to make room, as
        OpenSSH's MaxStartups does: a flood of silent connections cannot keep a player
        out, and the flood's own connections are the likeliest to go."""
        lim = self.limits
        if self.stopping:
            return Reply.E_BUSY, "the server is stopping; try again later"
        if self._per_address[address] >= lim.max_connections_per_address:
            limit = lim.max_connections_per_address
            return Reply.F_ADDRLIMIT, f"too many connections from your address (limit {limit})"
        full = len(self._connections) >= lim.max_connections
        if full or len(self._unauthenticated) >= lim.max_unauthenticated:
            if not self._unauthenticated:
                return Reply.E_BUSY, "too many connections; try again later"
            victim = random.choice(list(self._unauthenticated))
            log.warning(
                "dropping %s, not logged in, to make room (%d connections, %d not logged in)",
                victim.who(),
                len(self._connections),
                len(self._unauthenticated),
            )
            self.authenticated(victim)
            victim.drop(
                Reply.F_LOGINTIME,
                "the server is full of connections that have not logged in; yours was "
                "dropped to make room: log in sooner after connecting",
            )
            if full:
                self.left(victim)  # its place is free now, before its transport closes
        return None

    def joined(self, conn: Connection) -> None:
        self._connections.add(conn)
        self._per_address[conn.address] += 1
        self._unauthenticated[conn] = None

    def authenticated(self, conn: Connection) -> None:
        """``conn`` logged in (or is leaving): it no longer counts as not logged in."""
        self._unauthenticated.pop(conn, None)

    def left(self, conn: Connection) -> None:
        self._unauthenticated.pop(conn, None)
        if conn not in self._connections:
            return
        self._connections.discard(conn)
        self._per_address[conn.address] -= 1
        if self._per_address[conn.address] <= 0:
            del self._per_address[conn.address]
        self._check_all_left()

    def _check_all_left(self) -> None:
        if self.stopping and not self._connections:
            self._all_left.set()


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context
