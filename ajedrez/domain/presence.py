"""Presence: which accounts are connected, over every server process sharing the
database (``--workers``, several servers on one database).

Each process counts its logged-in sessions of each account in a row of its own, named
by ``holder`` (new at each start) and leased as guests' names are: the process renews
its rows every ``RENEW_EVERY`` seconds, and a process that dies stops counting once its
lease lapses (``LEASE_MS``). A live seek lasts only while its owner is connected: the
owner's last session takes it along, and a seek whose owner is connected nowhere never
pairs (docs/protocol.md, BUSC). And an account holds at most ``max_sessions`` sessions at once,
over all processes, so one account cannot fill the server.
"""

from __future__ import annotations

import secrets

from ajedrez.domain.clocks import Clock
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.ports import Store

# How long a process's rows count after its last renewal: a process that dies keeps
# its accounts connected this long at most.
LEASE_MS = 120_000
# Renewals come this often (seconds of real time), several to a lease.
RENEW_EVERY = 30.0
# Logged-in sessions one account may hold at once, over every process (the
# max_sessions_per_account setting): a few devices, each with a streaming connection
# and a command one, with room to spare; far below what fills a server.
SESSIONS_PER_ACCOUNT = 20


class Presence:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        holder: str | None = None,
        max_sessions: int = SESSIONS_PER_ACCOUNT,
    ) -> None:
        self.store = store
        self.clock = clock
        self.holder = holder or secrets.token_hex(8)  # this process, in the rows
        self.max_sessions = max_sessions

    def arrive(self, user_id: int, name: str = "") -> None:
        """A session of the account logged in here; SESSION_LIMIT when it holds its most
        sessions already (then nothing is counted)."""
        now = self.clock.now_ms()
        with self.store.writing() as tx:
            tx.lock_user(user_id)  # one count at a time for the account, over all processes
            if tx.sessions_of(user_id, now) >= self.max_sessions:
                raise Failure(
                    Refusal.SESSION_LIMIT,
                    f"too many sessions of the account '{name}' (limit {self.max_sessions}); "
                    "end one of them first",
                )
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
