"""The service every front end calls: accounts (log in, sign up, close), the limits on
them (the login throttle, sign-ups per address), the command threads, and the retry of
work the database rolled back. A login gives a :class:`~ajedrez.service.player.Player`,
whose operations are awaitable.

A front end parses its wire format, calls the service, and encodes what comes back
(values of ``domain/views.py``, or a :class:`~ajedrez.domain.errors.Failure` with its
:class:`~ajedrez.domain.errors.Refusal`). Where an operation runs is the service's
choice (``work.py``); the methods here that block are called on that pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from ajedrez.domain.accounts import Accounts, Caller
from ajedrez.domain.blocks import Blocks
from ajedrez.domain.errors import (
    Failure,
    Refusal,
    StorageError,
    TransientStorageError,
    retrying,
)
from ajedrez.domain.games import Games
from ajedrez.domain.guests import Guests
from ajedrez.domain.presence import RENEW_EVERY, SESSIONS_PER_ACCOUNT, Presence
from ajedrez.domain.rules import Players, plays, stranger
from ajedrez.domain.tokens import DEFAULT_LIFETIME_S, Tokens
from ajedrez.domain.values import game_name
from ajedrez.service.guests import GuestBook
from ajedrez.service.hub import Hub
from ajedrez.service.ratelimit import RateLimit, TokenBucket
from ajedrez.service.throttle import LoginThrottle
from ajedrez.service.work import Work, work_of
from ajedrez.store.moves import Moves

log = logging.getLogger("ajedrez.session")

T = TypeVar("T")

# The operations that make an event for another user, so many a second per account
# (``events``: JUEG/DECL alone sent ~500 events a second to anyone). Chat has its own
# limit, counted in the database (``Live.say``).
EVENTFUL = frozenset(
    {
        "challenge",
        "decline",
        "observe",
        "stop_observing",
        "leave",
        "offer_draw",
        "ask_takeback",
        "seek",
        "block",
        "unblock",
    }
)


class Service:
    def __init__(
        self,
        accounts: Accounts,
        games: Games,
        moves: Moves,
        *,
        throttle: LoginThrottle | None = None,
        signups: RateLimit | None = None,
        events: TokenBucket | None = None,
        hub: Hub | None = None,
        command_threads: int = 16,
        password_threads: int = 2,
        subscription_threads: int = 1,
        guests_per_address: int = 16,
        sessions_per_account: int = SESSIONS_PER_ACCOUNT,
        presence: Presence | None = None,
        token_lifetime: int = DEFAULT_LIFETIME_S,
    ) -> None:
        self.accounts = accounts
        self.games = games
        self.moves = moves
        self.throttle = throttle
        self.signups = signups  # sign-up requests per client address
        self.events = events  # operations in EVENTFUL per account
        self._held: set[int] = set()  # accounts refused by ``events`` since last allowed
        self._blocks: Blocks | None = None
        self.token_lifetime = token_lifetime  # seconds a token lasts unused (token_days)
        self._tokens: Tokens | None = None
        self.hub = hub  # the process's event hub: None where nothing streams
        self.pools = {
            Work.THREAD: ThreadPoolExecutor(command_threads, thread_name_prefix="command"),
            # Password hashes run in their own few threads: that caps the argon2 work at
            # once (19 MiB each), and glibc keeps a freed argon2 buffer in the arena of
            # the thread that used it, so few threads also means little memory kept
            # (bench/idle.py: ~345 MiB of arenas when every command thread may hash).
            Work.PASSWORD: ThreadPoolExecutor(password_threads, thread_name_prefix="password"),
            # Sign-ups hash in threads of their own: a flood never takes a login's turn.
            Work.SUBSCRIPTION: ThreadPoolExecutor(
                subscription_threads, thread_name_prefix="subscription"
            ),
        }

        self.guests_per_address = guests_per_address
        self._guests: GuestBook | None = None
        self.sessions_per_account = sessions_per_account
        self._presence = presence  # None: made from the games' store when first asked
        self._renewing: asyncio.Task[None] | None = None
        self._departing: set[asyncio.Task[None]] = set()  # sessions being counted out
        # Sessions let in while the store refused the count's write, by user: their
        # ends count nothing out (log_in, log_out).
        self._uncounted: Counter[int] = Counter()
        self._uncounted_lock = threading.Lock()
        # Sessions that ended while the store refused the count's write: counted out at
        # the next renewal instead.
        self._owed: Counter[Caller] = Counter()

    @property
    def guests(self) -> GuestBook:
        """The guests this process's connections hold (the seed protocols' front ends),
        kept from the first one on."""
        if self._guests is None:
            guests = Guests(self.accounts.store, self.accounts.clock)
            self._guests = GuestBook(guests, self.run, self.guests_per_address)
        return self._guests

    @property
    def blocks(self) -> Blocks:
        """Who blocks whom (BLOQ, BLOR, BLOL), on the games' store."""
        if self._blocks is None:
            self._blocks = Blocks(self.games.store, self.games.clock)
        return self._blocks

    @property
    def presence(self) -> Presence:
        """This process's count of logged-in sessions in the database
        (``domain/presence.py``), capped at ``sessions_per_account``."""
        if self._presence is None:
            # The games' clock: a live seek's owner is present by the time of its pairing.
            games = self.games
            self._presence = Presence(
                games.store, games.clock, max_sessions=self.sessions_per_account
            )
        return self._presence

    async def start_presence(self, holder: str | None = None) -> None:
        """Before serving: name this process in the presence rows (``holder``: as its
        predecessor was named, whose rows, if it died, are cleared now), then renew them
        while it serves."""
        try:
            presence = self.presence
            if holder is not None:
                presence.holder = holder
            await self.run("vacate_presence", presence.vacate)
        except Exception as e:
            log.warning("cannot clear this process's earlier presence: %s", e)
        if self._renewing is None:
            self._renewing = asyncio.get_running_loop().create_task(self._renew_presence())

    async def _renew_presence(self) -> None:
        while True:
            await asyncio.sleep(RENEW_EVERY)
            await self.count_out_owed()
            try:
                dropped = await self.run("renew_presence", self.presence.renew)
            except Exception as e:
                log.warning("cannot renew this process's presence: %s", e)
                continue
            if dropped:
                log.info("withdrew %d live seek(s) of players connected nowhere", dropped)

    async def stop_presence(self) -> None:
        """The connections are gone (stopping): none of this process's sessions count
        any more, and live seeks of players connected nowhere else go."""
        if self._renewing is not None:
            self._renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewing
        if self._departing:
            await asyncio.gather(*self._departing, return_exceptions=True)
        if self._presence is None:
            return
        try:
            await self.run("vacate_presence", self._presence.vacate)
        except Exception as e:
            log.warning("cannot clear this process's presence: %s", e)

    def logged_out(self, caller: Caller) -> None:
        """A logged-in session of ``caller`` ended (called on the loop): counted out on
        a command thread."""
        task = asyncio.get_running_loop().create_task(self.log_out(caller))
        self._departing.add(task)
        task.add_done_callback(self._departing.discard)

    async def log_out(self, caller: Caller) -> None:
        with self._uncounted_lock:
            if self._uncounted[caller.id] > 0:
                self._uncounted[caller.id] -= 1
                if not self._uncounted[caller.id]:
                    del self._uncounted[caller.id]
                return
        if not await self._depart(caller):
            with self._uncounted_lock:
                self._owed[caller] += 1

    async def _depart(self, caller: Caller) -> bool:
        """Count one session of ``caller`` out; False when the store refused."""
        try:
            dropped = await self.run("log_out", lambda: self.presence.depart(caller.id))
        except Exception as e:
            log.warning("cannot count a session of %s out yet: %s", caller.name, e)
            return False
        if dropped:
            log.info("withdrew %d live seek(s) of %s: its last session ended", dropped, caller.name)
        return True

    async def count_out_owed(self) -> None:
        """The sessions whose ends the store refused to count, counted out now (a count
        out subtracts one, so its order with others does not matter)."""
        with self._uncounted_lock:
            owed = list(self._owed.elements())
        for caller in owed:
            if not await self._depart(caller):
                return
            with self._uncounted_lock:
                self._owed[caller] -= 1
                if not self._owed[caller]:
                    del self._owed[caller]

    @property
    def tokens(self) -> Tokens:
        """Logins that last (FICN, FICH, FICL, FICR), on the accounts' store."""
        if self._tokens is None:
            self._tokens = Tokens(self.accounts.store, self.accounts.clock, self.token_lifetime)
        return self._tokens

    async def stop_guests(self) -> None:
        """Stop renewing guests' leases (their connections are gone: stopping)."""
        if self._guests is not None:
            await self._guests.stop()

    async def run(self, what: str, work: Callable[[], T], who: str = "-") -> T:
        """``work``, the operation ``what``, on the pool the service runs it on, run
        again if the database rolled it back; ``who`` names the caller in the log."""
        retried = partial(self.retrying, work, what, lambda: who)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pools[work_of(what)], retried)

    def shutdown(self) -> None:
        """Wait for the operations running on the pools; drop those not started."""
        for pool in self.pools.values():
            pool.shutdown(wait=True, cancel_futures=True)

    def retrying(self, work: Callable[[], T], what: str, who: Callable[[], str]) -> T:
        """``work``, run again if the database rolled it back to break a deadlock;
        ``who`` names the caller in the log, asked only then."""

        def again(e: TransientStorageError) -> None:
            log.info("retrying %s for %s after: %s", what, who(), e)

        return retrying(work, again)

    # -- accounts -------------------------------------------------------------------------

    def check_user(self, name: str, peer: str) -> None:
        """The first step of a login: is there an active user of that name?"""
        try:
            self.accounts.check_active(name)
        except Failure:
            log.info("login refused for unknown or inactive user %r from %s", name, peer)
            raise

    def log_in(self, name: str, password: str, address: str, peer: str) -> Caller:
        """Check a password (on the password pool, once the login gate lets it); a wrong
        one counts against the address and the name (``throttle.py``). A session that
        logs in is counted in (``presence``) until its front end calls ``logged_out``."""
        return self._checked_login(
            lambda: self.accounts.login(name, password),
            Refusal.WRONG_PASSWORD,
            name,
            address,
            peer,
        )

    def _checked_login(
        self,
        check: Callable[[], Caller],
        wrong: Refusal,
        name: str,
        address: str,
        peer: str,
        token: bool = False,
    ) -> Caller:
        """A login by ``check`` (a password's, or with ``token`` a token's): a refusal of
        kind ``wrong`` counts against the address and the name, a success clears them,
        and the session is counted in."""
        try:
            caller = check()
        except Failure as f:
            log.warning("failed %slogin for %r from %s", "token " if token else "", name, peer)
            if self.throttle is not None and f.kind is wrong:
                self.throttle.failed(address, name)
            raise
        if self.throttle is not None:
            self.throttle.succeeded(address, caller.name)
        self._arrive(caller, peer)
        log.info("login %s@%s%s", caller.name, peer, " (token)" if token else "")
        return caller

    def _arrive(self, caller: Caller, peer: str) -> None:
        """Count a session that logged in (PASS or FICH) in; last, so that a login that
        fails leaves nothing to count out."""
        try:
            self.presence.arrive(caller.id, caller.name)
        except Failure as f:
            log.warning("login of %r from %s refused: %s", caller.name, peer, f.reason)
            raise
        except StorageError as e:
            # Reads go on while the store refuses writes: the player gets in, uncounted
            # (no cap applies, and its live seeks count as its owner's absence).
            log.warning("login of %r from %s not counted: %s", caller.name, peer, e)
            with self._uncounted_lock:
                self._uncounted[caller.id] += 1

    def token_log_in(self, name: str, secret: str, address: str, peer: str) -> Caller:
        """FICH: log in with a token (once the login gate lets it, as a password). A
        wrong, revoked or expired one is a failed login: it counts against the address
        and the name like a wrong password, and is logged, never the secret. A session
        that logs in is counted in, as after PASS."""
        return self._checked_login(
            lambda: self.tokens.log_in(name, secret),
            Refusal.WRONG_TOKEN,
            name,
            address,
            peer,
            token=True,
        )

    def sign_up(self, name: str, password: str, comment: str, address: str, peer: str) -> None:
        """Ask the administrator for an account (with open sign-up, make it); a few
        requests per address at most, either way."""
        if self.signups is not None:
            wait = self.signups.allow(address)
            if wait > 0:
                log.warning("subscription request for %r from %s refused: rate", name, peer)
                raise Failure(
                    Refusal.SIGNUP_RATE,
                    f"too many subscription requests from your address; try again in "
                    f"{max(1, round(wait / 60))} minute(s)",
                )
        if self.accounts.subscribe(name, password, comment, address):
            log.info("account %r made by open sign-up from %s", name, peer)
        else:
            log.info("subscription request for %r from %s", name, peer)

    def limit_events(self, caller: Caller, what: str) -> None:
        """Count an operation of ``EVENTFUL`` (``what``) against the caller's account;
        refused (847) past the burst until the rate has made room. The first refusal
        after an allowed one is logged, so an operator sees who hammers without a line
        per request."""
        if self.events is None:
            return
        wait = self.events.allow(caller.id)
        if wait <= 0:
            self._held.discard(caller.id)
            return
        if caller.id not in self._held:
            self._held.add(caller.id)
            log.warning("requests of %s held by the event rate limit (%s)", caller.name, what)
        raise Failure(
            Refusal.EVENT_RATE,
            f"too many requests that notify other users lately; try again in "
            f"{max(1, math.ceil(wait))} s",
        )

    def close_account(
        self, caller: Caller, name: str, password: str, address: str, peer: str
    ) -> None:
        """Close the caller's own account. A wrong password here is a failed login:
        throttled and logged, so a logged-in session is no faster a password oracle."""
        try:
            self.accounts.unsubscribe(caller, name, password)
        except Failure as f:
            if f.kind is Refusal.WRONG_PASSWORD:
                log.warning("failed login (UNSU) for %r from %s", caller.name, peer)
                if self.throttle is not None:
                    self.throttle.failed(address, caller.name)
            raise
        log.info("account closed by its user %s@%s", caller.name, peer)


def watches(rows: list[Any], caller_id: int) -> bool:
    """Whether a read of a game (its rows: none when there is no such game) is the
    caller's as an observer, which the service then checks (``not_watching``)."""
    return bool(rows) and not plays(rows[0], caller_id)


def not_watching(row: Players, game_id: int) -> Failure:
    """A read of a game by someone who neither plays in nor observes it: for a private
    game, the refusal of one that does not exist (``rules.stranger``)."""
    return stranger(row, game_id, f"you neither play in nor observe {game_name(game_id)}")
