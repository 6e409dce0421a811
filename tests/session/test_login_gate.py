"""The login gate (``service/login.py``) without a socket: its states, the address's one
slot, the throttle's delay and the grace, on a loop whose timers the test fires."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ajedrez.service.login import LoginGate, LoginState
from ajedrez.service.throttle import LoginThrottle


@dataclass
class Timer:
    delay: float
    callback: Callable[..., None]
    args: tuple[Any, ...]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True

    def fire(self) -> None:
        assert not self.cancelled
        self.callback(*self.args)


@dataclass
class Loop:
    timers: list[Timer] = field(default_factory=list)

    def call_later(self, delay: float, callback: Callable[..., None], *args: Any) -> Timer:
        timer = Timer(delay, callback, args)
        self.timers.append(timer)
        return timer

    def pending(self) -> list[Timer]:
        return [t for t in self.timers if not t.cancelled]


class Now:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@dataclass
class Attempt:
    """One connection's password check: what the gate told it."""

    gone: bool = False
    log: list[str] = field(default_factory=list)

    def ask(self, gate: LoginGate, user: str = "ana") -> None:
        gate.request(
            user,
            "10.0.0.1:5000",
            lambda: self.log.append("ready"),
            lambda: self.gone,
            lambda: self.log.append("abandoned"),
        )


def gate(throttle: LoginThrottle, loop: Loop) -> LoginGate:
    return LoginGate(throttle, "10.0.0.1", loop, lambda step: step())  # type: ignore[arg-type]


def test_a_clean_address_checks_at_once_and_the_slot_passes_on_when_done() -> None:
    throttle, loop = LoginThrottle(clock=Now()), Loop()
    first, second = gate(throttle, loop), gate(throttle, loop)
    a, b = Attempt(), Attempt()
    a.ask(first)
    assert first.state is LoginState.CHECKING and a.log == ["ready"]
    b.ask(second)
    assert second.state is LoginState.QUEUED and second.waiting and b.log == []
    first.done()
    assert first.state is LoginState.IDLE
    assert second.state is LoginState.CHECKING and b.log == ["ready"]
    second.done()
    assert throttle.queued("10.0.0.1") == 0


def test_after_a_failure_the_next_check_waits_out_the_delay_holding_the_slot() -> None:
    now = Now()
    throttle, loop = LoginThrottle(base=2.0, clock=now), Loop()
    throttle.failed("10.0.0.1", "ana")
    g, a = gate(throttle, loop), Attempt()
    a.ask(g)
    assert g.state is LoginState.HOLDING and a.log == []
    (timer,) = loop.pending()
    assert timer.delay == 2.0
    now.t += 2.0
    timer.fire()
    assert g.state is LoginState.CHECKING and a.log == ["ready"]


def test_a_client_that_leaves_while_queued_gives_its_place_to_the_next() -> None:
    throttle, loop = LoginThrottle(clock=Now()), Loop()
    first, leaving, third = gate(throttle, loop), gate(throttle, loop), gate(throttle, loop)
    a, b, c = Attempt(), Attempt(), Attempt()
    a.ask(first)
    b.ask(leaving)
    c.ask(third)
    leaving.drop()
    assert leaving.state is LoginState.IDLE
    first.done()
    assert b.log == [] and c.log == ["ready"]


def test_a_client_gone_when_its_turn_comes_is_abandoned_and_passes_the_slot_on() -> None:
    throttle, loop = LoginThrottle(clock=Now()), Loop()
    first, second, third = gate(throttle, loop), gate(throttle, loop), gate(throttle, loop)
    a, b, c = Attempt(), Attempt(), Attempt()
    a.ask(first)
    b.ask(second)
    c.ask(third)
    b.gone = True
    first.done()
    assert b.log == ["abandoned"] and second.state is LoginState.IDLE
    assert c.log == ["ready"]


def test_a_running_check_keeps_the_slot_until_done_even_if_its_client_leaves() -> None:
    throttle, loop = LoginThrottle(clock=Now()), Loop()
    first, second = gate(throttle, loop), gate(throttle, loop)
    a, b = Attempt(), Attempt()
    a.ask(first)
    b.ask(second)
    first.drop()  # the client left mid-check: the next guess must not run beside it
    assert first.state is LoginState.CHECKING and b.log == []
    first.done()
    assert b.log == ["ready"]


def test_the_grace_expires_unless_the_connection_logs_in() -> None:
    throttle, loop = LoginThrottle(clock=Now()), Loop()
    late, prompt = gate(throttle, loop), gate(throttle, loop)
    expired: list[str] = []
    late.start_grace(30.0, lambda: expired.append("late"))
    prompt.start_grace(30.0, lambda: expired.append("prompt"))
    assert prompt.logged_in() is True
    assert prompt.logged_in() is False  # once only: the host counts it once
    for timer in loop.pending():
        timer.fire()
    assert expired == ["late"]
