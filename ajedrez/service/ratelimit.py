"""A sliding-window rate limit per key (SUBS per client address): at most ``limit``
events in any ``window`` seconds. No I/O; the clock is injected."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

PRUNE_EVERY = 1024  # calls between sweeps of keys with no recent event


class RateLimit:
    def __init__(
        self, limit: int, window: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._lock = threading.Lock()
        self._events: dict[str, deque[float]] = {}
        self._since_prune = 0

    def allow(self, key: str) -> float:
        """0 when the event may happen now (and it is counted); otherwise the seconds
        until it may."""
        now = self._clock()
        with self._lock:
            self._prune(now)
            events = self._events.setdefault(key, deque())
            while events and now - events[0] >= self.window:
                events.popleft()
            if len(events) >= self.limit:
                return events[0] + self.window - now
            events.append(now)
            return 0.0

    def _prune(self, now: float) -> None:
        self._since_prune += 1
        if self._since_prune < PRUNE_EVERY:
            return
        self._since_prune = 0
        for key in [k for k, e in self._events.items() if not e or now - e[-1] >= self.window]:
            del self._events[key]

    def __len__(self) -> int:
        return len(self._events)
