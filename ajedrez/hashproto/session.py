"""One connection's session of the `#` protocol (seed 000, docs/dialects.md), with no I/O.

The session takes the client's messages (:meth:`Session.receive`), the service's answers
to what it asked (``identified``, ``sought``...) and the events of its player
(:meth:`Session.event`), and answers each with :data:`Step` values: lines to send, or
something to ask of the service, whose answer comes back to it the same way. The
connection (``connection.py``) carries the steps out one at a time, in order.

A connection has one name (a guest's, or an account's given with its password) and at
most one table at a time: a seat (B or N, paired through the service's seeks) or a
spectator's place (E). Its ``codigo`` is its player's number, sent with ``#OK#rol#``;
the name is accepted as the codigo too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from ajedrez.domain import event_kinds as ev
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.events import StoredEvent
from ajedrez.domain.positions import (
    START_FEN,
    move_syntax,
    position_after,
    read_move,
    standing,
    turn,
)
from ajedrez.domain.values import BLACK, WHITE, game_name, other_color
from ajedrez.domain.views import ClockStatus, GameStatus, MoveRecord
from ajedrez.hashproto import texts as t
from ajedrez.hashproto.wire import Message, encode
from ajedrez.service import tables
from ajedrez.service.tables import (
    Close,
    ConfirmSeat,
    Identify,
    Play,
    Resign,
    Seek,
    Send,
    Table,
    Watch,
    begun_seat,
)

# -- steps: the tables' (service/tables.py), and the protocol's own ----------------------


@dataclass(frozen=True)
class History:
    game_id: int


@dataclass(frozen=True)
class Clocks:
    game_id: int


@dataclass(frozen=True)
class ListGames:
    pass


# What the session asks of the service, and every step.
Asked = tables.Asked | History | Clocks | ListGames
Step = Send | Close | Asked


def line(*fields: str) -> bytes:
    return encode(*fields)


def nok(text: str) -> list[Step]:
    return [Send((line(t.NOK, text),))]


def game_id_of(text: str) -> int | None:
    """``P0000012`` or ``12``."""
    digits = text[1:] if text[:1] in ("P", "p") else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > 9 or int(digits) < 1:
        return None
    return int(digits)


def _moved(table: Table) -> bytes:
    """``#OK#turno#tablero#estado#``: the position after a move, to everyone at the table."""
    return line(t.OK, turn(table.fen), table.fen, t.STANDINGS[standing(table.fen)])


class Session:
    def __init__(self) -> None:
        self.name: str | None = None
        self.user_id = 0
        self.intent: Seek | Watch | None = None  # what follows an Identify
        self.waiting = False  # a seek waits for an opponent
        self.table: Table | None = None

    @property
    def code(self) -> str:
        return str(self.user_id)

    def who(self) -> str:
        return self.name or "-"

    @property
    def seated(self) -> bool:
        """Waiting for a game, or at a game that goes on."""
        return self.waiting or (self.table is not None and not self.table.over)

    # -- the client's messages -------------------------------------------------------------

    def receive(self, message: Message) -> list[Step]:
        found = self._commands.get(message.command)
        if found is None:
            return nok(t.UNKNOWN_COMMAND)
        handler, least, most = found
        if not least <= len(message.fields) <= most:
            return nok(t.FIELD_COUNT)
        return handler(self, *message.fields)

    def _inscribir(self, name: str, password: str | None = None) -> list[Step]:
        if self.seated:
            return nok(t.ALREADY_REGISTERED)
        if self.name is not None:
            return [Seek()] if name == self.name else nok(t.OTHER_NAME)
        self.intent = Seek()
        return [Identify(name, password)]

    def _observar(self, name: str, game: str, password: str | None = None) -> list[Step]:
        if self.seated:
            return nok(t.ALREADY_REGISTERED)
        game_id = game_id_of(game)
        if game_id is None:
            return nok(t.INVALID_GAME)
        if self.name is not None:
            return [Watch(game_id)] if name == self.name else nok(t.OTHER_NAME)
        self.intent = Watch(game_id)
        return [Identify(name, password)]

    def _movimiento(self, code: str, text: str) -> list[Step]:
        table, refused = self._own_table(code, playing=True)
        if table is None:
            return refused
        if not move_syntax(text):
            return nok(t.INVALID_MOVE)
        if turn(table.fen) != table.role:
            return nok(t.NOT_YOUR_TURN)
        try:
            move = read_move(table.fen, table.ply + 1, text)
        except Failure:
            return nok(t.INVALID_MOVE)
        return [Play(table.game_id, move)]

    def _consultar(self, code: str) -> list[Step]:
        table, refused = self._own_table(code)
        if table is None:
            return refused
        return [Send((line(t.OK, table.fen, turn(table.fen)),))]

    def _rendirse(self, code: str) -> list[Step]:
        table, refused = self._own_table(code, playing=True)
        if table is None:
            return refused
        return [Resign(table.game_id, table.opponent)]

    def _historial(self, code: str) -> list[Step]:
        table, refused = self._own_table(code)
        return refused if table is None else [History(table.game_id)]

    def _reloj(self, code: str) -> list[Step]:
        table, refused = self._own_table(code)
        return refused if table is None else [Clocks(table.game_id)]

    def _partidas(self) -> list[Step]:
        return [ListGames()]

    def _salir(self) -> list[Step]:
        return [Close()]

    def _own_table(self, code: str, *, playing: bool = False) -> tuple[Table | None, list[Step]]:
        """The connection's table, if ``code`` is its player's; else the refusal. With
        ``playing``: a seat at a game that goes on."""
        if self.name is None:
            return None, nok(t.NOT_REGISTERED)
        if code not in (self.code, self.name):
            return None, nok(t.WRONG_CODE)
        table = self.table
        if table is None or (playing and self.waiting):
            return None, nok(t.NOT_STARTED if self.waiting else t.NO_GAME)
        if playing and table.role not in (WHITE, BLACK):
            return None, nok(t.NO_GAME)
        if playing and table.over:
            return None, nok(t.REFUSALS[Refusal.GAME_OVER])
        return table, []

    _commands: ClassVar[dict[str, tuple[Callable[..., list[Step]], int, int]]] = {
        t.INSCRIBIR: (_inscribir, 1, 2),
        t.MOVIMIENTO: (_movimiento, 2, 2),
        t.CONSULTARTABLERO: (_consultar, 1, 1),
        t.RENDIRSE: (_rendirse, 1, 1),
        t.OBSERVAR: (_observar, 2, 3),
        t.PARTIDAS: (_partidas, 0, 0),
        t.HISTORIAL: (_historial, 1, 1),
        t.RELOJ: (_reloj, 1, 1),
        t.SALIR: (_salir, 0, 0),
    }

    # -- the service's answers -------------------------------------------------------------

    def identified(self, name: str, user_id: int) -> list[Step]:
        self.name, self.user_id = name, user_id
        intent, self.intent = self.intent, None
        return [intent] if intent is not None else []

    def sought(self, status: GameStatus | None) -> list[Step]:
        """The seek waits (None), or paired at once: the caller sought second, and plays
        black (whoever sought first plays white)."""
        if status is None:
            self.waiting = True
            return [Send((line(t.OK, WHITE, self.code),))]
        game_id = game_id_of(status.game)
        assert game_id is not None
        self.table = Table(game_id, status.color, status.white, status.black)
        return [Send((line(t.OK, status.color, self.code), line(t.INICIO, WHITE, START_FEN)))]

    def confirmed(self, seat: ConfirmSeat, ours: bool) -> list[Step]:
        if not ours or not self.waiting:
            return []
        return self._seat(seat.game_id, seat.color, seat.white, seat.black)

    def watching(self, status: GameStatus, moves: list[MoveRecord]) -> list[Step]:
        game_id = game_id_of(status.game)
        assert game_id is not None
        fen = position_after(moves)
        self.table = Table(game_id, t.SPECTATOR, status.white, status.black, fen, len(moves))
        return [Send((line(t.OK, t.SPECTATOR, self.code), line(t.INICIO, turn(fen), fen)))]

    def history(self, moves: list[MoveRecord]) -> list[Step]:
        played = [m.jugada + ("", "", "n", "b", "r", "q")[m.promocion] for m in moves]
        return [Send((line(t.OK, *played),))]

    def clocks(self, status: ClockStatus) -> list[Step]:
        return [Send((line(t.OK, str(status.white_ms), str(status.black_ms), status.waiting),))]

    def games(self, found: list[tuple[int, str, str]]) -> list[Step]:
        listed = [f"{game_name(g)},{white},{black}" for g, white, black in found]
        return [Send((line(t.OK, *listed),))]

    def failed(self, asked: Asked, failure: Failure) -> list[Step]:
        if isinstance(asked, Identify):
            self.intent = None
        if failure.kind is Refusal.INVALID:
            if isinstance(asked, Identify):
                return nok(t.INVALID_NAME)
            if isinstance(asked, Play):
                return nok(t.INVALID_MOVE)
            if isinstance(asked, Watch):
                return nok(t.INVALID_GAME)
        return nok(t.REFUSALS[failure.kind])

    def server_error(self, asked: Asked) -> list[Step]:
        """The database could not do the work; nothing was done."""
        if isinstance(asked, Identify):
            self.intent = None
        return nok(t.SERVER_ERROR)

    # -- the player's events -----------------------------------------------------------------

    def event(self, event: StoredEvent) -> list[Step]:
        f = event.fields
        if event.kind == ev.INICIO_PARTIDA and self.waiting and ev.conforms(event.kind, f):
            return self._begun(event)
        table = tables.table_event(self.table, event)
        if table is None:
            return []
        if tables.new_position(table, event):
            return [Send((_moved(table),))]
        if event.kind == ev.ABANDONO and f.get("observador") is False:
            left = WHITE if f["usuario"] == table.white else BLACK
            return [Send((line(t.OK, other_color(left)),))]
        if event.kind == ev.FINALIZACION:
            table.over = True
            winner = tables.event_number(f["ganador"])
            return [Send((line(t.FIN, t.RESULTS.get(winner, t.NO_RESULT)),))]
        return []

    def _begun(self, event: StoredEvent) -> list[Step]:
        seat = begun_seat(event, self.name)
        return [] if seat is None else [seat]

    def _seat(self, game_id: int, color: str, white: str, black: str) -> list[Step]:
        self.waiting = False
        self.table = Table(game_id, color, white, black)
        return [Send((line(t.INICIO, WHITE, START_FEN),))]
