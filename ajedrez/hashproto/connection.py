"""One connection of the `#` protocol on the event loop: bytes to messages
(``wire.py``), messages and the player's events to the session (``session.py``), and the
session's steps carried out against the service, one at a time, in order.

Messages and events wait in one queue, so that the lines a step sends (``#OK#N#``)
leave before those of the events it caused (``#INICIO#``). Reading pauses while
messages wait, and the event stream stops taking events while the client does not read
its lines, so a connection holds little whatever its client does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable
from typing import Any, cast

from ajedrez.domain.errors import Failure, StorageError
from ajedrez.domain.events import StoredEvent
from ajedrez.domain.timecontrol import control_name, parse_control
from ajedrez.hashproto import session as s
from ajedrez.hashproto import texts as t
from ajedrez.hashproto.wire import MessageBuffer, Overlong, Unreadable, encode, parse
from ajedrez.service.frontend import Frontend, Host, Turnaway
from ajedrez.service.guests import Guest
from ajedrez.service.hub import Marker, Stream
from ajedrez.service.login import LoginGate, log_in
from ajedrez.service.netblocks import client_key
from ajedrez.service.player import Player

log = logging.getLogger("ajedrez.server")

FLUSH_DELAY = 0.2  # seconds after a final '#' before a message with no terminator is taken
MESSAGES_AHEAD = 16  # messages read ahead of the one running; then reading pauses
_CLOSED = object()  # the queue's last item: the connection is gone


def frontend(control: str) -> Frontend:
    """The front end of a listener whose tables have the time control ``control``."""
    name = control_name(parse_control(control))
    return lambda host: HashConnection(host, name)


class HashConnection(asyncio.Protocol):
    def __init__(self, host: Host, control: str) -> None:
        self.host = host
        self.service = host.service
        self.lim = host.limits
        self.control = control
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.address = "-"
        self.peer = "-"
        self.protocol = "hash"  # its label in the metrics: hash or hash-tls
        self.buffer = MessageBuffer()
        self.session = s.Session()
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self.busy = False  # a step runs
        self.closing = False
        self.joined = False
        self.write_paused = False
        self.reading_paused = False
        self.last_active = self.loop.time()
        self.player: Player | None = None
        self.guest: Guest | None = None
        self.stream: Stream | None = None
        self.gate: LoginGate | None = None
        self.worker: asyncio.Task[None] | None = None
        self.timers: list[asyncio.TimerHandle] = []
        self.flush_timer: asyncio.TimerHandle | None = None

    # -- Client (service/frontend.py) ------------------------------------------------------

    @property
    def idle(self) -> bool:
        return not self.busy and self.queue.empty()

    def who(self) -> str:
        return f"{self.session.who()}@{self.peer}"

    def drop(self, why: Turnaway, reason: str) -> None:
        log.info("closing %s: %s", self.who(), reason)
        self._write(encode(t.NOK, t.TURNAWAYS[why]))
        self.close()

    def close(self) -> None:
        """Close once the lines written so far have left. The connection's player leaves
        now, not when the transport is gone (a TLS close may wait on the client)."""
        self.closing = True
        self.queue.put_nowait(_CLOSED)
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.closing = True
        self.queue.put_nowait(_CLOSED)
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
            self.protocol = "hash-tls"
        self.host.metrics.connection_opened(self.protocol)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        throttle = self.service.throttle
        assert throttle is not None  # a served front end's service throttles logins
        self.gate = LoginGate(throttle, self.address, self.loop, self._guarded, self.host.metrics)
        self.gate.start_grace(self.lim.login_grace, self._grace_over)
        self._tick()
        self.worker = self.loop.create_task(self._work())

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self.last_active = self.loop.time()
        for item in self.buffer.feed(data):
            self.queue.put_nowait(item)
            if isinstance(item, Overlong):
                self.transport.pause_reading()  # type: ignore[union-attr]
                break
        if self.flush_timer is not None:
            self.flush_timer.cancel()
            self.flush_timer = None
        if self.buffer.complete:
            self.flush_timer = self.loop.call_later(FLUSH_DELAY, self._guarded, self._flush)
        self._flow()

    def eof_received(self) -> bool:
        for message in self.buffer.flush():  # its last message needs no pause now
            self.queue.put_nowait(message)
        self.queue.put_nowait(_CLOSED)
        return True  # the lines of what it sent still go out; the worker closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        for timer in self.timers:
            timer.cancel()
        if self.flush_timer is not None:
            self.flush_timer.cancel()
        if self.gate is not None:
            self.gate.clear_grace()
            self.gate.drop()
        self.queue.put_nowait(_CLOSED)
        if self.worker is None and self.joined:
            self._gone()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.stream is not None:
            self.stream.writable()

    # -- the event stream ------------------------------------------------------------------

    def send_event(self, item: StoredEvent | Marker) -> bool:
        """The hub's sink: the player's events wait their turn behind the messages."""
        if self.closing:
            return True
        if not isinstance(item, Marker):
            self.queue.put_nowait(item)
        return not self.write_paused

    # -- the worker ------------------------------------------------------------------------

    async def _work(self) -> None:
        try:
            while True:
                item = await self.queue.get()
                self._flow()
                if item is _CLOSED or self.closing:
                    break
                if self.host.stopping:
                    self.close()
                    break
                self.busy = True
                try:
                    await self._handle(item)
                finally:
                    self.busy = False
                if self.host.stopping:
                    break
        except Exception:
            log.exception("connection %s ended by an internal error", self.who())
            self.abort()
        finally:
            self.close()
            await self._leave()

    async def _handle(self, item: object) -> None:
        if isinstance(item, StoredEvent):
            await self._run(self.session.event(item))
            return
        if isinstance(item, Overlong):
            log.info(
                "%s sent a message over %d bytes; closing", self.who(), self.buffer.max_message
            )
            await self._run([*s.nok(t.TOO_LONG), s.Close()])
            return
        assert isinstance(item, bytes)
        try:
            message = parse(item)
        except Unreadable as e:
            # Not the bytes themselves: they may hold a password.
            log.info("%s sent an unreadable message (%s)", self.who(), e)
            await self._run(s.nok(t.UNREADABLE))
            return
        steps = self.session.receive(message)
        first = steps[0] if steps else None
        if isinstance(first, s.Send) and first.lines[0].startswith(b"#NOK#"):
            said = first.lines[0].decode().strip()
            log.info("%s: %s refused: %s", self.who(), message.command, said)
        await self._run(steps)

    async def _run(self, steps: list[s.Step]) -> None:
        for step in steps:
            if self.closing:
                return
            if isinstance(step, s.Send):
                self._write(b"".join(step.lines))
            elif isinstance(step, s.Close):
                self.close()
            else:
                await self._run(await self._ask(step))

    async def _ask(self, step: s.Asked) -> list[s.Step]:
        try:
            return await self._carry_out(step)
        except Failure as f:
            log.info("%s: %s refused: %s", self.who(), type(step).__name__, f.reason)
            return self.session.failed(step, f)
        except StorageError as e:
            log.warning("%s: %s failed: %s", self.who(), type(step).__name__, e)
            return s.nok(t.SERVER_ERROR)

    async def _carry_out(self, step: s.Asked) -> list[s.Step]:
        if isinstance(step, s.Identify):
            return await self._identify(step)
        if isinstance(step, s.ListGames):
            found = await self.service.run("games_in_play", self.service.games.live.games_in_play)
            return self.session.games(found)
        me = self.player
        assert me is not None  # the session asks nothing else before it has a name
        if isinstance(step, s.Seek):
            game_id = await me.seek(self.control)
            return self.session.sought(None if game_id is None else await me.game(game_id))
        if isinstance(step, s.ConfirmSeat):
            ours = (await me.game(step.game_id)).active
            if ours and self.guest is None:
                ours = (me.name, self.control) not in await me.seeks()
            return self.session.confirmed(step, ours)
        if isinstance(step, s.Watch):
            await me.observe(step.game_id)
            status = await me.game(step.game_id)
            return self.session.watching(status, await me.moves(step.game_id))
        if isinstance(step, s.Play):
            await me.move(step.game_id, step.move)
            return []  # everyone at the table hears of it from the move's event
        if isinstance(step, s.Resign):
            await me.resign(step.game_id, step.opponent)
            return []
        if isinstance(step, s.History):
            return self.session.history(await me.moves(step.game_id))
        assert isinstance(step, s.Clocks)
        return self.session.clocks(await me.clocks(step.game_id))

    async def _identify(self, step: s.Identify) -> list[s.Step]:
        if step.password is None:
            self.guest = await self.service.guests.claim(step.name, self.address, self.peer)
            if self.closing:  # the client left while its name was claimed
                return []
            self.guest.on_lost = lambda: self._guarded(self._name_lost)
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

    def _write(self, data: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        self.transport.write(data)
        self.last_active = self.loop.time()

    def _flow(self) -> None:
        if self.transport is None or self.closing:
            return
        waiting = self.queue.qsize() > MESSAGES_AHEAD
        if waiting and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()
        elif not waiting and self.reading_paused:
            self.reading_paused = False
            self.transport.resume_reading()

    def _flush(self) -> None:
        self.flush_timer = None
        for message in self.buffer.flush():
            self.queue.put_nowait(message)
        self._flow()

    def _grace_over(self) -> None:
        if self.gate is not None:
            self.gate.clear_grace()
        if not self.closing and self.player is None:
            self.drop(Turnaway.LOGIN_TIMEOUT, f"no name within {self.lim.login_grace:g} s")

    def _tick(self) -> None:
        """Close a table where nothing happened for the idle timeout (no byte from the
        client, no line to it). The timer is set for when that would be, and set again
        for the time left when something happened meanwhile."""
        if self.closing:
            return
        idle = self.lim.idle_timeout
        left = self.last_active + idle - self.loop.time()
        if self.idle and left <= 0:
            self._last_word(t.IDLE, f"idle for {idle:g} s")
            return
        again = left if left > 0 else 1.0  # a step runs: look again once it may be done
        self.timers = [self.loop.call_later(again, self._guarded, self._tick)]

    def _name_lost(self) -> None:
        """The guest's lease lapsed and another connection took its name."""
        if not self.closing:
            self._last_word(t.NAME_LOST, "its name lapsed to another connection")

    def _last_word(self, text: str, why: str) -> None:
        log.info("closing %s: %s", self.who(), why)
        self._write(encode(t.NOK, text))
        self.close()

    def _guarded(self, step: Callable[[], Any]) -> None:
        """Run ``step``; an internal error ends this connection, never the server."""
        try:
            step()
        except Exception:
            log.exception("connection %s ended by an internal error", self.who())
            self.abort()
