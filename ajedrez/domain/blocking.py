"""The refusals a block causes (docs/protocol.md, "Blocks"), asked by the commands it
forbids within their own transaction, so a block made by any server process on the
database holds at once. The blocked user is told that the other does not accept it,
never the word "block": nothing else refuses these, so the reason cannot hide it, but
it does not rub it in either."""

from __future__ import annotations

from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.ports import GameRecord, StoreTx
from ajedrez.domain.values import game_name


def refuse_blocked(tx: StoreTx, caller_id: int, other_id: int, other: str, what: str) -> None:
    """``what`` (``challenges``) from the caller to ``other``: refused when either
    blocks the other."""
    if tx.blocks([other_id], caller_id):
        raise Failure(Refusal.NOT_ACCEPTED, f"'{other}' does not accept {what} from you")
    if tx.blocks([caller_id], other_id):
        raise Failure(
            Refusal.NOT_ACCEPTED, f"you block '{other}'; unblock them (BLOR) to send {what}"
        )


def refuse_blocked_by_players(tx: StoreTx, row: GameRecord, caller_id: int, what: str) -> None:
    """``what`` (``observers``, ``messages``) from the caller in a game: refused when a
    player of it blocks the caller."""
    if tx.blocks([row.white_id, row.black_id], caller_id):
        raise Failure(
            Refusal.NOT_ACCEPTED,
            f"the players of {game_name(row.id)} do not accept {what} from you",
        )
