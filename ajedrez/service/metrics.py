"""What the service, its hub and its front ends count, as calls on :class:`Metrics`.

Counting is the runtime's (``server/metrics.py`` counts into Prometheus); this class is
the interface, and with counting off (the default) every call does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ajedrez.domain.events import Event


class Metrics:
    """Counting switched off: every method does nothing."""

    directory: str | None = None

    def connection_opened(self, protocol: str) -> None:
        pass

    def connection_closed(self, protocol: str) -> None:
        pass

    def answered(self, command: str, frames: Sequence[bytes], seconds: float) -> None:
        """A command's answer left (``frames``), ``seconds`` after its line came in."""

    def replied(self, frames: Sequence[bytes]) -> None:
        """Replies sent without a command (a refused connection, a timeout)."""

    def login_failed(self) -> None:
        pass

    def login_delayed(self, seconds: float) -> None:
        pass

    def committed(self, events: Sequence[Event]) -> None:
        pass

    def event_sent(self, at_ms: int, now_ms: int, *, live: bool) -> None:
        pass

    def store_error(self, where: str) -> None:
        pass
