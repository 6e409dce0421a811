"""Live play over TCP on the store under test (SQLite, or PostgreSQL with
AJEDREZ_TEST_DATABASE_URL), written from docs/protocol.md: the events of observers,
chat, seeks and takeback as streams (EVEN) receive them (section 6), the chat rate of
``--chat-per-minute``, seeks and observers raced from many sessions and two server
processes, and the commands once through the real store. The commands' every rule is
in tests/session/test_live.py; the exhaustive stream tests in tests/e2e/test_events.py.

A stream never proves that an event did *not* come by waiting: the test makes a later
event it must receive (a move, a challenge of its own), and checks what came before it.
"""

from __future__ import annotations

import io
import itertools
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import chess
import chess.pgn
import pytest

from tests.support.common import PASSWORD, wait_for
from tests.support.espol import Conn, Reply
from tests.support.play import jgda
from tests.support.server import ServerProcess, start_server
from tests.support.together import run_together

PID = re.compile(r"P[0-9]{7}")
FECHA = re.compile(r"[0-9]{11}")
START_FEN = chess.STARTING_FEN
WAIT = 15.0  # seconds an expected event may take at most
WIDE_OPEN = ("--max-connections-per-address", "1000")


# -- a client that sets events aside -------------------------------------------------------


@dataclass(frozen=True)
class Event:
    cursor: int
    ms: int
    kind: str
    fields: tuple[str, ...]


TEXT_LAST = {"CHAT": 3, "SUSURRO": 3}  # kinds whose last field is free text: field count


def parse_event(data: str) -> Event:
    cursor, ms, kind, *rest = data.split(":", 3)
    assert re.fullmatch(r"[0-9]+", cursor) and re.fullmatch(r"[0-9]{13}", ms), data
    if not rest:
        return Event(int(cursor), int(ms), kind, ())
    if kind in TEXT_LAST:
        fields = tuple(rest[0].split(":", TEXT_LAST[kind] - 1))
    else:
        fields = tuple(rest[0].split(":"))
    return Event(int(cursor), int(ms), kind, fields)


class Live(Conn):
    """A ``Conn`` whose ``reply`` sets every 6xx aside (docs section 1: a client on a
    streaming connection reads on past events for its answer). Reads only take whole
    frames out of the buffer, so a timeout loses nothing."""

    def __init__(self, srv: ServerProcess) -> None:
        super().__init__(srv.host, srv.port, 20.0)
        self.events: list[Event] = []
        self.seen = 0  # events handed out by ``until``
        self.answers: list[Reply] = []
        self.aldia: int | None = None

    def _frame(self) -> Reply | None:
        if len(self._buf) < 6:
            return None
        length = int.from_bytes(self._buf[4:6], "big")
        if len(self._buf) < 6 + length:
            return None
        head, data = self._buf[:6], self._buf[6 : 6 + length]
        self._buf = self._buf[6 + length :]
        assert head[:3].isdigit() and head[3:4] in (b"0", b"1"), head
        return Reply(int(head[:3]), head[3:4] == b"1", data)

    def _pump(self, deadline: float) -> bool:
        """Read one frame (an answer, or an event set aside); False at the deadline."""
        while True:
            got = self._frame()
            if got is not None:
                if 600 <= got.code < 700:
                    if got.code == 600:
                        self.events.append(parse_event(got.text))
                    elif got.code == 601:
                        self.aldia = int(got.text)
                else:
                    self.answers.append(got)
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return False
            finally:
                self.sock.settimeout(20.0)
            assert chunk, "the server closed the connection"
            self._buf += chunk

    def reply(self) -> Reply:
        deadline = time.monotonic() + 20.0
        while not self.answers:
            assert self._pump(deadline), "no answer"
        return self.answers.pop(0)

    def stream(self) -> None:
        """EVEN from now on; returns once the stream is live (601)."""
        r = self.cmd("EVEN")
        assert r.code == 219, r
        deadline = time.monotonic() + WAIT
        while self.aldia is None:
            assert self._pump(deadline), "no 601 after EVEN"

    def until(self, match: Callable[[Event], bool], timeout: float = WAIT) -> list[Event]:
        """The events after the last ``until`` up to and including the first that
        ``match``es (the last of the list); fails if none comes in time."""
        deadline = time.monotonic() + timeout
        start = self.seen
        while True:
            for i in range(self.seen, len(self.events)):
                if match(self.events[i]):
                    self.seen = i + 1
                    return self.events[start : i + 1]
            self.seen = len(self.events)
            if not self._pump(deadline):
                raise AssertionError(f"no matching event in {timeout} s; got {self.events[start:]}")


def kind(name: str, *fields: str) -> Callable[[Event], bool]:
    """An event of that kind whose first fields are ``fields``."""
    return lambda e: e.kind == name and e.fields[: len(fields)] == fields


def kinds(events: list[Event]) -> list[str]:
    return [e.kind for e in events]


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def live_server(database_url: str, db) -> Iterator[ServerProcess]:  # type: ignore[no-untyped-def]
    srv = start_server(database_url, *WIDE_OPEN)
    yield srv
    srv.stop()


@pytest.fixture
def enter(live_server: ServerProcess) -> Iterator[Callable[..., Live]]:
    """enter(name, srv=None, streaming=True): a logged-in ``Live``, streaming when asked."""
    opened: list[Live] = []

    def do(name: str, srv: ServerProcess | None = None, streaming: bool = True) -> Live:
        c = Live(srv or live_server)
        opened.append(c)
        assert c.cmd(f"USER:{name}").code == 101
        assert c.cmd(f"PASS:{PASSWORD}").code == 102
        if streaming:
            c.stream()
        return c

    yield do
    for c in opened:
        c.close()


@dataclass
class Game:
    pid: str
    white: str
    black: str
    w: Live
    b: Live
    board: chess.Board = field(default_factory=chess.Board)

    def play(self, *sans: str) -> None:
        for san in sans:
            mover = self.w if self.board.turn == chess.WHITE else self.b
            move = self.board.parse_san(san)
            r = mover.cmd(jgda(self.pid, len(self.board.move_stack) + 1, move))
            assert (r.code, r.text) == (208, ""), (san, r)
            self.board.push(move)

    @property
    def ply(self) -> int:
        return len(self.board.move_stack)


@pytest.fixture
def start(new_user, enter) -> Callable[..., Game]:  # type: ignore[no-untyped-def]
    """start(tail=""): two streaming players; white challenges (``JUEG:<black><tail>``),
    black accepts; both streams have seen INICIO_PARTIDA."""

    def make(tail: str = "") -> Game:
        white, black = new_user("w"), new_user("b")
        w, b = enter(white), enter(black)
        assert w.cmd(f"JUEG:{black}{tail}").code == 200
        r = b.cmd(f"ACEP:N:{white}")
        assert r.code == 202 and PID.fullmatch(r.text), r
        for c in (w, b):
            c.until(kind("INICIO_PARTIDA", r.text))
        return Game(r.text, white, black, w, b)

    return make


_controls = itertools.count()


def fresh_control() -> str:
    """An explicit control that no other test seeks, as the server writes it."""
    return f"{1001 + 2 * next(_controls)}m+11s"


# -- observers -----------------------------------------------------------------------------


def test_observers_and_players_streams(start, new_user, enter):
    g = start()
    o_name, p_name = new_user("oa"), new_user("ob")
    o, p = enter(o_name), enter(p_name)
    assert (o.cmd(f"OBSV:{g.pid}").code, o.cmd(f"OBSV:{g.pid}").code) == (220, 220)  # twice
    for c in (g.w, g.b, o):
        e = c.until(kind("INCORPORACION", g.pid, o_name))[-1]
        assert e.fields == (g.pid, o_name, "1")
    assert p.cmd(f"OBSV:{g.pid}").code == 220
    g.play("e4")
    for c in (g.w, g.b, o, p):
        e = c.until(kind("FIN_DE_TURNO", g.pid, "1"))[-1]
        assert e.fields[:6] == (g.pid, "1", "e2e4", "0", "e4", g.black), e
    # each observer joined once: the second OBSV made no second INCORPORACION; p, who
    # observed after o joined, learns only of its own
    for c, want in ((g.w, [o_name, p_name]), (g.b, [o_name, p_name]), (o, [o_name, p_name]),
                    (p, [p_name])):  # fmt: skip
        joins = [e.fields for e in c.events if e.kind == "INCORPORACION"]
        assert joins == [(g.pid, n, "1") for n in want], joins

    # players' chat: the players' streams only
    assert g.w.cmd(f"CHAT:{g.pid}:hola: ¿qué tal? 1:0").code == 223
    for c in (g.w, g.b):
        e = c.until(kind("CHAT", g.pid))[-1]
        assert e.fields == (g.pid, g.white, "hola: ¿qué tal? 1:0"), e
    # observers' whisper: the observers' streams only
    assert o.cmd(f"CHAT:{g.pid}:psst: e5!").code == 223
    for c in (o, p):
        e = c.until(kind("SUSURRO", g.pid))[-1]
        assert e.fields == (g.pid, o_name, "psst: e5!"), e
    g.play("e5")
    for c in (g.w, g.b):
        assert "SUSURRO" not in kinds(c.until(kind("FIN_DE_TURNO", g.pid, "2")))
    for c in (o, p):
        got = [e for e in c.events if e.fields[:1] == (g.pid,)]
        assert "CHAT" not in kinds(got), got  # never the players' chat
        c.until(kind("FIN_DE_TURNO", g.pid, "2"))

    # OBSF: the others learn of it; the stream no longer carries the game
    assert p.cmd(f"OBSF:{g.pid}").code == 221
    for c in (g.w, g.b, o):
        e = c.until(kind("ABANDONO", g.pid, p_name))[-1]
        assert e.fields == (g.pid, p_name, "1"), e
    g.play("Nf3")
    target = new_user("t")
    assert p.cmd(f"JUEG:{target}").code == 200  # p's own event, after the move
    got = p.until(kind("DESAFIO", p_name, target))
    assert not [e for e in got if e.kind == "FIN_DE_TURNO" and e.fields[:2] == (g.pid, "3")]

    # the end reaches the observer
    assert g.b.cmd(f"REND:{g.pid}:{g.white}").code == 211
    for c in (g.w, g.b, o):
        got = c.until(kind("FINALIZACION", g.pid))
        assert got[-1].fields == (g.pid, "1", "resignation"), got[-1]
        assert [e.fields for e in got if e.kind == "ABANDONO"] == [(g.pid, g.black, "0")]


def test_observe_once_from_many_sessions_at_once(start, new_user, enter):
    """Sessions of one user send OBSV for the same game at once, a few rounds: "observing
    a game observed already answers 220 and changes nothing", so every one is answered
    220 and the players learn of one INCORPORACION."""
    codes, joins = [], []
    for _round in range(3):
        g = start()
        o_name = new_user("o")
        sessions = [enter(o_name, streaming=False) for _ in range(8)]
        line = f"OBSV:{g.pid}"
        replies = run_together([lambda c=c, line=line: c.cmd(line) for c in sessions])
        codes += [(r.code, r.text) for r in replies]
        assert g.w.cmd(f"OBSL:{g.pid}").text == o_name
        g.play("d4")
        got = g.b.until(kind("FIN_DE_TURNO", g.pid, "1"))
        joins.append([e.fields for e in got if e.kind == "INCORPORACION"])
        assert joins[-1] == [(g.pid, o_name, "1")], joins
    assert [c for c in codes if c[0] != 220] == [], codes


def test_observer_commands_over_tcp(start, new_user, enter):
    g = start(":3d")
    g.play("e4", "e5", "Nf3")
    names = sorted([new_user("Zed_"), new_user("a.b"), new_user("a-b"), new_user("ab")])
    watchers = [enter(n, streaming=False) for n in names]
    for c in watchers:
        assert c.cmd(f"OBSV:{g.pid}").text == g.pid
    o = watchers[0]
    assert g.b.cmd(f"OBSL:{g.pid}").text == ",".join(names)  # sorted by name
    stat = o.cmd(f"STAT:{g.pid}").text.split(":")
    assert stat[8] == "-" and stat[9] == "4", stat
    assert o.cmd(f"SPAR:{g.pid}:2").text == "3:g1f3:0:0621:0"
    assert o.cmd(f"RELJ:{g.pid}").text.split(":")[2] == "3d"
    assert o.cmd(f"HOVR:{g.pid}:b8").text == "a6,c6"
    assert o.cmd_all(f"PGNX:{g.pid}") == g.w.cmd_all(f"PGNX:{g.pid}")
    stranger = enter(new_user("s"), streaming=False)
    for line in (f"STAT:{g.pid}", f"SPAR:{g.pid}:0", f"RELJ:{g.pid}", f"PGNX:{g.pid}",
                 f"HOVR:{g.pid}:e7", f"OBSL:{g.pid}", f"CHLE:{g.pid}:0"):  # fmt: skip
        assert stranger.cmd(line).code == 831, line
    assert o.cmd(f"OBSF:{g.pid}").code == 221
    assert o.cmd(f"STAT:{g.pid}").code == 831
    assert o.cmd(f"OBSF:{g.pid}").code == 846
    assert g.w.cmd(f"OBSV:{g.pid}").code == 846


def test_private_games_over_tcp(start, new_user, enter):
    """Issue 32: a stranger cannot tell a private game, running or finished, from one
    that does not exist; its players see it as before."""
    g, over = start(":none:1"), start(":none:1")
    assert over.b.cmd(f"REND:{over.pid}:{over.white}").code == 211
    o = enter(new_user("o"), streaming=False)
    for line in ("OBSV:<P>", "STAT:<P>", "SPAR:<P>:0", "JGDA:<P>:1:e2e4:0:1228:0", "OBSF:<P>"):
        for pid in (g.pid, over.pid, "P9999999"):
            r = o.cmd(line.replace("<P>", pid))
            assert (r.code, r.text) == (830, f"no game {pid}"), (line, r)
    assert g.w.cmd(f"OBSV:{g.pid}").code == 846
    assert over.w.cmd(f"STAT:{over.pid}").code == 206


# -- chat ----------------------------------------------------------------------------------


def test_chat_stored_and_read_back(start, new_user, enter):
    g = start()
    o_name = new_user("o")
    o = enter(o_name, streaming=False)
    assert o.cmd(f"OBSV:{g.pid}").code == 220
    r = g.w.cmd(f"CHLE:{g.pid}:0")
    assert r.code == 224 and FECHA.fullmatch(r.text), r
    fecha = r.text
    assert g.w.cmd(f"CHAT:{g.pid}:a las 12:30: ¿vale?").code == 223
    assert o.cmd(f"CHAT:{g.pid}:" + "ñ" * 500).code == 223
    assert g.w.cmd(f"CHAT:{g.pid}:" + "x" * 501).code == 802
    assert g.w.cmd(f"CHAT:{g.pid}:tab\there").code == 802
    g.play("e4")
    assert g.b.cmd(f"CHAT:{g.pid}:gracias").code == 223

    def lines(c: Live, since: str) -> tuple[str, list[list[str]]]:
        parts = c.cmd_all(f"CHLE:{g.pid}:{since}")
        assert all(p.code == 224 for p in parts), parts
        text = "\n".join(p.text for p in parts).split("\n")
        assert FECHA.fullmatch(text[0]), text[0]
        return text[0], [line.split(":", 4) for line in text[1:]]

    _, got = lines(g.b, fecha)  # since the fecha the first CHLE gave: nothing missed
    assert [x[1:] for x in got] == [
        ["J", "0", g.white, "a las 12:30: ¿vale?"],
        ["J", "1", g.black, "gracias"],
    ]
    assert all(re.fullmatch(r"[0-9]{13}", x[0]) for x in got)
    _, got = lines(o, "0")
    assert [x[1:] for x in got] == [["O", "0", o_name, "ñ" * 500]]
    assert g.w.cmd(f"REND:{g.pid}:{g.black}").code == 211
    _, got = lines(g.w, "0")
    assert [x[1] for x in got] == ["J", "O", "J"]  # over: both channels, oldest first
    assert o.cmd(f"CHAT:{g.pid}:too late").code in (831, 833)

    text = "\n".join(p.text for p in g.b.cmd_all(f"PGNX:{g.pid}:1"))
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None and not game.errors
    assert f"{g.white}: a las 12:30: ¿vale?" in game.comment
    assert f"{o_name} (whisper): " in game.comment
    assert f"{g.black}: gracias" in game.next().comment  # type: ignore[union-attr]
    plain = "\n".join(p.text for p in g.b.cmd_all(f"PGNX:{g.pid}"))
    assert "gracias" not in plain and "vale" not in plain


def test_chat_that_shows_nothing_is_refused_over_tcp(start):
    g = start()
    for blank in ("\u3164", "\u2800", "\u0301" * 400, "\u0378", "\ue000"):
        r = g.w.cmd(f"CHAT:{g.pid}:{blank}")
        assert r.code == 802 and "invalid message" in r.text, (blank, r)
    assert g.w.cmd(f"CHAT:{g.pid}:still here").code == 223  # the session goes on
    r = g.b.cmd(f"CHLE:{g.pid}:0")
    assert r.code == 224 and r.text.split("\n")[1:] != [] and "still here" in r.text, r
    assert len(r.text.split("\n")) == 2, r  # the refused ones were never stored


def test_chle_sync_while_others_write(start):
    """A reader that always sends back the last fecha misses no message, while the
    other player writes across several seconds."""
    g = start()
    sent = [f"m{i}:{'x' * i}" for i in range(9)]
    done = threading.Event()

    def writer() -> None:
        for i, text in enumerate(sent):
            assert g.b.cmd(f"CHAT:{g.pid}:{text}").code == 223
            if i % 3 == 2:
                time.sleep(0.35)  # spread the messages over whole-second boundaries
        done.set()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    fecha, seen = "0", []
    while True:
        finished = done.is_set()
        parts = g.w.cmd_all(f"CHLE:{g.pid}:{fecha}")
        lines = "\n".join(p.text for p in parts).split("\n")
        fecha = lines[0]
        for line in lines[1:]:
            text = line.split(":", 4)[4]
            if text not in seen:
                seen.append(text)
        if finished:
            break
        time.sleep(0.05)
    t.join(10)
    assert seen == sent


@pytest.fixture(scope="module")
def rate_server(database_url: str, db) -> Iterator[ServerProcess]:  # type: ignore[no-untyped-def]
    """A server whose users may send 3 chat messages a minute."""
    srv = start_server(database_url, *WIDE_OPEN, "--chat-per-minute", "3")
    yield srv
    srv.stop()


def chle_texts(c: Conn, pid: str) -> list[str]:
    return [line.split(":", 4)[4] for line in c.cmd(f"CHLE:{pid}:0").text.split("\n")[1:]]


def test_chat_rate(rate_server, new_user, enter):
    white, black = new_user("w"), new_user("b")
    w, b = enter(white, rate_server, False), enter(black, rate_server, False)
    w2 = enter(white, rate_server, False)
    assert w.cmd(f"JUEG:{black}").code == 200
    pid = b.cmd(f"ACEP:N:{white}").text
    for i in range(2):
        assert w.cmd(f"CHAT:{pid}:m{i}").code == 223
    assert w2.cmd(f"CHAT:{pid}:m2").code == 223  # another session of the same user
    r = w.cmd(f"CHAT:{pid}:m3")
    assert r.code == 847 and r.text, r
    assert w2.cmd(f"CHAT:{pid}:m4").code == 847
    assert b.cmd(f"CHAT:{pid}:the opponent still may").code == 223
    assert chle_texts(b, pid) == ["m0", "m1", "m2", "the opponent still may"]


def test_chat_rate_holds_for_messages_sent_at_once(rate_server, new_user, enter):
    """Sessions of one user send a message each at the same moment: a user may send 3
    messages a minute, so 3 are stored and the others get 847."""
    white, black = new_user("w"), new_user("b")
    w, b = enter(white, rate_server, False), enter(black, rate_server, False)
    assert w.cmd(f"JUEG:{black}").code == 200
    pid = b.cmd(f"ACEP:N:{white}").text
    sessions = [enter(white, rate_server, False) for _ in range(8)]
    jobs = [lambda c=c, i=i: c.cmd(f"CHAT:{pid}:at once {i}") for i, c in enumerate(sessions)]
    codes = sorted(r.code for r in run_together(jobs))
    stored = chle_texts(b, pid)
    assert (codes, len(stored)) == ([223] * 3 + [847] * 5, 3), (codes, stored)


# -- seeks ---------------------------------------------------------------------------------


def seeks_of(c: Conn, names: set[str]) -> list[str]:
    parts = c.cmd_all("BUSL")
    assert all(p.code == 226 for p in parts), parts
    text = ",".join(p.text for p in parts if p.text)
    return [r for r in (text.split(",") if text else []) if r.split(":", 1)[0] in names]


@pytest.mark.parametrize("private", [0, 1])
def test_seek_pairing_events(new_user, enter, private):
    control = fresh_control()
    a_name, b_name, o_name = new_user("a"), new_user("b"), new_user("o")
    a, b = enter(a_name), enter(b_name)
    assert a.cmd(f"BUSC:{control}") == Reply(225, False, b"")
    assert seeks_of(b, {a_name, b_name}) == [f"{a_name}:{control}"]
    r = b.cmd(f"BUSC:{control}:{private}")
    assert r.code == 225 and PID.fullmatch(r.text), r
    pid = r.text
    want = (pid, a_name, b_name, control, a_name, str(private))
    for c in (a, b):
        assert c.until(kind("INICIO_PARTIDA", pid))[-1].fields == want
    assert seeks_of(a, {a_name, b_name}) == []
    o = enter(o_name, streaming=False)
    assert o.cmd(f"OBSV:{pid}").code == (830 if private else 220)
    assert a.cmd(f"JGDA:{pid}:1:e2e4:0:1228:0").code == 208  # the first seeker is white


def test_challenge_events_carry_privada(new_user, enter):
    a_name, b_name, c_name = new_user("a"), new_user("b"), new_user("c")
    a, b, c = enter(a_name), enter(b_name), enter(c_name)
    assert a.cmd(f"JUEG:{b_name}:none:1").code == 200
    assert a.cmd(f"JUEG:{c_name}").code == 200
    for s in (a, b):
        assert s.until(kind("DESAFIO", a_name, b_name))[-1].fields == (a_name, b_name, "none", "1")
    for s in (a, c):
        e = s.until(kind("DESAFIO", a_name, c_name))[-1]
        assert e.fields == (a_name, c_name, "none", "0"), e
    pid = b.cmd(f"ACEP:N:{a_name}").text
    for s in (a, b):
        e = s.until(kind("INICIO_PARTIDA", pid))[-1]
        assert e.fields == (pid, a_name, b_name, "none", a_name, "1"), e
    pid = c.cmd(f"ACEP:B:{a_name}").text
    for s in (a, c):
        e = s.until(kind("INICIO_PARTIDA", pid))[-1]
        assert e.fields == (pid, c_name, a_name, "none", c_name, "0"), e


def test_seeks_over_tcp(new_user, enter):
    one, two = fresh_control(), fresh_control()
    a_name, b_name = new_user("a"), new_user("b")
    a, b = enter(a_name, streaming=False), enter(b_name, streaming=False)
    assert a.cmd(f"BUSC:{one}").code == 225
    assert a.cmd(f"BUSC:{one}").code == 848
    assert a.cmd(f"BUSC:{two}").code == 225
    assert b.cmd("BUSR").code == 849
    assert seeks_of(b, {a_name}) == [f"{a_name}:{one}", f"{a_name}:{two}"]
    assert a.cmd(f"BUSR:{one}").code == 227
    assert seeks_of(b, {a_name}) == [f"{a_name}:{two}"]
    assert a.cmd("BUSR").code == 227
    assert a.cmd("BUSR").code == 849
    assert seeks_of(b, {a_name}) == []
    assert a.cmd("BUSC:5400s+30s").code == 225  # compared as values
    r = b.cmd("BUSC:90m+30s")
    assert r.code == 225 and PID.fullmatch(r.text), r


@pytest.fixture(scope="module")
def two_servers(database_url: str, db) -> Iterator[list[ServerProcess]]:  # type: ignore[no-untyped-def]
    started: list[ServerProcess] = []
    try:
        for _ in range(2):
            started.append(start_server(database_url, *WIDE_OPEN))
        yield started
    finally:
        for srv in started:
            srv.stop()


@pytest.mark.parametrize("count", [24, 25])
def test_many_seek_the_same_control_at_once(two_servers, new_user, enter, count):
    """Users on two server processes post the same control at once, a few rounds: every
    pairing makes one game of two of them, nobody is paired twice, and at most one seek
    is left waiting."""
    for _round in range(3):
        control = fresh_control()
        names = [new_user("r") for _ in range(count)]
        conns = [enter(n, two_servers[i % 2], streaming=False) for i, n in enumerate(names)]
        line = f"BUSC:{control}"
        replies = run_together([lambda c=c, line=line: c.cmd(line) for c in conns])
        assert all(r.code == 225 for r in replies), replies
        pids = [r.text for r in replies if r.text]
        assert all(PID.fullmatch(p) for p in pids), pids
        assert len(pids) == len(set(pids)) == count // 2
        waiting = seeks_of(conns[0], set(names))
        assert len(waiting) == count % 2, waiting
        players: list[str] = []
        for r, c in zip(replies, conns, strict=True):
            pid = r.text
            if not pid:
                continue
            stat = c.cmd(f"STAT:{pid}").text.split(":")
            assert stat[8] == "N", stat  # the one whose BUSC paired plays black
            assert stat[4] == "0" and stat[9] == "1"
            players += stat[1:3]
        assert len(players) == len(set(players)) == 2 * (count // 2)
        assert set(players) | {w.split(":")[0] for w in waiting} == set(names)
        for c in conns:  # each user's PPEN: one game at most, against one of the others
            ppen = c.cmd("PPEN:0")
            games = ppen.text.split(",")[1:] if ppen.code == 203 else []
            assert len(games) <= 1, ppen
            for rec in games:
                assert rec.split(":")[0] in pids and rec.split(":")[1] in names, rec
        if waiting:
            name = waiting[0].split(":")[0]
            assert conns[names.index(name)].cmd("BUSR").code == 227


def test_a_live_seek_goes_with_its_owner_s_last_session(two_servers, new_user, enter):
    """Issue 32: a live seek paired a second after its owner left, and its absent
    player's clock ran. Across two server processes on one database, the owner's last
    session takes its live seek along; a correspondence seek stays; nobody pairs with
    the live one afterwards."""
    live, slow = fresh_control(), fresh_control().replace("+11s", "+1d")
    a_name, b_name = new_user("a"), new_user("b")
    a_here = enter(a_name, two_servers[0], streaming=False)
    a_there = enter(a_name, two_servers[1], streaming=False)
    b = enter(b_name, two_servers[0], streaming=False)
    assert a_here.cmd(f"BUSC:{live}").code == 225
    assert a_here.cmd(f"BUSC:{slow}").code == 225
    a_here.close()  # the seeks' session, not the owner's last (tests/store/test_presence.py)
    a_there.close()
    assert wait_for(lambda: seeks_of(b, {a_name}) == [f"{a_name}:{slow}"], WAIT)
    assert b.cmd(f"BUSC:{live}") == Reply(225, False, b"")  # waits: nobody to pair with
    assert b.cmd(f"BUSR:{live}").code == 227
    r = b.cmd(f"BUSC:{slow}")  # correspondence: a's seek still pairs
    assert r.code == 225 and PID.fullmatch(r.text), r


def test_a_player_holds_at_most_three_seeks(new_user, enter):
    """Issue 32: controls are open-ended, so one seek per control was no limit."""
    a_name, b_name = new_user("a"), new_user("b")
    a, b = enter(a_name, streaming=False), enter(b_name, streaming=False)
    controls = [fresh_control() for _ in range(5)]
    for control in controls[:3]:
        assert a.cmd(f"BUSC:{control}").code == 225
    r = a.cmd(f"BUSC:{controls[3]}")
    assert r.code == 848 and "3 seeks" in r.text and "BUSR" in r.text, r
    assert a.cmd(f"BUSC:{controls[0]}").code == 848  # the same control: as before
    assert len(seeks_of(b, {a_name})) == 3
    assert b.cmd(f"BUSC:{controls[4]}").code == 225
    r = a.cmd(f"BUSC:{controls[4]}")  # pairs at once: holds no seek, so allowed
    assert r.code == 225 and PID.fullmatch(r.text), r
    assert a.cmd(f"BUSR:{controls[0]}").code == 227
    assert a.cmd(f"BUSC:{controls[3]}").code == 225
    assert a.cmd("BUSR").code == 227


def test_one_seek_from_many_sessions_of_a_user(two_servers, new_user, enter):
    control = fresh_control()
    name = new_user("s")
    conns = [enter(name, two_servers[i % 2], streaming=False) for i in range(10)]
    replies = run_together([lambda c=c: c.cmd(f"BUSC:{control}") for c in conns])
    codes = sorted(r.code for r in replies)
    assert codes == [225] + [848] * 9, codes
    assert seeks_of(conns[0], {name}) == [f"{name}:{control}"]
    assert conns[1].cmd("BUSR").code == 227


# -- takeback and hints --------------------------------------------------------------------


def test_takeback_events(start, new_user, enter):
    g = start()
    o_name = new_user("o")
    o = enter(o_name)
    assert o.cmd(f"OBSV:{g.pid}").code == 220
    g.play("Nf3")
    assert g.w.cmd(f"ATRS:{g.pid}:{g.black}").code == 229
    for c in (g.w, g.b, o):
        assert c.until(kind("RETROCESO", g.pid))[-1].fields == (g.pid, g.white)
    assert g.b.cmd(f"RATR:{g.pid}:N:{g.white}").code == 230
    for c in (g.w, g.b, o):
        assert c.until(kind("RETROCESO_RECHAZADO", g.pid))[-1].fields == (g.pid, g.black)
    assert g.w.cmd(f"ATRS:{g.pid}:{g.black}").code == 229
    assert g.b.cmd(f"RATR:{g.pid}:S:{g.white}").code == 230
    for c in (g.w, g.b, o):
        got = c.until(kind("RETROCESO_ACEPTADO", g.pid))
        assert got[-1].fields == (g.pid, g.black, "1", START_FEN), got[-1]
    g.board.pop()
    g.play("Nf3", "Nf6", "Nc3")
    assert g.w.cmd(f"ATRS:{g.pid}:{g.black}").code == 229
    assert g.b.cmd(f"RATR:{g.pid}:S:{g.white}").code == 230
    g.board.pop()
    for c in (g.w, g.b, o):
        e = c.until(kind("RETROCESO_ACEPTADO", g.pid))[-1]
        assert e.fields == (g.pid, g.black, "3", g.board.fen()), e
    assert g.b.cmd(f"STAT:{g.pid}").text.split(":")[9] == "3"
    assert g.w.cmd(f"SPAR:{g.pid}:0").text == "1:g1f3:0:0621:0,2:g8f6:0:6245:0"
    g.play("e4")  # another move for ply 3
    for c in (g.b, o):
        e = c.until(kind("FIN_DE_TURNO", g.pid, "3"))[-1]
        assert e.fields[2] == "e2e4", e
    assert g.b.cmd(f"ATRS:{g.pid}:{g.white}").code == 850  # the last move is white's
    assert g.w.cmd(f"RATR:{g.pid}:S:{g.black}").code == 850  # no request pending


def test_takeback_declined_by_a_move(start):
    g = start()
    g.play("e4")
    assert g.w.cmd(f"ATRS:{g.pid}:{g.black}").code == 229
    g.play("c5")
    assert g.b.cmd(f"RATR:{g.pid}:S:{g.white}").code == 850
    got = g.w.until(kind("FIN_DE_TURNO", g.pid, "2"))
    assert "RETROCESO_ACEPTADO" not in kinds(got) and "RETROCESO_RECHAZADO" not in kinds(got)


def test_hints_over_tcp(start):
    g = start()
    g.play("e4", "d5", "e5", "f5")
    assert g.w.cmd(f"HOVR:{g.pid}:e5").text == "e6,f6"  # en passant
    assert g.w.cmd(f"HOVR:{g.pid}:e1").text == "e2"
    assert g.b.cmd(f"HOVR:{g.pid}:d5").text == ""  # black's, white to move
    assert g.b.cmd(f"HOVR:{g.pid}:e9").code == 802
    g.play("Nf3", "Nf6", "Bc4", "e6")
    assert g.w.cmd(f"HOVR:{g.pid}:e1").text == "f1,g1,e2"  # castling: the king's move


# -- the events reach a stream on another server process -----------------------------------


def test_live_events_across_processes(two_servers, new_user, enter):
    one, two = two_servers
    white, black, o_name = new_user("w"), new_user("b"), new_user("o")
    w, b = enter(white, one), enter(black, two)
    o = enter(o_name, two)
    assert w.cmd(f"JUEG:{black}").code == 200
    pid = b.cmd(f"ACEP:N:{white}").text
    assert o.cmd(f"OBSV:{pid}").code == 220
    assert w.until(kind("INCORPORACION", pid, o_name))[-1].fields == (pid, o_name, "1")
    assert w.cmd(f"CHAT:{pid}:de un proceso: a otro").code == 223
    assert b.until(kind("CHAT", pid))[-1].fields == (pid, white, "de un proceso: a otro")
    assert w.cmd(f"JGDA:{pid}:1:e2e4:0:1228:0").code == 208
    assert w.cmd(f"ATRS:{pid}:{black}").code == 229
    b.until(kind("RETROCESO", pid))
    assert "CHAT" not in kinds(o.until(kind("RETROCESO", pid)))  # the players' chat
    assert b.cmd(f"RATR:{pid}:S:{white}").code == 230
    for c in (w, b, o):
        assert c.until(kind("RETROCESO_ACEPTADO", pid))[-1].fields == (pid, black, "1", START_FEN)
    assert o.cmd(f"STAT:{pid}").text.split(":")[9] == "1"


# -- observing across connections and reconnects -------------------------------------------


def test_observe_from_another_connection_reaches_the_stream(two_servers, new_user, enter):
    """OBSV sent on one connection (another server process) makes the user's open stream
    carry the game; OBSF stops it."""
    one, two = two_servers
    white, black, o_name = new_user("w"), new_user("b"), new_user("o")
    w, b = enter(white, one), enter(black, one)
    stream = enter(o_name, two)
    commands = enter(o_name, one, streaming=False)
    assert w.cmd(f"JUEG:{black}").code == 200
    pid = b.cmd(f"ACEP:N:{white}").text
    assert commands.cmd(f"OBSV:{pid}").code == 220
    stream.until(kind("INCORPORACION", pid, o_name))
    assert w.cmd(f"JGDA:{pid}:1:e2e4:0:1228:0").code == 208
    e = stream.until(kind("FIN_DE_TURNO", pid, "1"))[-1]
    assert e.fields[2] == "e2e4"
    assert commands.cmd(f"OBSF:{pid}").code == 221
    stream.until(kind("ABANDONO", pid, o_name))
    assert b.cmd(f"JGDA:{pid}:2:e7e5:0:5236:0").code == 208
    target = new_user("t")
    assert commands.cmd(f"JUEG:{target}").code == 200
    got = stream.until(kind("DESAFIO", o_name, target))
    assert [e for e in got if e.kind == "FIN_DE_TURNO"] == [], got


def test_observer_catches_up_after_a_reconnect(start, new_user, enter, live_server):
    g = start()
    o_name = new_user("o")
    o = enter(o_name)
    assert o.cmd(f"OBSV:{g.pid}").code == 220
    cursor = o.until(kind("INCORPORACION", g.pid, o_name))[-1].cursor
    o.close()
    g.play("e4")
    assert g.w.cmd(f"CHAT:{g.pid}:players only").code == 223
    assert g.w.cmd(f"ATRS:{g.pid}:{g.black}").code == 229
    g.play("c5")  # declines the takeback silently
    again = Live(live_server)
    try:
        assert again.cmd(f"USER:{o_name}").code == 101
        assert again.cmd(f"PASS:{PASSWORD}").code == 102
        assert again.cmd(f"EVEN:{cursor}").code == 219
        got = again.until(kind("FIN_DE_TURNO", g.pid, "2"))
        assert [(e.kind, e.fields[:2]) for e in got] == [
            ("FIN_DE_TURNO", (g.pid, "1")),
            ("RETROCESO", (g.pid, g.white)),
            ("FIN_DE_TURNO", (g.pid, "2")),
        ]  # no CHAT: the players' own
        stat = again.cmd(f"STAT:{g.pid}").text.split(":")
        assert stat[8] == "-" and stat[9] == "3"
    finally:
        again.close()
