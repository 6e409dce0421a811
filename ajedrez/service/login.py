"""The login gate of one connection, for any front end that logs players in: the grace
a new connection has to log in, and a password check's turn (the address's one slot,
then the throttle's delay: ``throttle.py``), as a named state machine.

::

    IDLE --request--> QUEUED --slot--> HOLDING --delay over--> CHECKING --done--> IDLE
                        \\_____________/ drop (the client left): the next in line goes

The gate owns its timers on the loop it is given; the front end says what happens when
the check may run (``ready``) and runs it on the service's password pool.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from enum import Enum

from ajedrez.service.metrics import Metrics
from ajedrez.service.player import Player
from ajedrez.service.service import Service
from ajedrez.service.throttle import LoginThrottle
from ajedrez.service.work import work_of

log = logging.getLogger("ajedrez.server")

Step = Callable[[], None]


class LoginState(Enum):
    IDLE = "idle"  # no password check asked for, or the last one is done
    QUEUED = "queued"  # waiting for the address's slot, behind another connection's check
    HOLDING = "holding"  # holding the slot, waiting out the throttle's delay
    CHECKING = "checking"  # the password is being checked


class LoginGate:
    def __init__(
        self,
        throttle: LoginThrottle,
        address: str,
        loop: asyncio.AbstractEventLoop,
        guard: Callable[[Step], None],
        metrics: Metrics | None = None,
    ) -> None:
        """``guard``: runs a step of the gate's from a timer or another connection's
        turn, as the front end runs its own callbacks (an error ends the connection)."""
        self.throttle = throttle
        self.address = address
        self.loop = loop
        self.guard = guard
        self.metrics = metrics or Metrics()
        self.state = LoginState.IDLE
        self.user: str | None = None  # the name the pending check is for
        self.peer = address
        self._ready: Step = _nothing
        self._gone: Callable[[], bool] = lambda: False
        self._abandoned: Step = _nothing
        self._timer: asyncio.TimerHandle | None = None
        self._grace: asyncio.TimerHandle | None = None
        self._waiter = lambda: self.guard(self._slot)

    @property
    def waiting(self) -> bool:
        """A check is waiting its turn (its client may still leave and free the place)."""
        return self.state in (LoginState.QUEUED, LoginState.HOLDING)

    # -- the grace to log in ----------------------------------------------------------------

    def start_grace(self, seconds: float, expired: Step) -> None:
        self._grace = self.loop.call_later(seconds, self.guard, expired)

    def logged_in(self) -> bool:
        """The connection logged in: no more grace. True the first time."""
        if self._grace is None:
            return False
        self._grace.cancel()
        self._grace = None
        return True

    def clear_grace(self) -> None:
        """The grace ran out (its ``expired`` was called), or the connection closed."""
        if self._grace is not None:
            self._grace.cancel()
        self._grace = None

    # -- a password check's turn ------------------------------------------------------------

    def request(
        self, user: str, peer: str, ready: Step, gone: Callable[[], bool], abandoned: Step
    ) -> None:
        """Ask to check a password for ``user``: ``ready`` is called (now, or later from
        the loop) when it may run; ``gone`` says whether the client has left meanwhile,
        and ``abandoned`` is called instead of ``ready`` when it has."""
        self.user, self.peer = user, peer
        self._ready, self._gone, self._abandoned = ready, gone, abandoned
        self.state = LoginState.QUEUED
        if self.throttle.enter(self.address, self._waiter):
            self._slot()

    def _slot(self) -> None:
        """The address's slot is this connection's: wait out the delay, then check."""
        assert self.user is not None
        self.state = LoginState.HOLDING
        self._timer = None
        if self._gone():  # the client left, or the stop's grace ran out, while it queued
            self.drop()
            self._abandoned()
            return
        delay = self.throttle.wait(self.address, self.user)
        if delay > 0:
            log.info("delaying a login of %r from %s by %.1f s", self.user, self.peer, delay)
            self.metrics.login_delayed(delay)
            self._timer = self.loop.call_later(delay, self._waiter)
            return
        self.throttle.checking(self.address, self.user)
        self.state = LoginState.CHECKING
        self._ready()

    def done(self) -> None:
        """The check is over: the slot goes to the next in line. Called before the reply
        leaves, so that a pipelined line that checks a password again finds it free."""
        self.drop(checked=True)

    def drop(self, *, checked: bool = False) -> None:
        """Give up this connection's place in its address's queue, if it has one. A check
        already running keeps the slot until it is done (``checked``), so that a client
        leaving mid-check does not let the next guess run beside it."""
        if self.state is LoginState.CHECKING and not checked:
            return
        state, self.state = self.state, LoginState.IDLE
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.user = None
        if state is LoginState.QUEUED:
            self.throttle.cancel(self.address, self._waiter)
        elif state in (LoginState.HOLDING, LoginState.CHECKING):
            self.throttle.leave(self.address)


def _nothing() -> None:
    pass


async def log_in(service: Service, gate: LoginGate, name: str, password: str, peer: str) -> Player:
    """A whole login for a front end that awaits: the gate's turn, the password checked on
    the service's password pool, the player's handle. Cancelled while it waits its turn
    (the client left), it gives its place up; a check already running keeps the slot
    until it is done, whatever happens to the caller."""
    loop = asyncio.get_running_loop()
    turn: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not turn.done():
            turn.set_result(None)

    gate.request(name, peer, ready, turn.cancelled, _nothing)
    try:
        await turn
    except BaseException:
        gate.drop()
        raise
    pool = service.pools[work_of("log_in")]
    check = pool.submit(service.log_in, name, password, gate.address, peer)
    check.add_done_callback(lambda _done: loop.call_soon_threadsafe(gate.done))
    caller = await asyncio.wrap_future(check)
    return Player(service, caller, peer)
