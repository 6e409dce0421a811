"""The events a change makes (docs/protocol.md section 6): one function per kind, each
returning an :class:`Event` the domain hands its transaction (``StoreTx.emit``), so an
event is stored with the change it reports and exists only if that change commits.

Who receives an event is decided here, once, as columns of its row: ``user_a`` and
``user_b`` (the two players, or a challenge's two users) and, with ``observers``, the
users observing ``game_id``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ajedrez.domain import event_kinds as ev
from ajedrez.domain import rules
from ajedrez.domain.values import game_name


@dataclass(frozen=True)
class Event:
    kind: str
    fields: tuple[str, ...]
    at_ms: int
    game_id: int | None = None
    user_a: int | None = None
    user_b: int | None = None
    actor_id: int | None = None
    observers: bool = False

    @property
    def data(self) -> str:
        """The fields as the stream sends them after the kind."""
        return ":".join(self.fields)


def _game(
    kind: str,
    at_ms: int,
    players: rules.Players,
    game_id: int,
    actor_id: int | None,
    *fields: str,
) -> Event:
    """An event of a game: to both players and the game's observers."""
    return Event(
        kind,
        (game_name(game_id), *fields),
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
    return Event(ev.DESAFIO, (a_name, b_name, control, _flag(private)), at_ms, None, b, a, a)


def challenge_closed(
    at_ms: int, challenger: tuple[int, str], challenged: tuple[int, str], by_id: int
) -> Event:
    """Withdrawn when its maker closed it, else declined."""
    (a, a_name), (b, b_name) = challenger, challenged
    kind = ev.DESAFIO_RETIRADO if by_id == a else ev.DESAFIO_RECHAZADO
    return Event(kind, (a_name, b_name), at_ms, None, b, a, by_id)


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
    fields = (game_name(game_id), w_name, b_name, control, w_name, _flag(private))
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
        ev.FIN_DE_TURNO, at_ms, players, game_id, mover_id, str(ply), jugada, str(promocion),
        san, turn, fen,
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
    return _game(ev.ABANDONO, at_ms, players, game_id, by[0], by[1], "0")


def observer_joined(at_ms: int, players: rules.Players, game_id: int, by: tuple[int, str]) -> Event:
    return _game(ev.INCORPORACION, at_ms, players, game_id, by[0], by[1], "1")


def observer_left(at_ms: int, players: rules.Players, game_id: int, by: tuple[int, str]) -> Event:
    return _game(ev.ABANDONO, at_ms, players, game_id, by[0], by[1], "1")


def game_ended(at_ms: int, players: rules.Players, game_id: int, winner: int, reason: str) -> Event:
    return _game(ev.FINALIZACION, at_ms, players, game_id, None, str(winner), reason)


def chat_said(
    at_ms: int,
    players: rules.Players,
    game_id: int,
    by: tuple[int, str],
    text: str,
    whisper: bool,
) -> Event:
    """A player's message reaches the players alone; an observer's, the observers."""
    fields = (game_name(game_id), by[1], text)
    if whisper:
        return Event(ev.SUSURRO, fields, at_ms, game_id, None, None, by[0], observers=True)
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
    return _game(ev.RETROCESO_ACEPTADO, at_ms, players, game_id, by[0], by[1], str(ply), fen)


def clock_warning(
    at_ms: int, game_id: int, player: tuple[int, str], left_ms: int, deadline_ms: int
) -> Event:
    """To the player whose clock runs, alone."""
    fields = (game_name(game_id), player[1], str(left_ms), str(deadline_ms))
    return Event(ev.AVISO_RELOJ, fields, at_ms, game_id, player[0])


def _flag(value: bool) -> str:
    return "1" if value else "0"


# -- players ------------------------------------------------------------------------------


def leave_started(at_ms: int, user: tuple[int, str], until_ms: int, opponent: int) -> Event:
    """To one opponent of the player (one event each)."""
    return Event(ev.LICENCIA, (user[1], str(until_ms)), at_ms, None, opponent, None, user[0])


def leave_ended(at_ms: int, user: tuple[int, str], opponent: int) -> Event:
    return Event(ev.FIN_LICENCIA, (user[1],), at_ms, None, opponent, None, user[0])
