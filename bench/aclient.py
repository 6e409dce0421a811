"""An asyncio twin of :class:`ajedrez.client.protocol.Client`, for driving many sessions.

The client library is blocking (one socket, one thread). One load process on two cores
cannot run a thousand threads and still measure anything, so this module speaks the same
protocol over asyncio streams. It reuses the library for everything but the I/O: the
header check, the record parsers, :class:`Response`, and the exceptions
(:func:`reply_error`, ``ConnectionLost``, ``ProtocolError``), so a reply is judged exactly
as the library judges it.

Every request is timed from just before its line is written to when the last bytes of
its answer reached this process (the loop handed them to the connection's protocol), and
reported to an optional :class:`Observer` with the reply code (or ``None`` when the
connection failed). With a hundred sessions on one loop, the task that reads the answer
resumes a turn or more later, while the loop serves the others: time that belongs to the
load generator, not to the server or the network. That later time is still reported, to
an observer that has ``observe_wake``, as the command's ``+wake`` figure.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from typing import Protocol

import chess

from ajedrez.client.errors import ConnectionLost, NoMoreMoves, ProtocolError, reply_error
from ajedrez.client.protocol import (
    Changes,
    Response,
    parse_game_status,
    parse_game_summary,
    parse_move_record,
    reply_header,
)
from ajedrez.domain.values import WHITE
from ajedrez.domain.views import GameStatus, GameSummary, MoveRecord
from ajedrez.espol.fields import format_fecha
from ajedrez.espol.framing import HEADER, MAX_DATA


class Observer(Protocol):
    def observe(self, command: str, seconds: float, code: int | None) -> None: ...


class _Timed(asyncio.StreamReaderProtocol):
    """A stream's protocol that notes when bytes last arrived."""

    arrived = 0.0

    def data_received(self, data: bytes) -> None:
        self.arrived = time.perf_counter()
        super().data_received(data)


class AsyncClient:
    """One ESPOL session over one asyncio TCP connection."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        timeout: float,
        observer: Observer | None = None,
        timed: _Timed | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._timed = timed
        self._timeout = timeout
        self._observer = observer
        self.user: str | None = None

    @classmethod
    async def connect(
        cls, host: str, port: int, *, timeout: float = 30.0, observer: Observer | None = None
    ) -> AsyncClient:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=2 * MAX_DATA, loop=loop)
        timed = _Timed(reader, loop=loop)
        try:
            transport, _ = await asyncio.wait_for(
                loop.create_connection(lambda: timed, host, port), timeout
            )
        except (OSError, TimeoutError) as e:
            raise ConnectionLost(f"cannot connect to {host}:{port}: {e or 'timeout'}") from None
        writer = asyncio.StreamWriter(transport, timed, reader, loop)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(reader, writer, timeout=timeout, observer=observer, timed=timed)

    async def close(self) -> None:
        if self._writer.is_closing():
            return
        self._writer.close()
        with contextlib.suppress(OSError, TimeoutError):
            await asyncio.wait_for(self._writer.wait_closed(), 2.0)

    # -- plumbing ----------------------------------------------------------------------

    async def _read_part(self) -> tuple[int, bool, str]:
        try:
            code, more, length = reply_header(await self._reader.readexactly(HEADER.size))
            data = await self._reader.readexactly(length)
        except asyncio.IncompleteReadError:
            raise ConnectionLost("the server closed the connection") from None
        except OSError as e:
            raise ConnectionLost(f"the connection broke: {e}") from None
        return code, more, data.decode("utf-8")

    async def _read_response(self) -> Response:
        code, more, text = await self._read_part()
        parts = [text]
        while more:
            code2, more, text = await self._read_part()
            if code2 != code:
                raise ProtocolError(f"multi-part reply changed code from {code} to {code2}")
            parts.append(text)
        return Response(code, parts)

    async def _exchange(self, line: str) -> Response:
        try:
            self._writer.write(line.encode("utf-8") + b"\r\n")
            # asyncio.timeout, not wait_for: wait_for makes a task of every request, CPU
            # taken from the server on the same machine.
            async with asyncio.timeout(self._timeout):
                return await self._read_response()
        except TimeoutError:
            raise ConnectionLost(f"no reply within {self._timeout:g} s") from None

    async def request(self, code: str, *fields: str) -> Response:
        """Send one command, return its answer; a non-success reply raises (as the library)."""
        line = ":".join([code, *fields])
        start = time.perf_counter()
        try:
            response = await self._exchange(line)
        except Exception:
            self._observe(code, time.perf_counter() - start, None)
            await self.close()
            raise
        woke = time.perf_counter()
        arrived = self._timed.arrived if self._timed is not None else woke
        self._observe(code, (arrived if start <= arrived <= woke else woke) - start, response.code)
        wake = getattr(self._observer, "observe_wake", None)
        if wake is not None:
            wake(code, woke - start, response.code)
        if response.code // 100 not in (1, 2, 3):
            raise reply_error(response.code, response.text)
        return response

    def _observe(self, code: str, seconds: float, reply: int | None) -> None:
        if self._observer is not None:
            self._observer.observe(code, seconds, reply)

    # -- commands (the subset a player needs) ------------------------------------------

    async def login(self, user: str, password: str) -> None:
        await self.request("USER", user)
        await self.request("PASS", password)
        self.user = user

    async def quit(self) -> None:
        if not self._writer.is_closing():
            try:
                self._writer.write(b"QUIT\r\n")
                await self._writer.drain()
            except OSError:
                pass
        await self.close()

    async def jueg(self, user: str, control: str | None = None) -> None:
        await self.request("JUEG", user, *([] if control is None else [control]))

    async def tran(self, fecha: int) -> Changes[str]:
        return (await self.request("TRAN", format_fecha(fecha))).dated_records()

    async def acep(self, color: str, user: str) -> str:
        return (await self.request("ACEP", color, user)).text

    async def ppen(self, fecha: int) -> Changes[GameSummary]:
        fecha2, records = (await self.request("PPEN", format_fecha(fecha))).dated_records()
        return Changes(fecha2, [parse_game_summary(r) for r in records])

    async def stat(self, game: str) -> GameStatus:
        return parse_game_status((await self.request("STAT", game)).text)

    async def spar(self, game: str, after: int) -> list[MoveRecord]:
        try:
            response = await self.request("SPAR", game, str(after))
        except NoMoreMoves:
            return []
        return [parse_move_record(r) for r in response.records()]

    async def jgda(self, game: str, ply: int, move: chess.Move) -> None:
        jugada, posicion, promocion = move_fields(move)
        await self.request("JGDA", game, str(ply), jugada, "0", posicion, str(promocion))

    async def rend(self, game: str, opponent: str) -> None:
        await self.request("REND", game, opponent)


def move_fields(move: chess.Move) -> tuple[str, str, int]:
    """(jugada, posicion, promocion) of a python-chess move, as JGDA wants them.

    python-chess numbers squares a1=0 ... h8=63 and pieces knight=2 ... queen=5, exactly
    the protocol's ``posicion`` and ``promocion`` codes.
    """
    jugada = chess.square_name(move.from_square) + chess.square_name(move.to_square)
    posicion = f"{move.from_square:02d}{move.to_square:02d}"
    return jugada, posicion, move.promotion or 0


def record_move(record: MoveRecord) -> chess.Move:
    """The python-chess move of a SPAR record (promotion from its ``promocion``)."""
    move = chess.Move.from_uci(record.jugada)
    if record.promocion:
        move = chess.Move(move.from_square, move.to_square, promotion=record.promocion)
    return move


def color_of(code: str) -> chess.Color:
    return chess.WHITE if code == WHITE else chess.BLACK
