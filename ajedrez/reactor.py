"""The asyncio transport: one event loop holds every connection, a bounded pool of threads
runs the commands.

An idle session costs a few kilobytes (a task, a stream, a :class:`Session`) instead of a
thread stack, so thousands of players can stay connected; the database work, which is
blocking (SQLAlchemy, python-chess), runs in at most ``command_threads`` threads. Each
connection runs its commands one at a time, in order, and a reply leaves in one write
with ``TCP_NODELAY`` set. ``docs/performance.md`` compares this with thread-per-connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from concurrent.futures import ThreadPoolExecutor

from .codes import Reply
from .server import Limits
from .service import Accounts, Games
from .session import Outcome, Session
from .wire import OVERLONG, LineBuffer, encode_reply

log = logging.getLogger("ajedrez.server")

READ_CHUNK = 65536


class Reactor:
    def __init__(
        self,
        accounts: Accounts,
        games: Games,
        host: str,
        port: int,
        limits: Limits | None = None,
        command_threads: int = 16,
    ) -> None:
        self.accounts = accounts
        self.games = games
        self.host = host
        self.port = port
        self.limits = limits or Limits()
        self._pool = ThreadPoolExecutor(command_threads, thread_name_prefix="command")
        self._server: asyncio.Server | None = None
        self._stopping = asyncio.Event()
        self._idle: dict[asyncio.Task[None], bool] = {}  # task -> waiting for input

    async def start(self) -> tuple[str, int]:
        self._server = await asyncio.start_server(
            self._on_client, self.host, self.port, backlog=1024, limit=READ_CHUNK
        )
        host, port = self._server.sockets[0].getsockname()[:2]
        return host, port

    def stop(self) -> None:
        """Begin a graceful stop; safe to call from a signal handler on the loop."""
        self._stopping.set()
        for task, idle in self._idle.items():
            if idle:
                task.cancel()  # nothing in progress: end the session now

    async def serve_until_stopped(self) -> None:
        assert self._server is not None
        await self._stopping.wait()
        self._server.close()
        pending = list(self._idle)
        if pending:
            _, late = await asyncio.wait(pending, timeout=self.limits.stop_grace)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        await self._server.wait_closed()
        self._pool.shutdown(wait=True, cancel_futures=True)
        log.info("all sessions closed")

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        addr = writer.get_extra_info("peername") or ("?", 0)
        peer = f"{addr[0]}:{addr[1]}"
        if self._stopping.is_set() or len(self._idle) >= self.limits.max_connections:
            log.warning("refusing %s: %d connections open", peer, len(self._idle))
            writer.write(encode_reply(Reply.E_BUSY, "too many connections; try again later"))
            await _close(writer)
            return
        task = asyncio.current_task()
        assert task is not None
        self._idle[task] = True
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        session = Session(self.accounts, self.games, peer)
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
            await _close(writer)

    async def _converse(
        self,
        session: Session,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        task: asyncio.Task[None],
    ) -> None:
        loop = asyncio.get_running_loop()
        buffer = LineBuffer(self.limits.max_line)
        while not self._stopping.is_set():
            self._idle[task] = True
            try:
                data = await asyncio.wait_for(reader.read(READ_CHUNK), self.limits.idle_timeout)
            except TimeoutError:
                log.info("closing idle connection %s", session.who())
                return
            if not data:
                return
            self._idle[task] = False
            for item in buffer.feed(data):
                if item is OVERLONG:
                    outcome = session.overlong(self.limits.max_line)
                else:
                    # Shielded: a stop never abandons a command half-way in its thread.
                    outcome = await asyncio.shield(
                        loop.run_in_executor(self._pool, session.handle_line, item)
                    )
                await _send(writer, outcome)
                if outcome.close:
                    return


async def _send(writer: asyncio.StreamWriter, outcome: Outcome) -> None:
    if outcome.replies:
        writer.write(b"".join(outcome.replies))
        await writer.drain()


async def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), 1.0)
