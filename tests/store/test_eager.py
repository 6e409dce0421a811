"""``ajedrez/eager.py``: waiters called by the code that completes the future."""

from __future__ import annotations

import asyncio

import pytest

from ajedrez.store.eager import Eager, settle, when_done


def test_waiters_run_inside_settle_not_a_turn_later():
    async def scenario() -> list[str]:
        seen: list[str] = []
        future = Eager(asyncio.get_running_loop())
        when_done(future, lambda f: seen.append(f"first {f.result()}"))
        when_done(future, lambda f: seen.append(f"second {f.result()}"))
        settle(future, 7)
        seen.append("after settle")
        when_done(future, lambda f: seen.append("already done"))  # called at once
        assert await future == 7  # awaiting works as for any future
        return seen

    assert asyncio.run(scenario()) == ["first 7", "second 7", "after settle", "already done"]


def test_an_exception_reaches_the_waiters_and_the_awaiters():
    async def scenario() -> tuple[list[str], str]:
        seen: list[str] = []
        future = Eager(asyncio.get_running_loop())
        when_done(future, lambda f: seen.append(type(f.exception()).__name__))
        settle(future, ValueError("refused"))
        with pytest.raises(ValueError) as raised:
            await future
        return seen, str(raised.value)

    assert asyncio.run(scenario()) == (["ValueError"], "refused")


def test_a_failing_waiter_does_not_stop_the_others():
    async def scenario() -> list[str]:
        seen: list[str] = []
        future = Eager(asyncio.get_running_loop())
        when_done(future, lambda f: 1 / 0)  # type: ignore[func-returns-value]
        when_done(future, lambda f: seen.append("still called"))
        settle(future, None)
        return seen

    assert asyncio.run(scenario()) == ["still called"]


def test_a_cancelled_future_is_left_alone_and_a_plain_one_answers_a_turn_later():
    async def scenario() -> list[str]:
        seen: list[str] = []
        cancelled = Eager(asyncio.get_running_loop())
        cancelled.cancel()
        settle(cancelled, 1)  # no InvalidStateError
        plain = asyncio.get_running_loop().create_future()
        when_done(plain, lambda f: seen.append("plain"))
        plain.set_result(None)
        seen.append("set")
        await asyncio.sleep(0)  # one turn of the loop, in which a plain future's callbacks run
        return seen

    assert asyncio.run(scenario()) == ["set", "plain"]
