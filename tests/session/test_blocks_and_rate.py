"""Requests that notify other users, and blocks, through the session in process, written
from docs/protocol.md ("Requests that notify others", "Blocks"): each such command of an
account is counted by one token bucket, timed by the test's FakeClock; BLOQ, BLOR and BLOL
and the refusals a block causes. The same over TCP, on both stores:
tests/e2e/test_blocks.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ajedrez.domain.errors import TransientStorageError
from ajedrez.service.ratelimit import TokenBucket
from tests.support.clock import SECOND_MS, FakeClock
from tests.support.common import PASSWORD
from tests.support.session import Client, frame, make_session

BURST = 4
RATE = 0.5  # a second: a token every 2 s


@pytest.fixture
def bucket(clock: FakeClock) -> TokenBucket:
    """One process's limit, shared by every session of the test."""
    return TokenBucket(BURST, RATE, clock=lambda: clock.now / 1000)


@pytest.fixture
def enter(session_db, loop, clock, bucket) -> Callable[..., Client]:  # type: ignore[no-untyped-def]
    def do(name: str) -> Client:
        c = Client(make_session(session_db, clock=clock, events=bucket), loop)
        assert c.raw(f"USER:{name}") == frame(101, name)
        assert c.raw(f"PASS:{PASSWORD}") == frame(102, name)
        return c

    return do


# -- the token bucket on its own ---------------------------------------------------------


def test_token_bucket_burst_then_rate() -> None:
    now = [0.0]
    bucket = TokenBucket(3, 2.0, clock=lambda: now[0])
    assert [bucket.allow(1) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.allow(1) == pytest.approx(0.5)  # one token every half second
    assert bucket.allow(2) == 0.0  # per key
    now[0] += 0.5
    assert bucket.allow(1) == 0.0
    assert bucket.allow(1) == pytest.approx(0.5)
    now[0] += 3600  # idle: full again, never more than the burst
    assert [bucket.allow(1) for _ in range(4)][-1] > 0
    assert bucket.allow(1) > 0


def test_token_bucket_forgets_idle_keys() -> None:
    now = [0.0]
    bucket = TokenBucket(2, 1.0, clock=lambda: now[0])
    for key in range(2000):
        bucket.allow(key)
    now[0] += 10  # every bucket full again
    for key in range(2000, 3100):
        bucket.allow(key)
    assert len(bucket) < 2000


# -- the limit per account ----------------------------------------------------------------


def test_challenge_and_decline_are_limited(user, enter, clock):
    a, b = user("a"), user("b")
    ca, cb = enter(a), enter(b)
    codes = [ca.code(line) for line in [f"JUEG:{b}", f"DECL:{b}"] * (BURST // 2)]
    assert codes == [200, 213] * (BURST // 2)
    r = ca.cmd(f"JUEG:{b}")
    assert r.code == 847 and "try again in 2 s" in r.text, r
    assert cb.code("SOLI") == 216 and cb.cmd("SOLI").text == ""  # nothing reached b
    assert cb.code(f"JUEG:{a}") == 200  # b's own budget
    clock.advance(2 * SECOND_MS)
    assert ca.code(f"DECL:{b}") == 213
    assert ca.code(f"JUEG:{b}") == 847


def test_every_session_of_an_account_shares_its_budget(user, enter):
    a, b = user("a"), user("b")
    sessions = [enter(a) for _ in range(BURST + 1)]
    codes = [c.code(f"DECL:{b}") for c in sessions]  # 822: nothing to decline, but counted
    assert codes == [822] * BURST + [847]


def test_a_command_run_again_after_a_rollback_is_counted_once(user, enter, monkeypatch):
    a, b = user("a"), user("b")
    c = enter(a)
    games = c.session.games
    challenge = games.challenge
    rolled_back: list[int] = []

    def deadlocked_once(*args: object) -> None:
        if not rolled_back:
            rolled_back.append(1)
            raise TransientStorageError("deadlock detected")
        challenge(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(games, "challenge", deadlocked_once)
    assert c.code(f"JUEG:{b}") == 200 and rolled_back == [1]
    codes = [c.code(f"DECL:{b}") for _ in range(BURST)]
    assert codes == [213] + [822] * (BURST - 2) + [847], codes


NOTIFYING = [
    "JUEG:{other}",
    "DECL:{other}",
    "OBSV:{pid}",
    "OBSF:{pid}",
    "LICE:I",
    "LICE:F",
    "TBLS:{pid}:{other}",
    "ATRS:{pid}:{other}",
    "BUSC:{control}",
    "BLOQ:{other}",
    "BLOR:{other}",
]
QUIET = ["LICE:E", "SOLI", "TRAN:0", "BUSL", "BLOL", "OBSL:{pid}", "CHLE:{pid}:0", "SRNK"]


@pytest.mark.parametrize("line", NOTIFYING)
def test_each_command_that_notifies_is_counted(line, user, enter, login, game):
    """The bucket emptied, the command is refused before it does anything."""
    me = user("m")
    c = enter(me)
    for _ in range(BURST):
        c.code("DECL:nobody-at-all")
    sent = line.format(other=game.white, pid=game.pid, control="17m+3s")
    r = c.cmd(sent)
    assert r.code == 847 and "notify other users" in r.text, (sent, r)


@pytest.mark.parametrize("line", QUIET)
def test_commands_that_notify_nobody_are_not_counted(line, user, enter, game):
    c = enter(user("m"))
    for _ in range(BURST):
        c.code("DECL:nobody-at-all")
    assert c.code("DECL:nobody-at-all") == 847
    sent = line.format(pid=game.pid)
    assert c.cmd(sent).code != 847, sent


# -- blocks -----------------------------------------------------------------------------------


def test_bloq_blol_blor(user, login):
    a, b, c = user("a"), user("b"), user("c")
    ca = login(a)
    assert ca.raw("BLOL") == frame(234, "")
    assert ca.raw(f"BLOQ:{b}") == frame(232, b)
    assert ca.raw(f"BLOQ:{c}") == frame(232, c)
    assert ca.raw(f"BLOQ:{b}") == frame(232, b)  # again: no change
    assert ca.raw("BLOL") == frame(234, ",".join(sorted([b, c])))
    assert ca.raw(f"BLOR:{c}") == frame(233, c)
    assert ca.raw("BLOL") == frame(234, b)
    r = ca.cmd(f"BLOR:{c}")
    assert r.code == 852 and c in r.text, r
    assert ca.cmd("BLOQ:nobody-at-all").code == 814
    assert ca.cmd(f"BLOQ:{a}").code == 802
    assert ca.cmd("BLOQ:bad name").code == 802
    assert ca.cmd("BLOQ").code == 801
    assert "BLOQ:<usuario>" in ca.cmd("HELP:BLOQ").text


def test_a_blocked_user_is_refused_without_being_told_of_the_block(user, login, game):
    stranger = user("s")
    cs = login(stranger)
    assert game.w.code(f"BLOQ:{stranger}") == 232
    r = cs.cmd(f"JUEG:{game.white}")
    assert r.code == 851 and "block" not in r.text, r
    r = cs.cmd(f"OBSV:{game.pid}")
    assert r.code == 851 and "block" not in r.text, r
    r = game.w.cmd(f"JUEG:{stranger}")
    assert r.code == 851 and "BLOR" in r.text, r  # the blocker is told
    assert game.w.code(f"BLOR:{stranger}") == 233
    assert cs.code(f"OBSV:{game.pid}") == 220
    assert game.b.code(f"BLOQ:{stranger}") == 232  # either player's block
    assert cs.cmd(f"OBSL:{game.pid}").code == 831  # observing ended with it
    assert cs.cmd(f"OBSV:{game.pid}").code == 851


def test_blocking_the_opponent_ends_no_game(game):
    assert game.w.code(f"BLOQ:{game.black}") == 232
    assert game.b.cmd(f"CHAT:{game.pid}:hola").code == 851
    assert game.w.cmd(f"CHAT:{game.pid}:hola").code == 851
    assert game.b.code(f"TBLS:{game.pid}:{game.white}") == 209
    assert game.w.code(f"RTBL:{game.pid}:N:{game.black}") == 210
    assert game.w.code(f"JGDA:{game.pid}:1:e2e4:0:1228:0") == 208
