"""What the seed protocols' listeners share (docs/dialects.md): a connection that seats
one name at one table at a time, paired through the service's seeks or watching a game,
and carries its session's steps out against the service, one at a time, in order.

Each protocol brings an IO-free session (bytes' meaning in, steps out) and a connection
class over :class:`TableConnection` that reads its own framing and says the host's
turnaways in its own words. The steps every session asks the same way are defined here
(:data:`Asked`), with the :class:`Table` a connection sits at.

Input and events wait in one queue, so that what a step sends leaves before what the
events it caused send. Reading pauses while input waits, and the event stream stops
taking events while the client does not read, so a connection holds little whatever its
client does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from ajedrez.domain import event_kinds as ev
from ajedrez.domain.errors import Failure, StorageError
from ajedrez.domain.events import StoredEvent
from ajedrez.domain.positions import START_FEN
from ajedrez.domain.values import BLACK, WHITE
from ajedrez.domain.views import GameStatus, MoveRecord
from ajedrez.service.frontend import Host, Turnaway
from ajedrez.service.guests import Guest
from ajedrez.service.hub import Marker, Stream
from ajedrez.service.login import LoginGate, log_in
from ajedrez.service.netblocks import client_key
from ajedrez.service.player import Player

log = logging.getLogger("ajedrez.server")

INPUT_AHEAD = 16  # messages or packets read ahead of the one running; then reading pauses
_CLOSED = object()  # the queue's last item: the connection is gone


# -- steps -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Send:
    lines: tuple[bytes, ...]


@dataclass(frozen=True)
class Close:
    """End the connection once what was sent so far has left."""


@dataclass(frozen=True)
class Identify:
    """Give the connection the name ``name``: a guest's, or with ``password`` the
    account's (answer: ``identified``)."""

    name: str
    password: str | None


@dataclass(frozen=True)
class Seek:
    """Seek a game (answer: ``sought``, with the game when it paired at once)."""


@dataclass(frozen=True)
class ConfirmSeat:
    """Is ``game_id``, begun while the seek waited, the seek's game? It is if it is in
    play and, for an account, the seek is gone (an account may begin games elsewhere, by
    an ESPOL challenge). (answer: ``confirmed``)"""

    game_id: int
    color: str
    white: str
    black: str


@dataclass(frozen=True)
class Watch:
    """Observe the game (answer: ``watching``, with its status and moves)."""

    game_id: int


@dataclass(frozen=True)
class Play:
    game_id: int
    move: MoveRecord


@dataclass(frozen=True)
class Resign:
    game_id: int
    opponent: str


# What every table's session may ask of the service.
Asked = Identify | Seek | ConfirmSeat | Watch | Play | Resign


@dataclass
class Table:
    """The connection's game: its role in it (``WHITE``, ``BLACK``, or the protocol's
    spectator's), and the position it was last told of."""

    game_id: int
    role: str
    white: str
    black: str
    fen: str = START_FEN
    ply: int = 0  # moves played
    over: bool = False

    @property
    def opponent(self) -> str:
        return self.black if self.role == WHITE else self.white


def event_number(value: object) -> int:
    """An event's number field (``event_kinds.NUMBER``)."""
    assert isinstance(value, int)
    return value


def table_event(table: Table | None, event: StoredEvent) -> Table | None:
    """The table ``event`` is about, while its game goes on and the event is one this
    release knows (None: nothing for the table to follow)."""
    if table is None or event.game_id != table.game_id or table.over:
        return None
    return table if ev.conforms(event.kind, event.fields) else None


def new_position(table: Table, event: StoredEvent) -> bool:
    """A move (FIN_DE_TURNO) or an accepted takeback (RETROCESO_ACEPTADO) of the table's
    game, followed on ``table``: True when its position changed (False: another kind of
    event, or a move the table was told of already, as a spectator's first position is)."""
    f = event.fields
    if event.kind == ev.FIN_DE_TURNO:
        ply = event_number(f["jugada_n"])
        if ply <= table.ply:
            return False
        table.ply, table.fen = ply, str(f["fen"])
        return True
    if event.kind == ev.RETROCESO_ACEPTADO:
        table.ply, table.fen = event_number(f["jugada_n"]) - 1, str(f["fen"])
        return True
    return False


def begun_seat(event: StoredEvent, name: str | None) -> ConfirmSeat | None:
    """The seat a game's start (INICIO_PARTIDA) gives ``name``, while its seek waits:
    to be confirmed, as the game may have begun elsewhere (``ConfirmSeat``)."""
    white, black = str(event.fields["blancas"]), str(event.fields["negras"])
    if name not in (white, black) or event.game_id is None:
        return None
    return ConfirmSeat(event.game_id, WHITE if name == white else BLACK, white, black)


def game_number(name: str) -> int:
    """The id of a game the service named (``P0000012``)."""
    return int(name[1:])


class TableSession(Protocol):
    """What the connection needs of a protocol's session."""

    @property
    def waiting(self) -> bool: ...

    def who(self) -> str: ...

    def identified(self, name: str, user_id: int) -> Sequence[object]: ...

    def sought(self, status: GameStatus | None) -> Sequence[object]: ...

    def confirmed(self, seat: ConfirmSeat, ours: bool) -> Sequence[object]: ...

    def watching(self, status: GameStatus, moves: list[MoveRecord]) -> Sequence[object]: ...

    def event(self, event: StoredEvent) -> Sequence[object]: ...

    def failed(self, asked: Any, failure: Failure) -> Sequence[object]: ...

    def server_error(self, asked: Any) -> Sequence[object]: ...


class TableConnection(asyncio.Protocol):
    """One connection of a seed protocol on the event loop. A protocol's class sets
    ``label`` and ``session``, and implements the hooks below the line."""

    label = "table"  # in the metrics; "-tls" is added over TLS

    def __init__(self, host: Host, control: str, session: TableSession) -> None:
        self.host = host
        self.service = host.service
        self.lim = host.limits
        self.control = control
        self.session = session
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.address = "-"
        self.peer = "-"
        self.protocol = self.label
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self.busy = False  # a step runs
        self.closing = False
        self.joined = False
        self.write_paused = False
        self.writable = asyncio.Event()  # set unless the client does not read
        self.writable.set()
        self.reading_paused = False
        self.last_active = self.loop.time()
        self.player: Player | None = None
        self.guest: Guest | None = None
        self.stream: Stream | None = None
        self.gate: LoginGate | None = None
        self.worker: asyncio.Task[None] | None = None
        self.timers: list[asyncio.TimerHandle] = []

    # -- a protocol's hooks ------------------------------------------------------------------

    def received(self, data: bytes) -> None:
        """Queue what ``data`` completes (:meth:`put`)."""
        raise NotImplementedError

    def at_eof(self) -> None:
        """The client sends no more: queue what it sent last, if that is complete."""

    def stopped(self) -> None:
        """The connection is gone: cancel the protocol's own timers."""

    async def handle(self, item: object) -> None:
        """Run the session on one queued input (:meth:`run` its steps)."""
        raise NotImplementedError

    async def carry_out_more(self, step: object) -> Sequence[object]:
        """A step of the protocol's own: what the session answers to its result."""
        raise NotImplementedError

    def words(self, why: Turnaway | str) -> bytes:
        """What the client is told as the connection closes: for a turnaway, for
        ``"idle"`` (nothing happened for the idle timeout) and for ``"name_lost"``
        (another connection took the guest's name). Empty: nothing."""
        raise NotImplementedError

    # -- Client (service/frontend.py) ------------------------------------------------------

    @property
    def idle(self) -> bool:
        """Nothing runs or waits; or the client reads nothing, and whatever waits for it
        cannot go on."""
        return self.write_paused or (not self.busy and self.queue.empty())

    def who(self) -> str:
        return f"{self.session.who()}@{self.peer}"

    def drop(self, why: Turnaway, reason: str) -> None:
        log.info("closing %s: %s", self.who(), reason)
        self.write(self.words(why))
        self.close()

    def close(self) -> None:
        """Close once what was written so far has left. The connection's player leaves
        now, not when the transport is gone (a TLS close may wait on the client)."""
        self.closing = True
        self.queue.put_nowait(_CLOSED)
        self.writable.set()  # a worker waiting for the client to read goes on, to leave
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.closing = True
        self.queue.put_nowait(_CLOSED)
        self.writable.set()
        if self.transport is not None:
            self.transport.abort()

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport = cast(asyncio.Transport, transport)
        addr = transport.get_extra_info("peername") or ("?", 0)
        # Every per-address limit counts the client's network block (netblocks.py).
        self.address = client_key(str(addr[0]), self.lim.ipv6_block_size)
        self.peer = f"{addr[0]}:{addr[1]}"
        refusal = self.host.refusal(self.address)
        if refusal is not None:
            log.warning("refusing %s: %s", self.peer, refusal[1])
            self.drop(*refusal)
            return
        self.host.joined(self)
        self.joined = True
        if transport.get_extra_info("sslcontext") is not None:
            self.protocol = f"{self.label}-tls"
        self.host.metrics.connection_opened(self.protocol)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        throttle = self.service.throttle
        assert throttle is not None  # a served front end's service throttles logins
        self.gate = LoginGate(throttle, self.address, self.loop, self.guarded, self.host.metrics)
        self.gate.start_grace(self.lim.login_grace, self._grace_over)
        self._tick()
        self.worker = self.loop.create_task(self._work())

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self.last_active = self.loop.time()
        self.received(data)
        self.flow()

    def eof_received(self) -> bool:
        self.at_eof()
        self.queue.put_nowait(_CLOSED)
        return True  # the answers to what it sent still go out; the worker closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        for timer in self.timers:
            timer.cancel()
        self.stopped()
        if self.gate is not None:
            self.gate.clear_grace()
            self.gate.drop()
        self.queue.put_nowait(_CLOSED)
        self.writable.set()
        if self.worker is None and self.joined:
            self._gone()

    def pause_writing(self) -> None:
        """The client does not read what it was sent: take nothing more from it, and
        answer nothing more, until it does (or the idle timeout closes it)."""
        self.write_paused = True
        self.writable.clear()
        self.flow()

    def resume_writing(self) -> None:
        self.write_paused = False
        self.writable.set()
        if self.stream is not None:
            self.stream.writable()
        self.flow()

    # -- the event stream ------------------------------------------------------------------

    def send_event(self, item: StoredEvent | Marker) -> bool:
        """The hub's sink: the player's events wait their turn behind the input."""
        if self.closing:
            return True
        if not isinstance(item, Marker):
            self.queue.put_nowait(item)
        return not self.write_paused

    # -- the worker ------------------------------------------------------------------------

    def put(self, item: object) -> None:
        self.queue.put_nowait(item)

    async def _work(self) -> None:
        try:
            while True:
                item = await self.queue.get()
                self.flow()
                if item is _CLOSED or self.closing:
                    break
                await self.writable.wait()
                if self.closing:
                    break
                if self.host.stopping:
                    self.close()
                    break
                self.busy = True
                try:
                    if isinstance(item, StoredEvent):
                        await self.run(self.session.event(item))
                    else:
                        await self.handle(item)
                finally:
                    self.busy = False
                if self.host.stopping:
                    break
                # Other connections' turn: a read full of packets is answered a packet
                # a turn of the loop, never all at once.
                await asyncio.sleep(0)
        except Exception:
            log.exception("connection %s ended by an internal error", self.who())
            self.abort()
        finally:
            self.close()
            await self._leave()

    async def run(self, steps: Sequence[object]) -> None:
        for step in steps:
            if self.closing:
                return
            if isinstance(step, Send):
                self.write(b"".join(step.lines))
            elif isinstance(step, Close):
                self.close()
            else:
                await self.run(await self._ask(step))

    async def _ask(self, step: object) -> Sequence[object]:
        try:
            return await self._carry_out(step)
        except Failure as f:
            log.info("%s: %s refused: %s", self.who(), type(step).__name__, f.reason)
            return self.session.failed(step, f)
        except StorageError as e:
            log.warning("%s: %s failed: %s", self.who(), type(step).__name__, e)
            return self.session.server_error(step)

    async def _carry_out(self, step: object) -> Sequence[object]:
        if isinstance(step, Identify):
            return await self._identify(step)
        me = self.player
        if isinstance(step, Seek):
            assert me is not None  # a session asks nothing of a player before its name
            game_id = await me.seek(self.control)
            return self.session.sought(None if game_id is None else await me.game(game_id))
        if isinstance(step, ConfirmSeat):
            assert me is not None
            ours = (await me.game(step.game_id)).active
            if ours and self.guest is None:
                ours = (me.name, self.control) not in await me.seeks()
            return self.session.confirmed(step, ours)
        if isinstance(step, Watch):
            assert me is not None
            await me.observe(step.game_id)
            status = await me.game(step.game_id)
            return self.session.watching(status, await me.moves(step.game_id))
        if isinstance(step, Play):
            assert me is not None
            await me.move(step.game_id, step.move)
            return []  # everyone at the table hears of it from the move's event
        if isinstance(step, Resign):
            assert me is not None
            await me.resign(step.game_id, step.opponent)
            return []
        return await self.carry_out_more(step)

    async def _identify(self, step: Identify) -> Sequence[object]:
        if step.password is None:
            self.guest = await self.service.guests.claim(step.name, self.address, self.peer)
            if self.closing:  # the client left while its name was claimed
                return []
            self.guest.on_lost = lambda: self.guarded(self._name_lost)
            self.player = Player(self.service, self.guest.caller, self.peer)
        else:
            assert self.gate is not None
            self.player = await log_in(self.service, self.gate, step.name, step.password, self.peer)
        if self.gate is not None:
            self.gate.logged_in()
        self.host.authenticated(self)
        self.stream = await self.player.stream(self)
        return self.session.identified(self.player.name, self.player.id)

    async def _leave(self) -> None:
        """The connection is over: its stream closes, a guest's name and games go, an
        account's waiting seek is withdrawn; then the host forgets it."""
        try:
            if self.stream is not None and self.player is not None:
                self.player.close_stream(self.stream)
                self.stream = None
            if self.guest is not None:
                stopping = self.host.stopping
                ended = await self.service.guests.release(self.guest, stopping=stopping)
                if ended:
                    how = "without a result" if stopping else "lost"
                    log.info("guest %s left: games %s: %s", self.guest.caller.name, how, ended)
            elif self.player is not None:
                if self.session.waiting:
                    with contextlib.suppress(Failure):
                        await self.player.unseek(self.control)
                await self.service.log_out(self.player.caller)
        except Exception as e:
            log.warning("connection %s: cannot release its player: %s", self.who(), e)
        finally:
            self._gone()

    def _gone(self) -> None:
        if self.joined:
            self.joined = False
            self.host.metrics.connection_closed(self.protocol)
            self.host.left(self)

    # -- bytes, timers ---------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if not data or self.transport is None or self.transport.is_closing():
            return
        self.transport.write(data)
        self.last_active = self.loop.time()

    def flow(self) -> None:
        if self.transport is None or self.closing:
            return
        waiting = self.queue.qsize() > INPUT_AHEAD or self.write_paused
        if waiting and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()
        elif not waiting and self.reading_paused:
            self.reading_paused = False
            self.transport.resume_reading()

    def _grace_over(self) -> None:
        if self.gate is not None:
            self.gate.clear_grace()
        if not self.closing and self.player is None:
            self.drop(Turnaway.LOGIN_TIMEOUT, f"no name within {self.lim.login_grace:g} s")

    def _tick(self) -> None:
        """Close a table where nothing happened for the idle timeout (no byte from the
        client, none to it). The timer is set for when that would be, and set again for
        the time left when something happened meanwhile."""
        if self.closing:
            return
        idle = self.lim.idle_timeout
        left = self.last_active + idle - self.loop.time()
        if self.idle and left <= 0:
            self._last_word("idle", f"idle for {idle:g} s")
            return
        again = left if left > 0 else 1.0  # a step runs: look again once it may be done
        self.timers = [self.loop.call_later(again, self.guarded, self._tick)]

    def _name_lost(self) -> None:
        """The guest's lease lapsed and another connection took its name."""
        if not self.closing:
            self._last_word("name_lost", "its name lapsed to another connection")

    def _last_word(self, why: str, reason: str) -> None:
        if self.write_paused:  # what waits for it would never leave: no last word
            log.info("closing %s: %s, not reading", self.who(), reason)
            self.abort()
            return
        log.info("closing %s: %s", self.who(), reason)
        self.write(self.words(why))
        self.close()

    def guarded(self, step: Callable[[], Any]) -> None:
        """Run ``step``; an internal error ends this connection, never the server."""
        try:
            step()
        except Exception:
            log.exception("connection %s ended by an internal error", self.who())
            self.abort()
