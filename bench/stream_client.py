"""The connections of ``bench.stream``: one :class:`asyncio.Protocol` per ESPOL session,
no task and no stream reader.

Every reply is framed in ``data_received`` and stamped with the wall clock
(``time.time()``) of the bytes that completed it, before any task runs: the delay of an
event is the server's and the network's, plus this process's turn of the loop, never a
task's wake-up. A 6xx reply (an event, docs/protocol.md section 6) goes to the
connection's callback as it arrives and is never taken for a command's answer; any other
reply (and its parts, flag ``1``) answers the oldest command waiting, in order, as the
protocol pipelines them. The header check, the reply classes and the exceptions are the
client library's (:func:`reply_header`, :func:`reply_error`, ``ConnectionLost``).

Ten thousand of these on one loop cost a few KiB each and no CPU while idle.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from ajedrez.client.errors import ConnectionLost, ProtocolError, ReplyError, reply_error
from ajedrez.client.protocol import reply_header
from ajedrez.espol.framing import HEADER

HEAD = HEADER.size  # 6 bytes: code, flag, length


@dataclass(frozen=True, slots=True)
class Answer:
    """A command's answer: its code, its parts' data, and when its last bytes arrived."""

    code: int
    parts: list[str]
    wall: float  # time.time() when the answer's last bytes reached this process

    @property
    def text(self) -> str:
        return "".join(self.parts)

    @property
    def ok(self) -> bool:
        return self.code // 100 in (1, 2, 3)


# (connection, code, data, wall): an event or stream mark (6xx) as it arrives.
EventHandler = Callable[["Conn", int, str, float], None]


class Conn(asyncio.Protocol):
    """One session: commands answered in order, 6xx replies handed to ``on_event``."""

    def __init__(self, on_event: EventHandler | None = None, owner: Any = None) -> None:
        self.on_event = on_event
        self.owner = owner  # whatever ``on_event`` needs to know (a pair, a counter)
        self.transport: asyncio.Transport | None = None
        self.user = ""
        self.closed = False
        self._buf = bytearray()
        self._parts: list[str] = []
        self._waiting: deque[asyncio.Future[Answer]] = deque()

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        wall = time.time()
        buf = self._buf
        buf += data
        pos, size = 0, len(buf)
        try:
            while size - pos >= HEAD:
                code, more, length = reply_header(bytes(buf[pos : pos + HEAD]))
                end = pos + HEAD + length
                if end > size:
                    break
                text = buf[pos + HEAD : end].decode("utf-8")
                pos = end
                if 600 <= code < 700:
                    if self.on_event is not None:
                        self.on_event(self, code, text, wall)
                    continue
                self._parts.append(text)
                if more:
                    continue
                parts, self._parts = self._parts, []
                if self._waiting:
                    future = self._waiting.popleft()
                    if not future.done():
                        future.set_result(Answer(code, parts, wall))
        except (ProtocolError, UnicodeDecodeError) as e:
            self._fail(ConnectionLost(f"unreadable reply: {e}"))
            return
        finally:
            del buf[:pos]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(ConnectionLost(f"the server closed the connection{f': {exc}' if exc else ''}"))

    def _fail(self, error: Exception) -> None:
        self.closed = True
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                future.set_exception(error)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    # -- commands --------------------------------------------------------------------------

    async def request(self, line: str, timeout: float) -> Answer:
        """Send one command line; its answer, whatever its code. ``ConnectionLost`` when
        the connection breaks or no answer comes within ``timeout`` (the connection is
        then closed: a late answer would be taken for the next command's)."""
        if self.closed or self.transport is None:
            raise ConnectionLost("the connection is closed")
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        self.transport.write(line.encode("utf-8") + b"\r\n")
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            self._fail(ConnectionLost(f"no answer to {line.split(':', 1)[0]} in {timeout:g} s"))
            raise ConnectionLost(f"no answer within {timeout:g} s") from None

    async def call(self, line: str, timeout: float) -> Answer:
        """:meth:`request`, raising the library's :class:`ReplyError` for a non-success."""
        answer = await self.request(line, timeout)
        if not answer.ok:
            raise reply_error(answer.code, answer.text)
        return answer

    async def login(self, user: str, password: str, timeout: float) -> None:
        await self.call(f"USER:{user}", timeout)
        await self.call(f"PASS:{password}", timeout)
        self.user = user

    def quit(self) -> None:
        """Send QUIT (no answer comes) and close."""
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"QUIT\r\n")
            self.transport.close()
        self.closed = True


async def connect(
    host: str,
    port: int,
    *,
    source: str | None,
    timeout: float,
    on_event: EventHandler | None = None,
    owner: Any = None,
) -> Conn:
    """A new connection to ``host:port`` from the local address ``source`` (any port)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            _, conn = await loop.create_connection(
                lambda: Conn(on_event, owner),
                host,
                port,
                local_addr=(source, 0) if source else None,
            )
    except (OSError, TimeoutError) as e:
        raise ConnectionLost(
            f"cannot connect to {host}:{port} from {source}: {e or 'timeout'}"
        ) from None
    return conn


def error_code(error: Exception) -> str:
    """How a failure is counted: the reply code, or ``conn`` for a broken connection."""
    return str(error.code) if isinstance(error, ReplyError) else "conn"


def source_address(index: int) -> str:
    """The ``index``-th loopback source address: 127.20.0.1, ... 127.20.0.250, 127.20.1.1,
    ... (the whole of 127.0.0.0/8 reaches this host on Linux)."""
    high, low = divmod(index, 250)
    if high >= 250 * 200:
        raise ValueError("too many source addresses")
    return f"127.{20 + high // 250}.{high % 250}.{low + 1}"
