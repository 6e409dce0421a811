"""Logins that last through the session, in process (docs/protocol.md, "Tokens"): FICN
makes a token whose secret is shown once, FICH logs in with it instead of USER and PASS
(through the same login gate and throttle: a wrong token is a failed login), FICL lists
the caller's tokens without their secrets, FICR revokes one or all."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from ajedrez.service.throttle import LoginThrottle
from ajedrez.store.db import Database
from tests.support.common import PASSWORD
from tests.support.session import Client, frame, frames, make_session

SECRET = re.compile(r"([0-9]+):([A-Za-z0-9_-]{43})")


def new_token(c: Client, label: str = "laptop") -> tuple[int, str]:
    r = c.cmd(f"FICN:{label}")
    assert r.code == 235, r.text
    found = SECRET.fullmatch(r.text)
    assert found is not None, r.text
    return int(found[1]), found[2]


def test_a_token_logs_in_instead_of_user_and_pass(connect, login, user) -> None:  # type: ignore[no-untyped-def]
    name = user("tok")
    token_id, secret = new_token(login(name))
    c = connect()
    assert c.raw(f"FICH:{name}:{secret}") == frame(102, name)  # as after PASS
    assert not c.closed
    assert c.cmd("JAUT:99999999999").code == 201  # logged in
    assert c.code(f"FICH:{name}:{secret}") == 807  # already logged in
    listed = c.cmd("FICL")
    assert listed.code == 236
    [record] = listed.text.split("\n")
    fields = record.split(":")
    assert fields[:2] == [str(token_id), "laptop"] and len(fields) == 5
    assert all(re.fullmatch(r"[0-9]{11}", f) for f in fields[2:])
    assert secret not in listed.text


def test_a_wrong_or_revoked_token_is_refused_and_closes(connect, login, user) -> None:  # type: ignore[no-untyped-def]
    name = user("tok")
    me = login(name)
    token_id, secret = new_token(me)
    c = connect()
    assert c.raw(f"FICH:{name}:{'A' * 43}") == frame(854, "wrong, revoked or expired token")
    assert c.closed
    assert me.raw(f"FICR:{token_id}") == frame(237, "1")
    c = connect()
    assert c.code(f"FICH:{name}:{secret}") == 854
    assert c.closed
    assert me.code(f"FICR:{token_id}") == 855  # gone already


def test_another_users_name_with_my_token_is_refused(connect, login, user) -> None:  # type: ignore[no-untyped-def]
    mine, theirs = user("tok"), user("other")
    _, secret = new_token(login(mine))
    c = connect()
    assert c.code(f"FICH:{theirs}:{secret}") == 854
    assert c.closed


def test_revoke_all(connect, login, user) -> None:  # type: ignore[no-untyped-def]
    name = user("tok")
    me = login(name)
    secrets = [new_token(me, label)[1] for label in ("a", "b, with a comma", "c")]
    assert me.cmd("FICL").text.count("\n") == 2  # one token a line: a comma is no separator
    assert me.raw("FICR:*") == frame(237, "3")
    assert me.raw("FICR:*") == frame(237, "0")
    assert me.cmd("FICL").code == 236
    for secret in secrets:
        c = connect()
        assert c.code(f"FICH:{name}:{secret}") == 854


def test_malformed_lines(connect, login, user) -> None:  # type: ignore[no-untyped-def]
    name = user("tok")
    me = login(name)
    for line, code in (
        ("FICN", 801),
        ("FICN:", 802),
        (f"FICN:{'x' * 65}", 802),
        ("FICN:tab\there", 802),
        ("FICR:abc", 802),
        ("FICR:", 802),
        ("FICR:1:2", 801),
    ):
        assert me.code(line) == code, line
        assert not me.closed
    for line, code in (
        ("FICN:laptop", 805),  # needs a login
        ("FICL", 805),
        (f"FICH:{name}:short", 802),
        (f"FICH:{name}", 801),
    ):
        c = connect()
        assert c.code(line) == code, line
        assert c.closed, line


def test_closing_the_account_ends_its_tokens(connect, login, user) -> None:  # type: ignore[no-untyped-def]
    name = user("tok")
    me = login(name)
    _, secret = new_token(me)
    assert me.code(f"UNSU:{name}:{PASSWORD}") == 104
    c = connect()
    assert c.code(f"FICH:{name}:{secret}") == 854


class Now:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_wrong_token_counts_as_a_failed_login(
    session_db: Database, loop: asyncio.AbstractEventLoop, user: Callable[..., str]
) -> None:
    """The transport sends FICH through the login gate with the name it names, and the
    service counts a wrong token against the address and the name, as a wrong PASS;
    a right one clears the address."""
    name = user("tok")
    throttle = LoginThrottle(base=2.0, clock=Now())
    session = make_session(session_db, throttle=throttle, peer="10.9.8.7:4000")
    assert session.login_attempt(f"FICH:{name}:{'A' * 43}".encode()) == name
    c = Client(session, loop)
    assert c.code(f"FICH:{name}:{'A' * 43}") == 854
    assert throttle.wait("10.9.8.7", name) == 2.0
    assert throttle.wait("10.9.8.8", name) == 0.0
    owner = Client(make_session(session_db, throttle=throttle), loop)
    owner.raw(f"USER:{name}")
    assert owner.code(f"PASS:{PASSWORD}") == 102
    _, secret = new_token(owner)
    again = make_session(session_db, throttle=throttle, peer="10.9.8.7:4001")
    answered = frames(Client(again, loop).raw(f"FICH:{name}:{secret}"))
    assert [f.code for f in answered] == [102]
    assert throttle.wait("10.9.8.7", name) == 0.0  # a right token clears the address
    # Logged in, the session's lines are no login attempts any more.
    assert again.login_attempt(f"FICH:{name}:{secret}".encode()) is None


def test_a_token_login_counts_against_the_sessions_of_the_account(
    session_db: Database, loop: asyncio.AbstractEventLoop, user: Callable[..., str]
) -> None:
    """FICH gets in as PASS does: counted in the account's sessions, and refused (810,
    closing) past their cap."""
    from tests.support.clock import FakeClock

    clock = FakeClock()
    name = user("tok")

    def session() -> Client:
        return Client(make_session(session_db, clock=clock, sessions_per_account=2), loop)

    owner = session()
    owner.raw(f"USER:{name}")
    assert owner.code(f"PASS:{PASSWORD}") == 102
    _, secret = new_token(owner)
    second = session()
    assert second.code(f"FICH:{name}:{secret}") == 102
    third = session()
    r = third.cmd(f"FICH:{name}:{secret}")
    assert r.code == 810 and "too many sessions" in r.text
    assert third.closed and not third.session.logged_in
