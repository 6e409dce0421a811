"""The guests this process's connections hold (``domain/guests.py``): each name's lease
renewed while its connection lasts, released when it ends, and the cap on guests from
one client address. Every front end that gives guests out (the seed protocols') claims
and releases them here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

from ajedrez.domain.accounts import Caller
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.guests import RENEW_EVERY, Guests

log = logging.getLogger("ajedrez.server")

T = TypeVar("T")


class Runner(Protocol):
    """Runs an operation's work on the service's pool for it (``Service.run``)."""

    def __call__(self, what: str, work: Callable[[], T]) -> Awaitable[T]: ...


@dataclass(eq=False)
class Guest:
    """A guest held by one connection: who, from where, and its lease's end."""

    caller: Caller
    address: str
    lease_ms: int
    lost: bool = False  # another connection took the name: the lease lapsed unrenewed
    on_lost: Callable[[], None] | None = None  # the connection's: it ends


class GuestBook:
    def __init__(
        self,
        guests: Guests,
        run: Runner,
        max_per_address: int,
    ) -> None:
        """``run(operation, work)``: ``work`` on the service's pool for ``operation``."""
        self.guests = guests
        self._run = run
        self.max_per_address = max_per_address
        self.renew_every = RENEW_EVERY  # seconds between renewals
        self._leases = asyncio.Lock()  # a renewal and a release, one at a time
        self.held: dict[int, Guest] = {}
        self.per_address: Counter[str] = Counter()
        self._renewing: asyncio.Task[None] | None = None

    async def claim(self, name: str, address: str, peer: str) -> Guest:
        if self.per_address[address] >= self.max_per_address:
            # A guest is a sign-up for a connection: the same kind of refusal.
            raise Failure(
                Refusal.SIGNUP_RATE,
                f"too many guests from your address (limit {self.max_per_address})",
            )
        # Counted before the claim runs, so that claims sent at once cannot pass the cap.
        self.per_address[address] += 1
        try:
            user_id, lease = await self._run("claim_guest", partial(self.guests.claim, name))
        except BaseException:
            self._uncount(address)
            raise
        guest = Guest(Caller(user_id, name), address, lease)
        self.held[user_id] = guest
        log.info("guest %s@%s", name, peer)
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.get_running_loop().create_task(self._renew())
        return guest

    async def release(self, guest: Guest, *, stopping: bool = False) -> list[int]:
        """The guest's connection ended: its games are lost (``stopping``: the server's
        stop ended it, and they end without a result) and its name is free. Returns the
        ids of the games it ended."""
        async with self._leases:  # after a renewal under way, with the lease it set
            if self.held.get(guest.caller.id) is not guest:
                return []
            del self.held[guest.caller.id]
            self._uncount(guest.address)
            if guest.lost:
                return []
            release = partial(
                self.guests.release, guest.caller.id, guest.lease_ms, stopping=stopping
            )
            return await self._run("release_guest", release)

    def _uncount(self, address: str) -> None:
        self.per_address[address] -= 1
        if self.per_address[address] <= 0:
            del self.per_address[address]

    async def _renew(self) -> None:
        while self.held:
            await asyncio.sleep(self.renew_every)
            async with self._leases:
                await self._renew_held()

    async def _renew_held(self) -> None:
        held = {user_id: g.lease_ms for user_id, g in self.held.items() if not g.lost}
        try:
            renewed = await self._run("renew_guests", partial(self.guests.renew, held))
        except Exception as e:
            log.warning("cannot renew the guests' names: %s", e)
            return
        for user_id in held:
            guest = self.held.get(user_id)
            if guest is None:
                continue
            if user_id in renewed:
                guest.lease_ms = renewed[user_id]
            else:
                guest.lost = True
                log.warning("guest %s lost its name to another connection", guest.caller.name)
                if guest.on_lost is not None:
                    guest.on_lost()

    async def stop(self) -> None:
        if self._renewing is not None:
            self._renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewing
