"""One connection's session of the binary protocol (seed 004, docs/dialects.md), with no
I/O.

The session takes the client's packets (:meth:`Session.receive`), the service's answers
to what it asked (``identified``, ``sought``...) and the events of its player
(:meth:`Session.event`), and answers each with steps: packets to send, or something to
ask of the service (``service/tables.py``, and the steps below), whose answer comes back
to it the same way. The connection (``connection.py``) carries them out in order.

A connection has one name (a guest's, or an account's given with AUTH) and at most one
table at a time: a seat (player 1 is white, player 2 black, paired through the
service's seeks) or a spectator's place.
"""

from __future__ import annotations

from dataclasses import dataclass

from ajedrez.binproto import codes as c
from ajedrez.binproto import packets as p
from ajedrez.domain import event_kinds as ev
from ajedrez.domain.errors import Failure
from ajedrez.domain.events import StoredEvent
from ajedrez.domain.live import CHAT_MAX
from ajedrez.domain.move_faults import fault_of, move_of, on_board, targets
from ajedrez.domain.positions import START_FEN, Standing, position_after, standing, turn
from ajedrez.domain.rules import move_from_uci
from ajedrez.domain.text import unstorable
from ajedrez.domain.values import BLACK, OBSERVER, WHITE, new_user_name, user_name
from ajedrez.domain.views import GameStatus, MoveRecord
from ajedrez.service.tables import Asked as TableAsked
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
    event_number,
    game_number,
    new_position,
    table_event,
)

MAX_NAME = 32  # the service's longest user name
MAX_GAME_ID = 2**31 - 1  # the largest game id the database holds

# -- steps of its own ----------------------------------------------------------------------


@dataclass(frozen=True)
class WatchNewest:
    """Observe the newest game in play that anyone may observe (INIT 3)."""


@dataclass(frozen=True)
class AskTakeback:
    game_id: int
    opponent: str


@dataclass(frozen=True)
class AnswerTakeback:
    game_id: int
    accept: bool
    opponent: str


@dataclass(frozen=True)
class Say:
    game_id: int
    text: str


Asked = TableAsked | WatchNewest | AskTakeback | AnswerTakeback | Say
Step = Send | Close | Asked


def send(*packets: bytes) -> list[Step]:
    return [Send(packets)]


def move_error(code: int) -> list[Step]:
    return send(p.move_error(code))


def name_code(raw: bytes, *, new: bool = True) -> int | None:
    """NAME's refusal of a name as sent, or None when it may be given to the service.
    ``new``: a guest's, by the rule for a new name; else an account's, by any user name's."""
    if not raw:
        return c.TOO_SHORT
    if len(raw) > MAX_NAME:
        return c.TOO_LONG
    try:
        (new_user_name if new else user_name)(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return c.INVALID_CHARACTERS
    return None


def chat_text(raw: bytes) -> str | None:
    """The message, or None when it cannot be stored: not UTF-8, too long, or holding a
    control or format character."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not 1 <= len(text) <= CHAT_MAX or any(unstorable(ch) for ch in text):
        return None
    return text


class Session:
    def __init__(self) -> None:
        self.name: str | None = None
        self.user_id = 0
        self.waiting = False  # a seek waits for an opponent
        self.table: Table | None = None
        self.told_end = False  # the position after the last move ended the game, told so
        self.takeback_from: str | None = None  # the opponent asks to take back their move

    def who(self) -> str:
        return self.name or "-"

    @property
    def seated(self) -> bool:
        """Waiting for a game, or at a game that goes on."""
        return self.waiting or (self.table is not None and not self.table.over)

    # -- the client's packets --------------------------------------------------------------

    def receive(self, packet: p.Packet) -> list[Step]:
        """The steps that answer ``packet``; a refusal's first packet is a NAME, a JOIN
        0 or a MOVE."""
        if isinstance(packet, p.Name):
            return self._name(packet.name, None)
        if isinstance(packet, p.Login):
            return self._name(packet.name, packet.password)
        if isinstance(packet, p.Role):
            return self._role(packet.role)
        if isinstance(packet, p.Watch):
            return self._watch(packet.game_id)
        if isinstance(packet, p.Play):
            return self._play(packet.origin, packet.target)
        if isinstance(packet, p.Hover):
            return self._hover(packet.square)
        if isinstance(packet, p.Chat):
            return self._chat(packet.text)
        return self._signal(packet.kind)

    def _name(self, raw: bytes, password: bytes | None) -> list[Step]:
        if self.name is not None:
            same = raw == self.name.encode() and not self.seated
            return send(p.name_answer(c.ACCEPTED if same else c.NOT_ALLOWED))
        refused = name_code(raw, new=password is None)
        if refused is not None:
            return send(p.name_answer(refused))
        if password is None:
            return [Identify(raw.decode("ascii"), None)]
        try:
            return [Identify(raw.decode("ascii"), password.decode("utf-8"))]
        except UnicodeDecodeError:
            return send(p.name_answer(c.NOT_ALLOWED))

    def _role(self, role: int) -> list[Step]:
        if self.name is None or self.seated:
            return send(p.join_answer(False))
        if role in (c.PLAYER_1, c.PLAYER_2):
            return [Seek()]
        if role == c.SPECTATOR:
            return [WatchNewest()]
        return send(p.join_answer(False))

    def _watch(self, game_id: int) -> list[Step]:
        if self.name is None or self.seated or not 1 <= game_id <= MAX_GAME_ID:
            return send(p.join_answer(False))
        return [Watch(game_id)]

    def _play(self, origin: tuple[int, int], target: tuple[int, int]) -> list[Step]:
        table = self._seat()
        if table is None:
            return move_error(c.NOT_YOUR_TURN if self.waiting else c.OTHER)
        if table.role not in (WHITE, BLACK):
            return move_error(c.NOT_YOURS)
        fault = fault_of(table.fen, table.role, origin, target)
        if fault is not None:
            return move_error(c.FAULTS[fault])
        move = move_of(table.fen, origin, target)
        return [Play(table.game_id, move_from_uci(table.ply + 1, move.uci()))]

    def _hover(self, square: tuple[int, int]) -> list[Step]:
        """The legal targets go to the player to move alone; anyone else (a spectator,
        the other player, a connection at no table) gets the square back without them."""
        table = self.table
        to_move = (
            table is not None
            and not table.over
            and table.role == turn(table.fen)
            and on_board(*square)
        )
        if not to_move or table is None:
            return send(p.hover(square, None))
        return send(p.hover(square, targets(table.fen, square)))

    def _chat(self, raw: bytes) -> list[Step]:
        table = self.table
        if not raw:
            return []  # nothing to relay
        text = chat_text(raw)
        if table is None or self.waiting or text is None:
            return move_error(c.OTHER)
        return [Say(table.game_id, text)]

    def _signal(self, kind: str) -> list[Step]:
        if kind in (p.PASS, p.CHEK, p.CKMT):
            return []  # the server ends turns and finds checks and mates itself
        table = self._seat()
        if table is None or table.role not in (WHITE, BLACK):
            return send(p.signal(p.DENY)) if kind == p.UNDO else move_error(c.OTHER)
        if kind == p.RSGN:
            return [Resign(table.game_id, table.opponent)]
        asked = self.takeback_from == table.opponent
        if kind == p.UNDO:
            if asked:
                return [AnswerTakeback(table.game_id, True, table.opponent)]
            return [AskTakeback(table.game_id, table.opponent)]
        if not asked:  # DENY
            return move_error(c.OTHER)
        return [AnswerTakeback(table.game_id, False, table.opponent)]

    def _seat(self) -> Table | None:
        """The connection's table, if its game goes on."""
        table = self.table
        return None if table is None or table.over or self.waiting else table

    # -- the service's answers -------------------------------------------------------------

    def identified(self, name: str, user_id: int) -> list[Step]:
        self.name, self.user_id = name, user_id
        return send(p.name_answer(c.ACCEPTED))

    def sought(self, status: GameStatus | None) -> list[Step]:
        """The seek waits (None), or paired at once: the caller sought second, and plays
        black (whoever sought first plays white)."""
        if status is None:
            self.waiting = True
            return send(p.join_answer(True))
        return [Send((p.join_answer(True),)), *self._sit(game_number(status.game), status)]

    def confirmed(self, seat: ConfirmSeat, ours: bool) -> list[Step]:
        if not ours or not self.waiting:
            return []
        return self._sit(seat.game_id, seat)

    def _sit(self, game_id: int, seat: GameStatus | ConfirmSeat) -> list[Step]:
        self.waiting, self.told_end, self.takeback_from = False, False, None
        self.table = Table(game_id, seat.color, seat.white, seat.black)
        return send(p.init(c.ROLES[seat.color], seat.white, seat.black, START_FEN))

    def watching(self, status: GameStatus, moves: list[MoveRecord]) -> list[Step]:
        fen = position_after(moves)
        self.told_end, self.takeback_from = False, None
        self.table = Table(game_number(status.game), OBSERVER, status.white, status.black)
        self.table.fen, self.table.ply = fen, len(moves)
        return send(p.join_answer(True), p.init(c.SPECTATOR, status.white, status.black, fen))

    def games(self, found: list[tuple[int, str, str]]) -> list[Step]:
        """INIT 3's answer: the newest game in play (id, white, black) the connection's
        name does not play in, to watch; JOIN 0 when there is none."""
        for game_id, white, black in found:
            if self.name not in (white, black):
                return [Watch(game_id)]
        return send(p.join_answer(False))

    def failed(self, asked: Asked, failure: Failure) -> list[Step]:
        if isinstance(asked, Identify):
            return send(p.name_answer(c.name_answer(failure.kind)))
        if isinstance(asked, Seek | Watch | WatchNewest | ConfirmSeat):
            return [] if isinstance(asked, ConfirmSeat) else send(p.join_answer(False))
        if isinstance(asked, AskTakeback | AnswerTakeback):
            return send(p.signal(p.DENY))
        return move_error(c.move_error(failure.kind))

    def server_error(self, asked: Asked) -> list[Step]:
        """The database could not do the work; nothing was done."""
        if isinstance(asked, Identify):
            return send(p.name_answer(c.NOT_ALLOWED))
        if isinstance(asked, Seek | Watch | WatchNewest):
            return send(p.join_answer(False))
        if isinstance(asked, AskTakeback | AnswerTakeback):
            return send(p.signal(p.DENY))
        return [] if isinstance(asked, ConfirmSeat) else move_error(c.OTHER)

    # -- the player's events -----------------------------------------------------------------

    def event(self, event: StoredEvent) -> list[Step]:
        f = event.fields
        if event.kind == ev.INICIO_PARTIDA and self.waiting and ev.conforms(event.kind, f):
            return self._begun(event)
        table = table_event(self.table, event)
        if table is None:
            return []
        if new_position(table, event):
            self.takeback_from = None
            if event.kind == ev.FIN_DE_TURNO:
                return self._moved(table)
            return send(p.update(self._turn(table), c.PLAYING, table.fen))
        if event.kind == ev.RETROCESO and f["usuario"] != self.name:
            if table.role not in (WHITE, BLACK):
                return []
            self.takeback_from = str(f["usuario"])
            return send(p.signal(p.UNDO))
        if event.kind == ev.RETROCESO_RECHAZADO:
            self.takeback_from = None
            asker = f["usuario"] != self.name and table.role in (WHITE, BLACK)
            return send(p.signal(p.DENY)) if asker else []
        if event.kind in (ev.CHAT, ev.SUSURRO) and f["usuario"] != self.name:
            return send(p.chat(str(f["usuario"]), str(f["texto"])))
        if event.kind == ev.FINALIZACION:
            table.over = True
            if self.told_end:
                return []
            victory = c.VICTORIES.get(event_number(f["ganador"]), c.CANCELED)
            return send(p.update(self._turn(table), victory, table.fen))
        return []

    @staticmethod
    def _turn(table: Table) -> int:
        return c.ROLES[turn(table.fen)]

    def _moved(self, table: Table) -> list[Step]:
        """UPDT to everyone at the table; then CHEK on a check, CKMT on a mate. A
        position that ends the game (mate, stalemate, a draw the rules make) says so in
        its UPDT's victory state."""
        stands = standing(table.fen)
        victory = c.PLAYING
        if stands is Standing.CHECKMATE:
            victory = c.PLAYER_2 if turn(table.fen) == WHITE else c.PLAYER_1
        elif stands is Standing.DRAWN:
            victory = c.CANCELED
        self.told_end = victory != c.PLAYING
        packets = [p.update(self._turn(table), victory, table.fen)]
        if stands is Standing.CHECK:
            packets.append(p.signal(p.CHEK))
        elif stands is Standing.CHECKMATE:
            packets.append(p.signal(p.CKMT))
        return [Send(tuple(packets))]

    def _begun(self, event: StoredEvent) -> list[Step]:
        seat = begun_seat(event, self.name)
        return [] if seat is None else [seat]
