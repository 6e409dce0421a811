"""Blocks (docs/protocol.md, "Blocks"): BLOQ, BLOR and BLOL, written against the
store's protocol (``ports.py``). What a block forbids is checked by the commands it
forbids (``blocking.py``); blocking ends none of the two users' games."""

from __future__ import annotations

from ajedrez.domain import events
from ajedrez.domain.clocks import Clock, SystemClock
from ajedrez.domain.errors import Conflict, Failure, Refusal
from ajedrez.domain.games import close_challenges
from ajedrez.domain.live import existing_game
from ajedrez.domain.ports import Store

# Far beyond what a person keeps; a bound on the rows one account can make.
MAX_BLOCKS = 1000


class Blocks:
    def __init__(self, store: Store, clock: Clock | None = None) -> None:
        self.store = store
        self.clock = clock or SystemClock()

    def block(self, caller_id: int, name: str) -> None:
        """BLOQ: from now on ``name`` may not challenge, chat to, be paired with or
        observe the games of the caller. The open challenge between the two closes,
        as after DECL, and ``name`` stops observing the caller's games; blocking an
        account blocked already changes nothing."""
        try:
            with self.store.writing() as tx:
                other_id = tx.active_user_id(name)
                if other_id is None:
                    raise Failure(Refusal.NO_SUCH_USER, f"no active user '{name}'")
                if other_id == caller_id:
                    raise Failure(Refusal.INVALID, "you cannot block yourself")
                if tx.blocks([caller_id], other_id):
                    return
                # Counted under the caller's row lock: blocks sent at once from several
                # sessions are counted one after the other.
                tx.lock_user(caller_id)
                if tx.block_count(caller_id) >= MAX_BLOCKS:
                    raise Failure(
                        Refusal.BLOCKS_FULL,
                        f"you block {MAX_BLOCKS} users already; unblock one (BLOR) first",
                    )
                tx.add_block(caller_id, other_id)
                now = self.clock.now_ms()
                close_challenges(tx, now, caller_id, other_id)
                for game_id in tx.observed_games_of(other_id, caller_id):
                    row = existing_game(tx, game_id)
                    tx.drop_observer(game_id, other_id)
                    tx.emit(events.observer_left(now, row, game_id, (other_id, name)))
        except Conflict:
            return  # another session of the caller's blocked the same user first

    def unblock(self, caller_id: int, name: str) -> None:
        """BLOR: ``name`` is no longer blocked."""
        with self.store.writing() as tx:
            other_id = tx.user_id(name)
            if other_id is None or not tx.drop_block(caller_id, other_id):
                raise Failure(Refusal.NOT_BLOCKED, f"you do not block '{name}'")

    def blocked(self, caller_id: int) -> list[str]:
        """BLOL: the users the caller blocks, sorted by name."""
        with self.store.reading() as tx:
            return tx.blocked_names(caller_id)
