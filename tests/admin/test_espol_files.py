"""The 1995 ESPOL files read without a database (admin/espol_files.py) and their games
replayed (admin/espol_games.py): each parser's records, and each bad line's problem with
its file, line and reason, which never holds a password."""

from __future__ import annotations

import io

import chess
import pytest

from ajedrez.admin.espol_files import (
    MAX_LINE,
    Config,
    Problem,
    Unreadable,
    clean_comment,
    game_file_id,
    parse_challenges,
    parse_config,
    parse_eje,
    parse_est_partida,
    parse_pen,
    parse_subscripcion,
    parse_usuarios,
    read_lines,
)
from ajedrez.admin.espol_games import RECORDED, plan_game
from ajedrez.domain.values import END_ABORTED, REQ_OFFER, STATUS_ACTIVE, STATUS_FINISHED
from tests.support.espol_data import SAMPLE, SAMPLE_USERS, pen_line, pen_text, san_moves


def where(problems: list[Problem]) -> list[tuple[int | None, str]]:
    return [(p.line, p.message) for p in problems]


# -- text ----------------------------------------------------------------------------------


def decode_lines(data: bytes, file: str = "f") -> list[str]:
    return list(read_lines(io.BytesIO(data), file))


def test_lines_are_utf8_or_latin1_each():
    data = "José\r\n".encode("latin-1") + "Iván\n".encode() + b"\xef\xbb\xbfx\n" + b"last"
    assert decode_lines(data) == ["José", "Iván", "\ufeffx", "last"]
    assert decode_lines(b"\xef\xbb\xbfana\n") == ["ana"]  # a BOM at the start only
    assert decode_lines(b"") == []
    assert decode_lines(b"a\n\n") == ["a", ""]


class Endless(io.RawIOBase):
    """A file of ``head`` then one line that never ends; counts the bytes it gave."""

    def __init__(self, head: bytes) -> None:
        self.head = head
        self.given = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        size = len(buffer)
        chunk = (self.head[self.given :] + b"x" * size)[:size]
        buffer[:size] = chunk
        self.given += size
        return size


def test_a_line_longer_than_the_cap_stops_the_reading_of_its_file():
    stream = Endless(b"ana:pw::00799592000:1\n")
    lines = read_lines(io.BufferedReader(stream), "autorizados/usuarios")
    assert next(lines) == "ana:pw::00799592000:1"
    with pytest.raises(Unreadable) as refused:
        next(lines)
    assert refused.value.problem == Problem(
        "autorizados/usuarios",
        2,
        f"a line longer than {MAX_LINE} bytes (no 1995 ESPOL file has one): the file is not read",
    )
    # What was read of the endless line: the cap and one buffer, not the line.
    assert stream.given < 2 * MAX_LINE


def test_a_line_at_the_cap_is_read():
    line = b"\xef\xbb\xbf" + b"a" * MAX_LINE + b"\r\n"
    assert decode_lines(line + b"b" * MAX_LINE) == ["a" * MAX_LINE, "b" * MAX_LINE]
    with pytest.raises(Unreadable):
        decode_lines(b"a" * (MAX_LINE + 1) + b"\n")
    with pytest.raises(Unreadable):
        decode_lines(b"a\n" + b"a" * (MAX_LINE + 1))


def test_comments_are_cleaned_not_refused():
    assert clean_comment(" Ana María ") == ("Ana María", "")
    text, note = clean_comment("Gonzalo\tSáenz\x00\u202e")
    assert text == "Gonzalo Sáenz" and "replaced or dropped" in note
    text, note = clean_comment("x" * 250)
    assert text == "x" * 200 and note == "comment cut to 200 characters"


def test_game_file_names():
    assert game_file_id("P0000012.PEN") == 12
    assert game_file_id("p0000012.pen") == 12
    assert game_file_id("P000012.PEN") is None
    assert game_file_id("ana") is None


# -- server.cfg, server.eje ----------------------------------------------------------------


def test_config():
    config, problems = parse_config(
        ["est_partida: partidas", "", "autorizados:/srv/ajedrez", "solicitudes:C:\\AJEDREZ"],
        "server.cfg",
    )
    assert config == Config("/srv/ajedrez", "partidas", "C:\\AJEDREZ")
    assert problems == []
    config, problems = parse_config(
        ["autorizados:a", "autorizados:b", "puerto:7000", "est_partida:", "solicitudes:s"],
        "server.cfg",
    )
    assert config is None
    assert where(problems) == [
        (2, "autorizados given again; the first one is used"),
        (3, "not one of autorizados:DIR, est_partida:DIR, solicitudes:DIR"),
        (4, "est_partida: no directory given"),
        (None, "no est_partida directory"),
    ]


def test_eje():
    assert parse_eje(["04217:0000020"], "server.eje") == (20, [])
    sequence, problems = parse_eje(["04217:00000x0"], "server.eje")
    assert sequence is None and where(problems) == [(1, "secuencial '00000x0' is not 1-7 digits")]
    sequence, problems = parse_eje(["1:2", "3:4"], "server.eje")
    assert sequence == 2 and where(problems) == [(2, "more than one line: only the first is read")]
    assert parse_eje([], "server.eje")[0] is None


# -- usuarios and subscripcion -------------------------------------------------------------


def test_usuarios_sample():
    data = (SAMPLE / "autorizados" / "usuarios").read_bytes()
    users, problems = parse_usuarios(decode_lines(data), "usuarios")
    assert [(u.name, u.password, u.comment, u.fecha, u.wins) for u in users] == [
        (s.name, s.password, s.comment, s.fecha, s.wins) for s in SAMPLE_USERS
    ]
    assert where(problems) == [
        (7, "invalid user name 'josé': 1-32 characters of A-Z a-z 0-9 _ . -"),
        (
            9,
            "7 fields where 5 are expected (user:password:comentario:fecha:#ganadas) "
            "(a ':' in a password or comment?)",
        ),
        (11, "fecha 'ayer' is not 1-11 digits"),
        (13, "user 'ana' given again (line 1): skipped"),
        (15, "user 'Bruno' differs only in case from 'bruno' (line 2): skipped"),
        (16, "empty password"),
        (17, "#ganadas 'muchas' is not 1-9 digits"),
    ]
    gonzalo = next(u for u in users if u.name == "gonzalo")
    assert gonzalo.comment_note  # the TAB became a space
    # A password is in no problem, nor in a record's repr.
    text = " ".join(map(str, problems)) + " ".join(map(repr, users))
    for u in SAMPLE_USERS:
        assert u.password not in text
    assert "Karla:con:dos" not in text and "con:dos" not in text


def test_usuarios_password_kept_exactly():
    users, problems = parse_usuarios([" ana : clave con espacios :Ana: 00000000001 : 3 "], "u")
    assert problems == []
    assert (users[0].name, users[0].password, users[0].comment) == (
        "ana",
        " clave con espacios ",
        "Ana",
    )
    assert (users[0].fecha, users[0].wins) == (1, 3)
    _, problems = parse_usuarios(["ana:" + "x" * 129 + ":c:1:0"], "u")
    assert where(problems) == [(1, "invalid password: more than 128 characters")]


def test_subscripcion_sample():
    data = (SAMPLE / "autorizados" / "subscripcion").read_bytes()
    requests, problems = parse_subscripcion(decode_lines(data), "subscripcion")
    assert [(s.name, s.password, s.comment) for s in requests] == [
        ("olga", "Olga-pide-cuenta", "Olga Benítez, olga@espol.edu.ec"),
        ("pedro", "Pedro_pide_95", "Pedro Alvarado - FIEC"),
        ("ana", "Ana-otra-solicitud", "Ana otra vez"),  # the import refuses it: an account's
    ]
    assert where(problems) == [
        (4, "2 fields where 4 are expected (SUBS:user:password:comentario)"),
        (5, "'ALTA' where SUBS is expected"),
        (6, "'olga' requested again (line 1): skipped"),
    ]
    _, problems = parse_subscripcion(["SUBS:-x:clave:c"], "subscripcion")
    assert "may not start with '-'" in problems[0].message


# -- est_partida ---------------------------------------------------------------------------


def test_est_partida():
    games, problems = parse_est_partida(
        [
            "P0000001:ana:bruno:00797000000:2:1:0:3",
            "P0000002:ana:ana:00797000000:0:0:0:0",
            "P0000003:ana:bruno:00797000000:1:0:0:0",
            "P0000004:ana:bruno:00797000000:0:4:0:0",
            "P0000005:ana:bruno:00797000000:0:0:0:9",
            "12:ana:bruno:00797000000:0:0:0:0",
            "P0000000:ana:bruno:00797000000:0:0:0:0",
            "P0000001:carlos:diana:00797000000:0:0:0:0",
            "P0000006:ana:bruno:hoy:0:0:0:0",
            "P0000007:ana:bruno:00797000000:0:0:1:0",
        ],
        "est_partida",
    )
    assert [(g.game_id, g.status, g.winner, g.req_white, g.req_black) for g in games] == [
        (1, 2, 1, 0, 3),
        (7, 0, 0, 1, 0),
    ]
    assert where(problems) == [
        (2, "'ana' plays both colours"),
        (3, "est_prt '1' is not one of 0, 2"),
        (4, "ganador '4' is not one of 0, 1, 2, 3"),
        (5, "solicitud_negras '9' is not one of 0, 1, 2, 3"),
        (6, "invalid game id '12': P followed by 7 digits"),
        (7, "invalid game id 'P0000000': numbers start at 1"),
        (8, "P0000001 given again (line 1): skipped"),
        (9, "fecha 'hoy' is not 1-11 digits"),
    ]


# -- moves files ---------------------------------------------------------------------------


def test_pen_stops_at_the_first_bad_line():
    moves = san_moves("e4", "e5", "Nf3")
    pen = parse_pen([*pen_text(moves).splitlines(), "", "000005:a2a3:0:0816:0"], "P.PEN")
    assert [(m.ply, m.jugada) for m in pen.moves] == [(1, "e2e4"), (2, "e7e5"), (3, "g1f3")]
    assert pen.stop == Problem("P.PEN", 5, "#jugada 5 where 4 is expected")
    assert pen.unread == 1
    for bad, reason in (
        ("000001:e2e4:0:1228", "4 fields where 5 are expected"),
        ("000001:e2e9:0:1228:0", "invalid move 'e2e9'"),
        ("000001:e2e4:2:1228:0", "invalid reverso '2'"),
        ("000001:e2e4:0:1299:0", "invalid posicion '1299'"),
        ("000001:e2e4:0:1228:1", "invalid promocion '1'"),
    ):
        pen = parse_pen([bad, "000002:e7e5:1:5236:0"], "P.PEN")
        assert pen.moves == () and pen.unread == 2
        assert pen.stop is not None and reason in pen.stop.message, (bad, pen.stop)
    assert parse_pen(["000001:E2E4:0:1228:0"], "P.PEN").moves[0].jugada == "e2e4"


def old_game(status=0, winner=0, req_white=0, req_black=0):
    games, problems = parse_est_partida(
        [f"P0000009:ana:bruno:00797000000:{status}:{winner}:{req_white}:{req_black}"], "est"
    )
    assert problems == []
    return games[0]


def planned(moves, **state):
    return plan_game(old_game(**state), parse_pen(pen_text(moves).splitlines(), "P.PEN"), "P.PEN")


def test_replay_castling_en_passant_promotion():
    text = (SAMPLE / "solicitudes" / "P0000003.PEN").read_text()
    g = plan_game(old_game(), parse_pen(text.splitlines(), "P0000003.PEN"), "P0000003.PEN")
    assert g.stop is None and g.status == STATUS_ACTIVE and not g.all_notes
    assert [m.san for m in g.moves] == [
        "e4", "Nf6", "e5", "d5", "exd6", "e6", "dxc7", "Be7", "cxd8=Q+", "Bxd8",
        "Nf3", "O-O", "Bc4", "Nc6", "O-O", "e5",
    ]  # fmt: skip
    board = chess.Board(g.fen)
    assert g.fen == "r1bb1rk1/pp3ppp/2n2n2/4p3/2B5/5N2/PPPP1PPP/RNBQ1RK1 w - - 0 9"
    assert board.fullmove_number == 9
    assert (g.base_ply, g.base_fen) == (16, g.fen)  # e5, a pawn's move


def test_an_active_game_that_is_mate_is_finished_on_import():
    g = planned(san_moves("f3", "e5", "g4", "Qh4#"))
    assert (g.status, g.winner, g.end_reason, g.credit) == (STATUS_FINISHED, 2, "checkmate", True)
    assert g.end_note == "active, but checkmate: finished on import, 0-1"
    assert g.finished_at == 797000000


def test_an_illegal_move_keeps_the_moves_before_it():
    lines = [
        *pen_text(san_moves("e4", "e5")).splitlines(),
        "000003:e1e3:0:0420:0",
        "000004:a7a6:1:4840:0",
    ]
    g = plan_game(old_game(), parse_pen(lines, "P.PEN"), "P.PEN")
    assert len(g.moves) == 2 and g.status == STATUS_ACTIVE
    assert g.stop == Problem(
        "P.PEN", 3, "ply 3: illegal move e1e3: the king on e1 cannot move there"
    )
    assert g.dropped == 2
    assert g.replay_note == (
        "does not replay: P.PEN:3: ply 3: illegal move e1e3: the king on e1 cannot move "
        "there; 2 of 4 moves imported"
    )
    assert (
        g.fen == chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2").fen()
    )


def test_posicion_is_checked_against_jugada():
    lines = [pen_line(1, chess.Move.from_uci("e2e4"), "1227")]
    g = plan_game(old_game(), parse_pen(lines, "P.PEN"), "P.PEN")
    assert g.moves == () and g.stop is not None
    assert "posicion 1227 does not match e2e4: expected 1228" in g.stop.message


def test_moves_after_the_end_are_not_imported():
    moves = san_moves("f3", "e5", "g4", "Qh4#")
    lines = [*pen_text(moves).splitlines(), "000005:a2a3:0:0816:0"]
    g = plan_game(old_game(status=2, winner=2), parse_pen(lines, "P.PEN"), "P.PEN")
    assert len(g.moves) == 4 and g.stop is not None
    assert g.stop.message == "the game was over at ply 4 (checkmate)"
    assert (g.status, g.winner, g.end_reason, g.credit) == (STATUS_FINISHED, 2, "checkmate", False)


@pytest.mark.parametrize(
    ("reqs", "winner", "reason"),
    [((3, 0), 2, "resignation"), ((0, 3), 1, "resignation"), ((1, 2), 3, "agreement"),
     ((1, 1), 3, "agreement"), ((3, 3), 0, END_ABORTED)],
)  # fmt: skip
def test_an_active_game_with_its_end_recorded_is_finished(reqs, winner, reason):
    g = planned(san_moves("e4"), req_white=reqs[0], req_black=reqs[1])
    assert (g.status, g.winner, g.end_reason) == (STATUS_FINISHED, winner, reason)
    assert g.ended_on_import and g.end_note


def test_an_active_game_keeps_its_draw_offer():
    g = planned(san_moves("e4"), req_white=REQ_OFFER)
    assert (g.status, g.req_white, g.req_black, g.all_notes) == (STATUS_ACTIVE, 1, 0, [])
    g = planned(san_moves("e4"), req_black=2, winner=1)
    assert (g.status, g.req_black) == (STATUS_ACTIVE, 0)
    assert g.notes == (
        "ganador 1 in an active game: ignored",
        "a draw accepted that nobody offered: ignored",
    )


def test_a_finished_game_has_the_result_its_position_decides():
    mate = san_moves("f3", "e5", "g4", "Qh4#")
    g = planned(mate, status=2, winner=1)
    assert (g.winner, g.end_reason, g.credit) == (2, "checkmate", False)
    assert g.notes == ("recorded result 1-0, but the position is checkmate: imported as 0-1",)
    g = planned(mate, status=2, winner=0)
    assert (g.winner, g.end_reason) == (2, "checkmate")
    assert g.notes == (
        "recorded result none (ganador 0), but the position is checkmate: imported as 0-1",
    )
    g = planned(mate, status=2, winner=2, req_white=3)
    assert (g.winner, g.end_reason, g.notes) == (2, "checkmate", ())


def test_any_other_finished_game_keeps_its_recorded_result():
    g = planned(san_moves("e4"), status=2, winner=2)
    assert (g.winner, g.end_reason, g.notes) == (2, RECORDED, ())
    g = planned(san_moves("e4"), status=2, winner=0, req_black=3)
    assert (g.winner, g.end_reason) == (1, "resignation")
    assert g.notes == ("finished with ganador 0: 1-0 from the request fields",)
    g = planned(san_moves("e4"), status=2, winner=0)
    assert (g.winner, g.end_reason) == (0, END_ABORTED)
    assert g.notes == ("finished without a result (ganador 0): imported as aborted",)
    g = planned(san_moves("d4"), status=2, winner=3, req_white=1, req_black=2)
    assert (g.winner, g.end_reason, g.notes) == (3, "agreement", ())


def test_a_game_over_by_a_rule_that_leaves_moves():
    # The start position five times: fivefold repetition ends the game, moves remain.
    dance = san_moves(*["Nf3", "Nf6", "Ng1", "Ng8"] * 4, "e4")
    g = planned(dance)
    assert len(g.moves) == 16 and g.dropped == 1
    assert g.stop is not None and g.stop.line == 17
    assert g.stop.message == "the game was over at ply 16 (fivefold repetition)"
    assert (g.status, g.winner, g.end_reason) == (STATUS_FINISHED, 3, "fivefold repetition")
    assert g.end_note == "active, but fivefold repetition: finished on import, 1/2-1/2"


# -- challenges ----------------------------------------------------------------------------


def test_challenges():
    found, problems = parse_challenges(
        ["hilda: 00798000003", "fantasma: 00798000004", "hilda: 00798000005",
         "gonzalo 00798000006", "carlos: 00798000007", "ana: hoy", ""],
        "solicitudes/carlos",
        "carlos",
    )  # fmt: skip
    assert [(c.challenger, c.challenged, c.fecha) for c in found] == [
        ("hilda", "carlos", 798000003),
        ("fantasma", "carlos", 798000004),
    ]
    assert where(problems) == [
        (3, "'hilda' challenges again (line 1): skipped"),
        (4, "1 fields where 2 are expected (solicitante: fecha)"),
        (5, "'carlos' challenges themself"),
        (6, "fecha 'hoy' is not 1-11 digits"),
    ]
