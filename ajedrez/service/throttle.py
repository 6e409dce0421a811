"""Login throttling: password guesses are slow, and strangers cannot lock a user out.

Three records, each kept until ``forget_after`` seconds pass without a failure:

- per **address**: after ``n`` failures from it, its next check waits until
  ``min(max, base * 2**(n-1))`` seconds after its last failure (2, 4, 8, 15, 15 ... s);
- per **address and name**: the same spacing for that pair;
- per **name**, over all addresses: failures in the last ``name_window`` seconds. Past
  ``name_budget`` of them, attempts on the name from an address that has failed on it
  share one queue, one check per ``max`` seconds; addresses that have not failed on it
  are not held up at all.

A correct password from an address that has not failed recently is checked at once,
whatever others did to that name (OWASP: account lockout is itself a denial of service).
Delays are counted from the last *failure*, never reserved ahead: an attempt that is
dropped before its check costs no one anything.

Besides the delays, each address has one **slot**: at most one password check from an
address is waiting or running at a time, and the others queue behind it in arrival
order (``enter``/``leave``), so a burst of parallel guesses is serialized behind the
delay. A queued or waiting attempt whose client has gone gives its place up at once
(``cancel``).

No I/O and no timers here: the transport asks how long to wait (``wait``) and calls
back. The clock is injected.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

PRUNE_EVERY = 1024  # calls between sweeps of forgotten records

Waiter = Callable[[], None]


@dataclass
class _Record:
    failures: int = 0
    last_failure: float = 0.0


@dataclass
class _Name:
    failures: deque[float] = field(default_factory=deque)  # times, within name_window
    last_queued_check: float = float("-inf")


class LoginThrottle:
    def __init__(
        self,
        base: float = 2.0,
        maximum: float = 15.0,
        forget_after: float = 900.0,
        name_budget: int = 30,
        name_window: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base = base
        self.maximum = maximum
        self.forget_after = forget_after
        self.name_budget = name_budget
        self.name_window = name_window
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[tuple[str, ...], _Record] = {}
        self._names: dict[str, _Name] = {}
        self._slots: dict[str, deque[Waiter]] = {}  # address -> attempts queued behind
        self._since_prune = 0

    # -- the slot: one check per address at a time ---------------------------------------

    def enter(self, address: str, waiter: Waiter) -> bool:
        """Take the address's slot: True when it is free (the caller holds it now);
        otherwise ``waiter`` is queued and called once the slot passes to it."""
        with self._lock:
            queue = self._slots.get(address)
            if queue is None:
                self._slots[address] = deque()
                return True
            queue.append(waiter)
            return False

    def leave(self, address: str) -> None:
        """The holder is done (checked, or dropped): the next in the queue gets the slot."""
        with self._lock:
            queue = self._slots.get(address)
            if queue is None:
                return
            if not queue:
                del self._slots[address]
                return
            following = queue.popleft()
        following()

    def cancel(self, address: str, waiter: Waiter) -> None:
        """A queued attempt's client has gone: it leaves the queue (no-op if not queued)."""
        with self._lock:
            queue = self._slots.get(address)
            if queue is not None:
                with contextlib.suppress(ValueError):  # its turn came meanwhile
                    queue.remove(waiter)

    def queued(self, address: str) -> int:
        with self._lock:
            queue = self._slots.get(address)
            return 0 if queue is None else len(queue)

    # -- the delays --------------------------------------------------------------------

    def _delay(self, failures: int) -> float:
        return min(self.maximum, self.base * 2.0 ** (failures - 1))

    def _live(self, key: tuple[str, ...], now: float) -> _Record | None:
        rec = self._records.get(key)
        if rec is not None and now - rec.last_failure > self.forget_after:
            del self._records[key]
            return None
        return rec

    def _name(self, user: str, now: float) -> _Name | None:
        rec = self._names.get(user)
        if rec is None:
            return None
        while rec.failures and now - rec.failures[0] > self.name_window:
            rec.failures.popleft()
        if not rec.failures and now - rec.last_queued_check > self.name_window:
            del self._names[user]
            return None
        return rec

    def _over_budget(self, address: str, user: str, now: float) -> _Name | None:
        """The name's record when this attempt must take the name's shared queue."""
        name = self._name(user, now)
        if name is None or len(name.failures) < self.name_budget:
            return None
        return name if self._live(("p", address, user), now) is not None else None

    def wait(self, address: str, user: str) -> float:
        """Seconds this attempt must still wait before its password is checked."""
        now = self._clock()
        with self._lock:
            self._prune(now)
            allowed = now
            for key in (("a", address), ("p", address, user)):
                rec = self._live(key, now)
                if rec is not None:
                    allowed = max(allowed, rec.last_failure + self._delay(rec.failures))
            name = self._over_budget(address, user, now)
            if name is not None:
                allowed = max(allowed, name.last_queued_check + self.maximum)
            return allowed - now

    def checking(self, address: str, user: str) -> None:
        """The attempt's password is being checked now (``wait`` said 0)."""
        now = self._clock()
        with self._lock:
            name = self._over_budget(address, user, now)
            if name is not None:
                name.last_queued_check = now

    def failed(self, address: str, user: str) -> None:
        now = self._clock()
        with self._lock:
            for key in (("a", address), ("p", address, user)):
                rec = self._live(key, now) or self._records.setdefault(key, _Record())
                rec.failures += 1
                rec.last_failure = now
            name = self._name(user, now) or self._names.setdefault(user, _Name())
            name.failures.append(now)
            # Only the count up to the budget matters; the bound keeps memory flat.
            while len(name.failures) > 2 * self.name_budget:
                name.failures.popleft()

    def succeeded(self, address: str, user: str) -> None:
        """The address and the pair are cleared; the name's count stays, as the attack
        on it may go on from elsewhere (it holds up only addresses that failed on it)."""
        with self._lock:
            self._records.pop(("a", address), None)
            self._records.pop(("p", address, user), None)

    def _prune(self, now: float, *, force: bool = False) -> None:
        self._since_prune += 1
        if self._since_prune < PRUNE_EVERY and not force:
            return
        self._since_prune = 0
        for key in [
            k for k, r in self._records.items() if now - r.last_failure > self.forget_after
        ]:
            del self._records[key]
        for user in list(self._names):
            self._name(user, now)

    def __len__(self) -> int:
        """Records still live (addresses, pairs and names), for tests and memory checks."""
        with self._lock:
            self._prune(self._clock(), force=True)
            return len(self._records) + len(self._names)
