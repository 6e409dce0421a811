"""Live play through the session in process, written from docs/protocol.md section 4,
"Live play: observers, chat, pairing, hints, takeback": OBSV, OBSF, OBSL, CHAT, CHLE,
BUSC, BUSL, BUSR, HOVR, ATRS, RATR, JUEG's ``privada``, and STAT, SPAR, RELJ and PGNX
as an observer. Every session here is timed by the test's FakeClock, so chat times,
the chat rate and the clocks of a takeback are exact. The events these commands make
are checked over TCP on both stores (tests/e2e/test_live.py)."""

from __future__ import annotations

import io
import itertools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import chess
import chess.pgn
import pytest
import sqlalchemy

from tests.support.clock import DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS, START_MS, FakeClock
from tests.support.common import PASSWORD
from tests.support.play import jgda, raw_move
from tests.support.session import Client, Frame, frame, make_session

FECHA = re.compile(r"[0-9]{11}")
PID = re.compile(r"P[0-9]{7}")
FAR_FUTURE = "99999999999"
START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


# -- fixtures and helpers -----------------------------------------------------------------


@pytest.fixture
def enter(session_db, loop, clock: FakeClock) -> Callable[..., Client]:  # type: ignore[no-untyped-def]
    """enter(name): a new session logged in as ``name``, timed by the test's FakeClock."""

    def do(name: str, password: str = PASSWORD) -> Client:
        c = Client(make_session(session_db, clock=clock), loop)
        assert c.raw(f"USER:{name}") == frame(101, name)
        assert c.raw(f"PASS:{password}") == frame(102, name)
        return c

    return do


@dataclass
class LiveGame:
    """A game between two sessions; ``board`` follows the moves played through it."""

    pid: str
    white: str
    black: str
    w: Client
    b: Client
    board: chess.Board = field(default_factory=chess.Board)

    @property
    def ply(self) -> int:
        return len(self.board.move_stack) + 1

    @property
    def mover(self) -> Client:
        return self.w if self.board.turn == chess.WHITE else self.b

    def send(self, san: str) -> Frame:
        move = self.board.parse_san(san)
        r = self.mover.cmd(jgda(self.pid, self.ply, move))
        if r.code == 208:
            self.board.push(move)
        return r

    def play(self, *sans: str) -> None:
        for san in sans:
            r = self.send(san)
            assert (r.code, r.text) == (208, ""), (san, r)

    def resign(self) -> None:
        assert self.b.cmd(f"REND:{self.pid}:{self.white}").code == 211


@pytest.fixture
def start(user, enter) -> Callable[..., LiveGame]:  # type: ignore[no-untyped-def]
    """start(control=None, private=False): two new users; black challenges (JUEG, with
    the control and ``privada`` when given), white accepts playing white."""

    def make(control: str | None = None, private: bool | None = None) -> LiveGame:
        white, black = user("w"), user("b")
        w, b = enter(white), enter(black)
        line = f"JUEG:{white}"
        if control is not None or private is not None:
            line += f":{control or 'none'}"
        if private is not None:
            line += f":{int(private)}"
        assert b.raw(line) == frame(200), line
        r = w.cmd(f"ACEP:B:{black}")
        assert r.code == 202 and PID.fullmatch(r.text), r
        return LiveGame(r.text, white, black, w, b)

    return make


@pytest.fixture
def game(start) -> LiveGame:  # type: ignore[no-untyped-def]
    return start()


@pytest.fixture
def observer(user, enter) -> Callable[..., tuple[str, Client]]:  # type: ignore[no-untyped-def]
    """observer(game): a new user observing the game (OBSV answered 220)."""

    def make(g: LiveGame, prefix: str = "o") -> tuple[str, Client]:
        name = user(prefix)
        c = enter(name)
        assert c.raw(f"OBSV:{g.pid}") == frame(220, g.pid)
        return name, c

    return make


def stat_fields(c: Client, pid: str) -> list[str]:
    r = c.cmd(f"STAT:{pid}")
    assert r.code == 206, r
    fields = r.text.split(":")
    assert len(fields) == 10, r.text
    return fields


def joined(parts: list[Frame], code: int) -> str:
    """The data of a (possibly multi-part) answer, parts joined; checks the framing."""
    assert parts, "no answer"
    for i, p in enumerate(parts):
        assert p.code == code, (i, p)
        assert p.more == (i < len(parts) - 1), (i, p)
        assert len(p.data) <= 4096
    return "".join(p.text for p in parts)


def list_records(c: Client, line: str, code: int) -> list[str]:
    """The records of a comma-separated list answer (OBSL, BUSL); [] for empty data."""
    parts = c.all(line)
    for i, p in enumerate(parts):
        assert p.code == code, (i, p)
        assert p.more == (i < len(parts) - 1), (i, p)
    text = ",".join(p.text for p in parts if p.text)
    return text.split(",") if text else []


@dataclass(frozen=True)
class ChatLine:
    ms: int
    canal: str
    ply: int
    user: str
    texto: str


def chle(c: Client, pid: str, since: str = "0") -> tuple[str, list[ChatLine]]:
    """CHLE: (the fecha to send back, the messages), checking the line format."""
    parts = c.all(f"CHLE:{pid}:{since}")
    lines: list[str] = []
    for i, p in enumerate(parts):
        assert p.code == 224, (i, p)
        assert p.more == (i < len(parts) - 1), (i, p)
        assert len(p.data) <= 4096
        assert p.text, f"part {i} is empty"
        lines += p.text.split("\n")  # parts are cut between lines
    assert FECHA.fullmatch(lines[0]), lines[0]
    out = []
    for line in lines[1:]:
        ms, canal, ply, name, texto = line.split(":", 4)
        assert re.fullmatch(r"[0-9]+", ms) and re.fullmatch(r"[0-9]+", ply), line
        assert canal in ("J", "O"), line
        out.append(ChatLine(int(ms), canal, int(ply), name, texto))
    return lines[0], out


def said(lines: list[ChatLine]) -> list[tuple[str, str, str]]:
    return [(x.canal, x.user, x.texto) for x in lines]


def pgn_text(c: Client, line: str) -> str:
    """PGNX's text: the parts' lines joined by LF (parts are cut between lines)."""
    parts = c.all(line)
    joined(parts, 214)
    return "\n".join(p.text for p in parts)


def read_pgn(text: str) -> chess.pgn.Game:
    g = chess.pgn.read_game(io.StringIO(text))
    assert g is not None, text
    assert not g.errors, g.errors
    return g


_controls = itertools.count()


def fresh_control() -> str:
    """An explicit time control no other test of the module seeks, written as the server
    writes it (odd minutes are never whole hours)."""
    return f"{101 + 2 * next(_controls)}m+7s"


# -- OBSV, OBSF, OBSL -------------------------------------------------------------------------


def test_observe_answers_the_game(game, user, enter):
    o = enter(user("o"))
    assert o.raw(f"OBSV:{game.pid}") == frame(220, game.pid)
    assert o.raw(f"OBSV:{game.pid}") == frame(220, game.pid)  # again: 220, no change
    assert list_records(o, f"OBSL:{game.pid}", 222) == [o.session.caller.name]  # listed once


def test_observe_failures(game, start, user, enter):
    o = enter(user("o"))
    assert o.cmd("OBSV:P9999999").code == 830
    assert game.w.cmd(f"OBSV:{game.pid}").code == 846  # a player
    assert game.b.cmd(f"OBSV:{game.pid}").code == 846
    private = start("none", True)
    assert o.raw(f"OBSV:{private.pid}") == frame(830, f"no game {private.pid}")
    over = start()
    over.resign()
    assert o.cmd(f"OBSV:{over.pid}").code == 833
    assert list_records(over.w, f"OBSL:{over.pid}", 222) == []
    assert list_records(private.w, f"OBSL:{private.pid}", 222) == []
    assert not o.closed


def test_private_flag_zero_or_left_out_is_public(start, user, enter):
    o = enter(user("o"))
    assert o.code(f"OBSV:{start('none', False).pid}") == 220
    assert o.code(f"OBSV:{start('none').pid}") == 220
    assert o.code(f"OBSV:{start().pid}") == 220


def test_private_game_with_a_clock(start, user, enter):
    g = start("3d", True)
    assert enter(user("o")).code(f"OBSV:{g.pid}") == 830
    r = g.w.cmd(f"RELJ:{g.pid}")
    assert r.code == 217 and r.text.split(":")[2] == "3d", r  # the control is kept


def test_observer_reads_stat_spar_relj_pgnx_hovr_obsl(start, observer):
    g = start("3d")
    g.play("e4", "c5", "Nf3")
    name, o = observer(g)
    mine = stat_fields(o, g.pid)
    theirs = stat_fields(g.w, g.pid)
    assert mine[8] == "-"  # an observer's colour
    assert mine[:8] + mine[9:] == theirs[:8] + theirs[9:]
    assert mine[9] == "4"
    assert o.all(f"SPAR:{g.pid}:0") == g.b.all(f"SPAR:{g.pid}:0")
    assert o.cmd(f"SPAR:{g.pid}:1").text == g.w.cmd(f"SPAR:{g.pid}:1").text
    assert o.cmd(f"SPAR:{g.pid}:3").code == 839
    assert o.cmd(f"RELJ:{g.pid}") == g.w.cmd(f"RELJ:{g.pid}")  # the same clock, same time
    assert o.all(f"PGNX:{g.pid}") == g.w.all(f"PGNX:{g.pid}")
    assert o.cmd(f"HOVR:{g.pid}:g8").text == "f6,h6"  # black to move
    assert list_records(o, f"OBSL:{g.pid}", 222) == [name]


def test_strangers_get_831_and_so_do_observers_after_obsf(game, observer, user, enter):
    game.play("e4")
    stranger = enter(user("s"))
    name, o = observer(game)
    reads = (
        f"STAT:{game.pid}",
        f"SPAR:{game.pid}:0",
        f"RELJ:{game.pid}",
        f"PGNX:{game.pid}",
        f"PGNX:{game.pid}:1",
        f"HOVR:{game.pid}:e7",
        f"OBSL:{game.pid}",
        f"CHLE:{game.pid}:0",
        f"CHAT:{game.pid}:hola",
    )
    for line in reads:
        assert stranger.code(line) == 831, line
        assert o.cmd(line).code < 300, line
    assert o.raw(f"OBSF:{game.pid}") == frame(221, game.pid)
    for line in reads:
        assert o.code(line) == 831, line
    assert o.code(f"OBSF:{game.pid}") == 846  # no longer observing
    assert list_records(game.w, f"OBSL:{game.pid}", 222) == []
    assert not o.closed and not stranger.closed
    assert o.raw(f"OBSV:{game.pid}") == frame(220, game.pid)  # may come back
    assert stat_fields(o, game.pid)[8] == "-"
    assert list_records(game.b, f"OBSL:{game.pid}", 222) == [name]


def stranger_lines(pid: str, player: str) -> list[str]:
    """Every command about a game, as a stranger to it would send it."""
    return [
        f"STAT:{pid}",
        f"SPAR:{pid}:0",
        f"JGDA:{pid}:1:e2e4:0:1228:0",
        f"TBLS:{pid}:{player}",
        f"RTBL:{pid}:S:{player}",
        f"REND:{pid}:{player}",
        f"FINP:{pid}:{player}",
        f"RELJ:{pid}",
        f"OBSV:{pid}",
        f"OBSF:{pid}",
        f"OBSL:{pid}",
        f"CHAT:{pid}:hola",
        f"CHLE:{pid}:0",
        f"HOVR:{pid}:e2",
        f"ATRS:{pid}:{player}",
        f"RATR:{pid}:S:{player}",
        f"PGNX:{pid}",
        f"PGNX:{pid}:1",
    ]


def test_a_stranger_cannot_tell_a_private_game_from_none(start, user, enter):
    """Issue 32: a stranger got 845 from OBSV, 833 from a finished private game, and 831
    from every command for a game that exists against 830 for one that does not."""
    active = start("10m", True)
    active.play("e4")
    finished = start(None, True)
    finished.resign()
    stranger = enter(user("s"))
    missing = "P9999999"
    for line in stranger_lines("<P>", active.white):
        for pid in (missing, active.pid, finished.pid):
            got = stranger.raw(line.replace("<P>", pid))
            assert got == frame(830, f"no game {pid}"), (line, pid, got)
    assert not stranger.closed
    # The players keep their answers.
    assert active.w.code(f"OBSV:{active.pid}") == 846
    assert active.b.code(f"STAT:{active.pid}") == 206
    assert finished.w.code(f"REND:{finished.pid}:{finished.black}") == 833
    assert finished.b.code(f"PGNX:{finished.pid}") == 214


def test_a_public_game_stays_visible_to_strangers(start, user, enter):
    active, finished = start("10m"), start()
    finished.resign()
    stranger = enter(user("s"))
    assert stranger.code(f"STAT:{active.pid}") == 831
    assert stranger.code(f"STAT:{finished.pid}") == 831
    assert stranger.code(f"OBSV:{finished.pid}") == 833
    assert stranger.code(f"OBSF:{active.pid}") == 846
    assert stranger.raw(f"OBSV:{active.pid}") == frame(220, active.pid)


def test_unknown_game_is_830_for_everyone(game):
    for line in (
        "STAT:P9999999",
        "SPAR:P9999999:0",
        "RELJ:P9999999",
        "PGNX:P9999999",
        "OBSL:P9999999",
        "CHAT:P9999999:hola",
        "CHLE:P9999999:0",
        "HOVR:P9999999:e2",
        f"ATRS:P9999999:{game.black}",
        f"RATR:P9999999:S:{game.black}",
    ):
        assert game.w.code(line) == 830, line


def test_obsf_when_not_observing(game, user, enter):
    o = enter(user("o"))
    assert o.code(f"OBSF:{game.pid}") == 846
    assert game.w.code(f"OBSF:{game.pid}") == 846  # a player observes nothing
    assert o.code("OBSF:P9999999") in (830, 846)


def test_obsl_sorted_by_name_and_shared(game, user, enter):
    names = [user(p) for p in ("zz", "mm", "aa")]
    clients = [enter(n) for n in names]
    for c in clients:
        assert c.code(f"OBSV:{game.pid}") == 220
    for c in (game.w, game.b, *clients):
        assert list_records(c, f"OBSL:{game.pid}", 222) == sorted(names)
    assert clients[1].code(f"OBSF:{game.pid}") == 221
    assert list_records(game.w, f"OBSL:{game.pid}", 222) == sorted([names[0], names[2]])


def test_obsl_multi_part(game, user, enter):
    names = []
    for _ in range(135):  # 135 names of over 30 bytes: more than one 4,096-byte part
        name = user("observer_long_name_xyz")
        assert enter(name).code(f"OBSV:{game.pid}") == 220
        names.append(name)
    parts = game.w.all(f"OBSL:{game.pid}")
    assert len(parts) > 1
    assert [p.more for p in parts] == [True] * (len(parts) - 1) + [False]
    assert all(p.code == 222 and len(p.data) <= 4096 for p in parts)
    records = [r for p in parts for r in p.text.split(",")]  # cut between records
    assert records == sorted(names)


def test_observing_lasts_across_sessions(game, user, enter):
    name = user("o")
    assert enter(name).code(f"OBSV:{game.pid}") == 220
    later = enter(name)  # another connection, later
    assert stat_fields(later, game.pid)[8] == "-"
    assert later.code(f"OBSF:{game.pid}") == 221
    assert enter(name).code(f"STAT:{game.pid}") == 831


def test_observer_of_a_finished_game(game, observer):
    game.play("e4", "e5")
    _name, o = observer(game)
    game.resign()
    fields = stat_fields(o, game.pid)  # STAT: players and observers
    assert fields[4:6] == ["2", "1"] and fields[8] == "-"
    assert o.cmd(f"SPAR:{game.pid}:0").text == "1:e2e4:0:1228:0,2:e7e5:0:5236:0"  # finished too
    relj = o.cmd(f"RELJ:{game.pid}")
    assert relj.code == 217 and relj.text.endswith(":resignation"), relj
    assert o.cmd(f"PGNX:{game.pid}").code == 214
    assert o.code(f"HOVR:{game.pid}:e2") == 833
    r = o.cmd(f"CHAT:{game.pid}:good game")  # observing ends with the game
    assert r.code in (831, 833), r
    assert said(chle(game.w, game.pid)[1]) == []  # nothing was stored


def test_observer_and_player_with_the_same_name_elsewhere(start, user, enter):
    """A player of one game may observe another."""
    g1, g2 = start(), start()
    assert g1.w.code(f"OBSV:{g2.pid}") == 220
    assert stat_fields(g1.w, g2.pid)[8] == "-"
    assert stat_fields(g1.w, g1.pid)[8] == "B"


# -- CHAT, CHLE ---------------------------------------------------------------------------------


def test_chat_between_players_then_chle(game, clock):
    assert game.w.raw(f"CHAT:{game.pid}:hola: buena suerte") == frame(223)
    clock.advance(5 * SECOND_MS)
    game.play("e4")
    assert game.b.raw(f"CHAT:{game.pid}:gracias:igualmente::") == frame(223)
    for c in (game.w, game.b):
        fecha, lines = chle(c, game.pid)
        assert FECHA.fullmatch(fecha)
        assert lines == [
            ChatLine(START_MS, "J", 0, game.white, "hola: buena suerte"),
            ChatLine(START_MS + 5 * SECOND_MS, "J", 1, game.black, "gracias:igualmente::"),
        ]


def test_chat_text_is_the_rest_of_the_line(game):
    for text in ("a:b:c", ":", "::leading", "trailing:", " spaced  ", "12:30:00"):
        assert game.w.raw(f"CHAT:{game.pid}:{text}") == frame(223), repr(text)
    assert [x.texto for x in chle(game.b, game.pid)[1]] == [
        "a:b:c", ":", "::leading", "trailing:", " spaced  ", "12:30:00"
    ]  # fmt: skip


def test_chat_lengths(game):
    game.w.session.games.live.chat_per_minute = 100
    assert game.w.code(f"CHAT:{game.pid}:{'x' * 500}") == 223
    assert game.w.code(f"CHAT:{game.pid}:{'é' * 500}") == 223  # characters, not bytes
    assert game.w.code(f"CHAT:{game.pid}:{'😀' * 500}") == 223  # 2,014 bytes, a valid line
    for too_long in ("x" * 501, "é" * 501):
        r = game.w.cmd(f"CHAT:{game.pid}:{too_long}")
        assert r.code == 802 and r.text, r
    r = game.w.cmd(f"CHAT:{game.pid}:")
    assert r.code == 802, r  # empty
    assert game.w.cmd(f"CHAT:{game.pid}").code == 801  # no texto at all
    texts = [x.texto for x in chle(game.b, game.pid)[1]]
    assert texts == ["x" * 500, "é" * 500, "😀" * 500]


@pytest.mark.parametrize(
    "bad",
    ["\x01", "\t", "\x7f", "\x1b[31m", "\u202e", "\u200b", "\ufeff", "\u2028", "\u2029", "\x85"],
)
def test_chat_refuses_control_format_and_separator_characters(game, bad):
    r = game.w.cmd(f"CHAT:{game.pid}:before{bad}after")
    assert r.code == 802, (bad, r)
    assert f"{ord(bad[0]):04x}" in r.text.lower(), r.text  # the reason names it
    assert chle(game.b, game.pid)[1] == []
    assert not game.w.closed


@pytest.mark.parametrize(
    "blank",
    ["\u3164", "\u2800\u2800", "\u0301" * 400, "x" + "\u0301" * 400, "\u0378", "\ue000", "   "],
    ids=["hangul-filler", "braille-blank", "marks", "zalgo", "unassigned", "private-use", "spaces"],
)
def test_chat_refuses_text_that_shows_nothing(game, blank):
    r = game.w.cmd(f"CHAT:{game.pid}:{blank}")
    assert r.code == 802 and r.text.startswith("CHAT: invalid message: "), (blank, r)
    assert "visible" in r.text or "combining marks" in r.text, r
    assert chle(game.b, game.pid)[1] == []


def test_chat_accepts_letters_scripts_and_symbols(game):
    text = "¡Olé! ñandú — 象棋 ♞ شطرنج 👍"
    assert game.b.code(f"CHAT:{game.pid}:{text}") == 223
    assert [x.texto for x in chle(game.w, game.pid)[1]] == [text]


def test_chat_channels_while_the_game_runs_and_after(game, observer, clock):
    o_name, o = observer(game, "oa")
    p_name, p = observer(game, "ob")
    assert game.w.code(f"CHAT:{game.pid}:players one") == 223
    clock.advance(SECOND_MS)
    assert o.code(f"CHAT:{game.pid}:observers one") == 223
    game.play("e4")
    clock.advance(SECOND_MS)
    assert p.code(f"CHAT:{game.pid}:observers two") == 223
    assert game.b.code(f"CHAT:{game.pid}:players two") == 223
    players = [("J", game.white, "players one"), ("J", game.black, "players two")]
    observers = [("O", o_name, "observers one"), ("O", p_name, "observers two")]
    for c in (game.w, game.b):
        assert said(chle(c, game.pid)[1]) == players  # J only while it runs
    for c in (o, p):
        assert said(chle(c, game.pid)[1]) == observers  # O only
    whisper = chle(o, game.pid)[1][1]
    assert (whisper.ply, whisper.ms) == (1, START_MS + 2 * SECOND_MS)
    game.resign()
    for c in (game.w, game.b):  # once over: J and O, oldest first
        assert said(chle(c, game.pid)[1]) == [players[0], observers[0], observers[1], players[1]]
    assert said(chle(o, game.pid)[1]) == observers  # still O only
    assert game.w.code(f"CHAT:{game.pid}:good game") == 223  # post-game talk
    assert said(chle(game.b, game.pid)[1])[-1] == ("J", game.white, "good game")
    assert game.w.code(f"OBSV:{game.pid}") in (833, 846)


def test_chle_since_a_fecha_misses_nothing(game, observer):
    fecha, lines = chle(game.w, game.pid)
    assert lines == []
    seen: list[tuple[str, str, str]] = []
    for i in range(6):
        assert game.b.code(f"CHAT:{game.pid}:m{i}") == 223
        fecha, lines = chle(game.w, game.pid, fecha)  # always the last fecha received
        for x in said(lines):
            if x not in seen:  # a record may come twice; applied idempotently
                seen.append(x)
    assert seen == [("J", game.black, f"m{i}") for i in range(6)]
    r = game.w.cmd(f"CHLE:{game.pid}:{FAR_FUTURE}")
    assert r.code == 224 and FECHA.fullmatch(r.text), r  # no message: the fecha alone
    assert said(chle(game.w, game.pid, "0")[1]) == seen  # 0: from the beginning


def test_chle_multi_part(game):
    game.w.session.games.live.chat_per_minute = 100
    texts = [f"{i}:" + "ñ" * 400 for i in range(12)]  # 12 lines of ~830 bytes
    for t in texts:
        assert game.w.code(f"CHAT:{game.pid}:{t}") == 223
    parts = game.b.all(f"CHLE:{game.pid}:0")
    assert len(parts) > 1
    _, lines = chle(game.b, game.pid)
    assert [x.texto for x in lines] == texts


def test_chat_rate(start, clock):
    g, _h = start(), start()
    g.w.session.games.live.chat_per_minute = 3
    for i in range(3):
        assert g.w.code(f"CHAT:{g.pid}:m{i}") == 223
    r = g.w.cmd(f"CHAT:{g.pid}:m3")
    assert r.code == 847 and r.text, r
    assert g.b.code(f"CHAT:{g.pid}:the opponent may still talk") == 223
    clock.advance(30 * SECOND_MS)
    assert g.w.code(f"CHAT:{g.pid}:m4") == 847
    assert [x.texto for x in chle(g.b, g.pid)[1]] == [
        "m0", "m1", "m2", "the opponent may still talk"
    ]  # fmt: skip
    clock.advance(31 * SECOND_MS)  # more than a minute after the three
    assert g.w.code(f"CHAT:{g.pid}:m5") == 223


def test_chat_rate_default_is_ten_a_minute(game, clock):
    for i in range(10):
        assert game.b.code(f"CHAT:{game.pid}:n{i}") == 223
    assert game.b.code(f"CHAT:{game.pid}:n10") == 847
    clock.advance(61 * SECOND_MS)
    assert game.b.code(f"CHAT:{game.pid}:n11") == 223


def test_chat_rate_is_the_users_across_games_and_sessions(start, enter):
    g, h = start(), start()
    other = enter(g.white)  # a second session of g's white, observing h
    for c in (g.w, other):
        c.session.games.live.chat_per_minute = 3
    assert other.code(f"OBSV:{h.pid}") == 220
    assert g.w.code(f"CHAT:{g.pid}:a0") == 223
    assert g.w.code(f"CHAT:{g.pid}:a1") == 223
    assert other.code(f"CHAT:{h.pid}:a2") == 223  # the third in the minute: another game
    assert other.code(f"CHAT:{h.pid}:a3") == 847
    assert g.w.code(f"CHAT:{g.pid}:a4") == 847
    assert other.code(f"CHAT:{g.pid}:a5") == 847


def test_observer_chat_rate(game, observer, clock):
    _, o = observer(game)
    o.session.games.live.chat_per_minute = 2
    assert o.code(f"CHAT:{game.pid}:w1") == 223
    assert o.code(f"CHAT:{game.pid}:w2") == 223
    assert o.code(f"CHAT:{game.pid}:w3") == 847


def test_pgnx_with_chat(game, observer, clock):
    o_name, o = observer(game)
    assert game.w.code(f"CHAT:{game.pid}:good luck") == 223  # before the first move
    game.play("e4")
    assert game.b.code(f"CHAT:{game.pid}:thanks: you too") == 223  # after 1. e4
    assert o.code(f"CHAT:{game.pid}:sharp") == 223
    game.play("e5", "Nf3")
    assert game.w.code(f"CHAT:{game.pid}:your move") == 223  # after 2. Nf3

    plain = pgn_text(game.w, f"PGNX:{game.pid}")
    assert "{" not in plain  # no clock, no end, no chat: no comment at all
    assert plain.rstrip().endswith("1. e4 e5 2. Nf3 *")

    def comments(text: str) -> list[str]:
        g = read_pgn(text)
        return [g.comment] + [node.comment for node in g.mainline()]

    text = pgn_text(game.w, f"PGNX:{game.pid}:1")
    assert re.search(r"\{\s*" + re.escape(f"{game.white}: good luck") + r"\s*\}", text), text
    c = comments(text)
    assert f"{game.white}: good luck" in c[0]
    assert f"{game.black}: thanks: you too" in c[1]
    assert c[2] == ""
    assert f"{game.white}: your move" in c[3]
    assert "sharp" not in text  # the observers' channel is not the players' while it runs

    c = comments(pgn_text(o, f"PGNX:{game.pid}:1"))  # an observer reads O only
    assert c[1] == f"{o_name} (whisper): sharp"
    assert "good luck" not in c[0] and "your move" not in c[3]
    assert pgn_text(o, f"PGNX:{game.pid}") == plain

    game.resign()
    c = comments(pgn_text(game.b, f"PGNX:{game.pid}:1"))  # over: both channels
    assert f"{game.black}: thanks: you too" in c[1]
    assert f"{o_name} (whisper): sharp" in c[1]
    assert c[1].index("thanks") < c[1].index("sharp")  # in the order said


def test_pgnx_with_chat_and_clock(start, clock):
    g = start("3d")
    clock.advance(HOUR_MS)
    g.play("d4")
    assert g.b.code(f"CHAT:{g.pid}:hmm") == 223
    text = pgn_text(g.w, f"PGNX:{g.pid}:1")
    node = read_pgn(text).next()
    assert node is not None
    assert node.clock() == 3 * 24 * 3600  # the %clk survives next to the message
    assert f"{g.black}: hmm" in node.comment


# -- BUSC, BUSL, BUSR ---------------------------------------------------------------------


@pytest.fixture
def seeker(user, enter) -> Callable[..., tuple[str, Client]]:  # type: ignore[no-untyped-def]
    def make(prefix: str = "s") -> tuple[str, Client]:
        name = user(prefix)
        return name, enter(name)

    return make


def seeks_of(c: Client, names: set[str] | list[str]) -> list[str]:
    """BUSL's records of these users, in BUSL's order."""
    wanted = set(names)
    return [r for r in list_records(c, "BUSL", 226) if r.split(":", 1)[0] in wanted]


def test_a_seek_waits_then_pairs(seeker, clock):
    control = fresh_control()
    (ana, a), (bob, b) = seeker("ana"), seeker("bob")
    assert a.raw(f"BUSC:{control}") == frame(225)  # waits: empty data
    assert seeks_of(b, [ana, bob]) == [f"{ana}:{control}"]
    r = b.cmd(f"BUSC:{control}")
    assert r.code == 225 and PID.fullmatch(r.text), r
    pid = r.text
    assert seeks_of(b, [ana, bob]) == []  # both seeks are gone
    fields = stat_fields(a, pid)
    assert fields[1:3] == [ana, bob] and fields[8] == "B"  # the first seeker plays white
    assert fields[4:8] == ["0", "0", "0", "0"] and fields[9] == "1"
    assert stat_fields(b, pid)[8] == "N"
    assert re.fullmatch(rf"{FECHA.pattern},{pid}:{bob}:N:0", a.cmd("PPEN:0").text)
    assert re.fullmatch(rf"{FECHA.pattern},{pid}:{ana}:B:0", b.cmd("PPEN:0").text)
    relj = b.cmd(f"RELJ:{pid}").text.split(":")
    assert relj[2] == control and relj[5] == "B"  # white's clock runs from the pairing
    bank = int(control.split("m")[0]) * MINUTE_MS
    assert relj[3:5] == [str(bank), str(bank)]
    assert relj[6] == str(clock.now + bank)
    assert a.raw(jgda(pid, 1, chess.Move.from_uci("e2e4"))) == frame(208)


def test_none_seeks_pair_without_a_clock(seeker):
    (ana, a), (_bob, b) = seeker(), seeker()
    assert a.code("BUSR") in (227, 849)
    assert a.raw("BUSC:none") == frame(225)
    assert f"{ana}:none" in list_records(b, "BUSL", 226)
    r = b.cmd("BUSC:none")
    assert r.code == 225 and PID.fullmatch(r.text), r
    relj = a.cmd(f"RELJ:{r.text}").text.split(":")
    assert relj[2:8] == ["none", "0", "0", "-", "0", "0"], relj


def test_controls_are_compared_as_values(seeker):
    (ana, a), (bob, b), (cy, c) = seeker(), seeker(), seeker()
    assert a.raw("BUSC:3d+3d/3d") == frame(225)
    assert seeks_of(c, [ana]) == [f"{ana}:3d"]  # written as the preset's name
    assert a.code("BUSC:3d") == 848  # the same control, spelled otherwise
    r = b.cmd("BUSC:3d")
    assert r.code == 225 and PID.fullmatch(r.text), r
    assert stat_fields(a, r.text)[1:3] == [ana, bob]
    assert c.raw("BUSC:90m+30s") == frame(225)
    assert seeks_of(c, [cy]) == [f"{cy}:90m+30s"]
    r = a.cmd("BUSC:5400s+30s")
    assert r.code == 225 and PID.fullmatch(r.text), r
    assert stat_fields(c, r.text)[1:3] == [cy, ana]


def test_any_correspondence_pairs_with_each_correspondence_control(seeker, session_db):
    with session_db.engine.begin() as conn:  # no seek of an earlier test waits
        conn.execute(sqlalchemy.text("DELETE FROM seeks"))
    (ana, a), (bob, b), (cy, c), (dee, d) = seeker(), seeker(), seeker(), seeker()
    assert a.raw("BUSC:corr") == frame(225)
    assert seeks_of(b, [ana]) == [f"{ana}:corr"]
    assert b.code("BUSC:10m") == 225  # live: never paired with corr
    assert seeks_of(c, [ana, bob]) == [f"{ana}:corr", f"{bob}:10m"]
    r = c.cmd("BUSC:7d")  # a specific correspondence control meets corr, at its own
    assert r.code == 225 and PID.fullmatch(r.text), r
    assert stat_fields(a, r.text)[1:3] == [ana, cy]  # the first seeker plays white
    assert a.cmd(f"RELJ:{r.text}").text.split(":")[2] == "7d"
    assert d.raw("BUSC:iccf-10/50") == frame(225)
    r = a.cmd("BUSC:corr")  # corr meets the oldest waiting correspondence seek
    assert r.code == 225 and PID.fullmatch(r.text), r
    assert stat_fields(a, r.text)[1:3] == [dee, ana]
    assert a.cmd(f"RELJ:{r.text}").text.split(":")[2] == "iccf-10/50"
    # two that take any make a game of 3d
    (eve, e), (_fay, f) = seeker(), seeker()
    assert e.raw("BUSC:corr") == frame(225)
    r = f.cmd("BUSC:corr")
    assert r.code == 225 and PID.fullmatch(r.text), r
    assert e.cmd(f"RELJ:{r.text}").text.split(":")[2] == "3d"
    assert e.code("BUSC:corr") == 225
    assert e.code("BUSC:corr") == 848  # one seek of corr at a time, as of any control
    assert e.code("BUSR:corr") == 227
    assert seeks_of(a, [eve]) == []
    assert b.code("BUSR:10m") == 227


def test_different_controls_do_not_pair(seeker):
    one, two = fresh_control(), fresh_control()
    (ana, a), (bob, b) = seeker(), seeker()
    assert a.raw(f"BUSC:{one}") == frame(225)
    assert b.raw(f"BUSC:{two}") == frame(225)
    assert seeks_of(a, [ana, bob]) == [f"{ana}:{one}", f"{bob}:{two}"]
    assert a.code(f"BUSR:{one}") == 227
    assert b.code("BUSR") == 227
    assert seeks_of(a, [ana, bob]) == []


def test_busl_oldest_first_and_own_included(seeker):
    one, two = fresh_control(), fresh_control()
    (ana, a), (bob, b), (cy, c) = seeker(), seeker(), seeker()
    assert b.raw(f"BUSC:{one}") == frame(225)
    assert a.raw(f"BUSC:{two}") == frame(225)
    assert PID.fullmatch(b.cmd(f"BUSC:{two}:0").text)  # pairs with ana's: a game
    seeks = seeks_of(c, [ana, bob, cy])
    assert seeks == [f"{bob}:{one}"]
    assert c.raw(f"BUSC:{fresh_control()}") == frame(225)
    assert seeks_of(c, [ana, bob, cy])[0] == f"{bob}:{one}"
    assert seeks_of(c, [ana, bob, cy])[1].startswith(f"{cy}:")
    assert b.code("BUSR") == 227 and c.code("BUSR") == 227


def test_players_of_an_active_game_do_not_pair(seeker):
    control = fresh_control()
    (ana, a), (bob, b), (cy, c) = seeker(), seeker(), seeker()
    assert a.raw(f"BUSC:{control}") == frame(225)
    r = b.cmd(f"BUSC:{control}")
    pid = r.text
    assert PID.fullmatch(pid), r
    assert a.raw(f"BUSC:{control}") == frame(225)  # ana and bob play each other now
    assert b.raw(f"BUSC:{control}") == frame(225)  # so bob's seek waits too
    assert seeks_of(c, [ana, bob]) == [f"{ana}:{control}", f"{bob}:{control}"]
    r = c.cmd(f"BUSC:{control}")  # pairs with the oldest seek it may
    assert PID.fullmatch(r.text), r
    assert stat_fields(c, r.text)[1:3] == [ana, cy]
    assert seeks_of(c, [ana, bob, cy]) == [f"{bob}:{control}"]
    assert a.code(f"REND:{pid}:{bob}") == 211  # their game is over: they may pair again
    r = a.cmd(f"BUSC:{control}")
    assert PID.fullmatch(r.text), r
    assert stat_fields(a, r.text)[1:3] == [bob, ana]


def test_challenge_between_players_paired_by_seek_is_refused(seeker):
    control = fresh_control()
    (_ana, a), (bob, b) = seeker(), seeker()
    assert a.code(f"BUSC:{control}") == 225
    assert PID.fullmatch(b.cmd(f"BUSC:{control}").text)
    assert a.code(f"JUEG:{bob}") == 821  # one game per opponent


def test_seek_exists(seeker):
    control = fresh_control()
    (ana, a), (_bob, b) = seeker(), seeker()
    assert a.raw(f"BUSC:{control}") == frame(225)
    r = a.cmd(f"BUSC:{control}")
    assert r.code == 848 and r.text, r
    assert a.code(f"BUSC:{control}:1") == 848  # privada makes it no other seek
    assert seeks_of(b, [ana]) == [f"{ana}:{control}"]
    assert a.code(f"BUSR:{control}") == 227


def test_a_player_holds_at_most_three_waiting_seeks(seeker, enter):
    """Issue 32: controls are open-ended, so one seek per control was no cap."""
    controls = [fresh_control() for _ in range(5)]
    (ana, a), (_bob, b) = seeker(), seeker()
    for control in controls[:3]:
        assert a.raw(f"BUSC:{control}") == frame(225)
    limit = "you already hold 3 seeks, the most allowed; withdraw one (BUSR) first"
    assert a.raw(f"BUSC:{controls[3]}") == frame(848, limit)
    assert enter(ana).raw(f"BUSC:{controls[3]}") == frame(
        848, limit
    )  # the user's, not the session's
    assert len(seeks_of(b, [ana])) == 3
    assert b.raw(f"BUSC:{controls[4]}") == frame(225)
    r = a.cmd(f"BUSC:{controls[4]}")  # pairs at once: it holds no seek
    assert r.code == 225 and PID.fullmatch(r.text), r
    assert a.code(f"BUSR:{controls[0]}") == 227
    assert a.raw(f"BUSC:{controls[3]}") == frame(225)
    assert a.code("BUSR") == 227


def test_seek_exists_across_sessions(seeker, enter):
    control = fresh_control()
    ana, a = seeker()
    assert a.raw(f"BUSC:{control}") == frame(225)
    assert enter(ana).code(f"BUSC:{control}") == 848
    assert enter(ana).code(f"BUSR:{control}") == 227
    assert a.code(f"BUSR:{control}") == 849


def test_busr(seeker):
    one, two, three = fresh_control(), fresh_control(), fresh_control()
    (ana, a), (_bob, b) = seeker(), seeker()
    assert a.code("BUSR") == 849
    assert a.code(f"BUSR:{one}") == 849
    for control in (one, two, three):
        assert a.raw(f"BUSC:{control}") == frame(225)
    assert b.raw(f"BUSC:{three}") != frame(225)  # paired: bob's was no seek of ana's
    assert seeks_of(b, [ana]) == [f"{ana}:{one}", f"{ana}:{two}"]
    assert b.code(f"BUSR:{one}") == 849  # bob does not seek it
    assert a.raw(f"BUSR:{one}") == frame(227)
    assert seeks_of(b, [ana]) == [f"{ana}:{two}"]
    assert a.code(f"BUSR:{one}") == 849
    assert a.raw("BUSR") == frame(227)  # every seek of ana's
    assert seeks_of(b, [ana]) == []
    assert a.code("BUSR") == 849


def test_busr_compares_controls_as_values(seeker):
    _ana, a = seeker()
    assert a.code("BUSC:7d") == 225
    assert a.code("BUSR:7d+7d/7d") == 227
    assert a.code("BUSR:7d") == 849


def test_an_unpaired_seek_of_another_control_stays(seeker):
    one, two = fresh_control(), fresh_control()
    (ana, a), (bob, b) = seeker(), seeker()
    assert a.code(f"BUSC:{one}") == 225
    assert a.code(f"BUSC:{two}") == 225
    assert PID.fullmatch(b.cmd(f"BUSC:{two}").text)
    assert seeks_of(b, [ana, bob]) == [f"{ana}:{one}"]  # lasts until paired or BUSR
    assert a.code("BUSR") == 227


def test_busc_bad_controls(seeker):
    ana, a = seeker()
    for bad in ("9s", "5s+1s", "366d", "1d+400d", "10m+1m/5m", "3x", "abc", "-1d", "3d+"):
        r = a.cmd(f"BUSC:{bad}")
        assert r.code == 802 and r.text, (bad, r)
    assert a.code("BUSC:3d:2") == 802  # privada is 0 or 1
    assert a.code("BUSC") == 801
    assert seeks_of(a, [ana]) == []


@pytest.mark.parametrize("private_first", [True, False])
def test_private_seek_makes_a_private_game(seeker, private_first):
    control = fresh_control()
    (_ana, a), (_bob, b), (_cy, c) = seeker(), seeker(), seeker()
    assert a.raw(f"BUSC:{control}:{int(private_first)}") == frame(225)
    r = b.cmd(f"BUSC:{control}:{int(not private_first)}")
    assert PID.fullmatch(r.text), r
    assert c.code(f"OBSV:{r.text}") == 830


def test_public_seeks_make_a_public_game(seeker):
    control = fresh_control()
    (_ana, a), (_bob, b), (_cy, c) = seeker(), seeker(), seeker()
    assert a.raw(f"BUSC:{control}:0") == frame(225)
    r = b.cmd(f"BUSC:{control}")
    assert c.code(f"OBSV:{r.text}") == 220


# -- HOVR ---------------------------------------------------------------------------------


def expected_hints(board: chess.Board, square: chess.Square) -> str:
    piece = board.piece_at(square)
    if piece is None or piece.color != board.turn:
        return ""
    targets = {m.to_square for m in board.legal_moves if m.from_square == square}
    return ",".join(chess.square_name(s) for s in sorted(targets))  # a1=0 ... h8=63


def check_every_square(g: LiveGame, who: Client) -> None:
    for square in chess.SQUARES:
        name = chess.square_name(square)
        r = who.cmd(f"HOVR:{g.pid}:{name}")
        assert (r.code, r.text) == (228, expected_hints(g.board, square)), (
            name,
            g.board.fen(),
            r,
        )


@pytest.mark.parametrize(
    ("moves", "square", "want"),
    [
        ((), "e2", "e3,e4"),
        ((), "g1", "f3,h3"),
        ((), "b1", "a3,c3"),
        ((), "e1", ""),  # no legal move
        ((), "e4", ""),  # an empty square
        ((), "e7", ""),  # black's, and white is to move
        (("e4",), "e7", "e5,e6"),
        (("e4",), "e2", ""),  # white's, black to move; and empty
        (("e4",), "e4", ""),
        # castling: the king's two-square move; sorted by square number (f1 < g1 < e2)
        (("e4", "e5", "Nf3", "Nc6", "Bc4", "Bc5"), "e1", "f1,g1,e2"),
        (("e4", "e5", "Nf3", "Nc6", "Bc4", "Bc5"), "h1", "f1,g1"),
        (("d4", "d5", "Nc3", "Nc6", "Bf4", "Bf5", "Qd2", "Qd7"), "e1", "c1,d1"),
        # en passant
        (("e4", "a6", "e5", "d5"), "e5", "d6,e6"),
        (("e4", "a6", "e5", "f5"), "e5", "e6,f6"),
        # promotion squares once each
        (("h4", "g5", "hxg5", "h6", "gxh6", "Nc6", "h7", "Nb8"), "h7", "g8"),
        (("b4", "a5", "bxa5", "b6", "axb6", "Nc6", "b7", "Nb4"), "b7", "a8,b8,c8"),
        # pinned: a knight has none, a bishop only along the pin
        (("d4", "e6", "c4", "Bb4+", "Nc3", "Nf6"), "c3", ""),
        (("d4", "e6", "c4", "Bb4+", "Bd2", "Nf6"), "d2", "c3,b4"),
        # in check: only what answers it
        (("e4", "e5", "f4", "Qh4+"), "e1", "e2"),
        (("e4", "e5", "f4", "Qh4+"), "g2", "g3"),
        (("e4", "e5", "f4", "Qh4+"), "d2", ""),
    ],
)
def test_hovr_positions(start, moves, square, want):
    g = start()
    g.play(*moves)
    assert g.board.is_valid()
    assert want == expected_hints(g.board, chess.parse_square(square))  # the table is right
    r = g.w.cmd(f"HOVR:{g.pid}:{square}")
    assert (r.code, r.text) == (228, want), r
    assert g.b.cmd(f"HOVR:{g.pid}:{square}") == r  # the same for either player


@pytest.mark.parametrize("seed", [1, 2])
def test_hovr_matches_python_chess_through_a_game(start, observer, seed):
    g = start()
    _, o = observer(g)
    rng = random.Random(seed)
    for ply in range(1, 400):
        if g.board.outcome(claim_draw=False) is not None:
            break
        if ply % 4 == 1 or ply > 150:
            check_every_square(g, g.w if ply % 2 else o)
        g.play(g.board.san(rng.choice(sorted(g.board.legal_moves, key=lambda m: m.uci()))))
    else:
        pytest.fail("the random game did not end")
    assert stat_fields(g.w, g.pid)[4] == "2"
    assert g.w.code(f"HOVR:{g.pid}:e2") == 833


def test_hovr_failures(game, user, enter):
    for bad in ("e9", "i1", "E2", "e", "e22", "22", "", "a0", "e2e4"):
        r = game.w.cmd(f"HOVR:{game.pid}:{bad}")
        assert r.code == 802, (bad, r)
    assert enter(user("s")).code(f"HOVR:{game.pid}:e2") == 831
    game.resign()
    r = game.w.cmd(f"HOVR:{game.pid}:e2")
    assert r.code == 833, r


# -- ATRS, RATR ---------------------------------------------------------------------------


def test_takeback_accepted(game):
    game.play("e4", "e5", "Nf3")
    assert game.b.code(f"ATRS:{game.pid}:{game.white}") == 850  # the last move is white's
    assert game.w.raw(f"ATRS:{game.pid}:{game.black}") == frame(229)
    assert stat_fields(game.b, game.pid)[9] == "4"  # nothing taken back yet
    assert game.b.raw(f"RATR:{game.pid}:S:{game.white}") == frame(230)
    fields = stat_fields(game.w, game.pid)
    assert fields[4:8] == ["0", "0", "0", "0"] and fields[9] == "3"  # proxima_jugada back
    assert game.w.cmd(f"SPAR:{game.pid}:0").text == "1:e2e4:0:1228:0,2:e7e5:0:5236:0"
    assert game.w.code(f"SPAR:{game.pid}:2") == 839
    assert game.b.code(raw_move(game.pid, 3, "d7d5")) == 834  # still white's turn
    game.board.pop()
    game.play("Bc4")  # another move for the same ply
    assert game.b.cmd(f"SPAR:{game.pid}:2").text == "3:f1c4:0:0526:0"
    assert game.b.cmd(f"HOVR:{game.pid}:b8").text == "a6,c6"


def test_takeback_of_the_first_move(game):
    game.play("e4")
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 229
    assert game.b.code(f"RATR:{game.pid}:S:{game.white}") == 230
    assert stat_fields(game.b, game.pid)[9] == "1"
    assert game.w.code(f"SPAR:{game.pid}:0") == 839
    game.board.pop()
    game.play("d4", "d5")


def test_takeback_restores_castling_and_en_passant(game):
    game.play("e4", "a6", "e5", "d5", "Nf3", "h6", "Bc4", "g6")
    game.play("O-O")  # then taken back: the king may castle again
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 229
    assert game.b.code(f"RATR:{game.pid}:S:{game.white}") == 230
    game.board.pop()
    assert game.w.cmd(f"HOVR:{game.pid}:e1").text == "f1,g1,e2"
    game.play("O-O")


def test_stat_1_names_who_asks_a_takeback_and_each_change_dates_the_game(game, session_db):
    game.play("e4", "e5", "Nf3")

    def long_unchanged() -> None:
        with session_db.engine.begin() as conn:
            dated = sqlalchemy.text("UPDATE games SET changed_at = 1 WHERE id = :i")
            conn.execute(dated, {"i": int(game.pid[1:])})

    assert game.w.cmd(f"STAT:{game.pid}:1").text.endswith(":B:4:-")
    long_unchanged()
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 229
    for c in (game.w, game.b):
        asked = c.cmd(f"STAT:{game.pid}:1").text.split(":")
        assert asked[10] == "B" and asked[3] != "00000000001", asked
    assert len(stat_fields(game.b, game.pid)) == 10  # without the 1: as ever
    long_unchanged()
    assert game.b.code(f"RATR:{game.pid}:N:{game.white}") == 230
    declined = game.w.cmd(f"STAT:{game.pid}:1").text.split(":")
    assert declined[10] == "-" and declined[3] != "00000000001", declined
    # a request a move made stale is no longer shown
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 229
    game.play("Nc6")
    assert game.w.cmd(f"STAT:{game.pid}:1").text.endswith(":5:-")
    assert game.w.code(f"STAT:{game.pid}:2") == 802


def test_takeback_declined(game, clock):
    game.play("e4", "e5", "Nf3")
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 229
    before = stat_fields(game.w, game.pid)
    assert game.b.raw(f"RATR:{game.pid}:N:{game.white}") == frame(230)
    after = stat_fields(game.w, game.pid)
    assert after[4:] == before[4:] and after[9] == "4"
    assert len(game.w.cmd(f"SPAR:{game.pid}:0").text.split(",")) == 3
    assert game.b.code(f"RATR:{game.pid}:S:{game.white}") == 850  # answered already
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 229  # none pending: ask again
    assert game.b.code(f"RATR:{game.pid}:N:{game.white}") == 230
    game.play("Nc6")


def test_takeback_refusals(game, user):
    g = game
    assert g.w.code(f"ATRS:{g.pid}:{g.black}") == 850  # no move yet
    assert g.b.code(f"ATRS:{g.pid}:{g.white}") == 850
    assert g.b.code(f"RATR:{g.pid}:S:{g.white}") == 850  # no request
    g.play("e4")
    assert g.b.code(f"ATRS:{g.pid}:{g.white}") == 850  # white's move, not black's
    assert g.w.code(f"RATR:{g.pid}:S:{g.black}") == 850  # no request of black's
    assert g.b.code(f"RATR:{g.pid}:N:{g.white}") == 850
    r = g.w.cmd(f"ATRS:{g.pid}:{g.black}")
    assert r.code == 229
    r = g.w.cmd(f"ATRS:{g.pid}:{g.black}")  # asked twice
    assert r.code == 850 and r.text, r
    assert g.w.code(f"RATR:{g.pid}:S:{g.black}") == 850  # one's own request
    assert g.w.code(f"ATRS:{g.pid}:{user()}") == 832
    assert g.b.code(f"RATR:{g.pid}:S:{g.black}") == 832  # names oneself
    assert g.b.code(f"RATR:{g.pid}:X:{g.white}") == 802
    assert stat_fields(g.w, g.pid)[9] == "2"  # nothing was taken back


def test_takeback_with_a_draw_offer_pending(game):
    game.play("e4")
    assert game.w.code(f"TBLS:{game.pid}:{game.black}") == 209  # white's own offer
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 850
    assert game.b.code(f"RTBL:{game.pid}:N:{game.white}") == 210
    game.play("e5")
    assert game.b.code(f"TBLS:{game.pid}:{game.white}") == 209  # the opponent's offer
    assert game.b.code(f"ATRS:{game.pid}:{game.white}") == 850
    assert game.w.code(f"RTBL:{game.pid}:N:{game.black}") == 210
    assert game.b.code(f"ATRS:{game.pid}:{game.white}") == 229  # no offer now


def test_a_move_by_the_opponent_declines_silently(game):
    game.play("e4")
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 229
    game.play("e5")  # the opponent may move instead of answering
    assert game.b.code(f"RATR:{game.pid}:S:{game.white}") == 850
    assert game.b.code(f"RATR:{game.pid}:N:{game.white}") == 850
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 850  # e4 is no longer the last
    assert stat_fields(game.w, game.pid)[9] == "3"
    assert game.b.code(f"ATRS:{game.pid}:{game.white}") == 229  # black's e5 is the last
    assert game.w.code(f"RATR:{game.pid}:S:{game.black}") == 230
    assert stat_fields(game.b, game.pid)[9] == "2"


def test_takeback_in_a_finished_game(game, user, enter):
    game.play("f3", "e5", "g4", "Qh4#")
    assert game.b.code(f"ATRS:{game.pid}:{game.white}") == 833
    stranger = enter(user())
    assert stranger.code(f"ATRS:{game.pid}:{game.white}") == 831
    assert stranger.code(f"RATR:{game.pid}:S:{game.white}") == 831

    g = game
    assert g.w.code(f"RATR:{g.pid}:S:{g.black}") == 833


def test_takeback_request_then_game_ends(start):
    g = start()
    g.play("e4")
    assert g.w.code(f"ATRS:{g.pid}:{g.black}") == 229
    g.resign()
    assert g.b.code(f"RATR:{g.pid}:S:{g.white}") == 833
    assert stat_fields(g.w, g.pid)[9] == "2"


def test_observers_cannot_take_back(game, observer):
    game.play("e4")
    o_name, o = observer(game)
    assert o.code(f"ATRS:{game.pid}:{game.black}") == 831
    assert game.w.code(f"ATRS:{game.pid}:{o_name}") == 832
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 229
    assert o.code(f"RATR:{game.pid}:S:{game.white}") == 831


def relj(c: Client, pid: str) -> list[str]:
    r = c.cmd(f"RELJ:{pid}")
    assert r.code == 217, r
    fields = r.text.split(":")
    assert len(fields) == 10, r.text
    return fields


def test_takeback_restores_the_movers_clock(start, clock):
    """2d+1h: a bank of two days, an hour a move, no cap."""
    g = start("2d+1h")
    t0 = clock.now
    two_days = 2 * DAY_MS
    clock.advance(3 * HOUR_MS)
    g.play("e4")  # white: 2d - 3h + 1h
    clock.advance(2 * HOUR_MS)
    g.play("e5")  # black: 2d - 2h + 1h
    clock.advance(4 * HOUR_MS)
    g.play("Nf3")  # white: 2d - 2h - 4h + 1h
    white_before, black_after = two_days - 2 * HOUR_MS, two_days - HOUR_MS
    f = relj(g.b, g.pid)
    assert f[3:7] == [
        str(two_days - 5 * HOUR_MS),
        str(black_after),
        "N",
        str(clock.now + black_after),
    ]
    clock.advance(HOUR_MS)
    assert g.w.code(f"ATRS:{g.pid}:{g.black}") == 229
    f = relj(g.b, g.pid)  # no clock stops while it waits
    assert f[4:6] == [str(black_after - HOUR_MS), "N"]
    clock.advance(2 * HOUR_MS)
    assert g.b.code(f"RATR:{g.pid}:S:{g.white}") == 230
    now = clock.now
    assert now == t0 + 12 * HOUR_MS
    f = relj(g.w, g.pid)
    assert f[1] == str(now) and f[2] == "2d+1h"
    # white to move again, with the bank the turn began with, counting from now; black's
    # bank as it was before white's taken-back move
    assert f[3:7] == [str(white_before), str(black_after), "B", str(now + white_before)]
    clock.advance(HOUR_MS)
    f = relj(g.b, g.pid)
    assert f[3:7] == [str(white_before - HOUR_MS), str(black_after), "B", str(now + white_before)]
    g.board.pop()
    g.play("Nc3")  # white: (2d - 2h) - 1h + 1h
    f = relj(g.w, g.pid)
    assert f[3:6] == [str(white_before), str(black_after), "N"]


def test_takeback_of_the_first_move_restores_the_initial_bank(start, clock):
    g = start("3d")
    clock.advance(5 * HOUR_MS)
    g.play("e4")
    clock.advance(HOUR_MS)
    assert g.w.code(f"ATRS:{g.pid}:{g.black}") == 229
    assert g.b.code(f"RATR:{g.pid}:S:{g.white}") == 230
    f = relj(g.w, g.pid)
    three = 3 * DAY_MS
    assert f[3:7] == [str(three), str(three), "B", str(clock.now + three)]


def test_takeback_declined_changes_no_clock(start, clock):
    g = start("2d+1h")
    clock.advance(3 * HOUR_MS)
    g.play("e4")
    assert g.w.code(f"ATRS:{g.pid}:{g.black}") == 229
    before = relj(g.b, g.pid)
    assert g.b.code(f"RATR:{g.pid}:N:{g.white}") == 230
    assert relj(g.b, g.pid) == before


def test_takeback_after_the_deadline_ends_the_game_on_time(start, clock):
    g = start("10m")
    g.play("e4", "e5", "Nf3")  # black has moved once: no abort, a loss on time
    clock.advance(10 * MINUTE_MS)  # black's deadline
    r = g.w.cmd(f"ATRS:{g.pid}:{g.black}")
    assert r.code == 833, r
    fields = stat_fields(g.b, g.pid)
    assert fields[4:6] == ["2", "1"]  # over: white won on time
    assert relj(g.b, g.pid)[9] == "timeout"


def test_takeback_answer_after_the_deadline(start, clock):
    g = start("10m")
    clock.advance(MINUTE_MS)
    g.play("e4", "e5", "Nf3")
    assert g.w.code(f"ATRS:{g.pid}:{g.black}") == 229
    clock.advance(10 * MINUTE_MS)  # no clock stops while it waits
    r = g.b.cmd(f"RATR:{g.pid}:S:{g.white}")
    assert r.code == 833, r
    assert stat_fields(g.w, g.pid)[4:6] == ["2", "1"]
    assert g.w.cmd(f"SPAR:{g.pid}:2").text == "3:g1f3:0:0621:0"  # nothing taken back


def test_takeback_restores_the_repetition_history(game):
    shuffle = ("Nf3", "Nf6", "Ng1", "Ng8")
    game.play(*shuffle, *shuffle)  # the starting position a third time
    assert game.b.code(f"ATRS:{game.pid}:{game.white}") == 229
    assert game.w.code(f"RATR:{game.pid}:S:{game.black}") == 230
    game.board.pop()
    assert game.w.code(f"FINP:{game.pid}:{game.black}") == 842  # twice only, now
    assert stat_fields(game.w, game.pid)[4] == "0"
    game.play("Ng8")
    assert game.w.code(f"FINP:{game.pid}:{game.black}") == 212


def test_takeback_of_a_capture_and_a_promotion(game):
    game.play("e4", "d5", "exd5")
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 229
    assert game.b.code(f"RATR:{game.pid}:S:{game.white}") == 230
    game.board.pop()
    assert game.w.cmd(f"HOVR:{game.pid}:e4").text == "d5,e5"  # the pawn is back on d5
    game.play("exd5", "c6", "dxc6", "Nf6", "cxb7", "Nbd7")
    assert game.w.cmd(f"HOVR:{game.pid}:b7").text == "a8,b8,c8"
    game.play("bxc8=Q")
    assert game.w.code(f"ATRS:{game.pid}:{game.black}") == 229
    assert game.b.code(f"RATR:{game.pid}:S:{game.white}") == 230
    game.board.pop()
    assert game.w.cmd(f"HOVR:{game.pid}:b7").text == "a8,b8,c8"  # a pawn again
    assert game.b.cmd(f"SPAR:{game.pid}:8").code == 839
    game.play("bxa8=N")


def test_a_closed_accounts_seek_never_pairs(seeker):
    control = fresh_control()
    (ana, a), (_bob, b) = seeker(), seeker()
    assert a.raw(f"BUSC:{control}") == frame(225)
    got = a.cmd(f"UNSU:{ana}:{PASSWORD}")
    assert got.code == 104 and a.closed
    assert seeks_of(b, [ana]) == []
    assert b.raw(f"BUSC:{control}") == frame(225)  # waits: nobody to pair with
    assert b.code("BUSR") == 227


def test_busl_multi_part(seeker):
    seekers = [seeker("seeker_long_name_xyz") for _ in range(37)]
    posted = []  # 3 seeks each (the most): 111 records of ~45 bytes
    for name, s in seekers:
        for _ in range(3):
            control = fresh_control()
            assert s.raw(f"BUSC:{control}") == frame(225)
            posted.append(f"{name}:{control}")
    parts = seekers[0][1].all("BUSL")
    assert len(parts) > 1
    assert [p.more for p in parts] == [True] * (len(parts) - 1) + [False]
    assert all(p.code == 226 and 0 < len(p.data) <= 4096 for p in parts)
    records = [r for p in parts for r in p.text.split(",")]  # cut between records
    names = {name for name, _s in seekers}
    assert [r for r in records if r.split(":", 1)[0] in names] == posted
    for _name, s in seekers:
        assert s.code("BUSR") == 227


def test_jueg_privada_values(user, enter):
    ana, bob, cy = user(), user(), user()
    a, b, c = enter(ana), enter(bob), enter(cy)
    assert a.code(f"JUEG:{bob}:none:2") == 802
    assert a.code(f"JUEG:{bob}:none:x") == 802
    assert a.raw(f"JUEG:{bob}::1") == frame(200)  # control left out, private
    r = b.cmd(f"ACEP:N:{ana}")
    assert r.code == 202, r
    assert c.code(f"OBSV:{r.text}") == 830
