"""Field syntax of ``docs/protocol.md`` section 2: each parser returns the value or raises
ValueError with a reason a person can act on."""

from __future__ import annotations

import re

from ajedrez.domain import text, values
from ajedrez.domain.timecontrol import ANY_CORRESPONDENCE, parse_control

# Names and text are defined in the domain, as every front end checks them alike; these
# are ESPOL's names for them.
shown = text.shown
escaped = text.escaped
usuario = values.user_name
new_usuario = values.new_user_name
format_partida = values.game_name

_PARTIDA = re.compile(r"P[0-9]{7}")
_DIGITS = re.compile(r"[0-9]+")
_JUGADA = re.compile(r"[a-h][1-8][a-h][1-8]")
_POSICION = re.compile(r"[0-9]{4}")
_FORBIDDEN = (":", "\r", "\n")
FECHA_WIDTH = 11
MAX_PLY = 100_000  # far beyond any legal game (the 75-move rule ends one long before)


def password(value: str) -> str:
    if not 1 <= len(value) <= 128 or any(c in value for c in _FORBIDDEN):
        raise ValueError("invalid password: 1-128 characters, none of them ':', CR or LF")
    return value


def comentario(value: str) -> str:
    # Beyond ESPOL's ':', CR and LF: no control character (a NUL cannot be stored
    # in a PostgreSQL text column; a TAB shifts the admin's columns), no format character
    # (U+202E reverses what follows it, zero-width ones hide text) and no line or
    # paragraph separator: each would let a comment forge a row of the admin's listings.
    if len(value) > 200:
        raise ValueError("invalid comment: at most 200 characters")
    for c in value:
        if c in _FORBIDDEN or text.unstorable(c):
            raise ValueError(
                f"invalid comment: '{escaped(c)}' is not allowed (no ':', CR, LF, nor any "
                "control, format or line-separator character: TAB, U+202E, zero-width ones)"
            )
    return value


def fecha(value: str) -> int:
    if not (1 <= len(value) <= FECHA_WIDTH and _DIGITS.fullmatch(value)):
        raise ValueError(f"invalid fecha '{shown(value)}': 1-11 digits (seconds since 1970)")
    return int(value)


def format_fecha(seconds: int) -> str:
    return f"{seconds:0{FECHA_WIDTH}d}"


def partida(value: str) -> int:
    if not _PARTIDA.fullmatch(value):
        raise ValueError(f"invalid game id '{shown(value)}': P followed by 7 digits")
    return int(value[1:])


def ply(value: str) -> int:
    if not (_DIGITS.fullmatch(value) and len(value) <= 6 and int(value) <= MAX_PLY):
        raise ValueError(f"invalid move number '{shown(value)}': a number from 0")
    return int(value)


def jugada(value: str) -> str:
    if not _JUGADA.fullmatch(value):
        raise ValueError(
            f"invalid move '{shown(value)}': from-square then to-square, lowercase, like e2e4"
        )
    if value[:2] == value[2:]:
        raise ValueError(f"invalid move '{value}': the from-square and to-square are the same")
    return value


def reverso(value: str) -> int:
    if value not in ("0", "1"):
        raise ValueError(f"invalid reverso '{shown(value)}': 0 or 1")
    return int(value)


def posicion(value: str) -> str:
    if not (_POSICION.fullmatch(value) and int(value[:2]) < 64 and int(value[2:]) < 64):
        raise ValueError(f"invalid posicion '{shown(value)}': two squares 00-63 (a1=00 ... h8=63)")
    return value


def promocion(value: str) -> int:
    if value not in ("0", "2", "3", "4", "5"):
        raise ValueError(
            f"invalid promocion '{shown(value)}': 0 none, 2 knight, 3 bishop, 4 rook, 5 queen"
        )
    return int(value)


def color(value: str) -> str:
    if value not in ("B", "N"):
        raise ValueError(f"invalid colour '{shown(value)}': B (white) or N (black)")
    return value


def yes_no(value: str) -> bool:
    if value not in ("S", "N"):
        raise ValueError(f"invalid answer '{shown(value)}': S (accept) or N (decline)")
    return value == "S"


# The optional fields below may be sent empty, which is the same as leaving them out: an
# ESPOL 1995 client's trailing ':' (``TRAN:0:``, ``SOLI:``) means what it always meant.


def control(value: str) -> str | None:
    """A time control (section 2), checked for syntax and kept as sent; empty: None."""
    if not value:
        return None
    parse_control(value)
    return value


def with_controls(value: str) -> bool:
    """TRAN's and SOLI's optional field: ``1`` asks for each challenge's time control."""
    if value not in ("", "1"):
        raise ValueError(f"invalid option '{shown(value)}': 1 (with time controls)")
    return value == "1"


def opt_in(value: str) -> bool:
    """An optional last field ``1`` that asks for a longer record (STAT, RELJ)."""
    if value not in ("", "1"):
        raise ValueError(f"invalid option '{shown(value)}': the only option is 1")
    return value == "1"


LEAVE_ACTIONS = ("I", "F", "E")  # LICE: iniciar, finalizar, estado
MAX_LEAVE_DAYS = 366


def leave_action(value: str) -> str:
    if value not in LEAVE_ACTIONS:
        raise ValueError(f"invalid action '{shown(value)}': I (start), F (end) or E (status)")
    return value


def dias(value: str) -> int | None:
    if not value:
        return None
    if not (_DIGITS.fullmatch(value) and len(value) <= 3 and 1 <= int(value) <= MAX_LEAVE_DAYS):
        raise ValueError(f"invalid number of days '{shown(value)}': 1 to {MAX_LEAVE_DAYS}")
    return int(value)


MAX_CURSOR = 2**63 - 1


def cursor(value: str) -> int | None:
    """EVEN's cursor: the number of the last event received (``0``: every event kept);
    empty: None, from now on."""
    if not value:
        return None
    if not (_DIGITS.fullmatch(value) and len(value) <= 19 and int(value) <= MAX_CURSOR):
        raise ValueError(f"invalid cursor '{shown(value)}': 0 to {MAX_CURSOR}")
    return int(value)


def privada(value: str) -> bool:
    """JUEG's and BUSC's optional field: ``1`` a private game (no observers)."""
    if value not in ("", "0", "1"):
        raise ValueError(f"invalid privada '{shown(value)}': 1 (private) or 0")
    return value == "1"


def with_chat(value: str) -> bool:
    """PGNX's optional field: ``1`` adds the game's chat as comments."""
    if value not in ("", "1"):
        raise ValueError(f"invalid option '{shown(value)}': 1 (with the chat)")
    return value == "1"


MAX_CHAT = 500


def texto(value: str) -> str:
    """A chat message: the rest of the line (it may hold ':'), 1-500 characters, none
    of the characters a ``comentario`` may not hold but ':', and something a reader
    sees (``text.unseen``)."""
    if not 1 <= len(value) <= MAX_CHAT:
        raise ValueError(f"invalid message: 1-{MAX_CHAT} characters, got {len(value)}")
    for c in value:
        if c in "\r\n" or text.unstorable(c):
            raise ValueError(
                f"invalid message: '{escaped(c)}' is not allowed (no control, format or "
                "line-separator character: TAB, U+202E, zero-width ones)"
            )
    problem = text.unseen(value)
    if problem is not None:
        raise ValueError(f"invalid message: {problem}")
    return value


def casilla(value: str) -> str:
    if not (len(value) == 2 and value[0] in "abcdefgh" and value[1] in "12345678"):
        raise ValueError(f"invalid square '{shown(value)}': a1 to h8, lowercase")
    return value


def seek_control(value: str) -> str | None:
    """BUSR's control: a time control, or ``corr`` (any correspondence control)."""
    return value if value == ANY_CORRESPONDENCE else control(value)


def required_seek_control(value: str) -> str:
    """BUSC's control: a time control, or ``corr`` (any correspondence control)."""
    return value if value == ANY_CORRESPONDENCE else required_control(value)


def required_control(value: str) -> str:
    """A time control that must be given (``none`` for no clock)."""
    if not value:
        raise ValueError("a time control is needed: none, a preset (3d, 10m...) or 3d+1d")
    found = control(value)
    assert found is not None
    return found


_SECRETO = re.compile(r"[A-Za-z0-9_-]{43}")


def secreto(value: str) -> str:
    """A token's secret as FICN gave it: 43 base64url characters (32 random bytes)."""
    if not _SECRETO.fullmatch(value):
        raise ValueError("invalid token: 43 characters A-Z, a-z, 0-9, '-' or '_' (from FICN)")
    return value


def etiqueta(value: str) -> str:
    """A token's label (the client machine's name): 1-64 characters, a comment's rules."""
    if not 1 <= len(value) <= 64:
        raise ValueError("invalid label: 1-64 characters")
    return comentario(value)


def ficha(value: str) -> int | None:
    """FICR's target: a token's id, or '*' for all the caller's tokens (None)."""
    if value == "*":
        return None
    if not _DIGITS.fullmatch(value) or len(value) > 18:
        raise ValueError(f"invalid token id '{shown(value)}': a number from FICN or FICL, or *")
    return int(value)


def help_topic(value: str) -> str:
    if value and not (len(value) == 4 and value.isascii() and value.isalpha()):
        raise ValueError(f"invalid command name '{shown(value)}'")
    return value
