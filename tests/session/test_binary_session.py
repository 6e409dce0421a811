"""The binary protocol's session with no I/O (``binproto/session.py``): packets, the
service's answers and the player's events in, steps out, as seed 004 and
docs/dialects.md say. The service is played by the test."""

from __future__ import annotations

import chess
import pytest

from ajedrez.binproto import codes as c
from ajedrez.binproto import packets as p
from ajedrez.binproto import session as s
from ajedrez.domain import event_kinds as ev
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.events import StoredEvent
from ajedrez.domain.rules import move_from_uci
from ajedrez.domain.views import GameStatus

START = chess.STARTING_FEN
GAME = 7


def sent(steps: list[s.Step]) -> list[bytes]:
    """The packets of ``steps``, which must all be packets."""
    assert all(isinstance(step, s.Send) for step in steps), steps
    return [packet for step in steps if isinstance(step, s.Send) for packet in step.lines]


def stored(kind: str, **fields: object) -> StoredEvent:
    values = {name: fields[name] for name in ev.FIELDS[kind]}
    return StoredEvent(1, 0, kind, values, GAME, 1, 2, None, True)  # type: ignore[arg-type]


def begun() -> StoredEvent:
    return stored(
        ev.INICIO_PARTIDA,
        partida=GAME,
        blancas="Alice",
        negras="Bob",
        control="10m",
        turno="Alice",
        privada=False,
    )


def moved(ply: int, fen: str) -> StoredEvent:
    return stored(
        ev.FIN_DE_TURNO,
        partida=GAME,
        jugada_n=ply,
        jugada="e2e4",
        promocion=0,
        san="e4",
        turno="x",
        fen=fen,
    )


def ended(winner: int) -> StoredEvent:
    return stored(ev.FINALIZACION, partida=GAME, ganador=winner, motivo="x")


def fen_after(*sans: str) -> str:
    board = chess.Board()
    for san in sans:
        board.push_san(san)
    return board.fen()


def status(color: str, white: str = "Alice", black: str = "Bob") -> GameStatus:
    return GameStatus("P0000007", white, black, 0, 0, 0, 0, 0, color, 1)


def seated(color: str = "B") -> s.Session:
    """Alice (white: she waited, then Bob sought) or Bob (black: paired at once)."""
    session = s.Session()
    name = "Alice" if color == "B" else "Bob"
    assert session.receive(p.Name(name.encode())) == [s.Identify(name, None)]
    assert sent(session.identified(name, 12)) == [b"NAME\x01"]
    assert session.receive(p.Role(1 if color == "B" else 2)) == [s.Seek()]
    init = p.init(1 if color == "B" else 2, "Alice", "Bob", START)
    if color == "B":
        assert sent(session.sought(None)) == [b"JOIN\x01"]
        [confirm] = session.event(begun())
        assert confirm == s.ConfirmSeat(GAME, "B", "Alice", "Bob")
        assert sent(session.confirmed(confirm, True)) == [init]
    else:
        assert sent(session.sought(status("N"))) == [b"JOIN\x01", init]
        assert session.event(begun()) == []  # told already
    return session


def test_names_answered_as_the_seed_numbers_them() -> None:
    session = s.Session()
    assert sent(session.receive(p.Name(b""))) == [b"NAME\x04"]
    assert sent(session.receive(p.Name(b"a" * 33))) == [b"NAME\x05"]
    assert sent(session.receive(p.Name(b"no way"))) == [b"NAME\x06"]
    assert sent(session.receive(p.Name(b"-x"))) == [b"NAME\x06"]
    assert sent(session.receive(p.Name("ñu".encode()))) == [b"NAME\x06"]
    assert session.receive(p.Login(b"ana", b"clave")) == [s.Identify("ana", "clave")]
    taken = Failure(Refusal.NAME_TAKEN, "x")
    assert sent(session.failed(s.Identify("ana", None), taken)) == [b"NAME\x07"]
    wrong = Failure(Refusal.WRONG_PASSWORD, "x")
    assert sent(session.failed(s.Identify("ana", "x"), wrong)) == [b"NAME\x08"]
    rate = Failure(Refusal.SIGNUP_RATE, "x")
    assert sent(session.failed(s.Identify("ana", None), rate)) == [b"NAME\x08"]
    # One name per connection: the same again is accepted, another is not.
    session.identified("ana", 3)
    assert sent(session.receive(p.Name(b"ana"))) == [b"NAME\x01"]
    assert sent(session.receive(p.Name(b"eve"))) == [b"NAME\x08"]


def test_roles_need_a_name_and_one_table() -> None:
    session = s.Session()
    assert sent(session.receive(p.Role(1))) == [b"JOIN\x00"]
    session.identified("Alice", 12)
    assert sent(session.receive(p.Role(9))) == [b"JOIN\x00"]
    assert session.receive(p.Role(3)) == [s.WatchNewest()]
    assert session.receive(p.Watch(5)) == [s.Watch(5)]
    assert sent(session.receive(p.Watch(0))) == [b"JOIN\x00"]
    assert sent(session.receive(p.Watch(2**32 - 1))) == [b"JOIN\x00"]  # no such id
    assert session.receive(p.Role(2)) == [s.Seek()]
    session.sought(None)
    assert sent(session.receive(p.Role(1))) == [b"JOIN\x00"]  # waiting already
    assert sent(session.receive(p.Play((4, 1), (4, 3)))) == [b"MOVE\x05"]  # no game yet


def test_a_move_then_its_update_to_everyone() -> None:
    session = seated("B")
    assert session.receive(p.Play((4, 1), (4, 3))) == [s.Play(GAME, move_from_uci(1, "e2e4"))]
    fen = fen_after("e4")
    assert sent(session.event(moved(1, fen))) == [p.update(2, 0, fen)]
    assert session.event(moved(1, fen)) == []  # the same move again: told already
    assert sent(session.receive(p.Play((3, 1), (3, 3)))) == [b"MOVE\x05"]


@pytest.mark.parametrize(
    ("origin", "target", "code"),
    [
        ((4, 1), (4, 9), 1),
        ((4, 6), (4, 4), 2),
        ((4, 3), (4, 4), 3),
        ((0, 0), (0, 1), 4),
        ((6, 0), (6, 2), 6),
        ((0, 0), (0, 2), 7),
    ],
)
def test_move_errors_from_the_position(
    origin: tuple[int, int], target: tuple[int, int], code: int
) -> None:
    session = seated("B")
    assert sent(session.receive(p.Play(origin, target))) == [p.move_error(code)]


def test_move_errors_5_and_8_and_the_service_s_refusals() -> None:
    session = seated("N")
    assert sent(session.receive(p.Play((4, 6), (4, 4)))) == [b"MOVE\x05"]
    session.event(moved(1, fen_after("e4")))
    session.event(moved(2, fen_after("e4", "f5")))
    session.event(moved(3, fen_after("e4", "f5", "Qh5+")))
    assert sent(session.receive(p.Play((0, 6), (0, 5)))) == [b"MOVE\x08"]  # still in check
    play = s.Play(GAME, move_from_uci(4, "d8h4"))
    for kind, code in [(Refusal.WRONG_PLY, 5), (Refusal.ILLEGAL_MOVE, 8), (Refusal.GAME_OVER, 8)]:
        assert sent(session.failed(play, Failure(kind, "x"))) == [p.move_error(code)]


def test_check_mate_and_the_end() -> None:
    session = seated("B")
    check = fen_after("e4", "f5", "Qh5+")
    assert sent(session.event(moved(3, check))) == [p.update(2, 0, check), b"CHEK"]
    mate = fen_after("f3", "e5", "g4", "Qh4#")
    assert sent(session.event(moved(4, mate))) == [p.update(1, 2, mate), b"CKMT"]
    assert session.event(ended(2)) == []  # the update said so
    assert sent(session.receive(p.Play((0, 1), (0, 2)))) == [b"MOVE\x08"]


@pytest.mark.parametrize(("winner", "victory"), [(1, 1), (2, 2), (3, 3), (0, 3)])
def test_an_end_the_position_does_not_show(winner: int, victory: int) -> None:
    session = seated("B")
    assert sent(session.event(ended(winner))) == [p.update(1, victory, START)]


def test_resignation_and_signals_the_server_works_out_itself() -> None:
    session = seated("N")
    for kind in ("PASS", "CHEK", "CKMT"):
        assert session.receive(p.Signal(kind)) == []
    assert session.receive(p.Signal("RSGN")) == [s.Resign(GAME, "Alice")]


def test_hover_answers_targets_to_the_player_to_move_only() -> None:
    white, black = seated("B"), seated("N")
    rows = [0, 0, 16, 16, 0, 0, 0, 0]
    assert sent(white.receive(p.Hover((4, 1)))) == [b"HOVR\x04\x01" + bytes(rows)]
    assert sent(black.receive(p.Hover((4, 6)))) == [b"HOVR\x04\x06"]
    assert sent(white.receive(p.Hover((4, 200)))) == [b"HOVR\x04\xc8"]
    assert sent(s.Session().receive(p.Hover((4, 1)))) == [b"HOVR\x04\x01"]


def test_undo_asked_accepted_and_declined() -> None:
    white, black = seated("B"), seated("N")
    fen = fen_after("e4")
    white.event(moved(1, fen))
    black.event(moved(1, fen))
    assert white.receive(p.Signal("UNDO")) == [s.AskTakeback(GAME, "Bob")]
    asked = stored(ev.RETROCESO, partida=GAME, usuario="Alice")
    assert white.event(asked) == []
    assert sent(black.event(asked)) == [b"UNDO"]
    assert black.receive(p.Signal("UNDO")) == [s.AnswerTakeback(GAME, True, "Alice")]
    assert black.receive(p.Signal("DENY")) == [s.AnswerTakeback(GAME, False, "Alice")]
    declined = stored(ev.RETROCESO_RECHAZADO, partida=GAME, usuario="Bob")
    assert sent(white.event(declined)) == [b"DENY"]
    assert black.event(declined) == []
    assert sent(black.receive(p.Signal("DENY"))) == [b"MOVE\x08"]  # nothing to decline
    taken = stored(ev.RETROCESO_ACEPTADO, partida=GAME, usuario="Bob", jugada_n=1, fen=START)
    assert sent(white.event(taken)) == [p.update(1, 0, START)]
    refused = Failure(Refusal.TAKEBACK_REFUSED, "x")
    assert sent(white.failed(s.AskTakeback(GAME, "Bob"), refused)) == [b"DENY"]


def test_chat_reaches_everyone_but_the_sender() -> None:
    session = seated("B")
    assert session.receive(p.Chat(b"hola")) == [s.Say(GAME, "hola")]
    assert session.receive(p.Chat(b"")) == []
    assert sent(session.receive(p.Chat(b"\xff"))) == [b"MOVE\x08"]
    assert sent(session.receive(p.Chat(b"a\x07b"))) == [b"MOVE\x08"]
    said = stored(ev.CHAT, partida=GAME, usuario="Bob", texto="hi")
    assert sent(session.event(said)) == [p.chat("Bob", "hi")]
    own = stored(ev.CHAT, partida=GAME, usuario="Alice", texto="hola")
    assert session.event(own) == []
    whisper = stored(ev.SUSURRO, partida=GAME, usuario="Carl", texto="psst")
    assert sent(session.event(whisper)) == [p.chat("Carl", "psst")]
    assert sent(s.Session().receive(p.Chat(b"hola"))) == [b"MOVE\x08"]  # at no table


def test_a_spectator() -> None:
    session = s.Session()
    session.identified("Carl", 14)
    assert session.games([(9, "Carl", "x"), (7, "Alice", "Bob")]) == [s.Watch(GAME)]
    assert sent(session.games([])) == [b"JOIN\x00"]
    fen = fen_after("e4", "e5")
    moves = [move_from_uci(1, "e2e4"), move_from_uci(2, "e7e5")]
    assert sent(session.watching(status("-"), moves)) == [
        b"JOIN\x01",
        p.init(3, "Alice", "Bob", fen),
    ]
    assert session.event(moved(2, fen)) == []  # in the first position already
    later = fen_after("e4", "e5", "Nf3")
    assert sent(session.event(moved(3, later))) == [p.update(2, 0, later)]
    assert sent(session.receive(p.Play((4, 6), (4, 4)))) == [b"MOVE\x02"]
    assert sent(session.receive(p.Signal("RSGN"))) == [b"MOVE\x08"]
    assert sent(session.receive(p.Signal("UNDO"))) == [b"DENY"]
    assert sent(session.receive(p.Hover((4, 6)))) == [b"HOVR\x04\x06"]
    asked = stored(ev.RETROCESO, partida=GAME, usuario="Alice")
    assert session.event(asked) == []
    assert sent(session.failed(s.Watch(GAME), Failure(Refusal.NO_SUCH_GAME, "x"))) == [b"JOIN\x00"]


def test_server_errors_and_odd_events() -> None:
    session = seated("B")
    assert sent(session.server_error(s.Play(GAME, move_from_uci(1, "e2e4")))) == [b"MOVE\x08"]
    assert sent(session.server_error(s.Seek())) == [b"JOIN\x00"]
    assert sent(session.server_error(s.Identify("x", None))) == [b"NAME\x08"]
    odd = StoredEvent(2, 0, ev.FIN_DE_TURNO, {"campo1": "x"}, GAME, 1, 2, None, False)
    assert session.event(odd) == []


def test_every_refusal_maps_to_a_code_of_the_protocol() -> None:
    for kind in Refusal:
        assert c.name_answer(kind) in (6, 7, 8)
        assert 1 <= c.move_error(kind) <= 8
