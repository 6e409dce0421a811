"""Exceptions that cross layers, free of SQLAlchemy and of any wire protocol.

A refused request is a :class:`Failure`: a :class:`Refusal` (what kind of refusal, from
one enumeration every front end maps to its own vocabulary: ESPOL to its 8xx codes in
``espol/codes.py``) and a reason a person can act on.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TypeVar

T = TypeVar("T")


class Refusal(StrEnum):
    """Why a request was refused. The values are stable names a front end may show."""

    # The request itself, and the session.
    INVALID = "invalid"  # a field is malformed or does not apply (the reason names it)
    NOT_SELF = "not_self"  # names another user than the one logged in
    SIGNUP_RATE = "signup_rate"  # too many sign-up requests from this address lately
    SIGNUPS_FULL = "signups_full"  # pending sign-up requests are at their cap
    SESSION_LIMIT = "session_limit"  # the account holds as many sessions as allowed
    # Accounts.
    NO_SUCH_USER = "no_such_user"
    WRONG_PASSWORD = "wrong_password"
    NAME_TAKEN = "name_taken"  # the name is taken or already requested
    SELF_CHALLENGE = "self_challenge"
    # Challenges.
    CHALLENGE_EXISTS = "challenge_exists"  # an open challenge between the two users exists
    GAME_EXISTS = "game_exists"  # an active game between the two users exists
    NO_SUCH_CHALLENGE = "no_such_challenge"
    TIME_CONTROL_DIFFERS = "time_control_differs"  # the challenge's control is not the one named
    # Games.
    NO_SUCH_GAME = "no_such_game"
    NOT_A_PLAYER = "not_a_player"  # the caller does not play in (or observe) the game
    NOT_OPPONENT = "not_opponent"  # the user named is not the caller's opponent there
    GAME_OVER = "game_over"
    NOT_YOUR_TURN = "not_your_turn"
    WRONG_PLY = "wrong_ply"  # the move's number is not the game's next (stale or ahead)
    MOVE_MISMATCH = "move_mismatch"  # the move's redundant fields disagree with it
    ILLEGAL_MOVE = "illegal_move"
    NO_MORE_MOVES = "no_more_moves"  # no moves after the ply asked
    DRAW_OFFERED = "draw_offered"  # a draw offer is pending already
    NO_DRAW_OFFER = "no_draw_offer"  # no offer from the opponent to answer
    NO_CLAIM = "no_claim"  # neither threefold repetition nor the fifty-move rule applies
    LEAVE_REFUSED = "leave_refused"  # leave cannot start or end now
    # Live play.
    OBSERVE_REFUSED = "observe_refused"  # a player cannot observe; not observing to stop
    CHAT_RATE = "chat_rate"
    EVENT_RATE = "event_rate"  # too many requests that make an event for another user
    SEEK_EXISTS = "seek_exists"
    SEEK_LIMIT = "seek_limit"  # the caller holds as many waiting seeks as allowed
    NO_SUCH_SEEK = "no_such_seek"
    TAKEBACK_REFUSED = "takeback_refused"  # no takeback may be asked or answered now
    # Blocks.
    NOT_ACCEPTED = "not_accepted"  # a block between the two users forbids it
    NOT_BLOCKED = "not_blocked"  # the caller does not block that user
    BLOCKS_FULL = "blocks_full"  # the caller blocks as many users as allowed
    # Tokens (logins that last).
    WRONG_TOKEN = "wrong_token"  # no such token for that user: wrong, revoked or expired
    NO_SUCH_TOKEN = "no_such_token"  # the caller has no token of that id
    TOKENS_FULL = "tokens_full"  # the caller has as many tokens as allowed


class Failure(Exception):
    """The request was refused: bad parameters, not allowed now, stale data."""

    def __init__(self, kind: Refusal, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


class Conflict(Exception):
    """A unique key or other constraint refused a write; the transaction was rolled back."""


class StorageError(Exception):
    """The database could not do the work (unreachable, locked too long, I/O fault)."""


class TransientStorageError(StorageError):
    """The database rolled the transaction back to break a deadlock or a serialization
    conflict; running the same command again is safe and normally succeeds."""


# How many times a command (or a queued write) is run again after a TransientStorageError.
TRANSIENT_RETRIES = 3


def retrying(
    work: Callable[[], T], again: Callable[[TransientStorageError], None] | None = None
) -> T:
    """``work()``, run again (at most :data:`TRANSIENT_RETRIES` times more) while the
    database rolls it back to break a deadlock; ``again`` hears of each retry."""
    for _attempt in range(TRANSIENT_RETRIES):
        try:
            return work()
        except TransientStorageError as e:
            if again is not None:
                again(e)
    return work()
