"""A login that lasts (docs/client.md, "Logging in once"): ``ajedrez login`` asks the
password once and keeps a token; the online commands then need no password; ``ajedrez
logout`` revokes and forgets it; a token the server refuses is forgotten and the
password is asked for again, saying why."""

from __future__ import annotations

import dataclasses
import io
import json
import signal
import stat
from pathlib import Path

import pytest

from ajedrez.client.app import App
from ajedrez.client.cli import build_parser
from ajedrez.client.errors import ProtocolFailure, reply_error
from ajedrez.client.tokens import Token
from ajedrez.espol.codes import Reply
from tests.client.conftest import Machine


def token_file(m: Machine) -> Path:
    return m.home / "config" / "ajedrez" / "tokens.json"


def kept(m: Machine) -> dict[str, str]:
    path = token_file(m)
    return json.loads(path.read_text()) if path.exists() else {}


def test_login_once_then_no_password_then_logout(machine, new_user) -> None:  # type: ignore[no-untyped-def]
    ana = new_user("ana")
    a = machine(ana)
    a.fail("sync", password=None, rc=2)  # no token yet, and no password: refused

    out = a("login", "--label", "ana's laptop").out
    assert "Logged in as" in out and "ana's laptop" in out and "tokens.json" in out
    path = token_file(a)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    [(key, value)] = kept(a).items()
    assert key == f"{ana}@{a.address}"
    assert a.password not in path.read_text()

    # Every online command now logs in with the token; the trace never shows its secret.
    synced = a("sync", "-v", password=None)
    secret = value.split(":", 1)[1]
    assert "FICH" in synced.err and secret not in synced.err
    assert "PASS" not in synced.err
    listed = a("tokens", password=None).out
    assert "ana's laptop" in listed and "*" in listed

    # login again: a new token replaces this machine's old one, on the server too.
    a("login")
    assert len(a("tokens", password=None).out.splitlines()) == 3  # header, 1 token, note
    made = a("login", "-v", password=None, ok=False)
    assert made.rc == 2 and "AJEDREZ_PASSWORD" in made.err  # login always asks the password

    out = a("logout", password=None).out
    assert "revoked and forgotten" in out
    assert kept(a) == {}
    a.fail("sync", password=None, rc=2)
    assert "nothing to do" in a("logout", password=None).out


def test_a_revoked_token_falls_back_to_the_password(machine, new_user) -> None:  # type: ignore[no-untyped-def]
    bob = new_user("bob")
    laptop, desk = machine(bob, "laptop"), machine(bob, "desk")
    laptop("login", "--label", "laptop")
    desk("login", "--label", "desk")
    assert desk("logout", "--all", password=None).rc == 0  # revokes the laptop's too
    assert kept(desk) == {}

    # With the password at hand: a warning, then the command runs; the token is forgotten.
    r = laptop("sync")
    assert "was refused" in r.err and "854" in r.err and "ajedrez login" in r.err
    assert kept(laptop) == {}
    assert "was refused" not in laptop("sync").err

    # Without one: said clearly, with the status of a missing password.
    laptop("login")
    desk("login")
    [(_, desk_token)] = kept(desk).items()
    [(_, laptop_token)] = kept(laptop).items()
    laptop_id = laptop_token.split(":")[0]
    assert desk("tokens", "--revoke", laptop_id, password=None).rc == 0
    r = laptop("sync", password=None, ok=False)
    assert r.rc == 2 and "was refused" in r.err and "AJEDREZ_PASSWORD" in r.err
    assert "Traceback" not in r.err
    assert kept(desk) and kept(desk) != {} and list(kept(desk).values()) == [desk_token]
    assert "no token" in desk.fail("tokens", "--revoke", laptop_id, password=None, rc=1).err


def test_logout_of_a_token_dead_already_forgets_it(machine, new_user, accounts) -> None:  # type: ignore[no-untyped-def]
    """The administrator set the password: the token went with the old one."""
    eva = new_user("eva")
    e = machine(eva)
    e("login")
    accounts.set_password(eva, "a new password")
    out = e("logout", password=None).out
    assert "no longer took" in out
    assert kept(e) == {}


def test_watch_needs_no_password_with_a_token(machine, new_user) -> None:  # type: ignore[no-untyped-def]
    """watch asks for the password up front only when no token is kept: it logs in
    again and again, with the token."""
    from tests.client.test_live import Running

    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    a("login")
    b("challenge", ana)
    watch = Running(dataclasses.replace(a, password=None), "watch", "--from-start")  # type: ignore[arg-type]
    try:
        assert bob in watch.wait_line("DESAFIO ", bob)
        watch.wait_line("Up to date")
        assert not any("password" in line for line in watch.err), watch.err
    finally:
        assert watch.stop(signal.SIGTERM) == 0


class OldServer:
    """A connection to a server of the release before tokens: FICH is an unknown
    command (800, and the connection closes); USER and PASS work."""

    def __init__(self, code: int = Reply.F_CMDINV) -> None:
        self.code = code
        self.closed = False
        self.logins: list[tuple[str, str]] = []

    def token_login(self, user: str, secret: str) -> str:
        self.closed = True
        raise reply_error(self.code, "unknown command 'FICH'; try HELP")

    def login(self, user: str, password: str) -> str:
        self.logins.append((user, password))
        return user

    def quit(self) -> None:
        self.closed = True


def test_an_older_server_gets_the_password_and_the_token_is_kept(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        [
            "--server",
            "old.example:1995",
            "--user",
            "ana",
            "--config",
            str(tmp_path / "c.toml"),
            "sync",
        ]
    )
    err = io.StringIO()
    app = App(
        args, {"AJEDREZ_PASSWORD": "pw", "AJEDREZ_KEYRING": "no"}, io.StringIO(), err, io.StringIO()
    )
    app.token_store.put(app.token_key, Token(4, "s" * 43))
    made: list[OldServer] = []

    def connect() -> OldServer:
        made.append(OldServer())
        return made[-1]

    app.connect = connect  # type: ignore[method-assign,assignment]
    with app.session() as client:
        assert client is made[1] and made[1].logins == [("ana", "pw")]
    assert "did not take the login token (800 F_CMDINV)" in err.getvalue()
    assert app.stored_token() == Token(4, "s" * 43)  # kept: another server may take it

    # Another refusal of FICH (810: too many sessions) is not hidden behind the password.
    made.clear()
    app.connect = lambda: made.append(OldServer(Reply.F_ADDRLIMIT)) or made[-1]  # type: ignore[method-assign,assignment,func-returns-value]
    with pytest.raises(ProtocolFailure), app.session():
        pass
    assert len(made) == 1
