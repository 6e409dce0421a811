"""The event loop the transport runs on: uvloop where it is installed, else asyncio's own.

uvloop implements the loop and its TCP transports in C over libuv. The reactor's own
work per request (read, split lines, write the reply, switch tasks) is most of what a
STAT or SPAR costs, and with uvloop one process served about 20% more moves per second
(``docs/performance.md``). Nothing in the server depends on which loop runs it;
``event_loop = "asyncio"`` is there for platforms without uvloop and for comparison.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

EVENT_LOOPS = ("uvloop", "asyncio")


def available(name: str) -> bool:
    return name == "asyncio" or (
        name == "uvloop" and importlib.util.find_spec("uvloop") is not None
    )


def default() -> str:
    return "uvloop" if available("uvloop") else "asyncio"


def run(main: Coroutine[Any, Any, T], name: str) -> T:
    if name == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)
