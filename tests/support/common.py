"""Names every tier shares: the repository root, the test password, unique user names,
and polling for a condition (from a thread, or from a coroutine on the event loop)."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PASSWORD = "correct horse battery"

_counter = itertools.count()
_run = uuid.uuid4().hex[:6]


def unique_name(prefix: str = "u") -> str:
    """A user name no other test (or earlier run on the same database) uses."""
    return f"{prefix}{_run}{next(_counter)}"[:32]


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.05) -> bool:
    """True as soon as ``predicate`` holds; False if it still does not after ``timeout``
    seconds. Callers assert the result, so an event that never happens fails the test."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)  # the interval between two looks at the condition
    return predicate()


async def wait_for_async(
    predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.01
) -> bool:
    """``wait_for`` for a coroutine: the event loop goes on running between looks, so
    the predicate may wait on work the loop itself does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(interval)  # the interval between two looks at the condition
    return predicate()
