"""Presence: which accounts are connected, over every server process sharing the
database (``--workers``, several servers on one database).

Each process counts its logged-in sessions of each account in a row of its own, named
by ``holder`` (new at each start) and leased as guests' names are: the process renews
its rows every ``RENEW_EVERY`` seconds, and a process that dies stops counting once its
lease lapses (``LEASE_MS``). A live seek lasts only while its owner is connected: the
owner's last session takes it along, and a seek whose owner is connected nowhere never
pairs (docs/protocol.md, BUSC).
"""

from __future__ import annotations

import secrets

from ajedrez.domain.clocks import Clock
from ajedrez.domain.ports import Store

# How long a process's rows count after its last renewal: a process that dies keeps
# its accounts connected this long at most.
LEASE_MS = 120_000
# Renewals come this often (seconds of real time), several to a lease.
RENEW_EVERY = 30.0


class Presence:
    def __init__(self, store: Store, clock: Clock, holder: str | None = None) -> None:
        self.store = store
        self.clock = clock
        self.holder = holder or secrets.token_hex(8)  # this process, in the rows

    def arrive(self, user_id: int) -> None:
        """A session of the account logged in here."""
        now = self.clock.now_ms()
        with self.store.writing() as tx:
            tx.lock_user(user_id)  # one count at a time for the account, over all processes
            tx.add_session(user_id, self.holder, now + LEASE_MS)

    def depart(self, user_id: int) -> int:
        """A session of the account here ended. When it was the account's last anywhere,
        its live seeks go with it; returns how many went."""
        now = self.clock.now_ms()
        with self.store.writing() as tx:
            tx.lock_user(user_id)
            tx.drop_session(user_id, self.holder)
            return tx.drop_live_seeks(now, user_id)

    def renew(self) -> int:
        """Renew this process's rows; forget those of processes that died, and withdraw
        the live seeks of the accounts that left with them. Returns how many went."""
        now = self.clock.now_ms()
        with self.store.writing() as tx:
            tx.renew_presences(self.holder, now + LEASE_MS)
            tx.drop_presences(lapsed_at=now)
            return tx.drop_live_seeks(now)

    def vacate(self) -> int:
        """This process stops: none of its sessions count any more, and the live seeks
        of the accounts connected nowhere else go. Returns how many went."""
        now = self.clock.now_ms()
        with self.store.writing() as tx:
            tx.drop_presences(holder=self.holder)
            return tx.drop_live_seeks(now)
