"""The `#` protocol's session with no I/O (``hashproto/session.py``): messages, the
service's answers and the player's events in, steps out, as seed 000 and
docs/dialects.md say. The service is played by the test."""

from __future__ import annotations

import chess
import pytest

from ajedrez.domain import event_kinds as ev
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.events import StoredEvent
from ajedrez.domain.rules import move_from_uci
from ajedrez.domain.views import ClockStatus, GameStatus, MoveRecord
from ajedrez.hashproto import session as s
from ajedrez.hashproto.texts import REFUSALS
from ajedrez.hashproto.wire import Message, encode

START = chess.STARTING_FEN
GAME = 7


def msg(command: str, *fields: str) -> Message:
    return Message(command, fields)


def sent(steps: list[s.Step]) -> list[bytes]:
    """The lines of ``steps``, which must all be lines."""
    assert all(isinstance(step, s.Send) for step in steps), steps
    return [line for step in steps if isinstance(step, s.Send) for line in step.lines]


def stored(kind: str, game_id: int | None = GAME, **fields: object) -> StoredEvent:
    values = {name: fields[name] for name in ev.FIELDS[kind]}
    return StoredEvent(1, 0, kind, values, game_id, 1, 2, None, True)  # type: ignore[arg-type]


def begun(white: str = "Alice", black: str = "Bob", game_id: int = GAME) -> StoredEvent:
    return stored(
        ev.INICIO_PARTIDA,
        game_id,
        partida=game_id,
        blancas=white,
        negras=black,
        control="10m",
        turno=white,
        privada=False,
    )


def moved(ply: int, fen: str, game_id: int = GAME) -> StoredEvent:
    return stored(
        ev.FIN_DE_TURNO,
        game_id,
        partida=game_id,
        jugada_n=ply,
        jugada="e2e4",
        promocion=0,
        san="e4",
        turno="x",
        fen=fen,
    )


def ended(winner: int) -> StoredEvent:
    return stored(ev.FINALIZACION, partida=GAME, ganador=winner, motivo="x")


def status(color: str, next_ply: int = 1) -> GameStatus:
    return GameStatus("P0000007", "Alice", "Bob", 0, 0, 0, 0, 0, color, next_ply)


def seated_white() -> s.Session:
    """Alice, a guest, waited and was seated as white at game 7."""
    session = s.Session()
    assert session.receive(msg("INSCRIBIR", "Alice")) == [s.Identify("Alice", None)]
    assert session.identified("Alice", 12) == [s.Seek()]
    assert sent(session.sought(None)) == [b"#OK#B#12#\n"]
    [confirm] = session.event(begun())
    assert confirm == s.ConfirmSeat(GAME, "B", "Alice", "Bob")
    assert sent(session.confirmed(confirm, True)) == [encode("INICIO", "B", START)]
    return session


def fen_after(*sans: str) -> str:
    board = chess.Board()
    for san in sans:
        board.push_san(san)
    return board.fen()


def test_the_first_to_register_waits_as_white_and_is_seated() -> None:
    session = seated_white()
    assert session.table is not None and session.table.role == "B" and not session.waiting
    # A later INICIO of another game is not this connection's.
    assert session.event(begun(game_id=8)) == []


def test_the_second_is_paired_at_once_as_black() -> None:
    session = s.Session()
    assert session.receive(msg("INSCRIBIR", "Bob")) == [s.Identify("Bob", None)]
    assert session.identified("Bob", 13) == [s.Seek()]
    assert sent(session.sought(status("N"))) == [b"#OK#N#13#\n", encode("INICIO", "B", START)]
    assert session.event(begun()) == []  # told already


def test_a_game_begun_while_waiting_is_the_seat_only_if_the_service_says_so() -> None:
    """An account may begin a game elsewhere; a guest's name may have had a game before."""
    session = s.Session()
    assert session.receive(msg("INSCRIBIR", "Alice", "clave")) == [s.Identify("Alice", "clave")]
    session.identified("Alice", 12)
    session.sought(None)
    [confirm] = session.event(begun())
    assert confirm == s.ConfirmSeat(GAME, "B", "Alice", "Bob")
    assert session.confirmed(confirm, False) == [] and session.waiting
    assert sent(session.confirmed(confirm, True)) == [encode("INICIO", "B", START)]


def test_a_move_by_codigo_or_name_in_coordinates_or_san() -> None:
    session = seated_white()
    assert session.receive(msg("MOVIMIENTO", "12", "e2e4")) == [
        s.Play(GAME, move_from_uci(1, "e2e4"))
    ]
    assert session.receive(msg("MOVIMIENTO", "Alice", "Nf3")) == [
        s.Play(GAME, move_from_uci(1, "g1f3"))
    ]
    assert session.receive(msg("MOVIMIENTO", "12", "O-O")) == sent_nok("Movimiento inválido")
    assert session.receive(msg("MOVIMIENTO", "13", "e2e4")) == sent_nok("Código inválido")
    assert session.receive(msg("MOVIMIENTO", "12", "e7e5e5")) == sent_nok("Movimiento inválido")
    # The move is told to both players by its event, the mover too.
    fen = fen_after("e4")
    assert sent(session.event(moved(1, fen))) == [encode("OK", "N", fen, "EN_JUEGO")]
    assert session.event(moved(1, fen)) == []  # the same move again: told already
    assert session.receive(msg("MOVIMIENTO", "12", "d2d4")) == sent_nok("No es tu turno")
    assert session.receive(msg("CONSULTARTABLERO", "Alice")) == [s.Send((encode("OK", fen, "N"),))]


def test_a_promotion_without_its_piece_is_to_a_queen() -> None:
    session = seated_white()
    assert session.table is not None
    session.table.fen, session.table.ply = "8/P6k/8/8/8/8/8/K7 w - - 0 40", 1
    [play] = session.receive(msg("MOVIMIENTO", "12", "a7a8"))
    assert play == s.Play(GAME, MoveRecord(2, "a7a8", 0, "4856", 5))
    [play] = session.receive(msg("MOVIMIENTO", "12", "a8=N"))
    assert play == s.Play(GAME, MoveRecord(2, "a7a8", 0, "4856", 2))


def sent_nok(text: str) -> list[s.Step]:
    return [s.Send((encode("NOK", text),))]


def test_check_mate_and_the_end() -> None:
    session = seated_white()
    check = fen_after("e4", "f5", "Qh5+")
    mate = fen_after("f3", "e5", "g4", "Qh4#")
    assert sent(session.event(moved(3, check))) == [encode("OK", "N", check, "JAQUE")]
    assert sent(session.event(moved(4, mate))) == [encode("OK", "B", mate, "JAQUE_MATE")]
    assert sent(session.event(ended(2))) == [b"#FIN#GANADOR_N#\n"]
    assert session.receive(msg("MOVIMIENTO", "12", "a2a3")) == sent_nok("Partida terminada")
    assert session.receive(msg("RENDIRSE", "12")) == sent_nok("Partida terminada")
    assert session.event(moved(5, mate)) == []  # the table is over


@pytest.mark.parametrize(("winner", "said"), [(1, "GANADOR_B"), (3, "TABLAS"), (0, "ANULADA")])
def test_results(winner: int, said: str) -> None:
    session = seated_white()
    assert sent(session.event(ended(winner))) == [encode("FIN", said)]


def test_resignation() -> None:
    session = seated_white()
    assert session.receive(msg("RENDIRSE", "12")) == [s.Resign(GAME, "Bob")]
    left = stored(ev.ABANDONO, partida=GAME, usuario="Alice", observador=False)
    assert sent(session.event(left)) == [b"#OK#N#\n"]
    watcher_left = stored(ev.ABANDONO, partida=GAME, usuario="Carl", observador=True)
    assert session.event(watcher_left) == []


def test_a_spectator() -> None:
    session = s.Session()
    assert session.receive(msg("OBSERVAR", "Carl", "P0000007")) == [s.Identify("Carl", None)]
    assert session.identified("Carl", 14) == [s.Watch(GAME)]
    moves = [move_from_uci(1, "e2e4"), move_from_uci(2, "e7e5")]
    fen = fen_after("e4", "e5")
    assert sent(session.watching(status("-", 3), moves)) == [
        b"#OK#E#14#\n",
        encode("INICIO", "B", fen),
    ]
    assert session.event(moved(2, fen)) == []  # in the first position already
    later = fen_after("e4", "e5", "Nf3")
    assert sent(session.event(moved(3, later))) == [encode("OK", "N", later, "EN_JUEGO")]
    assert session.receive(msg("MOVIMIENTO", "14", "e7e5")) == sent_nok("No estás en una partida")
    assert session.receive(msg("RENDIRSE", "Carl")) == sent_nok("No estás en una partida")
    assert session.receive(msg("HISTORIAL", "14")) == [s.History(GAME)]
    assert session.receive(msg("INSCRIBIR", "Carl")) == sent_nok("Ya estás inscrito")


def test_what_needs_a_name_a_table_or_the_right_fields() -> None:
    session = s.Session()
    assert session.receive(msg("MOVIMIENTO", "1", "e2e4")) == sent_nok("No estás inscrito")
    assert session.receive(msg("CONSULTARTABLERO", "1")) == sent_nok("No estás inscrito")
    assert session.receive(msg("BAILAR")) == sent_nok("Mensaje desconocido")
    assert session.receive(msg("INSCRIBIR")) == sent_nok("Número de campos incorrecto")
    assert session.receive(msg("OBSERVAR", "x", "P0")) == sent_nok("Partida inválida")
    assert session.receive(msg("PARTIDAS")) == [s.ListGames()]
    assert session.receive(msg("SALIR")) == [s.Close()]
    session.receive(msg("INSCRIBIR", "Alice"))
    session.identified("Alice", 12)
    session.sought(None)
    assert session.receive(msg("MOVIMIENTO", "12", "e2e4")) == sent_nok("La partida no ha empezado")
    assert session.receive(msg("CONSULTARTABLERO", "12")) == sent_nok("La partida no ha empezado")
    assert session.receive(msg("INSCRIBIR", "Alice")) == sent_nok("Ya estás inscrito")


def test_after_a_game_the_same_name_sits_down_again() -> None:
    session = seated_white()
    session.event(ended(1))
    assert session.receive(msg("INSCRIBIR", "Other")) == sent_nok(
        "Esta conexión ya tiene otro nombre"
    )
    assert session.receive(msg("INSCRIBIR", "Alice")) == [s.Seek()]


@pytest.mark.parametrize(
    ("asked", "kind", "said"),
    [
        (s.Identify("x", None), Refusal.INVALID, "Nombre inválido"),
        (s.Identify("x", None), Refusal.NAME_TAKEN, "Nombre duplicado"),
        (s.Identify("x", "y"), Refusal.WRONG_PASSWORD, "Contraseña incorrecta"),
        (s.Play(GAME, move_from_uci(1, "e2e4")), Refusal.ILLEGAL_MOVE, "Movimiento inválido"),
        (s.Play(GAME, move_from_uci(1, "e2e4")), Refusal.INVALID, "Movimiento inválido"),
        (s.Play(GAME, move_from_uci(1, "e2e4")), Refusal.NOT_YOUR_TURN, "No es tu turno"),
        (s.Watch(GAME), Refusal.INVALID, "Partida inválida"),
        (s.Watch(GAME), Refusal.NO_SUCH_GAME, "Partida inexistente"),
    ],
)
def test_the_service_s_refusals(asked: s.Asked, kind: Refusal, said: str) -> None:
    session = s.Session()
    assert session.failed(asked, Failure(kind, "why")) == sent_nok(said)


def test_every_refusal_has_a_text_that_fits_in_a_field() -> None:
    assert set(REFUSALS) == set(Refusal)
    for text in REFUSALS.values():
        assert text and "#" not in text and "\n" not in text


def test_history_clocks_and_games_in_play() -> None:
    session = seated_white()
    moves = [move_from_uci(1, "e2e4"), MoveRecord(2, "a2a1", 0, "0800", 3)]
    assert sent(session.history(moves)) == [b"#OK#e2e4#a2a1b#\n"]
    clocks = ClockStatus("P0000007", 0, "10m", 599_000, 600_000, "B", 0, 0, 0, "")
    assert sent(session.clocks(clocks)) == [b"#OK#599000#600000#B#\n"]
    assert sent(session.games([(7, "Alice", "Bob"), (3, "c", "d")])) == [
        b"#OK#P0000007,Alice,Bob#P0000003,c,d#\n"
    ]
    assert sent(session.games([])) == [b"#OK#\n"]


def test_an_event_that_does_not_conform_is_ignored() -> None:
    session = seated_white()
    odd = StoredEvent(2, 0, ev.FIN_DE_TURNO, {"campo1": "x"}, GAME, 1, 2, None, False)
    assert session.event(odd) == []
