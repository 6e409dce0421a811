"""One client connection on the event loop: bytes in, lines to its session, replies out.

An ``asyncio.Protocol``, not a stream and a task: a line that runs on the loop (its
command's ``runs`` is ``Work.LOOP`` or ``Work.QUEUE``, service/work.py) is answered in
the callback that read it, or, when the store has queued work for it, in the callback
that completes that work. With a task per connection every request cost two more
wake-ups of the task, each a turn of the loop later (``docs/performance.md``).

This is the one dispatcher: :meth:`Connection._pump` reads where each line runs and
runs it on the loop or on the service's pool of that name.

Lines run one at a time, in order: while one waits (for the store's queue or a thread)
the lines behind it stay queued and reading pauses, as it does while the client is not
reading its replies. The transport's flow control and the line buffer's limit thus
bound what a connection holds.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from ajedrez.domain.events import StoredEvent
from ajedrez.espol.codes import Reply
from ajedrez.espol.commands import line_spec
from ajedrez.espol.framing import OVERLONG, LineBuffer, encode_reply
from ajedrez.espol.session import Outcome, Session, StreamAsk
from ajedrez.espol.stream import stream_frame
from ajedrez.service.frontend import Host, Turnaway
from ajedrez.service.hub import Marker, Stream
from ajedrez.service.login import LoginGate
from ajedrez.service.netblocks import client_key
from ajedrez.service.throttle import LoginThrottle
from ajedrez.service.work import Work, when_done

log = logging.getLogger("ajedrez.server")

_LINES_WHILE_LOGIN_WAITS = 8  # lines read ahead while a password check waits its turn


# How ESPOL tells a client why the host turned it away (service/frontend.py).
TURNAWAY_CODES = {
    Turnaway.BUSY: Reply.E_BUSY,
    Turnaway.ADDRESS_LIMIT: Reply.F_ADDRLIMIT,
    Turnaway.LOGIN_TIMEOUT: Reply.F_LOGINTIME,
}


class Connection(asyncio.Protocol):
    def __init__(self, reactor: Host) -> None:
        self.reactor = reactor  # the host: the process's listeners and their books
        self.service = reactor.service
        self.lim = reactor.limits
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.session: Session | None = None
        self.address = "-"
        self.buffer = LineBuffer(self.lim.max_line_before_login)
        self.lines: deque[bytes | object] = deque()
        self.busy = False  # a line is running; the ones behind it wait
        self.closing = False
        self.write_paused = False
        self.reading_paused = False
        self.eof = False
        self.last_heard = self.loop.time()  # the last byte, or the last reply sent
        self.line_started: float | None = None  # the unfinished line's first byte
        self.timer: asyncio.TimerHandle | None = None
        self.timer_due = 0.0
        # A password check (PASS, UNSU) and its place in the address's queue: see throttle.py.
        self.gate: LoginGate | None = None  # the login's grace and password checks' turns
        self.login_line = b""  # the line of the password check waiting its turn
        self.login_where = Work.PASSWORD  # where that line runs (FICH: a command thread)
        self.stream: Stream | None = None  # EVEN: this connection streams events
        self.protocol = "espol"  # its label in the metrics: espol or espol-tls
        self.line_in: tuple[str, float] | None = None  # the running line's command, start
        self.counted_out = False  # the session's login no longer counts (service.logged_out)

    @property
    def _throttle(self) -> LoginThrottle:
        throttle = self.service.throttle
        assert throttle is not None  # a served front end's service throttles logins
        return throttle

    @property
    def idle(self) -> bool:
        """Waiting for the client, with nothing in progress or queued."""
        return not self.busy and not self.lines

    def who(self) -> str:
        return self.session.who() if self.session is not None else self.address

    # -- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not derive from asyncio.Transport, but behave as one.
        self.transport = transport = cast(asyncio.Transport, transport)
        addr = transport.get_extra_info("peername") or ("?", 0)
        # Every per-address limit counts the client's network block (netblocks.py).
        self.address = client_key(str(addr[0]), self.lim.ipv6_block_size)
        peer = f"{addr[0]}:{addr[1]}"
        refusal = self.reactor.refusal(self.address)
        if refusal is not None:
            log.warning("refusing %s: %s", peer, refusal[1])
            self._last_word(TURNAWAY_CODES[refusal[0]], refusal[1])
            return
        self.reactor.joined(self)
        if transport.get_extra_info("sslcontext") is not None:
            self.protocol = "espol-tls"
        self.reactor.metrics.connection_opened(self.protocol)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.session = Session(self.service, peer, self.address)
        self._arm_timer(self.lim.idle_timeout)
        self.gate = LoginGate(
            self._throttle, self.address, self.loop, self._guarded, self.reactor.metrics
        )
        self.gate.start_grace(self.lim.login_grace, self._grace_over)

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            log.debug("connection %s lost: %s", self.who(), exc)
        self.closing = True
        if self.timer is not None:
            self.timer.cancel()
        if self.gate is not None:
            self.gate.clear_grace()
            self.gate.drop()
        if self.stream is not None:
            self.reactor.hub.close(self.stream)
            self.stream = None
        if self.session is not None:  # not a refused one
            self._count_out()
            self.reactor.metrics.connection_closed(self.protocol)
            self.reactor.left(self)

    def _count_out(self) -> None:
        """The session is over: its login, if it had one, stops counting. Also called
        when a login completes after its client left, so it is counted out either way."""
        session = self.session
        if session is None or session.caller is None or self.counted_out:
            return
        self.counted_out = True
        self.service.logged_out(session.caller)

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self.last_heard = self.loop.time()
        self.lines.extend(self.buffer.feed(data))
        if not self.buffer.pending:
            self.line_started = None
        elif self.line_started is None:
            self.line_started = self.last_heard
            deadline = self.line_started + self.lim.request_deadline
            if deadline < self.timer_due:  # the timer only ever moves later by itself
                self._arm_timer(deadline - self.last_heard)
        self._guarded(self._pump)

    def eof_received(self) -> bool:
        """The client sent all it will: answer what it sent, then close. Over TLS the
        transport closes at once whatever this returns (as with asyncio's streams)."""
        self.eof = True
        if self.gate is not None and self.gate.waiting:
            # A password check that has to wait, from a client that has sent all it will:
            # it is taken for gone, as a client that closes is indistinguishable from one
            # that only half-closes. Its place goes to the next at once. A login that need
            # not wait (a clean address) runs even after the client's EOF.
            log.info("dropping a delayed login from %s: the client closed its side", self.who())
            self.gate.drop()
            self.busy = False
            self.close()
            return False
        if self.idle:
            self.close()
        return self.transport is not None and self.transport.get_extra_info("sslcontext") is None

    def pause_writing(self) -> None:
        self.write_paused = True  # the client does not read its replies: stop taking lines

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.stream is not None:
            self.stream.writable()
        self._guarded(self._pump)

    # -- the event stream (EVEN) -------------------------------------------------------

    def send_event(self, item: StoredEvent | Marker) -> bool:
        """Write one event or mark of the stream (``hub.Sink``); False once the client
        stops reading."""
        if self.closing or self.transport is None or self.transport.is_closing():
            return True  # going away: nothing to catch up
        self.transport.write(stream_frame(item))
        return not self.write_paused

    def _open_stream(self, ask: StreamAsk) -> None:
        hub = self.reactor.hub
        if self.stream is not None:  # EVEN again: the new cursor replaces the old one
            hub.close(self.stream)
        self.stream = hub.open(self, ask.user_id, ask.cursor, now=ask.now)
        assert self.transport is not None
        self.transport.write(encode_reply(Reply.S_EVEN, str(self.stream.start_cursor)))

    # -- lines -------------------------------------------------------------------------

    def _pump(self) -> None:
        """Run queued lines until one has to wait, or none is left."""
        session = self.session
        assert session is not None
        while self.lines and not self.busy and not self.write_paused and not self.closing:
            if self.reactor.stopping:
                self.close()
                return
            item = self.lines.popleft()
            if item is OVERLONG:
                self.line_in = ("overlong", self.loop.time())
                self._send(session.overlong(self.buffer.max_line))
                continue
            assert isinstance(item, bytes)
            spec = line_spec(item)
            self.line_in = (spec.name if spec else "unknown", self.loop.time())
            where = spec.runs if spec else Work.LOOP
            if where in (Work.LOOP, Work.QUEUE):
                if self._answer(session.handle_line(item)):
                    continue
                return
            self._start_in_thread(session, item, where)
            return
        if self.eof and self.idle:
            self.close()
        self._flow()

    def _answer(self, outcome: Outcome) -> bool:
        """Send ``outcome`` once its storage work is done (a STAT may need a second
        read: an observer's); True when it was sent now, so the next line may run."""
        session = self.session
        assert session is not None
        later = outcome.later
        while later is not None and later.work.done():
            # Answered at once (SQLite's reads): no wait, and no recursion through
            # _wait for each of many pipelined lines.
            outcome = session.settled(later, later.work)
            later = outcome.later
        if later is None:
            self._send(outcome)
            return True
        self._wait(later.work, partial(session.settled, later))
        return False

    def _start_in_thread(self, session: Session, line: bytes, where: Work) -> None:
        self.busy = True
        user = session.login_attempt(line)
        if user is None:
            self._in_thread(session, line, where)
            return
        assert self.gate is not None
        self.login_line, self.login_where = line, where
        self.gate.request(
            user, session.peer, self._check_password, lambda: self.closing, self._login_dropped
        )
        if self.gate.waiting:
            self._flow()

    def _check_password(self) -> None:
        """The login gate lets this connection's password check run."""
        session, gate = self.session, self.gate
        assert session is not None and gate is not None
        line, self.login_line = self.login_line, b""
        self._in_thread(session, line, self.login_where, before_reply=gate.done)

    def _login_dropped(self) -> None:
        """The client left while its password check waited: nothing runs."""
        self.login_line = b""
        self.busy = False

    def _in_thread(
        self,
        session: Session,
        line: bytes,
        where: Work,
        before_reply: Callable[[], None] | None = None,
    ) -> None:
        work = self.loop.run_in_executor(self.service.pools[where], session.handle_line, line)

        def outcome(done: asyncio.Future[Outcome]) -> Outcome:
            if before_reply is not None:
                before_reply()
            return done.result()

        self._wait(work, outcome)

    def _wait(self, work: asyncio.Future[Any], outcome: Callable[[Any], Outcome]) -> None:
        """Answer once ``work`` is done, then go on with the lines behind it. Nothing
        cancels ``work``: a command in progress when the client leaves or the server stops
        completes, unanswered."""
        self.busy = True
        self._flow()

        def done(finished: asyncio.Future[Any]) -> None:
            self.busy = False
            if finished.cancelled():  # the command threads were shut down: stopping
                self.abort()
                return
            if self._answer(outcome(finished)):
                self._pump()

        when_done(work, lambda finished: self._guarded(lambda: done(finished)))

    def _flow(self) -> None:
        """Read while lines can run; pause while some wait (the kernel then holds the
        client's further bytes, and TCP slows it down)."""
        if self.transport is None or self.closing:
            return
        # While a password check waits its turn, reading goes on (up to a few lines), so
        # that a client who leaves is noticed and its place given up at once.
        login_waits = self.gate is not None and self.gate.waiting
        allowed = _LINES_WHILE_LOGIN_WAITS if login_waits else 0
        waiting = len(self.lines) > allowed or self.write_paused
        if waiting and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()
        elif not waiting and self.reading_paused:
            self.reading_paused = False
            self.transport.resume_reading()

    def _send(self, outcome: Outcome) -> None:
        session = self.session
        assert session is not None
        line_in, self.line_in = self.line_in, None
        if self.closing or self.transport is None or self.transport.is_closing():
            self._count_out()  # the client left while its command (a PASS, say) ran
            return
        if line_in is not None:
            command, started = line_in
            self.reactor.metrics.answered(command, outcome.replies, self.loop.time() - started)
        if outcome.replies:
            self.transport.write(b"".join(outcome.replies))
        if outcome.stream is not None:
            self._open_stream(outcome.stream)
        self.last_heard = self.loop.time()
        self.buffer.max_line = (
            self.lim.max_line if session.logged_in else self.lim.max_line_before_login
        )
        if session.logged_in and self.gate is not None and self.gate.logged_in():
            self.reactor.authenticated(self)
        if outcome.close or self.reactor.stopping:
            self.close()

    def _guarded(self, step: Callable[[], None]) -> None:
        """Run ``step``; an internal error ends this connection, never the server."""
        try:
            step()
        except Exception:
            log.exception("connection %s ended by an internal error", self.who())
            self.abort()

    # -- closing and timeouts ----------------------------------------------------------

    def _grace_over(self) -> None:
        if self.gate is not None:
            self.gate.clear_grace()
        session = self.session
        if self.closing or session is None or session.logged_in:
            return
        log.info("closing %s: no login within %g s", self.who(), self.lim.login_grace)
        self.drop(
            Turnaway.LOGIN_TIMEOUT,
            f"no login within {self.lim.login_grace:g} s of connecting; closing",
        )

    def drop(self, why: Turnaway, reason: str) -> None:
        """End the session at once with one reply saying why; a command in progress
        completes unanswered."""
        if self.closing or self.transport is None:
            return
        self._last_word(TURNAWAY_CODES[why], reason)

    def _last_word(self, code: Reply, reason: str) -> None:
        """One reply saying why, then the close (once it has left)."""
        frame = encode_reply(code, reason)
        self.reactor.metrics.replied([frame])
        assert self.transport is not None
        self.transport.write(frame)
        self.close()

    def close(self) -> None:
        """Close once the replies written so far have left."""
        self.closing = True
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.abort()

    def _arm_timer(self, delay: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        delay = max(delay, 0.0)
        self.timer_due = self.loop.time() + delay
        self.timer = self.loop.call_later(delay, self._guarded, self._on_timer)

    def _on_timer(self) -> None:
        """Checked lazily: data only moves ``last_heard`` on, and the timer, when it
        fires, sets itself again for whatever time is left."""
        self.timer = None
        if self.closing:
            return
        now = self.loop.time()
        due = self.last_heard + self.lim.idle_timeout
        started = self.line_started
        mid_line = started is not None
        if started is not None:
            due = min(due, started + self.lim.request_deadline)
        # No timeout while a command runs, nor for a streaming client, which may stay
        # silent for days (its heartbeats, 603, find a peer that is gone).
        if self.busy or now < due or (self.stream is not None and not mid_line):
            self._arm_timer((due - now) if now < due else self.lim.idle_timeout)
            return
        if mid_line:
            log.info("closing %s: a line was not finished in time", self.who())
            reason = (
                f"line not finished in time (deadline {self.lim.request_deadline:g} s, "
                f"at most {self.lim.idle_timeout:g} s between bytes); closing"
            )
            self._last_word(Reply.F_DEADLINE, reason)
            return
        log.info("closing idle connection %s", self.who())
        self.close()
