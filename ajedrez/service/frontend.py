"""What a front end is to the runtime: a factory of one connection's protocol, given the
:class:`Host` that serves it (the reactor: its listeners, limits and bookkeeping) and
the service. A new wire protocol is one new module with such a factory.

The host turns connections away, or drops one, for reasons of its own
(:class:`Turnaway`); each front end says so in its own vocabulary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from enum import Enum
from typing import Any, Protocol

from ajedrez.service.hub import Hub
from ajedrez.service.metrics import Metrics
from ajedrez.service.service import Service


class Turnaway(Enum):
    BUSY = "busy"  # the server is full, or stopping
    ADDRESS_LIMIT = "address_limit"  # too many connections from the client's address
    LOGIN_TIMEOUT = "login_timeout"  # no login in time, or dropped for a newcomer


class Client(Protocol):
    """One connection, as its host sees it."""

    address: str

    @property
    def idle(self) -> bool: ...

    def who(self) -> str: ...

    def drop(self, why: Turnaway, reason: str) -> None:
        """End the connection at once, telling the client why."""

    def close(self) -> None: ...

    def abort(self) -> None: ...


class Host(Protocol):
    """What a connection of any front end needs of the process serving it."""

    service: Service
    metrics: Metrics
    limits: Any  # server.settings.Limits: line lengths, timeouts, the login grace
    stopping: bool

    @property
    def hub(self) -> Hub: ...

    def refusal(self, address: str) -> tuple[Turnaway, str] | None: ...

    def joined(self, client: Client) -> None: ...

    def authenticated(self, client: Client) -> None: ...

    def left(self, client: Client) -> None: ...


# A front end: the protocol of one new connection on a listener of the host's.
Frontend = Callable[[Host], asyncio.Protocol]
