"""The events a change makes (docs/protocol.md section 6): one function per kind, each
returning an :class:`Event` the domain hands its transaction (``StoreTx.emit``), so an
event is stored with the change it reports and exists only if that change commits.

An event carries its fields by name, with typed values (``event_kinds.SCHEMA``): a game
as its id, a flag as a bool, a ply or a time as an int. The store keeps them in a
neutral encoding (``store/event_data.py``) and gives them back as a
:class:`StoredEvent`; each front end writes them in its own way on the way out (ESPOL:
``espol/stream.py``).

Who receives an event is decided here, once, as columns of its row: ``user_a`` and
``user_b`` (the two players, or a challenge's two users) and, with ``observers``, the
users observing ``game_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from ajedrez.domain import event_kinds as ev
from ajedrez.domain import rules

# A field's value: see event_kinds.TYPES.
Value = bool | int | str


class Event(NamedTuple):
    """One event, as the change that makes it emits it. Named tuples, this and
    :class:`StoredEvent`: a move makes one and a stream's catch-up reads many, and a frozen
    dataclass costs three to four times as much to make."""

    kind: str
    fields: Mapping[str, Value]  # by name, in the kind's order (event_kinds.SCHEMA)
    at_ms: int
    game_id: int | None = None
    user_a: int | None = None
    user_b: int | None = None
    actor_id: int | None = None
    observers: bool = False


class StoredEvent(NamedTuple):
    """An event as the store gives it back: numbered (``id``, the stream's cursor), with
    its recipients. ``fields`` as :attr:`Event.fields`; an event the store could not
    read as such (a kind it does not know, written by a newer release; or text an older
    release wrote) has its fields named ``campo1``, ``campo2``..., each a str."""

    id: int
    at_ms: int
    kind: str
    fields: Mapping[str, Value]
    game_id: int | None
    user_a: int | None
    user_b: int | None
    actor_id: int | None
    observers: bool


def _fields(kind: str, *values: Value) -> dict[str, Value]:
    return dict(zip(ev.FIELDS[kind], values, strict=True))


def _game(
    kind: str,
    at_ms: int,
    players: rules.Players,
    game_id: int,
    actor_id: int | None,
    *fields: Value,
) -> Event:
    """An event of a game: to both players and the game's observers."""
    return Event(
        kind,
        _fields(kind, game_id, *fields),
        at_ms,
        game_id,
        players.white_id,
        players.black_id,
        actor_id,
        observers=True,
    )


# -- challenges ---------------------------------------------------------------------------


def challenge_made(
    at_ms: int,
    challenger: tuple[int, str],
    challenged: tuple[int, str],
    control: str,
    private: bool,
) -> Event:
    (a, a_name), (b, b_name) = challenger, challenged
    fields = _fields(ev.DESAFIO, a_name, b_name, control, private)
    return Event(ev.DESAFIO, fields, at_ms, None, b, a, a)


def challenge_closed(
    at_ms: int, challenger: tuple[int, str], challenged: tuple[int, str], by_id: int
) -> Event:
    """Withdrawn when its maker closed it, else declined."""
    (a, a_name), (b, b_name) = challenger, challenged
    kind = ev.DESAFIO_RETIRADO if by_id == a else ev.DESAFIO_RECHAZADO
    return Event(kind, _fields(kind, a_name, b_name), at_ms, None, b, a, by_id)


def game_started(
    at_ms: int,
    game_id: int,
    white: tuple[int, str],
    black: tuple[int, str],
    control: str,
    actor_id: int,
    private: bool,
) -> Event:
    (w, w_name), (b, b_name) = white, black
    fields = _fields(ev.INICIO_PARTIDA, game_id, w_name, b_name, control, w_name, private)
    return Event(ev.INICIO_PARTIDA, fields, at_ms, game_id, w, b, actor_id, observers=True)


# -- games --------------------------------------------------------------------------------


def move_played(
    at_ms: int,
    players: rules.Players,
    game_id: int,
    mover_id: int,
    move: tuple[int, str, int, str],
    turn: str,
    fen: str,
) -> Event:
    """``move``: (ply, jugada, promocion, SAN); ``turn``: the name of the player to move."""
    ply, jugada, promocion, san = move
    return _game(
        ev.FIN_DE_TURNO, at_ms, players, game_id, mover_id, ply, jugada, promocion, san, turn,
        fen,
    )  # fmt: skip


def draw_offered(at_ms: int, players: rules.Players, game_id: int, by: tuple[int, str]) -> Event:
    return _game(ev.TABLAS, at_ms, players, game_id, by[0], by[1])


def draw_answered(
    at_ms: int, players: rules.Players, game_id: int, by: tuple[int, str], accepted: bool
) -> Event:
    kind = ev.TABLAS_ACEPTADAS if accepted else ev.TABLAS_RECHAZADAS
    return _game(kind, at_ms, players, game_id, by[0], by[1])


def player_left(at_ms: int, players: rules.Players, game_id: int, by: tuple[int, str]) -> Event:
    """ABANDONO of a player: resigned, or left the service."""
    return _game(ev.ABANDONO, at_ms, players, game_id, by[0], by[1], False)


def observer_joined(at_ms: int, players: rules.Players, game_id: int, by: tuple[int, str]) -> Event:
    return _game(ev.INCORPORACION, at_ms, players, game_id, by[0], by[1], True)


def observer_left(at_ms: int, players: rules.Players, game_id: int, by: tuple[int, str]) -> Event:
    return _game(ev.ABANDONO, at_ms, players, game_id, by[0], by[1], True)


def game_ended(at_ms: int, players: rules.Players, game_id: int, winner: int, reason: str) -> Event:
    return _game(ev.FINALIZACION, at_ms, players, game_id, None, winner, reason)


def chat_said(
    at_ms: int,
    players: rules.Players,
    game_id: int,
    by: tuple[int, str],
    text: str,
    whisper: bool,
) -> Event:
    """A player's message reaches the players alone; an observer's, the observers."""
    if whisper:
        fields = _fields(ev.SUSURRO, game_id, by[1], text)
        return Event(ev.SUSURRO, fields, at_ms, game_id, None, None, by[0], observers=True)
    fields = _fields(ev.CHAT, game_id, by[1], text)
    return Event(ev.CHAT, fields, at_ms, game_id, players.white_id, players.black_id, by[0])


def takeback_asked(at_ms: int, players: rules.Players, game_id: int, by: tuple[int, str]) -> Event:
    return _game(ev.RETROCESO, at_ms, players, game_id, by[0], by[1])


def takeback_answered(
    at_ms: int,
    players: rules.Players,
    game_id: int,
    by: tuple[int, str],
    ply: int,
    fen: str | None,
) -> Event:
    """``fen``: the position after the move of ``ply`` was taken back; None: declined."""
    if fen is None:
        return _game(ev.RETROCESO_RECHAZADO, at_ms, players, game_id, by[0], by[1])
    return _game(ev.RETROCESO_ACEPTADO, at_ms, players, game_id, by[0], by[1], ply, fen)


def clock_warning(
    at_ms: int, game_id: int, player: tuple[int, str], left_ms: int, deadline_ms: int
) -> Event:
    """To the player whose clock runs, alone."""
    fields = _fields(ev.AVISO_RELOJ, game_id, player[1], left_ms, deadline_ms)
    return Event(ev.AVISO_RELOJ, fields, at_ms, game_id, player[0])


# -- players ------------------------------------------------------------------------------


def leave_started(at_ms: int, user: tuple[int, str], until_ms: int, opponent: int) -> Event:
    """To one opponent of the player (one event each)."""
    fields = _fields(ev.LICENCIA, user[1], until_ms)
    return Event(ev.LICENCIA, fields, at_ms, None, opponent, None, user[0])


def leave_ended(at_ms: int, user: tuple[int, str], opponent: int) -> Event:
    fields = _fields(ev.FIN_LICENCIA, user[1])
    return Event(ev.FIN_LICENCIA, fields, at_ms, None, opponent, None, user[0])
