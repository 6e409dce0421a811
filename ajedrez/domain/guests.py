"""Guests (docs/dialects.md, "Guests"): the identity a seed protocol's listener gives a
name sent without a password, for as long as its connection lasts.

A guest is a row of ``users`` marked ``guest``, with no password, so its games, moves
and events are stored like any other player's. Its name is held by a lease the
connection renews; once the connection ends (or its lease lapses, the process gone) the
name is free, and the next connection that gives it has the same row again. A guest
never takes a name an account or a pending sign-up request has, in any case; an account
made later with a guest's name takes it, and the guest's row is renamed out of its way.
"""

from __future__ import annotations

from ajedrez.domain import events, games
from ajedrez.domain.clocks import Clock
from ajedrez.domain.errors import Conflict, Failure, Refusal
from ajedrez.domain.finish import finish
from ajedrez.domain.live import existing_game
from ajedrez.domain.ports import Store, StoreTx
from ajedrez.domain.values import END_STOPPED, WINNER_NONE, new_user_name

# How long a guest's name stays held after the last renewal: a process that dies holds
# its guests' names this long at most.
LEASE_MS = 120_000
# Renewals come this often (seconds of real time), several to a lease.
RENEW_EVERY = 30.0


def retired_name(user_id: int, name: str) -> str:
    """The name a guest's row takes when an account takes its name: one no new account
    or guest can have (a new name may not start with '-'), still a valid user name."""
    return f"-{user_id}-{name}"[:32]


def make_room(tx: StoreTx, name: str) -> None:
    """An account is made with ``name``: a guest of that name (in any case) gives it up."""
    holder = tx.name_holder(name)
    if holder is not None and holder.guest:
        tx.rename_guest(holder.id, retired_name(holder.id, holder.name))


def taken(name: str) -> Failure:
    return Failure(Refusal.NAME_TAKEN, f"the name '{name}' is taken")


class Guests:
    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def claim(self, name: str) -> tuple[int, int]:
        """Hold ``name`` as a guest: (the guest's id, the lease's end in ms). NAME_TAKEN
        when an account, a sign-up request or a connected guest has it."""
        try:
            new_user_name(name)
        except ValueError as e:
            raise Failure(Refusal.INVALID, str(e)) from None
        now = self.clock.now_ms()
        lease = now + LEASE_MS
        try:
            with self.store.writing() as tx:
                if tx.request_spelled(name) is not None:
                    raise taken(name)
                holder = tx.name_holder(name)
                if holder is None:
                    return tx.add_guest(name, lease), lease
                if not holder.guest or not tx.take_guest(holder.id, name, now, lease):
                    raise taken(name)
                return holder.id, lease
        except Conflict:
            raise taken(name) from None

    def renew(self, held: dict[int, int]) -> dict[int, int]:
        """Renew the leases ``held`` (guest id: the lease's end): the new end of each
        renewed. A lease another connection took over meanwhile is not renewed."""
        lease = self.clock.now_ms() + LEASE_MS
        with self.store.writing() as tx:
            return {
                user_id: lease
                for user_id, held_ms in held.items()
                if tx.renew_guest(user_id, held_ms, lease)
            }

    def release(self, user_id: int, held_ms: int, *, stopping: bool = False) -> list[int]:
        """The guest's connection ended: its active games are lost (each opponent wins,
        as when an account is closed; with ``stopping``, the server's stop ended the
        connection, and they end without a result), its seeks withdrawn, the games it
        observes left, and its name free. Returns the ids of its games it ended. A
        guest whose lease another connection took meanwhile is that connection's:
        nothing changes."""
        with self.store.writing() as tx:
            if not tx.release_guest(user_id, held_ms):
                return []
            now = self.clock.now_ms()
            if stopping:
                lost = []
                for row in tx.active_games_of(user_id):
                    finish(tx, row.id, row, WINNER_NONE, END_STOPPED, now)
                    lost.append(row.id)
            else:
                lost = games.forfeit_all(tx, user_id, now)
            tx.drop_seeks(user_id)
            name = tx.user_name(user_id) or ""
            for game_id in tx.observed_games(user_id):
                row = existing_game(tx, game_id)
                tx.drop_observer(game_id, user_id)
                tx.emit(events.observer_left(now, row, game_id, (user_id, name)))
            return lost
