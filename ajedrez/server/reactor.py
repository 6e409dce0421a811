"""The asyncio transport: one event loop holds every connection of every listener, each
served by its listener's front end (``service/frontend.py``: ESPOL's is
``espol/connection.py``); the service's bounded pools of threads run the operations.

An idle session costs a few kilobytes (a protocol object, its transport, its session)
instead of a thread stack, so thousands of players can stay connected; the database
work, which is blocking (SQLAlchemy, python-chess), runs in at most ``command_threads``
threads, except for the operations cheaper than a thread hand-off (``Work.LOOP`` and
``Work.QUEUE`` in ``service/work.py``: a move and the reads of a game go to the store's
queue). The reactor keeps the connections' books: how many, from where, which have not
logged in, and the graceful stop. ``docs/performance.md`` compares this with
thread-per-connection; ``docs/security.md`` lists the limits enforced here.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import random
import socket
import ssl
from collections import Counter
from dataclasses import dataclass
from functools import partial
from typing import Any

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.games import Games
from ajedrez.domain.presence import Presence
from ajedrez.domain.tokens import DEFAULT_LIFETIME_S
from ajedrez.server.settings import Limits
from ajedrez.service.frontend import Client, Frontend, Turnaway
from ajedrez.service.hub import Hub
from ajedrez.service.metrics import Metrics
from ajedrez.service.ratelimit import RateLimit, TokenBucket
from ajedrez.service.service import Service
from ajedrez.service.throttle import LoginThrottle
from ajedrez.store.moves import Moves

log = logging.getLogger("ajedrez.server")

LISTEN_BACKLOG = 1024
TLS_HANDSHAKE_TIMEOUT = 10.0
LEAVE_AFTER_ABORT = 5.0  # seconds aborted connections get to leave at the stop


@dataclass(frozen=True)
class Listener:
    """A listening socket and the front end that serves its connections."""

    kind: str  # its name in the log: "plain", "tls"...
    frontend: Frontend
    port: int | None = None
    tls: ssl.SSLContext | None = None
    sock: socket.socket | None = None  # opened already (--workers: shared by the workers)


def make_service(
    accounts: Accounts,
    games: Games,
    moves: Moves,
    limits: Limits,
    command_threads: int = 16,
    hub: Hub | None = None,
    presence: Presence | None = None,
    *,
    token_lifetime: int = DEFAULT_LIFETIME_S,
) -> Service:
    """The service with the limits of ``limits``: login throttle, sign-ups per address,
    requests that notify others per account, the threads that hash passwords."""
    lim = limits
    return Service(
        accounts,
        games,
        moves,
        throttle=LoginThrottle(
            lim.login_delay_base,
            lim.login_delay_max,
            lim.login_forget_after,
            lim.login_name_budget,
            lim.login_name_window,
        ),
        signups=RateLimit(lim.subs_per_address, lim.subs_window),
        events=TokenBucket(lim.events_burst, lim.events_per_second),
        command_threads=command_threads,
        password_threads=lim.max_password_checks,
        subscription_threads=lim.max_subscription_hashes,
        guests_per_address=lim.max_guests_per_address,
        sessions_per_account=lim.max_sessions_per_account,
        presence=presence,
        token_lifetime=token_lifetime,
        hub=hub,
    )


class Reactor:
    def __init__(
        self,
        service: Service,
        host: str,
        listeners: list[Listener],
        limits: Limits | None = None,
        hub: Hub | None = None,
        metrics: Metrics | None = None,
        slot: str = "main",
    ) -> None:
        self.metrics = metrics or Metrics()
        self.slot = slot  # which process of the server this is: "main", "worker 2"...
        self.service = service
        self._hub = hub  # the event hub: None where nothing streams (tests of the transport)
        self.host = host
        self.listeners = listeners
        self.limits = limits or Limits()
        self.stopping = False
        self._servers: list[asyncio.Server] = []
        self._connections: set[Client] = set()
        self._stop_requested = asyncio.Event()
        self._all_left = asyncio.Event()  # set once stopping and no connection is left
        self._per_address: Counter[str] = Counter()
        self._unauthenticated: dict[Client, None] = {}  # insertion-ordered set

    @property
    def hub(self) -> Hub:
        if self._hub is None:
            raise RuntimeError("this reactor has no event hub")
        return self._hub

    async def start(self) -> list[tuple[str, str, int]]:
        """Open the listeners; returns (kind, host, port) of each."""
        opened = []
        for listener in self.listeners:
            context = listener.tls
            where: dict[str, Any] = (
                {"sock": listener.sock}
                if listener.sock
                else {"host": self.host, "port": listener.port}
            )
            server = await asyncio.get_running_loop().create_server(
                partial(listener.frontend, self),
                **where,
                backlog=LISTEN_BACKLOG,
                ssl=context,
                ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT if context else None,
                start_serving=False,
            )
            self._servers.append(server)
            host, bound = server.sockets[0].getsockname()[:2]
            opened.append((listener.kind, host, bound))
        # Before the first login: the rows of this process's predecessor, if it died.
        await self.service.start_presence(presence_holder(self.slot, opened))
        for server in self._servers:
            await server.start_serving()
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
            # An aborted connection may have work to finish as it leaves (a guest's
            # games, ended on the service's pools): a moment for it before they stop.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_left.wait(), LEAVE_AFTER_ABORT)
        for server in self._servers:
            await server.wait_closed()
        await self.service.stop_guests()
        await self.service.stop_presence()
        self.service.shutdown()
        log.info("all sessions closed")

    # -- connections (called by the front ends' connections) --------------------------------

    def refusal(self, address: str) -> tuple[Turnaway, str] | None:
        """Why a new connection from ``address`` cannot be served, or None. When the
        server is full, or holds its most connections that have not logged in, one of
        those (never a logged-in player's) is dropped at random to make room, as
        OpenSSH's MaxStartups does: a flood of silent connections cannot keep a player
        out, and the flood's own connections are the likeliest to go."""
        lim = self.limits
        if self.stopping:
            return Turnaway.BUSY, "the server is stopping; try again later"
        if self._per_address[address] >= lim.max_connections_per_address:
            limit = lim.max_connections_per_address
            return Turnaway.ADDRESS_LIMIT, f"too many connections from your address (limit {limit})"
        full = len(self._connections) >= lim.max_connections
        if full or len(self._unauthenticated) >= lim.max_unauthenticated:
            if not self._unauthenticated:
                return Turnaway.BUSY, "too many connections; try again later"
            victim = random.choice(list(self._unauthenticated))
            log.warning(
                "dropping %s, not logged in, to make room (%d connections, %d not logged in)",
                victim.who(),
                len(self._connections),
                len(self._unauthenticated),
            )
            self.authenticated(victim)
            victim.drop(
                Turnaway.LOGIN_TIMEOUT,
                "the server is full of connections that have not logged in; yours was "
                "dropped to make room: log in sooner after connecting",
            )
            if full:
                self.left(victim)  # its place is free now, before its transport closes
        return None

    def joined(self, conn: Client) -> None:
        self._connections.add(conn)
        self._per_address[conn.address] += 1
        self._unauthenticated[conn] = None

    def authenticated(self, conn: Client) -> None:
        """``conn`` logged in (or is leaving): it no longer counts as not logged in."""
        self._unauthenticated.pop(conn, None)

    def left(self, conn: Client) -> None:
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


def presence_holder(slot: str, opened: list[tuple[str, str, int]]) -> str:
    """This process's name in the presence rows: the same for the process that takes its
    place after a crash (the same machine, listeners and slot), so that one clears what
    the dead one could not, and distinct for every process serving at once."""
    where = ",".join(f"{kind}={host}:{port}" for kind, host, port in sorted(opened))
    text = f"{socket.gethostname()}|{slot}|{where}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context
