"""Fuzzing the wire: random and mutated lines, before and after login.

Every fuzzed line (random bytes; valid lines with bytes flipped, ``:`` inserted, fields
duplicated, dropped or replaced by awkward values, truncated; invalid UTF-8; NUL; lines of
100 KB to 1 MB) is followed by a marker command. Every reply is read with strict framing
(three ASCII digits, flag ``0``/``1``, length <= 4096, UTF-8 data, a documented code in
1xx-3xx, 4xx-5xx or 8xx-9xx, never ``500``; failures carry a one-line reason), and then
either:

- the connection is still in step: each line of the fuzzed input got exactly one answer,
  and the marker (``HELP:SRNK`` before login, ``SRNK`` after) gets its own answer; or
- the server closed it cleanly (EOF at a reply boundary) for a reason the protocol gives:
  QUIT, an UNSU with a wrong password (815), or before login a failure that ends the
  session (800, 804, 805, 806, 814, 815, or a bad USER/PASS).

Meanwhile two other logged-in sessions keep playing a game: between batches each one's
STAT, move and SPAR must answer correctly. ``AJEDREZ_FUZZ_SEED`` reproduces a run.

One module over 500 lines: the mutators, the strict reply reader and the in-step check
are one machine that every test here drives, and serve no other module.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import dataclass

import chess
import pytest

from tests.support.common import PASSWORD, unique_name
from tests.support.espol import Closed, Conn, Reply
from tests.support.hardening import answer, ask, log_in
from tests.support.play import PID, jgda, spar_record
from tests.support.server import ServerProcess

SEED = int(os.environ.get("AJEDREZ_FUZZ_SEED", str(random.randrange(1 << 32))))
PRE_LOGIN_LINES = 1500
POST_LOGIN_LINES = 2500
HUGE_SIZES = (100_000, 300_000, 1_000_000)
CHECK_EVERY = 100  # fuzzed lines between checks of the other sessions

# Failures that always end a session before login (docs/protocol.md section 3).
CLOSES_BEFORE_LOGIN = {800, 804, 805, 806, 814, 815}
# ... and those that end it when the failing command is USER or PASS.
MAY_CLOSE_BEFORE_LOGIN = CLOSES_BEFORE_LOGIN | {801, 802, 803}

AWKWARD = [
    "",
    "0",
    "-1",
    "+1",
    " 1",
    "1 ",
    "00000000000",
    "99999999999",
    "999999999999",
    "100001",
    "100000",
    "1e3",
    "0x10",
    "P0000000",
    "P9999999",
    "P000001",
    "P00000001",
    "p0000001",
    "e2e2",
    "a1a1",
    "h8h8",
    "e2e4",
    "e7e8",
    "a7a8",
    "e1g1",
    "E2E4",
    "e2e9",
    "i2i4",
    "e2e4q",
    "0000",
    "6464",
    "1228",
    "0063",
    "9999",
    "6",
    "1",
    "B",
    "N",
    "S",
    "b",
    "X",
    "\x00",
    "\t",
    " ",
    "ñ",
    "💥",
    "\u202e",
    "\ufeff",
    "%s%n",
    "{}",
    "'; DROP TABLE users; --",
    "A" * 33,
    "A" * 129,
    "x" * 201,
    "../../etc/passwd",
]
INVALID_UTF8 = [b"\xff", b"\xfe\xff", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]
CODES = [
    "USER",
    "PASS",
    "SUBS",
    "HELP",
    "QUIT",
    "JUEG",
    "TRAN",
    "ACEP",
    "DECL",
    "PPEN",
    "JAUT",
    "SRNK",
    "STAT",
    "SPAR",
    "JGDA",
    "TBLS",
    "TBLs",
    "RTBL",
    "RTBS",
    "REND",
    "FINP",
    "PGNX",
    "UNSU",
    "quit",
    "Jgda",
    "XXXX",
    "JGD",
    "JGDAA",
]


# -- generating lines -------------------------------------------------------------------


def mutate(rng: random.Random, line: bytes) -> bytes:
    """One to three random mutations of a line."""
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(13)
        pos = rng.randint(0, len(line))
        if kind == 0 and line:  # flip bytes
            data = bytearray(line)
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            line = bytes(data)
        elif kind == 1:  # insert ':'
            line = line[:pos] + b":" * rng.randint(1, 3) + line[pos:]
        elif kind == 2:  # truncate
            line = line[:pos]
        elif kind in (3, 4, 5):  # duplicate, drop or replace a field
            fields = line.split(b":")
            i = rng.randrange(len(fields))
            if kind == 3:
                fields.insert(i, fields[i])
            elif kind == 4 and len(fields) > 1:
                del fields[i]
            else:
                fields[i] = rng.choice(AWKWARD).encode()
            line = b":".join(fields)
        elif kind == 6:  # invalid UTF-8
            line = line[:pos] + rng.choice(INVALID_UTF8) + line[pos:]
        elif kind == 7:  # NUL
            line = line[:pos] + b"\x00" + line[pos:]
        elif kind == 8:  # another command code
            rest = line[4:] if len(line) >= 4 else b""
            line = rng.choice(CODES).encode() + rest
        elif kind == 9:  # a CR or a second line inside
            line = line[:pos] + rng.choice([b"\r", b"\n", b"\r\n", b"\n\n"]) + line[pos:]
        elif kind == 10:  # repeat: up to a few kB
            line = b":".join([line] * rng.randint(2, 400))
        elif kind == 11:  # random bytes inside
            line = line[:pos] + rng.randbytes(rng.randint(1, 8)) + line[pos:]
        else:  # change case
            line = line.swapcase()
    return line


def random_line(rng: random.Random) -> bytes:
    kind = rng.randrange(4)
    n = rng.choice([0, 1, 4, 5, 10, 50, 300, 1399, 1401, 2047, 2049, 3000])
    if kind == 0:
        return rng.randbytes(n)
    if kind == 1:
        return bytes(rng.randrange(32, 127) for _ in range(n))
    if kind == 2:
        return rng.choice(CODES).encode() + b":" + rng.randbytes(n)
    return ":".join(rng.choice(AWKWARD) for _ in range(rng.randint(1, 8))).encode()


# -- one fuzzed connection ----------------------------------------------------------------


@dataclass
class Counts:
    lines: int = 0  # fuzzed lines sent (each may hold several lines on the wire)
    segments: int = 0  # lines as the server splits them
    answers: int = 0
    closed: int = 0
    huge: int = 0


class Fuzzer:
    """Throws lines on one connection, before login or logged in as ``user``."""

    def __init__(self, server: ServerProcess, user: str | None, counts: Counts) -> None:
        self.server = server
        self.user = user
        self.counts = counts
        self.conn: Conn | None = None
        self.marker = b"SRNK" if user else b"HELP:SRNK"
        self.marker_text: str | None = None

    def open(self) -> Conn:
        if self.conn is None:
            if self.user:
                self.conn = log_in(self.server.host, self.server.port, self.user, PASSWORD)
            else:
                self.conn = self.server.connect()
            if self.marker_text is None and not self.user:
                self.marker_text = ask(self.conn, "HELP:SRNK").text
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def is_marker(self, parts: list[Reply]) -> bool:
        if self.user:
            return parts[0].code == 205
        return len(parts) == 1 and parts[0].code == 110 and parts[0].text == self.marker_text

    def throw(self, fuzz: bytes, terminator: bytes = b"\r\n", chunk: int = 0) -> list[int]:
        """Send one fuzzed line and check what comes back; returns the answers' codes."""
        segments = [s[:-1] if s.endswith(b"\r") else s for s in (fuzz + terminator).split(b"\n")]
        segments = segments[:-1]
        if any(s in (self.marker, self.marker + b":") for s in segments):
            return []  # would be taken for the marker's answer
        conn = self.open()
        self.counts.lines += 1
        self.counts.segments += len(segments)
        data = fuzz + terminator
        try:
            if chunk:
                for i in range(0, len(data), chunk):
                    conn.send_raw(data[i : i + chunk])
            else:
                conn.send_raw(data)
            conn.send_raw(self.marker + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed while we were still sending: the answers tell why
        answers: list[list[Reply]] = []
        closed = False
        while True:
            try:
                parts = _next_answer(conn)
            except AssertionError as e:
                tail = "\n".join(self.server.log[-12:])
                raise AssertionError(
                    f"{e}\nseed={SEED} after {len(answers)} answers to "
                    f"fuzz={fuzz[:300]!r} ({len(fuzz)} bytes)\nserver log:\n{tail}"
                ) from None
            if parts is None:
                closed = True
                break
            if self.is_marker(parts):
                break
            answers.append(parts)
        self.counts.answers += len(answers)
        codes = [a[0].code for a in answers]
        quits = [i for i, s in enumerate(segments) if s in (b"QUIT", b"QUIT:")]
        context = f"seed={SEED} fuzz={fuzz[:200]!r} ({len(fuzz)} bytes) codes={codes}"
        if not closed:
            assert not quits, context
            assert len(answers) == len(segments), context
            if not self.user:
                assert not CLOSES_BEFORE_LOGIN & set(codes), context
            return codes
        self.counts.closed += 1
        self.close()
        assert len(answers) <= len(segments), context
        if quits and quits[0] == len(answers):
            return codes  # QUIT: no reply, then the close
        if self.user:
            # UNSU with a wrong password is a failed login: 815, then the close (section 3).
            unsu = bool(answers) and segments[len(answers) - 1].startswith(b"UNSU:")
            assert unsu and codes[-1] == 815, "a logged-in session closed without cause: " + context
            return codes
        assert len(answers) >= 1 and codes[-1] in MAY_CLOSE_BEFORE_LOGIN, context
        return codes


def _next_answer(conn: Conn) -> list[Reply] | None:
    """The next whole answer, or None when the server closed at an answer boundary."""
    if not conn._buf:
        try:
            chunk = conn.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""  # closed with our unread marker in its buffer: a reset, not a FIN
        if not chunk:
            return None
        conn._buf += chunk
    try:
        return answer(conn)
    except Closed as e:
        raise AssertionError(f"connection closed in the middle of a reply: {e}") from e


# -- the other sessions -----------------------------------------------------------------


class Game:
    """Two logged-in sessions with a game between them, played with random legal moves."""

    def __init__(self, server: ServerProcess, white: str, black: str, seed: int) -> None:
        self.server = server
        self.white, self.black = white, black
        self.w = log_in(server.host, server.port, white, PASSWORD)
        self.b = log_in(server.host, server.port, black, PASSWORD)
        self.rng = random.Random(seed)
        self.pid = ""
        self.board = chess.Board()
        self.checks = 0
        self.new_game()

    def close(self) -> None:
        self.w.close()
        self.b.close()

    def conn(self, color: chess.Color) -> Conn:
        return self.w if color == chess.WHITE else self.b

    def new_game(self) -> None:
        r = ask(self.w, f"JUEG:{self.black}")
        assert r.code in (200, 820), r  # a fuzzed JUEG may have challenged already
        if r.code == 820:
            r = ask(self.b, f"DECL:{self.white}")
            assert r.code == 213, r
            assert ask(self.w, f"JUEG:{self.black}").code == 200
        r = ask(self.b, f"ACEP:N:{self.white}")
        assert r.code == 202 and PID.fullmatch(r.text), r
        self.pid, self.board = r.text, chess.Board()

    def stat(self) -> list[str]:
        r = ask(self.w, f"STAT:{self.pid}")
        assert r.code == 206, r
        return r.text.split(":")

    def play(self, color: chess.Color) -> None:
        """One random legal move for ``color``, which must be to move."""
        assert self.board.turn == color
        moves = sorted(self.board.legal_moves, key=chess.Move.uci)
        safe = [m for m in moves if not _ends(self.board, m)] or moves
        move = self.rng.choice(safe)
        ply = len(self.board.move_stack) + 1
        r = ask(self.conn(color), jgda(self.pid, ply, move))
        assert (r.code, r.text) == (208, ""), (self.pid, ply, move, r)
        self.board.push(move)
        r = ask(self.conn(not color), f"SPAR:{self.pid}:{ply - 1}")
        assert (r.code, r.text) == (207, spar_record(ply, move)), r

    def check(self) -> None:
        """The witness sessions are served: STAT agrees, a move is taken, SPAR shows it."""
        self.checks += 1
        st = self.stat()
        assert (st[1], st[2], st[4]) == (self.white, self.black, "0"), st
        assert int(st[9]) == len(self.board.move_stack) + 1, st
        self.play(self.board.turn)
        parts = answer(_sent(self.b, "HELP"))
        assert parts[0].code == 110 and "JGDA:" in "".join(p.text for p in parts)
        if self.board.outcome(claim_draw=False) is not None:
            assert self.stat()[4] == "2"
            self.new_game()


def _ends(board: chess.Board, move: chess.Move) -> bool:
    board.push(move)
    try:
        return board.outcome(claim_draw=False) is not None
    finally:
        board.pop()


def _sent(conn: Conn, line: str) -> Conn:
    conn.send(line)
    return conn


class FuzzGame(Game):
    """The fuzzed user's own game (its opponent is a clean session): kept so that the
    fuzzed user has a move to make, so mutated JGDA lines reach the move checks."""

    def refresh(self) -> None:
        r = ask(self.b, f"DECL:{self.white}")  # a fuzzed JUEG may have left a challenge
        assert r.code in (213, 822), r
        st = self.stat()
        if st[4] == "2":
            self.new_game()
            return
        moves = self.moves()
        self.board = chess.Board()
        for m in moves:
            self.board.push(m)
        assert int(st[9]) == len(moves) + 1, st
        if st[6] == "1":  # the fuzzed white offered a draw: black declines
            assert ask(self.b, f"RTBL:{self.pid}:N:{self.white}").code == 210
        if self.board.turn == chess.BLACK:
            if self.board.outcome(claim_draw=False) is not None:
                return
            self.play(chess.BLACK)

    def moves(self) -> list[chess.Move]:
        parts = answer(_sent(self.b, f"SPAR:{self.pid}:0"))
        if parts[0].code == 839:
            return []
        out = []
        for rec in ",".join(p.text for p in parts).split(","):
            f = rec.split(":")
            base = chess.Move.from_uci(f[1])
            promo = {0: None, 2: chess.KNIGHT, 3: chess.BISHOP, 4: chess.ROOK, 5: chess.QUEEN}
            out.append(chess.Move(base.from_square, base.to_square, promo[int(f[4])]))
        return out

    def seeds(self) -> list[str]:
        """Valid lines for the fuzzed (white) user in the game's current state."""
        me, other, pid = self.white, self.black, self.pid
        ply = len(self.board.move_stack) + 1
        legal = sorted(self.board.legal_moves, key=chess.Move.uci)
        moves = [jgda(pid, ply, m, self.rng.randrange(2)) for m in legal[:8]]
        if self.board.move_stack:
            last = self.board.move_stack[-1]
            moves.append(jgda(pid, ply - 1, last))
        return [
            *moves,
            *moves,
            f"JUEG:{other}",
            "TRAN:0",
            f"ACEP:B:{other}",
            f"DECL:{other}",
            "PPEN:0",
            "JAUT:99999999999",
            f"STAT:{pid}",
            f"SPAR:{pid}:0",
            f"SPAR:{pid}:{max(0, ply - 2)}",
            f"TBLS:{pid}:{other}",
            f"RTBL:{pid}:N:{other}",
            f"FINP:{pid}:{other}",
            f"PGNX:{pid}",
            f"REND:{pid}:{other}",
            "HELP",
            "HELP:JGDA",
            f"USER:{me}",
            f"PASS:{PASSWORD}",
            f"UNSU:{other}:{PASSWORD}",
            f"SUBS:{unique_name('fzs')}:Secret-{self.rng.randrange(10**6)}:fuzz",
            "QUIT",
        ]


@pytest.fixture
def witness(server: ServerProcess, new_user) -> Iterator[Game]:
    game = Game(server, new_user("fw"), new_user("fw"), SEED)
    yield game
    game.close()


def _run(
    fuzzer: Fuzzer,
    rng: random.Random,
    count: int,
    seeds,  # type: ignore[no-untyped-def]
    between,  # type: ignore[no-untyped-def]
) -> None:
    for i in range(count):
        if i % CHECK_EVERY == 0:
            between()
        roll = rng.random()
        if roll < 0.15:
            line = random_line(rng)
        elif roll < 0.2:
            line = rng.choice(seeds()).encode()
        else:
            line = mutate(rng, rng.choice(seeds()).encode())
        fuzzer.throw(line, rng.choice([b"\r\n", b"\n"]))
    between()


def _check_server(server: ServerProcess, log_from: int) -> None:
    assert server.proc.poll() is None, "the server died"
    log = "\n".join(server.log[log_from:])
    assert "Traceback" not in log, log[-3000:]
    assert "internal error" not in log, log[-3000:]


def test_fuzz_before_login(server, witness):
    rng = random.Random(SEED)
    log_from = len(server.log)
    counts = Counts()
    fuzzer = Fuzzer(server, None, counts)
    nobody = unique_name("nobody")
    fixed = [
        f"USER:{nobody}",
        f"PASS:{PASSWORD}",
        "HELP",
        "HELP:JGDA",
        "HELP:",
        "QUIT",
        "JAUT:0",
        "STAT:P0000001",
        "JGDA:P0000001:1:e2e4:0:1228:0",
        f"UNSU:{nobody}:{PASSWORD}",
    ]

    def seeds() -> list[str]:
        return [*fixed, f"SUBS:{unique_name('fzs')}:Secret-{rng.randrange(10**6)}:a comment"]

    def between() -> None:
        witness.check()
        _check_server(server, log_from)

    try:
        _run(fuzzer, rng, PRE_LOGIN_LINES, seeds, between)
    finally:
        fuzzer.close()
    print(f"\nfuzz before login: seed={SEED}, {counts}, witness checks={witness.checks}")
    assert counts.lines >= PRE_LOGIN_LINES * 0.95


def test_fuzz_after_login(server, new_user, witness):
    rng = random.Random(SEED + 1)
    log_from = len(server.log)
    counts = Counts()
    me, other = new_user("fz"), new_user("partner")
    game = FuzzGame(server, me, other, SEED)
    fuzzer = Fuzzer(server, me, counts)

    def between() -> None:
        witness.check()
        game.refresh()
        _check_server(server, log_from)

    try:
        _run(fuzzer, rng, POST_LOGIN_LINES, game.seeds, between)
    finally:
        fuzzer.close()
        game.close()
    print(f"\nfuzz after login: seed={SEED}, {counts}, witness checks={witness.checks}")
    assert counts.lines >= POST_LOGIN_LINES * 0.95


@pytest.mark.parametrize("logged_in", [False, True], ids=["before-login", "after-login"])
def test_huge_lines(server, new_user, witness, logged_in):
    """Lines of 100 KB to 1 MB, sent in pieces, then a newline: one 803, still in step."""
    rng = random.Random(SEED + 2)
    log_from = len(server.log)
    counts = Counts()
    fuzzer = Fuzzer(server, new_user("fh") if logged_in else None, counts)
    try:
        for size in HUGE_SIZES:
            for body in (
                b"JAUT:" + b"0" * size,
                bytes(rng.randrange(32, 127) for _ in range(1000)) * (size // 1000),
                rng.randbytes(size).replace(b"\n", b"\x00"),
            ):
                fuzzer.throw(body, rng.choice([b"\r\n", b"\n"]), chunk=rng.choice([4096, 65536]))
                assert fuzzer.conn is not None, "a long line closed the connection"
                counts.huge += 1
            witness.check()
            _check_server(server, log_from)
        # In step: the session is the same one and still works.
        conn = fuzzer.open()
        if logged_in:
            r = ask(conn, "JAUT:99999999999")
            assert r.code == 201, r
        else:
            assert ask(conn, "HELP:QUIT").code == 110
    finally:
        fuzzer.close()
    print(f"\nhuge lines ({'after' if logged_in else 'before'} login): {counts}")
    assert counts.answers == counts.huge == 3 * len(HUGE_SIZES)


def test_replies_to_every_command_shape(server, new_user):
    """Each command code (and some that are not: control characters, CR, NUL, non-ASCII
    letters) with 0-7 awkward fields, logged in: never 500, every reason one printable
    line, always in step."""
    rng = random.Random(SEED + 3)
    counts = Counts()
    fuzzer = Fuzzer(server, new_user("fc"), counts)
    weird = ["\rJGD", "JG\x00A", "J\tDA", "ÑAME", "\x1b[2J", "\u202eJGDA", "SRN\r"]
    try:
        for code in [*CODES, *weird]:
            if code in ("QUIT", "UNSU"):
                continue
            for n in range(8):
                for _ in range(3):
                    fields = [rng.choice(AWKWARD) for _ in range(n)]
                    fuzzer.throw(":".join([code, *fields]).encode())
    finally:
        fuzzer.close()
    print(f"\ncommand shapes: {counts}")


def test_move_fields_awkward(server, new_user):
    """JGDA from the player to move at the right ply, each field in turn replaced by an
    awkward value (a move from a square to itself, out-of-range squares, ...): always a
    well-formed answer, never 500, and the session stays in step."""
    counts = Counts()
    me, other = new_user("fm"), new_user("partner")
    game = FuzzGame(server, me, other, SEED)
    fuzzer = Fuzzer(server, me, counts)
    try:
        for index in range(1, 7):
            for value in AWKWARD:
                game.refresh()
                assert game.board.turn == chess.WHITE
                ply = len(game.board.move_stack) + 1
                move = sorted(game.board.legal_moves, key=chess.Move.uci)[0]
                fields = jgda(game.pid, ply, move).split(":")
                fields[index] = value
                codes = fuzzer.throw(":".join(fields).encode())
                assert len(codes) == 1, (fields, codes)
                assert codes[0] == 208 or codes[0] >= 800, (fields, codes)
    finally:
        fuzzer.close()
        game.close()
    print(f"\nmove fields: {counts}")


@pytest.mark.parametrize("logged_in", [False, True], ids=["before-login", "after-login"])
def test_subs_free_text_with_control_characters(server, new_user, logged_in):
    """SUBS carries the only free text that is stored (the comment; the password is only
    hashed): NUL and other control characters in it get a success or a failure, never 500,
    on either database."""
    counts = Counts()
    fuzzer = Fuzzer(server, new_user("ft") if logged_in else None, counts)
    try:
        for char in ["\x00", "\x01", "\x1b", "\x7f", "\u2028", "\ufeff", "\U0010ffff"]:
            for comment, password in ((f"a{char}b", "secret-pw"), ("comment", f"pw{char}x")):
                line = f"SUBS:{unique_name('fts')}:{password}:{comment}"
                codes = fuzzer.throw(line.encode())
                assert codes in ([103], [802]), (line, codes)
    finally:
        fuzzer.close()
