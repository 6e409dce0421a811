"""The `#` protocol of seed 000 over TCP, against a real server process on the store under
test (SQLite, or PostgreSQL with AJEDREZ_TEST_DATABASE_URL), with clients written from
the seed document (*Protocolo para Ajedrez Distribuido v1.0*) and docs/dialects.md:
guests seated at a table, games to mate, stalemate, resignation and timeout, a spectator
who joins mid-game, the same game observed from ESPOL, names (guests and accounts), and
bad input of every kind, fuzzed.

The server reads its time from a file the tests write (``--clock-file``): a clock runs
out when a test moves the time, never by sleeping. It has a database of its own, where
no other test's server ends its games on another time.
"""

from __future__ import annotations

import io
import random
import socket
import ssl
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import chess
import chess.pgn
import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.game_admin import GameAdmin
from ajedrez.domain.games import Games
from ajedrez.store.db import Database
from tests.support.clock import MINUTE_MS, SECOND_MS, FileTime
from tests.support.common import PASSWORD, unique_name, wait_for
from tests.support.events import connect
from tests.support.hashclient import START, HashClient, hash_port
from tests.support.server import ServerProcess, admin, start_server
from tests.support.store import private_database

CONTROL = "7m+3s"  # the tables' time control; 7 minutes of bank each
MANGLES = [b"#", b"", b"\n", b"\xc3", b"##", b"A"]  # what the fuzz test splices in


@pytest.fixture(scope="module")
def clock_file(tmp_path_factory: pytest.TempPathFactory) -> FileTime:
    return FileTime(tmp_path_factory.mktemp("hashclock") / "now")


@pytest.fixture(scope="module")
def hash_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Database]]:
    """A database of this module's own on the store under test: its games' clocks run on
    the test's time, which another server's scheduler on a shared database would take
    for days past their deadlines."""
    yield from private_database(tmp_path_factory.mktemp("hash") / "hash.sqlite3")


@pytest.fixture
def account(hash_db: tuple[str, Database]) -> Callable[[str], str]:
    """Make an account in the module's database; its name."""

    def make(prefix: str) -> str:
        name = unique_name(prefix)
        Accounts(hash_db[1]).add_user(name, PASSWORD)
        return name

    return make


@pytest.fixture(scope="module")
def srv(hash_db: tuple[str, Database], clock_file: FileTime) -> Iterator[ServerProcess]:
    server = start_server(
        hash_db[0],
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
def port(srv: ServerProcess, hash_db: tuple[str, Database]) -> Iterator[int]:
    yield hash_port(srv)
    # Every connection of the test has closed: its seeks go with it, before the next test.
    live = Games(hash_db[1]).live
    assert wait_for(lambda: not [s for s in live.seeks() if s[1] == CONTROL], timeout=20)


def guest(port: int, name: str | None = None) -> tuple[HashClient, str]:
    return HashClient(port), name or unique_name("g")


def table(port: int) -> tuple[HashClient, HashClient, str, str]:
    """Two guests seated as the seed's example flow shows: (white, black, white's codigo,
    black's codigo)."""
    (w, wname), (b, bname) = guest(port), guest(port)
    ok_w = w.ask("INSCRIBIR", wname)
    assert ok_w[:2] == ["OK", "B"] and ok_w[2].isdigit(), ok_w
    ok_b = b.ask("INSCRIBIR", bname)
    assert ok_b[:2] == ["OK", "N"] and ok_b[2].isdigit() and ok_b[2] != ok_w[2], ok_b
    assert b.msg() == ["INICIO", "B", START]
    assert w.msg() == ["INICIO", "B", START]
    return w, b, ok_w[2], ok_b[2]


def play(
    w: HashClient, b: HashClient, codes: tuple[str, str], moves: list[str], *spectators: HashClient
) -> list[list[str]]:
    """Play ``moves`` in turn; every one of them is told to both players (and the
    spectators) as ``#OK#turno#tablero#estado#``. Returns what each move made."""
    told = []
    board = chess.Board()
    for i, move in enumerate(moves):
        mover, code = (w, codes[0]) if i % 2 == 0 else (b, codes[1])
        mover.send("MOVIMIENTO", code, move)
        board.push_san(move) if not _coordinates(move) else board.push_uci(move)
        heard = [c.msg() for c in (w, b, *spectators)]
        assert all(h == heard[0] for h in heard), heard
        assert heard[0][:3] == ["OK", "B" if board.turn else "N", board.fen()], (move, heard)
        told.append(heard[0])
    return told


def _coordinates(move: str) -> bool:
    return len(move) in (4, 5) and move[1].isdigit() and move[3].isdigit()


def game_of(port: int) -> str:
    """The newest game in play, as PARTIDAS lists it."""
    with HashClient(port) as c:
        listed = c.ask("PARTIDAS")
    assert listed[0] == "OK" and len(listed) > 1, listed
    return listed[1].split(",")[0]


# -- games -----------------------------------------------------------------------------------


def test_the_seed_s_example_flow_and_a_game_to_mate(port: int) -> None:
    w, b, cw, cb = table(port)
    with w, b:
        # The seed's invalid move and an answer that is not the player's turn.
        b.send("MOVIMIENTO", cb, "e7e5e5")
        assert b.msg() == ["NOK", "Movimiento inválido"]
        b.send("MOVIMIENTO", cb, "e7e5")
        assert b.msg() == ["NOK", "No es tu turno"]
        # Coordinates and SAN alike; the codigo is the number given, or the name.
        told = play(w, b, (cw, cb), ["f2f3", "e5", "g4", "Qh4"])
        assert [t[3] for t in told] == ["EN_JUEGO", "EN_JUEGO", "EN_JUEGO", "JAQUE_MATE"]
        assert w.msg() == b.msg() == ["FIN", "GANADOR_N"]
        # The game is over: its board can still be asked for.
        fen = told[-1][2]
        assert w.ask("CONSULTARTABLERO", cw) == ["OK", fen, "B"]
        assert w.ask("MOVIMIENTO", cw, "a2a3") == ["NOK", "Partida terminada"]
        assert b.ask("HISTORIAL", cb) == ["OK", "f2f3", "e7e5", "g2g4", "d8h4"]


def test_a_check_then_stalemate(port: int) -> None:
    w, b, cw, cb = table(port)
    # Sam Loyd's shortest stalemate: black to move, in no check, without a legal move.
    moves = "e3 a5 Qh5 Ra6 Qxa5 h5 h4 Rah6 Qxc7 f6 Qxd7+ Kf7 Qxb7 Qd3 Qxb8 Qh7 Qxc8 Kg6 Qe6"
    with w, b:
        told = play(w, b, (cw, cb), moves.split())
        assert told[10][3] == "JAQUE"  # Qxd7+
        assert told[-1][3] == "TABLAS"
        assert w.msg() == b.msg() == ["FIN", "TABLAS"]


def test_resignation_as_the_seed_shows(port: int) -> None:
    w, b, cw, cb = table(port)
    with w, b:
        play(w, b, (cw, cb), ["e2e4"])
        b.send("RENDIRSE", cb)
        assert b.msg() == w.msg() == ["OK", "B"]
        assert b.msg() == w.msg() == ["FIN", "GANADOR_B"]
        assert b.ask("RENDIRSE", cb) == ["NOK", "Partida terminada"]


def test_the_clock_ends_a_game_on_time(port: int, clock_file: FileTime) -> None:
    w, b, cw, cb = table(port)
    with w, b:
        play(w, b, (cw, cb), ["e4", "e5"])
        clocks = w.ask("RELOJ", cw)
        assert clocks[0] == "OK" and clocks[3] == "B", clocks
        assert 6 * MINUTE_MS < int(clocks[1]) <= 7 * MINUTE_MS + 3 * SECOND_MS, clocks
        clock_file.advance(7 * MINUTE_MS + 4 * SECOND_MS)  # white's bank is spent
        assert w.msg() == b.msg() == ["FIN", "GANADOR_N"]
    # A game whose white never moved has no result.
    w, b, cw, _cb = table(port)
    with w, b:
        clock_file.advance(7 * MINUTE_MS + 4 * SECOND_MS)
        assert w.msg() == b.msg() == ["FIN", "ANULADA"]


def test_a_spectator_joins_mid_game(port: int) -> None:
    w, b, cw, cb = table(port)
    with w, b:
        play(w, b, (cw, cb), ["d4", "d5", "c4"])
        pid = game_of(port)
        with HashClient(port) as spectator:
            joined = spectator.ask("OBSERVAR", unique_name("s"), pid)
            assert joined[:2] == ["OK", "E"], joined
            board = chess.Board()
            for move in ("d4", "d5", "c4"):
                board.push_san(move)
            assert spectator.msg() == ["INICIO", "N", board.fen()]
            assert spectator.ask("CONSULTARTABLERO", joined[2]) == ["OK", board.fen(), "N"]
            # The spectator hears each move from now on, and cannot play.
            b.send("MOVIMIENTO", cb, "dxc4")
            board.push_san("dxc4")
            told = spectator.msg()
            assert told == w.msg() == b.msg() == ["OK", "B", board.fen(), "EN_JUEGO"]
            assert spectator.ask("MOVIMIENTO", joined[2], "e2e4") == [
                "NOK",
                "No estás en una partida",
            ]
            w.send("RENDIRSE", cw)
            assert spectator.msg() == ["OK", "N"] and spectator.msg() == ["FIN", "GANADOR_N"]
            assert w.msg() == b.msg() == ["OK", "N"]
            assert w.msg() == b.msg() == ["FIN", "GANADOR_N"]


def test_a_game_of_guests_is_observed_from_espol(
    port: int, srv: ServerProcess, account: Callable[[str], str]
) -> None:
    w, b, cw, cb = table(port)
    watcher = account("espol")
    with w, b, connect(srv, watcher) as espol:
        pid = game_of(port)
        stat = espol.cmd(f"STAT:{pid}")
        assert stat.code == 831  # neither a player nor an observer yet
        assert espol.cmd(f"OBSV:{pid}").code == 220
        espol.subscribe()
        play(w, b, (cw, cb), ["e4", "c5"])
        moved = espol.expect("FIN_DE_TURNO", "FIN_DE_TURNO")
        assert [e["jugada"] for e in moved] == ["e2e4", "c7c5"]
        fields = espol.cmd(f"STAT:{pid}").text.split(":")
        white, black = fields[1], fields[2]
        assert fields[8:] == ["-", "3"]  # an observer's colour, the next ply
        # Guests are marked where ESPOL lists players (JUGA); they are no accounts: not
        # in JAUT or SRNK, never logged in, never challenged.
        listed = ",".join(r.text for r in espol.cmd_all("JUGA:0"))
        assert f",{white}:I" in listed and f",{black}:I" in listed and f",{watcher}:R" in listed
        accounts = ",".join(r.text for r in espol.cmd_all("JAUT:0")) + ","
        assert f",{white}," not in accounts and f",{watcher}," in accounts
        assert white not in espol.cmd("SRNK").text
        assert espol.cmd(f"JUEG:{white}").code == 814
        with connect(srv) as other:
            assert other.cmd(f"USER:{white}").code == 814
        w.send("RENDIRSE", cw)
        assert espol.expect("ABANDONO", "FINALIZACION")[1]["ganador"] == "2"
        pgn_text = "".join(r.text for r in espol.cmd_all(f"PGNX:{pid}"))
        game = chess.pgn.read_game(io.StringIO(pgn_text))
        assert game is not None
        assert (game.headers["White"], game.headers["Black"]) == (white, black)
        assert game.headers["WhiteGuest"] == game.headers["BlackGuest"] == "yes"
        assert [m.uci() for m in game.mainline_moves()] == ["e2e4", "c7c5"]
    listing = admin(srv.database_url, "users", "list").stdout
    assert [ln.split()[1] for ln in listing.splitlines() if ln.split()[0] == white] == ["guest"]


# -- names --------------------------------------------------------------------------------------


def test_a_guest_never_takes_an_account_s_name_and_an_account_claims_its_own(
    port: int, account: Callable[[str], str]
) -> None:
    ana = account("ana")
    with HashClient(port) as c:
        assert c.ask("INSCRIBIR", ana) == ["NOK", "Nombre duplicado"]
        assert c.ask("INSCRIBIR", ana.upper()) == ["NOK", "Nombre duplicado"]
        assert c.ask("INSCRIBIR", ana, "wrong") == ["NOK", "Contraseña incorrecta"]
        ok = c.ask("INSCRIBIR", ana, PASSWORD)
        assert ok[:2] == ["OK", "B"]
        with HashClient(port) as g:
            gname = unique_name("g")
            assert g.ask("INSCRIBIR", gname)[:2] == ["OK", "N"]
            assert g.msg()[0] == c.msg()[0] == "INICIO"
            g.send("MOVIMIENTO", gname, "e4")
            assert g.msg() == ["NOK", "No es tu turno"]
            c.send("MOVIMIENTO", ana, "e4")  # the account's name as its codigo
            assert c.msg() == g.msg()
            # A connected guest's name is taken; once its connection ends, it is free,
            # and a guest who leaves a game loses it.
            with HashClient(port) as other:
                assert other.ask("INSCRIBIR", gname) == ["NOK", "Nombre duplicado"]
        assert c.msg() == ["OK", "B"] and c.msg() == ["FIN", "GANADOR_B"]
        with HashClient(port) as again:
            assert again.ask("INSCRIBIR", gname)[:2] == ["OK", "B"]


def test_no_password_given_on_the_listener_is_logged_or_echoed(
    port: int, srv: ServerProcess, account: Callable[[str], str]
) -> None:
    ana = account("ana")
    right, wrong, torn = (f"{label}-{uuid.uuid4().hex}" for label in "rwt")
    said: list[str] = []
    with HashClient(port) as c:
        said += c.ask("INSCRIBIR", ana, wrong)
        c.send_raw(f"INSCRIBIR#{ana}#{torn}#\n".encode())  # no leading '#': unreadable
        said += c.msg()
        said += c.ask("INSCRIBIR", ana, right)
        said += c.ask("INSCRIBIR", ana, right)
    assert said[:3] == ["NOK", "Contraseña incorrecta", "NOK"]
    text = " ".join(said) + srv.log_text()
    for password in (right, wrong, torn):
        assert password not in text


def test_a_connection_has_one_name_and_one_table(port: int) -> None:
    with HashClient(port) as c:
        name = unique_name("g")
        ok = c.ask("INSCRIBIR", name)
        assert ok[:2] == ["OK", "B"]
        assert c.ask("INSCRIBIR", name) == ["NOK", "Ya estás inscrito"]
        assert c.ask("INSCRIBIR", unique_name("x")) == ["NOK", "Ya estás inscrito"]
        assert c.ask("MOVIMIENTO", ok[2], "e2e4") == ["NOK", "La partida no ha empezado"]
        assert c.ask("CONSULTARTABLERO", "999999") == ["NOK", "Código inválido"]
        assert c.ask("OBSERVAR", name, "P0000001") == ["NOK", "Ya estás inscrito"]


# -- bad input ------------------------------------------------------------------------------------


def test_bad_input_gets_a_nok_and_the_connection_goes_on(port: int) -> None:
    with HashClient(port) as c:
        assert c.ask("MOVIMIENTO", "1", "e2e4") == ["NOK", "No estás inscrito"]
        assert c.ask("CONSULTARTABLERO", "1") == ["NOK", "No estás inscrito"]
        assert c.ask("BAILAR") == ["NOK", "Mensaje desconocido"]
        assert c.ask("INSCRIBIR") == ["NOK", "Número de campos incorrecto"]
        assert c.ask("INSCRIBIR", "a", "b", "c") == ["NOK", "Número de campos incorrecto"]
        assert c.ask("INSCRIBIR", "no valid") == ["NOK", "Nombre inválido"]
        assert c.ask("INSCRIBIR", "-x") == ["NOK", "Nombre inválido"]
        assert c.ask("OBSERVAR", "x", "P12x") == ["NOK", "Partida inválida"]
        assert c.ask("OBSERVAR", unique_name("s"), "P9999999") == ["NOK", "Partida inexistente"]
        c.send_raw(b"no hash at all\n")
        assert c.msg() == ["NOK", "Mensaje inválido"]
        c.send_raw(b"#INSCRIBIR#\xff\xfe#\n")
        assert c.msg() == ["NOK", "Mensaje inválido"]
        c.send_raw(b"\r\n\n   \n")  # blank lines are skipped
        assert c.ask("PARTIDAS")[0] == "OK"


def test_line_ends_and_messages_without_one(port: int) -> None:
    """LF, CRLF, the next message's '#' right after the last, or a pause after a final
    '#' end a message."""
    with HashClient(port) as c:
        c.send_raw(b"#BAILAR#\r\n#partidas#\n#BAILAR##BAILAR#")
        assert [c.msg()[0] for _ in range(4)] == ["NOK", "OK", "NOK", "NOK"]
        c.send_raw(b"#BAI")
        c.send_raw(b"LAR#")  # no terminator: taken after a pause
        assert c.msg() == ["NOK", "Mensaje desconocido"]
    with HashClient(port) as c:  # nor here, but the client has sent all it will
        c.send_raw(b"#PARTIDAS#")
        c.sock.shutdown(socket.SHUT_WR)
        assert c.msg()[0] == "OK"
        assert c.closed()


def test_an_overlong_message_closes_the_connection(port: int) -> None:
    with HashClient(port) as c:
        c.send_raw(b"#INSCRIBIR#" + b"x" * 2000)
        assert c.msg() == ["NOK", "Mensaje demasiado largo"]
        assert c.closed()
    with HashClient(port) as c:  # the server goes on
        assert c.ask("PARTIDAS")[0] == "OK"


def test_fuzz(port: int, srv: ServerProcess) -> None:
    """Random bytes, and valid messages cut, spliced and mangled, from several
    connections: every line the server sends is a message, the server stays up, and
    nothing it logs is a traceback."""
    rng = random.Random(2026)
    valid = [
        b"#INSCRIBIR#fz%d#\n",
        b"#MOVIMIENTO#1#e2e4#\n",
        b"#MOVIMIENTO#fz%d#Nf3#\n",
        b"#CONSULTARTABLERO#1#\n",
        b"#RENDIRSE#1#\n",
        b"#OBSERVAR#fz%d#P0000001#\n",
        b"#PARTIDAS#\n",
        b"#HISTORIAL#1#\n",
        b"#RELOJ#1#\n",
    ]
    for round_ in range(6):
        with HashClient(port, timeout=5) as c:
            chunks = []
            for i in range(60):
                pick = rng.random()
                if pick < 0.3:
                    chunk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
                else:
                    base = rng.choice(valid)
                    base = base % (round_ * 100 + i) if b"%d" in base else base
                    data = bytearray(base)
                    for _ in range(rng.randrange(0, 4)):
                        where = rng.randrange(len(data))
                        data[where : where + 1] = rng.choice(
                            [b"#", b"", b"\n", b"\xc3", b"##", b"A"]
                        )
                    chunk = bytes(data)
                chunks.append(chunk)
            c.send_raw(b"".join(chunks) + b"\n#PARTIDAS#\n")
            for line in c.quiet(1.5):
                assert line.startswith("#") and line.endswith("#"), line
    with HashClient(port) as c:
        assert c.ask("PARTIDAS")[0] == "OK"
    assert "Traceback" not in srv.log_text()


# -- limits ----------------------------------------------------------------------------------------


def test_limits_guests_per_address_idle_tables_and_login_grace(
    own_db: tuple[str, Database],
) -> None:
    url, _database = own_db
    limited = start_server(
        url,
        "--hash-port",
        "0",
        "--max-guests-per-address",
        "2",
        "--idle-timeout",
        "2",
        "--login-grace",
        "1",
    )
    try:
        port = hash_port(limited)
        a, b, c, late = (HashClient(port) for _ in range(4))
        with a, b, c, late:
            code = a.ask("INSCRIBIR", unique_name("a"))
            assert code[:2] == ["OK", "B"]
            assert b.ask("INSCRIBIR", unique_name("b"))[:2] == ["OK", "N"]
            assert c.ask("INSCRIBIR", unique_name("c")) == [
                "NOK",
                "Demasiados invitados desde tu dirección",
            ]
            assert a.msg()[0] == b.msg()[0] == "INICIO"
            # The default time control: ten minutes a player.
            clocks = a.ask("RELOJ", code[2])
            assert clocks[0] == "OK" and int(clocks[2]) == 10 * MINUTE_MS, clocks
            assert 10 * MINUTE_MS - 30 * SECOND_MS < int(clocks[1]) <= 10 * MINUTE_MS, clocks
            # A connection that gives no name in time is closed.
            assert late.msg() == ["NOK", "Tiempo para inscribirse agotado"]
            assert late.closed()
            # Nothing happens at the table: it is closed, and its guests leave it.
            said = a.quiet(6) + b.quiet(6)
            assert "#NOK#Mesa cerrada por inactividad#" in said, said
            assert a.closed() and b.closed()
    finally:
        limited.stop()
    assert "Traceback" not in limited.log_text()


def test_over_tls_and_a_stop_ends_guests_games_without_a_result(
    own_db: tuple[str, Database], tls_certificate: tuple[Path, Path]
) -> None:
    url, database = own_db
    cert, key = tls_certificate
    served = start_server(
        url, "--hash-tls-port", "0", "--tls-cert", str(cert), "--tls-key", str(key)
    )
    try:
        port = hash_port(served, tls=True)
        context = ssl.create_default_context(cafile=str(cert))
        w, b = HashClient(port, tls=context), HashClient(port, tls=context)
        with w, b:
            code = w.ask("INSCRIBIR", unique_name("w"))[2]
            assert b.ask("INSCRIBIR", unique_name("b"))[:2] == ["OK", "N"]
            assert w.msg()[0] == b.msg()[0] == "INICIO"
            w.send("MOVIMIENTO", code, "e4")
            assert w.msg() == b.msg()
            assert served.stop() == 0
    finally:
        served.stop()
    [game] = GameAdmin(database).list_all()
    assert (game.status, game.winner, game.end_reason) == (2, 0, "server stopped"), (
        served.log_text()
    )
    assert "Traceback" not in served.log_text()
