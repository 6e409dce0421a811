"""The protocol library against the real server, and framing edge cases against a tiny
fake one."""

from __future__ import annotations

import random
import socket
import struct
import threading
from collections.abc import Callable, Iterator

import chess
import pytest

from ajedrez.client import (
    BLACK,
    WHITE,
    Client,
    ConnectionLost,
    GameOver,
    IllegalMove,
    NoChallenge,
    NoSuchGame,
    NoSuchUser,
    NotYourTurn,
    ProtocolError,
    ProtocolFailure,
    ServerError,
    StalePly,
    Unreachable,
    WrongPassword,
)
from ajedrez.client.chessboard import jgda_for
from ajedrez.espol.codes import Reply
from tests.client.conftest import free_port
from tests.support.common import PASSWORD


@pytest.fixture
def connect(server) -> Iterator[Callable[..., Client]]:
    opened: list[Client] = []

    def make(user: str | None = None, password: str = PASSWORD, **kw: object) -> Client:
        c = Client(server.host, server.port, timeout=30, **kw)  # type: ignore[arg-type]
        opened.append(c)
        if user is not None:
            c.login(user, password)
        return c

    yield make
    for c in opened:
        c.quit()


def new_game(connect, new_user) -> tuple[Client, Client, str]:
    """(white, black, game id): black challenged, white accepted playing white."""
    w_name, b_name = new_user("w"), new_user("b")
    white, black = connect(w_name), connect(b_name)
    black.juego(w_name)
    gid = white.acep(WHITE, b_name)
    return white, black, gid


def play(client: Client, board: chess.Board, gid: str, san: str) -> None:
    j = jgda_for(board, board.parse_san(san))
    client.jgda(gid, j.ply, j.jugada, j.posicion, j.promocion)
    board.push(j.move)


# -- against the real server -------------------------------------------------------------


def test_login_help_and_bad_credentials(connect, new_user):
    name = new_user()
    c = connect(name)
    assert c.user == name
    assert "JGDA" in c.help() and c.help("SPAR").startswith("SPAR:")

    bad = connect()
    with pytest.raises(WrongPassword) as e:
        bad.login(name, "not the password")
    assert e.value.code == Reply.F_PASINV and e.value.reason
    with pytest.raises(ConnectionLost):  # the server closed the connection
        bad.help()

    with pytest.raises(NoSuchUser) as e2:
        connect().login("nobody-" + name, PASSWORD)
    assert e2.value.code == 814

    with pytest.raises(ValueError):  # never sent: it would split into two fields
        connect().login(name, "a:b")


def test_unreachable_server():
    with pytest.raises(Unreachable) as e:
        Client("127.0.0.1", free_port(), connect_timeout=5)
    assert "cannot reach" in str(e.value)


def test_challenges_games_and_typed_records(connect, new_user):
    a_name, b_name = new_user("a"), new_user("b")
    a, b = connect(a_name), connect(b_name)
    fecha, users = a.jaut(0)
    assert fecha > 0 and {a_name, b_name} <= set(users)

    a.juego(b_name)
    fecha, challengers = b.tran(0)
    assert a_name in challengers
    with pytest.raises(NoChallenge):
        a.acep(WHITE, b_name)  # a made the challenge: only b can accept it
    b.decl(a_name)
    with pytest.raises(NoChallenge) as e:
        b.decl(a_name)
    assert e.value.code == Reply.F_NOREQ

    a.juego(b_name)
    gid = b.acep(BLACK, a_name)
    st = a.stat(gid)
    assert (st.white, st.black, st.color, st.next_ply, st.status) == (a_name, b_name, "B", 1, 0)
    assert st.my_turn and st.opponent == b_name and st.draw_offered_by is None
    _fecha, games = b.ppen(0)
    summary = next(g for g in games if g.game == gid)
    assert (summary.opponent, summary.opponent_color, summary.my_color) == (a_name, "B", "N")
    assert b.spar(gid, 0) == []  # 839 F_NOMASJUG means "nothing new"

    # PPEN with the fecha it answered: at least the changes since, typed.
    fecha2, _ = b.ppen(fecha)
    assert fecha2 >= fecha
    assert any(r.user == a_name for r in a.srnk()) or len(a.srnk()) == 10
    assert '[White "' + a_name + '"]' in a.pgnx(gid)


def test_moves_and_the_failures_a_player_meets(connect, new_user):
    white, black, gid = new_game(connect, new_user)
    board = chess.Board()
    play(white, board, gid, "e4")

    with pytest.raises(NotYourTurn) as e:
        white.jgda(gid, 2, "d2d4", "1127", 0)
    assert e.value.code == Reply.F_NOTURN and gid in e.value.reason
    with pytest.raises(StalePly):
        black.jgda(gid, 5, "e7e5", "5236", 0)
    with pytest.raises(IllegalMove) as e2:
        black.jgda(gid, 2, "e7e4", "5228", 0)
    assert e2.value.code == Reply.F_ILLEGAL and "illegal" in e2.value.reason
    with pytest.raises(IllegalMove) as e3:
        black.jgda(gid, 2, "e7e5", "5228", 0)  # posicion disagrees with jugada
    assert e3.value.code == Reply.F_MISMATCH

    play(black, board, gid, "e5")
    records = white.spar(gid, 0)
    assert [(r.ply, r.jugada, r.posicion, r.promocion) for r in records] == [
        (1, "e2e4", "1228", 0),
        (2, "e7e5", "5236", 0),
    ]
    assert white.spar(gid, 1)[0].jugada == "e7e5"
    assert white.plies_fetched == 3

    white.tbls(gid, black.user)
    assert black.stat(gid).draw_offered_by == WHITE
    black.rtbl(gid, False, white.user)
    with pytest.raises(ProtocolFailure) as e4:
        white.finp(gid, black.user)
    assert e4.value.code == Reply.F_NOCLAIM

    black.rend(gid, white.user)
    st = white.stat(gid)
    assert (st.status, st.ganador, st.solicitud_negras) == (2, 1, 3)
    with pytest.raises(GameOver) as e5:
        play(white, board, gid, "Nf3")
    assert e5.value.code == Reply.F_GAMEOVER

    stranger = connect(new_user("s"))
    with pytest.raises(NoSuchGame) as e6:
        stranger.stat(gid)
    assert e6.value.code == Reply.F_NOTPLAYER
    with pytest.raises(NoSuchGame):
        stranger.stat("P9999999")


def _long_game(plies: int, seed: int = 7) -> list[str]:
    """A random legal game of ``plies`` plies that nothing ends on its own (no promotions)."""
    rng = random.Random(seed)
    board = chess.Board()
    while board.ply() < plies:
        moves = [m for m in board.legal_moves if not m.promotion]
        rng.shuffle(moves)
        for move in moves:
            board.push(move)
            if board.outcome(claim_draw=False) is None:
                break
            board.pop()
        else:
            return _long_game(plies, seed + 1)
    return [m.uci() for m in board.move_stack]


def test_multi_part_spar_from_a_long_game(connect, new_user, machine):
    white, black, gid = new_game(connect, new_user)
    board = chess.Board()
    for uci in _long_game(300):
        mover = white if board.turn == chess.WHITE else black
        j = jgda_for(board, chess.Move.from_uci(uci))
        mover.jgda(gid, j.ply, j.jugada, j.posicion, j.promocion)
        board.push(j.move)

    raw = white.request("SPAR", gid, "0")
    assert len(raw.parts) > 1 and all(len(p.encode()) <= 4096 for p in raw.parts)
    records = white.spar(gid, 0)
    assert [r.ply for r in records] == list(range(1, 301))
    assert [r.jugada for r in records] == [m.uci()[:4] for m in board.move_stack]

    # The command rebuilds it on a fresh machine, and sees the same position.
    m = machine(white.user)
    assert "300 new moves" in m("sync").out
    shown = m("show", gid, "--no-moves").out
    assert f"move {board.fullmove_number}" in shown


def test_play_goes_on_after_a_promotion(connect, new_user):
    white, black, gid = new_game(connect, new_user)
    board = chess.Board()
    for san in ["e4", "d5", "e5", "f5", "exf6", "Nc6", "fxg7", "Bf5", "gxh8=N", "Qd7", "Ng6"]:
        play(white if board.turn == chess.WHITE else black, board, gid, san)


# -- framing edge cases against a fake server --------------------------------------------


def reply(code: int, data: str = "", more: bool = False) -> bytes:
    payload = data.encode()
    return struct.pack("!3scH", b"%03d" % code, b"1" if more else b"0", len(payload)) + payload


Answer = bytes | tuple[bytes, str] | None


class FakeServer:
    """Answers the n-th line received with ``script[n]``: bytes; ``(bytes, "close")`` sends
    then closes; ``None`` closes without a word."""

    def __init__(self, script: list[Answer]) -> None:
        self.script = script
        self.lines: list[str] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            buf = b""
            for answer in self.script:
                while b"\n" not in buf:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    buf += chunk
                line, buf = buf.split(b"\n", 1)
                self.lines.append(line.rstrip(b"\r").decode())
                if answer is None:
                    return
                if isinstance(answer, tuple):
                    conn.sendall(answer[0])
                    return
                conn.sendall(answer)
            conn.recv(4096)  # wait for QUIT or close

    def client(self, **kw: object) -> Client:
        return Client("127.0.0.1", self.port, **kw)  # type: ignore[arg-type]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def fake() -> Iterator[Callable[[list[Answer]], FakeServer]]:
    servers: list[FakeServer] = []

    def make(script: list[Answer]) -> FakeServer:
        servers.append(FakeServer(script))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def test_multi_part_dated_lists_are_joined(fake):
    srv = fake(
        [
            reply(204, "01795000000,ana,bob", more=True)
            + reply(204, "01795000000,carl", more=True)
            + reply(204, "01795000000,dora"),
            reply(201, "01795000009"),
            reply(203, "01795000010,P0000001:bob:N:0", more=True)
            + reply(203, "01795000010,P0000002:carl:B:2"),
        ]
    )
    with srv.client() as c:
        assert c.jaut(0) == (1795000000, ["ana", "bob", "carl", "dora"])
        assert c.tran(1795000000) == (1795000009, [])
        fecha, games = c.ppen(5)
        assert fecha == 1795000010
        assert [(g.game, g.opponent, g.my_color, g.active) for g in games] == [
            ("P0000001", "bob", "B", True),
            ("P0000002", "carl", "N", False),
        ]
    assert srv.lines == ["JAUT:00000000000", "TRAN:01795000000", "PPEN:00000000005"]


def test_multi_part_spar_and_no_more_moves(fake):
    srv = fake(
        [
            reply(207, "1:e2e4:0:1228:0,2:e7e5:0:5236:0", more=True)
            + reply(207, "3:g1f3:0:0621:0"),
            reply(839, "no moves after ply 3 in P0000001"),
        ]
    )
    with srv.client() as c:
        assert [m.ply for m in c.spar("P0000001", 0)] == [1, 2, 3]
        assert c.spar("1", 3) == []
        assert c.plies_fetched == 3 and c.sent["SPAR"] == 2
    assert srv.lines == ["SPAR:P0000001:0", "SPAR:P0000001:3"]


def test_error_and_failure_replies_carry_code_and_reason(fake):
    srv = fake(
        [
            reply(401, "the database cannot be reached"),
            reply(500, "internal fault"),
            reply(899, "a failure this client does not know"),
            reply(834, "it is your opponent's turn in P0000001"),
        ]
    )
    with srv.client() as c:
        with pytest.raises(ServerError) as e:
            c.srnk()
        assert (e.value.code, e.value.reason) == (401, "the database cannot be reached")
        assert e.value.name == "E_STORAGE"
        with pytest.raises(ServerError) as e:
            c.srnk()
        assert e.value.code == 500
        with pytest.raises(ProtocolFailure) as e2:
            c.srnk()
        assert type(e2.value) is ProtocolFailure and e2.value.code == 899
        with pytest.raises(NotYourTurn) as e3:
            c.jgda("P0000001", 1, "e2e4", "1228")
        assert "opponent's turn" in e3.value.reason


def test_malformed_and_broken_replies(fake):
    srv = fake([reply(204, "x", more=True) + reply(205, "y")])
    with srv.client() as c, pytest.raises(ProtocolError):
        c.jaut(0)  # a multi-part answer may not change its code

    srv = fake([b"20X0\x00\x00"])
    with srv.client() as c, pytest.raises(ProtocolError):
        c.srnk()

    srv = fake([(reply(205, "ana:1,bob:0")[:8], "close")])  # fewer bytes than the header says
    with srv.client() as c, pytest.raises(ConnectionLost):
        c.srnk()

    srv = fake([None])
    with srv.client() as c, pytest.raises(ConnectionLost):
        c.help()


def test_password_never_appears_in_the_trace(fake):
    srv = fake([reply(101, "ana"), reply(102, "ana")])
    seen: list[str] = []
    with srv.client(trace=seen.append) as c:
        c.login("ana", "s3cret-pw")
    assert srv.lines == ["USER:ana", "PASS:s3cret-pw"]
    assert seen and not any("s3cret-pw" in line for line in seen)
    assert "> PASS:********" in seen
