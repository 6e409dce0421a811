"""Every number of the binary protocol (seed 004): its name answers, roles, MOVE error
codes and victory states, and the service's refusals mapped to them, each kind once."""

from __future__ import annotations

from ajedrez.domain.errors import Refusal
from ajedrez.domain.move_faults import Fault
from ajedrez.domain.values import BLACK, WHITE, WINNER_BLACK, WINNER_DRAW, WINNER_WHITE

# NAME's answers.
ACCEPTED = 1
TOO_SHORT = 4
TOO_LONG = 5
INVALID_CHARACTERS = 6
TAKEN = 7
NOT_ALLOWED = 8

# INIT's roles: player 1 is white, player 2 black.
PLAYER_1 = 1
PLAYER_2 = 2
SPECTATOR = 3
ROLES = {WHITE: PLAYER_1, BLACK: PLAYER_2}

# MOVE's error codes.
OFF_BOARD = 1
NOT_YOURS = 2
EMPTY = 3
OWN_TARGET = 4
NOT_YOUR_TURN = 5
NOT_THAT_PIECE = 6
BLOCKED = 7
OTHER = 8

FAULTS = {
    Fault.OFF_BOARD: OFF_BOARD,
    Fault.NOT_YOURS: NOT_YOURS,
    Fault.EMPTY: EMPTY,
    Fault.OWN_TARGET: OWN_TARGET,
    Fault.NOT_YOUR_TURN: NOT_YOUR_TURN,
    Fault.NOT_THAT_PIECE: NOT_THAT_PIECE,
    Fault.BLOCKED: BLOCKED,
    Fault.ILLEGAL: OTHER,
}

# UPDT's victory states: a game that ends without a winner (a draw, or no result) is
# "canceled", the seed's one state for it.
PLAYING = 0
CANCELED = 3
VICTORIES = {WINNER_WHITE: PLAYER_1, WINNER_BLACK: PLAYER_2, WINNER_DRAW: CANCELED}

# The service's refusals of a name (NAME's answer; anything else is NOT_ALLOWED).
NAME_REFUSALS = {
    Refusal.INVALID: INVALID_CHARACTERS,
    Refusal.NAME_TAKEN: TAKEN,
}

# The service's refusals of a move, and of whatever else a player does that has no
# answer of its own (MOVE's code; anything else is OTHER).
MOVE_REFUSALS = {
    Refusal.NOT_YOUR_TURN: NOT_YOUR_TURN,
    # The game moved on since the position the move was read in: not the player's turn.
    Refusal.WRONG_PLY: NOT_YOUR_TURN,
    Refusal.NOT_A_PLAYER: NOT_YOURS,
}


def name_answer(kind: Refusal) -> int:
    return NAME_REFUSALS.get(kind, NOT_ALLOWED)


def move_error(kind: Refusal) -> int:
    return MOVE_REFUSALS.get(kind, OTHER)
