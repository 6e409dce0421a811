"""The binary protocol of seed 004 over TCP, against a real server process on the store
under test (SQLite, or PostgreSQL with AJEDREZ_TEST_DATABASE_URL), with a client written
from the seed document (*Chess Protocol v1.0*) and docs/dialects.md: guests seated at a
table, games to mate, stalemate, resignation and timeout, every MOVE error, HOVR, UNDO,
CHAT, a spectator who joins mid-game, names (guests and accounts), a game between a
guest of the `#` protocol and one of this protocol observed from ESPOL, and bad input,
fuzzed.

The server reads its time from a file the tests write (``--clock-file``): a clock runs
out when a test moves the time, never by sleeping. It has a database of its own.
"""

from __future__ import annotations

import random
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import chess
import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.game_admin import GameAdmin
from ajedrez.domain.games import Games
from ajedrez.store.db import Database
from tests.support.binclient import (
    BinaryClient,
    binary_port,
    board_of,
    chat_fields,
    init_fields,
    move_set,
    update_fields,
    xy,
)
from tests.support.clock import MINUTE_MS, SECOND_MS, FileTime
from tests.support.common import PASSWORD, unique_name, wait_for
from tests.support.events import connect
from tests.support.hashclient import START, HashClient, hash_port
from tests.support.server import ServerProcess, start_server
from tests.support.store import private_database

CONTROL = "7m+3s"  # the tables' time control, on both seed listeners; 7 minutes of bank


@pytest.fixture(scope="module")
def clock_file(tmp_path_factory: pytest.TempPathFactory) -> FileTime:
    return FileTime(tmp_path_factory.mktemp("binclock") / "now")


@pytest.fixture(scope="module")
def bin_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Database]]:
    """A database of this module's own on the store under test: its games' clocks run on
    the test's time."""
    yield from private_database(tmp_path_factory.mktemp("binary") / "binary.sqlite3")


@pytest.fixture
def account(bin_db: tuple[str, Database]) -> Callable[[str], str]:
    def make(prefix: str) -> str:
        name = unique_name(prefix)
        Accounts(bin_db[1]).add_user(name, PASSWORD)
        return name

    return make


@pytest.fixture(scope="module")
def srv(bin_db: tuple[str, Database], clock_file: FileTime) -> Iterator[ServerProcess]:
    server = start_server(
        bin_db[0],
        "--binary-port",
        "0",
        "--binary-time-control",
        CONTROL,
        "--hash-port",
        "0",
        "--hash-time-control",
        CONTROL,
        "--clock-file",
        str(clock_file.path),
        "--clock-poll",
        "0.05",
        "--flag-grace",
        "0",
        "--max-guests-per-address",
        "1000",
        "--max-connections-per-address",
        "1000",
    )
    yield server
    server.stop()
    assert "Traceback" not in server.log_text(), server.log_text()


@pytest.fixture
def port(srv: ServerProcess, bin_db: tuple[str, Database]) -> Iterator[int]:
    yield binary_port(srv)
    # Every connection of the test has closed: its seeks and games go with it.
    live = Games(bin_db[1]).live
    assert wait_for(lambda: not [s for s in live.seeks() if s[1] == CONTROL], timeout=20)
    assert wait_for(lambda: not live.games_in_play(), timeout=20)


def named(port: int, name: str | None = None) -> tuple[BinaryClient, str]:
    client, name = BinaryClient(port), name or unique_name("g")
    client.join(name)
    assert client.expect("NAME")[0] == 1
    return client, name


def table(port: int) -> tuple[BinaryClient, BinaryClient, str, str]:
    """Two guests seated: (player 1, player 2, their names). The first to ask for a
    seat waits and is player 1 (white)."""
    (w, wname), (b, bname) = named(port), named(port)
    w.role(1)
    assert w.expect("JOIN")[0] == 1
    b.role(2)
    assert b.expect("JOIN")[0] == 1
    for client, role in ((w, 1), (b, 2)):
        assert init_fields(client.expect("INIT")) == (role, wname, bname, board_of(START))
    return w, b, wname, bname


def squares(board: chess.Board, san: str) -> tuple[str, str]:
    move = board.parse_san(san)
    return chess.square_name(move.from_square), chess.square_name(move.to_square)


def play(
    w: BinaryClient, b: BinaryClient, sans: list[str], *spectators: BinaryClient
) -> list[tuple[int, int, list[str]]]:
    """Play ``sans`` in turn with PLAY; each is told to both players (and the
    spectators) as UPDT, then CHEK or CKMT. Returns (turn, victory, the signals after)
    of each."""
    told = []
    board = chess.Board()
    for i, san in enumerate(sans):
        mover = w if i % 2 == 0 else b
        mover.play(*squares(board, san))
        board.push_san(san)
        heard = []
        for client in (w, b, *spectators):
            turn, victory, cells = update_fields(client.expect("UPDT"))
            assert cells == board_of(board.fen()), san
            after = []
            if board.is_checkmate():
                after.append(client.expect("CKMT").kind)
            elif board.is_check():
                after.append(client.expect("CHEK").kind)
            heard.append((turn, victory, after))
        assert all(h == heard[0] for h in heard), heard
        assert heard[0][0] == (1 if board.turn else 2)
        told.append(heard[0])
    return told


# -- games -----------------------------------------------------------------------------------


def test_a_game_to_mate(port: int) -> None:
    w, b, _, _ = table(port)
    with w, b:
        told = play(w, b, ["f3", "e5", "g4", "Qh4#"])
        assert [t[1] for t in told] == [0, 0, 0, 2]  # player 2 has won
        assert told[-1][2] == ["CKMT"]
        w.play("a2", "a3")
        assert w.expect("MOVE")[0] == 8  # the game is over
        assert w.quiet(0.3) == [] and b.quiet(0.3) == []  # its end was told once


def test_a_check_then_stalemate(port: int) -> None:
    w, b, _, _ = table(port)
    moves = "e3 a5 Qh5 Ra6 Qxa5 h5 h4 Rah6 Qxc7 f6 Qxd7+ Kf7 Qxb7 Qd3 Qxb8 Qh7 Qxc8 Kg6 Qe6"
    with w, b:
        told = play(w, b, moves.split())
        assert told[10][2] == ["CHEK"]
        assert told[-1][:2] == (2, 3)  # no winner: the seed's "canceled"


def test_resignation_and_leaving(port: int) -> None:
    w, b, _, _ = table(port)
    with w, b:
        play(w, b, ["e4"])
        b.signal("RSGN")
        for client in (w, b):
            assert update_fields(client.expect("UPDT"))[:2] == (2, 1)
        b.signal("RSGN")
        assert b.expect("MOVE")[0] == 8
    # A guest who leaves its table loses its game.
    w, b, _, _ = table(port)
    with w:
        play(w, b, ["d4"])
        b.close()
        assert update_fields(w.expect("UPDT"))[:2] == (2, 1)


def test_the_clock_ends_a_game_on_time(port: int, clock_file: FileTime) -> None:
    w, b, _, _ = table(port)
    with w, b:
        play(w, b, ["e4", "e5"])
        clock_file.advance(7 * MINUTE_MS + 4 * SECOND_MS)  # white's bank is spent
        for client in (w, b):
            assert update_fields(client.expect("UPDT"))[:2] == (1, 2)


def test_every_move_error(port: int) -> None:
    w, b, _, _ = table(port)
    with w, b:
        cases: list[tuple[BinaryClient, tuple[int, int], tuple[int, int], int]] = [
            (w, xy("e2"), (4, 8), 1),  # off the board
            (w, xy("e7"), xy("e5"), 2),  # the opponent's piece
            (w, xy("e4"), xy("e5"), 3),  # an empty square
            (w, xy("a1"), xy("a2"), 4),  # onto its own piece
            (b, xy("e7"), xy("e5"), 5),  # not black's turn
            (w, xy("g1"), xy("g3"), 6),  # no knight's move
            (w, xy("a1"), xy("a3"), 7),  # the pawn stands between
        ]
        for client, origin, target, code in cases:
            client.play(origin, target)
            assert client.expect("MOVE")[0] == code, (origin, target)
        play(w, b, ["e4", "f5", "Qh5+"])
        b.play("a7", "a6")  # black stays in check
        assert b.expect("MOVE")[0] == 8
        assert w.quiet(0.3) == []  # the opponent hears nothing of a refused move


def test_hover_gives_the_player_to_move_its_targets(port: int) -> None:
    w, b, _, _ = table(port)
    with w, b:
        w.playing = True
        w.hover("g1")
        got = w.expect("HOVR")
        assert got.body[:2] == bytes(xy("g1")) and move_set(got) == {"f3", "h3"}
        w.hover("e1")
        assert move_set(w.expect("HOVR")) == set()
        b.hover("e7")  # not black's turn: the square alone
        assert b.expect("HOVR").body == bytes(xy("e7"))
        play(w, b, ["e4"])
        w.playing, b.playing = False, True
        b.hover("d8")
        assert move_set(b.expect("HOVR")) == set()
        b.hover("e7")
        assert move_set(b.expect("HOVR")) == {"e6", "e5"}


def test_undo_accepted_and_declined(port: int) -> None:
    w, b, _, _ = table(port)
    with w, b:
        play(w, b, ["e4"])
        w.signal("UNDO")
        assert b.expect("UNDO").kind == "UNDO"  # the request
        b.signal("DENY")
        assert w.expect("DENY").kind == "DENY"
        w.signal("UNDO")
        assert b.expect("UNDO").kind == "UNDO"
        b.signal("UNDO")  # accepted: everyone sees the position before the move
        for client in (w, b):
            assert update_fields(client.expect("UPDT")) == (1, 0, board_of(START))
        b.signal("UNDO")  # nothing of black's to take back
        assert b.expect("DENY").kind == "DENY"
        play(w, b, ["d4"])


def test_chat_reaches_the_table_but_the_sender(port: int) -> None:
    w, b, wname, _ = table(port)
    with w, b:
        w.chat("buena suerte")
        assert chat_fields(b.expect("CHAT")) == (wname, "buena suerte")
        # The seed's offsets put the text at 6: a pad byte at 5 is taken as such.
        w.send_raw(b"CHAT\x04\x00hola")
        assert chat_fields(b.expect("CHAT")) == (wname, "hola")
        assert w.quiet(0.3) == []


def test_a_spectator_joins_mid_game(port: int) -> None:
    w, b, wname, bname = table(port)
    with w, b:
        play(w, b, ["d4", "d5", "c4"])
        spectator, _ = named(port)
        with spectator:
            spectator.role(3)
            assert spectator.expect("JOIN")[0] == 1
            board = chess.Board()
            for san in ("d4", "d5", "c4"):
                board.push_san(san)
            assert init_fields(spectator.expect("INIT")) == (3, wname, bname, board_of(board.fen()))
            b.play(*squares(board, "dxc4"))
            board.push_san("dxc4")
            for client in (w, b, spectator):
                assert update_fields(client.expect("UPDT")) == (1, 0, board_of(board.fen()))
            spectator.play("e2", "e4")
            assert spectator.expect("MOVE")[0] == 2  # it owns no piece
            spectator.chat("hola")
            assert w.quiet(0.3) == []  # a spectator's word is for the spectators
            w.signal("RSGN")
            assert update_fields(spectator.expect("UPDT"))[:2] == (1, 2)


# -- names -----------------------------------------------------------------------------------


def test_names(port: int, account: Callable[[str], str]) -> None:
    ana = account("ana")
    with BinaryClient(port) as c:
        for name, code in [("", 4), ("x" * 33, 5), ("no way", 6), (ana, 7), (ana.upper(), 7)]:
            c.join(name)
            assert c.expect("NAME")[0] == code, name
        c.auth(ana, "wrong")
        assert c.expect("NAME")[0] == 8
        c.auth(ana, PASSWORD)
        assert c.expect("NAME")[0] == 1
        c.join(unique_name("other"))
        assert c.expect("NAME")[0] == 8  # one name per connection
        with BinaryClient(port) as g:
            gname = unique_name("g")
            g.join(gname)
            assert g.expect("NAME")[0] == 1
            with BinaryClient(port) as other:
                other.join(gname)
                assert other.expect("NAME")[0] == 7  # a connected guest's
        c.role(9)
        assert c.expect("JOIN")[0] == 0


# -- across protocols --------------------------------------------------------------------------


def test_a_seed_000_guest_meets_a_seed_004_guest_observed_from_espol(
    port: int, srv: ServerProcess, account: Callable[[str], str]
) -> None:
    hashed = HashClient(hash_port(srv))
    binary, bname = named(port)
    watcher = account("espol")
    with hashed, binary, connect(srv, watcher) as espol:
        hname = unique_name("h")
        ok = hashed.ask("INSCRIBIR", hname)
        assert ok[:2] == ["OK", "B"]
        binary.role(1)  # a wish: whoever sought first plays white
        assert binary.expect("JOIN")[0] == 1
        assert init_fields(binary.expect("INIT")) == (2, hname, bname, board_of(START))
        assert hashed.msg() == ["INICIO", "B", START]
        listed = hashed.ask("PARTIDAS")
        pid = listed[1].split(",")[0]
        assert espol.cmd(f"OBSV:{pid}").code == 220
        espol.subscribe()
        hashed.send("MOVIMIENTO", ok[2], "e4")
        assert hashed.msg()[:2] == ["OK", "N"]
        board = chess.Board()
        board.push_san("e4")
        assert update_fields(binary.expect("UPDT")) == (2, 0, board_of(board.fen()))
        binary.play("c7", "c5")
        board.push_san("c5")
        assert hashed.msg() == ["OK", "B", board.fen(), "EN_JUEGO"]
        assert update_fields(binary.expect("UPDT")) == (1, 0, board_of(board.fen()))
        moved = espol.expect("FIN_DE_TURNO", "FIN_DE_TURNO")
        assert [e["jugada"] for e in moved] == ["e2e4", "c7c5"]
        binary.signal("RSGN")
        assert update_fields(binary.expect("UPDT"))[:2] == (1, 1)
        assert hashed.msg() == ["OK", "B"] and hashed.msg() == ["FIN", "GANADOR_B"]
        assert espol.expect("ABANDONO", "FINALIZACION")[1]["ganador"] == "1"


# -- bad input ---------------------------------------------------------------------------------


def test_an_unknown_packet_closes_the_connection_and_the_server_goes_on(
    port: int, srv: ServerProcess
) -> None:
    with BinaryClient(port) as c:
        c.send_raw(b"XXXX")
        assert c.closed()
    with BinaryClient(port) as c:
        c.role(1)  # no name yet
        assert c.expect("JOIN")[0] == 0
        c.send_raw(b"PASSCHEKCKMT")  # the server works these out itself: no answer
        c.chat("hola")  # at no table
        assert c.expect("MOVE")[0] == 8
    assert "unknown packet type" in srv.log_text()


def test_fuzz(port: int, srv: ServerProcess) -> None:
    """Random bytes, and valid packets cut, spliced and mangled, from several
    connections: the server answers with packets or closes, keeps serving a table that
    plays meanwhile, and logs no traceback."""
    rng = random.Random(2026)
    valid = [
        b"JOIN\x04fz%d",
        b"INIT\x01",
        b"INIT\x03",
        b"PLAY\x04\x01\x04\x03",
        b"HOVR\x04\x01",
        b"CHAT\x02hi",
        b"UNDO",
        b"DENY",
        b"RSGN",
        b"PASS",
        b"AUTH\x02ab\x02cd",
        b"OBSV\x00\x00\x00\x01",
    ]
    w, b, _, _ = table(port)
    with w, b:
        for round_ in range(8):
            with BinaryClient(port, timeout=5) as c:
                chunks = []
                for i in range(40):
                    if rng.random() < 0.3:
                        chunk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20)))
                    else:
                        base = rng.choice(valid)
                        base = base.replace(b"%d", b"%02d" % ((round_ * 40 + i) % 100))
                        data = bytearray(base)
                        for _ in range(rng.randrange(0, 3)):
                            where = rng.randrange(len(data))
                            data[where] = rng.randrange(256)
                        chunk = bytes(data)
                    chunks.append(chunk)
                c.send_raw(b"".join(chunks))
                # Whatever it answered reads as packets, up to its close or a pause.
                kinds = {packet.kind for packet in c.quiet(1.5)}
                assert kinds <= ANSWERS, kinds
            # The table plays on.
            mover, other = (w, b) if round_ % 2 == 0 else (b, w)
            mover.play(*(("a2", "a3") if round_ == 0 else _shuffle(round_)))
            assert mover.packet().kind == "UPDT" and other.packet().kind == "UPDT"
    assert "Traceback" not in srv.log_text()


ANSWERS = {"NAME", "JOIN", "INIT", "UPDT", "CHEK", "CKMT", "MOVE", "HOVR", "UNDO", "DENY", "CHAT"}


def _shuffle(round_: int) -> tuple[str, str]:
    """A knight's moves back and forth, white's then black's, after white's a3."""
    return [("g8", "f6"), ("g1", "f3"), ("f6", "g8"), ("f3", "g1")][(round_ - 1) % 4]


# -- limits ------------------------------------------------------------------------------------


def test_limits_guests_per_address_idle_tables_and_login_grace(
    own_db: tuple[str, Database],
) -> None:
    url, _database = own_db
    limited = start_server(
        url,
        "--binary-port",
        "0",
        "--max-guests-per-address",
        "2",
        "--idle-timeout",
        "2",
        "--login-grace",
        "1",
    )
    try:
        port = binary_port(limited)
        a, b, c, late = (BinaryClient(port) for _ in range(4))
        with a, b, c, late:
            for client, code in ((a, 1), (b, 1), (c, 8)):
                client.join(unique_name("g"))
                assert client.expect("NAME")[0] == code
            a.role(1)
            assert a.expect("JOIN")[0] == 1  # a waits first: it plays white
            b.role(1)
            assert b.expect("JOIN")[0] == 1
            assert a.expect("INIT")[0] == 1 and b.expect("INIT")[0] == 2
            assert late.closed()  # no name within the grace
            assert a.closed() and b.closed()  # nothing happened at the table
    finally:
        limited.stop()
    assert "no name within" in limited.log_text() and "idle for" in limited.log_text()
    assert "Traceback" not in limited.log_text()


def test_over_tls_and_a_stop_ends_guests_games_without_a_result(
    own_db: tuple[str, Database], tls_certificate: tuple[Path, Path]
) -> None:
    url, database = own_db
    cert, key = tls_certificate
    served = start_server(
        url, "--binary-tls-port", "0", "--tls-cert", str(cert), "--tls-key", str(key)
    )
    try:
        port = binary_port(served, tls=True)
        context = ssl.create_default_context(cafile=str(cert))
        w, b = BinaryClient(port, tls=context), BinaryClient(port, tls=context)
        with w, b:
            for client in (w, b):
                client.join(unique_name("t"))
                assert client.expect("NAME")[0] == 1
                client.role(1)
                assert client.expect("JOIN")[0] == 1
            assert w.expect("INIT")[0] == 1 and b.expect("INIT")[0] == 2
            w.play("e2", "e4")
            assert w.expect("UPDT")[0] == b.expect("UPDT")[0] == 2
            assert served.stop() == 0
    finally:
        served.stop()
    [game] = GameAdmin(database).list_all()
    assert (game.status, game.winner, game.end_reason) == (2, 0, "server stopped")
    assert "Traceback" not in served.log_text()
