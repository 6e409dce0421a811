"""Login throttling: failed PASS attempts space out the next ones, per client address and
per user name.

After ``n`` failures a key's attempts are spaced ``min(max, base * 2**(n-1))`` seconds
apart: 2, 4, 8, 15, 15 ... by default. An attempt *reserves* its slot, so parallel
connections from one address (or against one name) queue behind each other instead of
all guessing at once. The transport waits out the delay without holding a thread.

A real user is never locked out: the delay is bounded (15 s), a successful login clears
the records of that address and that name, and records are forgotten after
``forget_after`` seconds without a failure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

PRUNE_EVERY = 1024  # reservations between sweeps of forgotten records


@dataclass
class _Record:
    failures: int = 0
    last_failure: float = 0.0
    next_allowed: float = 0.0


class LoginThrottle:
    def __init__(
        self,
        base: float = 2.0,
        maximum: float = 15.0,
        forget_after: float = 900.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base = base
        self.maximum = maximum
        self.forget_after = forget_after
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[tuple[str, str], _Record] = {}
        self._since_prune = 0

    def _delay(self, rec: _Record) -> float:
        return min(self.maximum, self.base * 2 ** (rec.failures - 1))

    def _live(self, key: tuple[str, str], now: float) -> _Record | None:
        rec = self._records.get(key)
        if rec is not None and now - rec.last_failure > self.forget_after:
            del self._records[key]
            return None
        return rec

    def reserve(self, address: str, user: str) -> float:
        """Seconds this attempt must wait before its password is checked."""
        now = self._clock()
        with self._lock:
            self._prune(now)
            recs = [r for r in (self._live(("a", address), now), self._live(("u", user), now)) if r]
            if not recs:
                return 0.0
            start = max(now, *(r.next_allowed for r in recs))
            for r in recs:
                r.next_allowed = start + self._delay(r)
            return start - now

    def failed(self, address: str, user: str) -> None:
        now = self._clock()
        with self._lock:
            for key in (("a", address), ("u", user)):
                rec = self._live(key, now) or self._records.setdefault(key, _Record())
                rec.failures += 1
                rec.last_failure = now
                rec.next_allowed = max(rec.next_allowed, now + self._delay(rec))

    def succeeded(self, address: str, user: str) -> None:
        with self._lock:
            self._records.pop(("a", address), None)
            self._records.pop(("u", user), None)

    def _prune(self, now: float) -> None:
        self._since_prune += 1
        if self._since_prune < PRUNE_EVERY:
            return
        self._since_prune = 0
        stale = [k for k, r in self._records.items() if now - r.last_failure > self.forget_after]
        for key in stale:
            del self._records[key]

    def __len__(self) -> int:
        return len(self._records)
