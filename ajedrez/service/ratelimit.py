"""Rate limits per key, no I/O, the clock injected; ``allow(key)`` answers 0 when the
action may happen now (and counts it), else the seconds until it may.

- :class:`RateLimit`, a sliding window: at most ``limit`` actions in any ``window``
  seconds (SUBS per client address).
- :class:`TokenBucket`: a burst of ``burst`` actions, then ``rate`` a second (the
  commands that make an event for another user, per account). A human's bursts pass;
  a script is held to the rate.

Keys idle long enough to be back where they started are dropped now and then, so memory
follows the keys in use.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

PRUNE_EVERY = 1024  # calls between sweeps of keys with no recent event

K = TypeVar("K")
R = TypeVar("R")


class _Keyed(Generic[K, R]):
    """A record per key behind one lock, swept of idle records every ``PRUNE_EVERY``
    calls; subclasses say what a record is and when it is idle."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[K, R] = {}
        self._since_prune = 0

    def _idle(self, record: R, now: float) -> bool:
        raise NotImplementedError

    def _prune(self, now: float) -> None:
        self._since_prune += 1
        if self._since_prune < PRUNE_EVERY:
            return
        self._since_prune = 0
        for key in [k for k, r in self._records.items() if self._idle(r, now)]:
            del self._records[key]

    def __len__(self) -> int:
        return len(self._records)


class RateLimit(_Keyed[str, deque[float]]):
    def __init__(
        self, limit: int, window: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(clock)
        self.limit = limit
        self.window = window

    def allow(self, key: str) -> float:
        now = self._clock()
        with self._lock:
            self._prune(now)
            events = self._records.setdefault(key, deque())
            while events and now - events[0] >= self.window:
                events.popleft()
            if len(events) >= self.limit:
                return events[0] + self.window - now
            events.append(now)
            return 0.0

    def _idle(self, record: deque[float], now: float) -> bool:
        return not record or now - record[-1] >= self.window


class TokenBucket(_Keyed[int, list[float]]):
    """Each key's bucket holds up to ``burst`` tokens and gains ``rate`` a second; an
    action takes one. A record is [tokens, when they were counted]."""

    def __init__(
        self, burst: int, rate: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(clock)
        self.burst = burst
        self.rate = rate

    def allow(self, key: int) -> float:
        now = self._clock()
        with self._lock:
            self._prune(now)
            record = self._records.get(key)
            tokens = self.burst if record is None else self._tokens(record, now)
            if tokens < 1:
                self._records[key] = [tokens, now]
                return (1 - tokens) / self.rate if self.rate > 0 else float("inf")
            self._records[key] = [tokens - 1, now]
            return 0.0

    def _tokens(self, record: list[float], now: float) -> float:
        tokens, then = record
        return min(float(self.burst), tokens + max(0.0, now - then) * self.rate)

    def _idle(self, record: list[float], now: float) -> bool:
        return self._tokens(record, now) >= self.burst
