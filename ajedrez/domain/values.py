"""The values the service stores and every front end shows: colours, a game's status,
winner and pending requests, end reasons, what went away, and the names of users and
games. The database holds these values as they are; a front end may spell them its own
way (ESPOL sends them as they are).
"""

from __future__ import annotations

import re

from ajedrez.domain.text import shown

WHITE = "B"  # blancas
BLACK = "N"  # negras
OBSERVER = "-"  # the colour of a user who observes a game
STATUS_ACTIVE = 0
STATUS_FINISHED = 2
WINNER_NONE = 0
WINNER_WHITE = 1
WINNER_BLACK = 2
WINNER_DRAW = 3
# A player's pending request in a game (the games' solicitud columns).
REQ_NONE = 0
REQ_OFFER = 1
REQ_ACCEPT = 2
REQ_RESIGN = 3
# What went away for a user (removals): a game the administrator purged, or a challenge
# with that user that closed without a game.
REMOVED_GAME = "P"
REMOVED_CHALLENGE = "R"
# End reasons of a game ended on time.
END_TIMEOUT = "timeout"
END_ABORTED = "aborted"  # the side out of time never moved: no result
# The end reason of a guest's game ended without a result when the server stopped.
END_STOPPED = "server stopped"

_USER_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,32}")


def other_color(color: str) -> str:
    return BLACK if color == WHITE else WHITE


def color_of_ply(ply: int) -> str:
    """The colour that plays ``ply``: odd plies are white's."""
    return WHITE if ply % 2 == 1 else BLACK


def game_name(game_id: int) -> str:
    """A game's public name: P and seven digits."""
    return f"P{game_id:07d}"


def user_name(value: str) -> str:
    """``value`` if it is a user name, else ValueError saying why."""
    if not _USER_NAME.fullmatch(value):
        raise ValueError(
            f"invalid user name '{shown(value)}': 1-32 characters of A-Z a-z 0-9 _ . -"
        )
    return value


def new_user_name(value: str) -> str:
    """A name for a new account: a user name that does not start with '-' or '.', which
    a shell or ``ajedrez-admin`` would take for an option or a path. Existing accounts
    with such names keep working: only ``user_name`` applies to them."""
    user_name(value)
    if value[0] in "-.":
        raise ValueError(f"invalid user name '{value}': a new name may not start with '-' or '.'")
    return value
