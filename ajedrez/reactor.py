"""The asyncio transport: one event loop holds every connection, a bounded pool of threads
runs the commands.

An idle session costs a few kilobytes (a task, a stream, a :class:`Session`) instead of a
thread stack, so thousands of players can stay connected; the database work, which is
blocking (SQLAlchemy, python-chess), runs in at most ``command_threads`` threads, except
for the commands cheaper than a thread hand-off (``Session.runs_inline``: HELP, QUIT, and
on SQLite STAT, SPAR and the check of a JGDA, whose write goes to the writer thread). Each
connection runs its commands one at a time, in order, and a reply leaves in one write
with ``TCP_NODELAY`` set. ``docs/performance.md`` compares this with thread-per-connection;
``docs/security.md`` lists the limits enforced here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from .codes import Reply
from .service import Accounts, Games
from .session import Outcome, Session
from .settings import Limits
from .throttle import LoginThrottle
from .wire import OVERLONG, LineBuffer, encode_reply

log = logging.getLogger("ajedrez.server")

READ_CHUNK = 65536
LISTEN_BACKLOG = 1024
TLS_HANDSHAKE_TIMEOUT = 10.0


class Reactor:
    def __init__(
        self,
        accounts: Accounts,
        games: Games,
        host: str,
        port: int,
        limits: Limits | None = None,
        command_threads: int = 16,
        tls: ssl.SSLContext | None = None,
        tls_port: int | None = None,
        sockets: dict[str, socket.socket] | None = None,
    ) -> None:
        """``sockets``: listening sockets opened already ("plain", "tls"), shared by the
        worker processes of ``--workers``; without them the reactor opens its own."""
        self.accounts = accounts
        self.games = games
        self.host = host
        self.port = port
        self.limits = limits or Limits()
        self.tls = tls
        self.tls_port = tls_port
        self.sockets = sockets or {}
        lim = self.limits
        self.throttle = LoginThrottle(
            lim.login_delay_base, lim.login_delay_max, lim.login_forget_after
        )
        self._pool = ThreadPoolExecutor(command_threads, thread_name_prefix="command")
        # Commands that hash a password run in their own few threads: that caps the
        # argon2 work at once (19 MiB each), and glibc keeps a freed argon2 buffer in the
        # arena of the thread that used it, so few threads also means little memory kept
        # (bench/idle.py: ~345 MiB of arenas when every command thread had hashed).
        self._hash_pool = ThreadPoolExecutor(lim.max_password_checks, thread_name_prefix="password")
        self._servers: list[asyncio.Server] = []
        self._stopping = asyncio.Event()
        self._idle: dict[asyncio.Task[None], bool] = {}  # task -> waiting for input
        self._per_address: Counter[str] = Counter()

    async def start(self) -> list[tuple[str, str, int]]:
        """Open the listeners; returns (kind, host, port) of each."""
        listeners = [("plain", self.port, None)]
        if self.tls is not None and self.tls_port is not None:
            listeners.append(("tls", self.tls_port, self.tls))
        opened = []
        for kind, port, context in listeners:
            shared = self.sockets.get(kind)
            where = {"sock": shared} if shared else {"host": self.host, "port": port}
            server = await asyncio.start_server(
                self._on_client,
                **where,  # type: ignore[arg-type]
                backlog=LISTEN_BACKLOG,
                limit=READ_CHUNK,
                ssl=context,
                ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT if context else None,
            )
            self._servers.append(server)
            host, bound = server.sockets[0].getsockname()[:2]
            opened.append((kind, host, bound))
        return opened

    def stop(self) -> None:
        """Begin a graceful stop; safe to call from a signal handler on the loop."""
        self._stopping.set()
        for task, idle in self._idle.items():
            if idle:
                task.cancel()  # nothing in progress: end the session now

    async def serve_until_stopped(self) -> None:
        await self._stopping.wait()
        for server in self._servers:
            server.close()
        pending = list(self._idle)
        if pending:
            _, late = await asyncio.wait(pending, timeout=self.limits.stop_grace)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        for pool in (self._pool, self._hash_pool):
            pool.shutdown(wait=True, cancel_futures=True)
        log.info("all sessions closed")

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        addr = writer.get_extra_info("peername") or ("?", 0)
        address, peer = str(addr[0]), f"{addr[0]}:{addr[1]}"
        refusal = self._refusal(address)
        if refusal is not None:
            log.warning("refusing %s: %s", peer, refusal[1])
            if not writer.is_closing():  # see _send
                writer.write(encode_reply(*refusal))
            await _close(writer)
            return
        task = asyncio.current_task()
        assert task is not None
        self._idle[task] = True
        self._per_address[address] += 1
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        session = Session(self.accounts, self.games, peer, address, self.throttle)
        try:
            await self._converse(session, reader, writer, task)
        except asyncio.CancelledError:
            pass
        except (ConnectionError, OSError) as e:
            log.debug("connection %s lost: %s", peer, e)
        except Exception:
            log.exception("connection %s ended by an internal error", peer)
        finally:
            self._idle.pop(task, None)
            self._per_address[address] -= 1
            if self._per_address[address] <= 0:
                del self._per_address[address]
            await _close(writer)

    def _refusal(self, address: str) -> tuple[Reply, str] | None:
        if self._stopping.is_set() or len(self._idle) >= self.limits.max_connections:
            return Reply.E_BUSY, "too many connections; try again later"
        if self._per_address[address] >= self.limits.max_connections_per_address:
            limit = self.limits.max_connections_per_address
            return Reply.F_ADDRLIMIT, f"too many connections from your address (limit {limit})"
        return None

    async def _converse(
        self,
        session: Session,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        task: asyncio.Task[None],
    ) -> None:
        loop = asyncio.get_running_loop()
        lim = self.limits
        buffer = LineBuffer(lim.max_line_before_login)
        line_started: float | None = None  # when the unfinished line's first byte came
        while not self._stopping.is_set():
            self._idle[task] = True
            if not buffer.pending:
                line_started = None
            elif line_started is None:
                line_started = loop.time()
            wait = lim.idle_timeout
            if line_started is not None:
                wait = min(wait, line_started + lim.request_deadline - loop.time())
            try:
                # asyncio.timeout, not wait_for: no extra task for every line read.
                async with asyncio.timeout(max(wait, 0.0)):
                    data = await reader.read(READ_CHUNK)
            except TimeoutError:
                await self._timed_out(session, writer, line_started is not None)
                return
            if not data:
                return
            self._idle[task] = False
            for item in buffer.feed(data):
                line_started = None  # a line ended: the deadline restarts with the next
                if item is OVERLONG:
                    outcome = session.overlong(buffer.max_line)
                else:
                    assert isinstance(item, bytes)
                    outcome = await self._run(session, item)
                await _send(writer, outcome)
                if outcome.close:
                    return
                buffer.max_line = lim.max_line if session.logged_in else lim.max_line_before_login

    async def _run(self, session: Session, line: bytes) -> Outcome:
        if session.runs_inline(line):
            outcome = session.handle_line(line)
            return outcome if outcome.later is None else await session.settle(outcome)
        user = session.login_attempt(line)
        if user is not None:
            delay = self.throttle.reserve(session.address, user)
            if delay > 0:
                log.info("delaying a login of %r from %s by %.1f s", user, session.peer, delay)
                await asyncio.sleep(delay)  # waits on the loop: no thread is held
        pool = self._hash_pool if session.costs_a_hash(line) else self._pool
        return await self._in_thread(session, line, pool)

    async def _in_thread(self, session: Session, line: bytes, pool: ThreadPoolExecutor) -> Outcome:
        loop = asyncio.get_running_loop()
        work = loop.run_in_executor(pool, session.handle_line, line)
        # Shielded: a stop never abandons a command half-way in its thread.
        return await asyncio.shield(work)

    async def _timed_out(
        self, session: Session, writer: asyncio.StreamWriter, mid_line: bool
    ) -> None:
        if mid_line:
            log.info("closing %s: a line was not finished in time", session.who())
            lim = self.limits
            reason = (
                f"line not finished in time (deadline {lim.request_deadline:g} s, "
                f"at most {lim.idle_timeout:g} s between bytes); closing"
            )
            await _send(writer, Outcome([encode_reply(Reply.F_DEADLINE, reason)]))
        else:
            log.info("closing idle connection %s", session.who())


async def _send(writer: asyncio.StreamWriter, outcome: Outcome) -> None:
    if outcome.replies:
        if writer.is_closing():
            # The client left while its command ran. asyncio's transport drops a late
            # write; uvloop's raises RuntimeError.
            raise ConnectionResetError("the client closed the connection")
        writer.write(b"".join(outcome.replies))
        await writer.drain()


async def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), 1.0)


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context
