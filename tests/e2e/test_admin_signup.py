"""Registration (docs/operations.md, "Registration"), on the store under test: by default a
SUBS is a request the administrator approves (the seed's rule); with ``open_signup`` it
makes a usable account at once, within the same limits on SUBS. Either way an old client
reads the reply the contract gives SUBS, byte for byte: ``103``, flag ``0``, no data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.server.settings import load
from tests.support.admin import in_process, listed
from tests.support.common import PASSWORD, unique_name
from tests.support.server import ServerProcess, start_server

# The whole SUBS success reply as the contract has it (section 1, framing; section 4,
# SUBS: empty data): code 103 (S_SUBS), flag 0, a data length of 0.
SUBS_ACCEPTED = b"103" + b"0" + b"\x00\x00"
S_PASSWD, F_NOUSER, F_SUBSRATE, F_NAMETAKEN = 102, 814, 812, 816


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for srv in started:
        srv.stop()


def start(servers: list[ServerProcess], url: str, *extra: str) -> ServerProcess:
    srv = start_server(url, *extra)
    servers.append(srv)
    return srv


def subs_reply(srv: ServerProcess, name: str, source: str | None = None) -> bytes:
    """The bytes the server answers a SUBS with, as a 1995 client reads them: the header
    and exactly the data it announces."""
    with srv.connect(source=source) as c:
        c.send(f"SUBS:{name}:{PASSWORD}:Nuevo socio")
        header = c._read_exact(6)
        return header + c._read_exact(int.from_bytes(header[4:6], "big"))


def login_codes(srv: ServerProcess, name: str) -> tuple[int, int | None]:
    with srv.connect() as c:
        user = c.cmd(f"USER:{name}").code
        return user, (c.cmd(f"PASS:{PASSWORD}").code if user == 101 else None)


def test_by_default_a_subs_waits_for_the_administrator(own_db, servers, monkeypatch, capsys):
    url, _db = own_db
    srv = start(servers, url)
    name = unique_name("ap")
    assert subs_reply(srv, name) == SUBS_ACCEPTED
    assert login_codes(srv, name) == (F_NOUSER, None)
    admin = in_process(url, monkeypatch, capsys)
    assert listed(admin("subs", "list"), name) is not None
    assert listed(admin("users", "list"), name) is None
    assert admin("subs", "approve", name).status == 0
    assert login_codes(srv, name) == (101, S_PASSWD)


def test_open_signup_makes_a_usable_account_at_once(own_db, servers, monkeypatch, capsys):
    url, _db = own_db
    srv = start(servers, url, "--open-signup")
    name, rival = unique_name("op"), unique_name("or")
    assert subs_reply(srv, name) == SUBS_ACCEPTED  # the same bytes as with approval
    assert subs_reply(srv, rival) == SUBS_ACCEPTED
    assert login_codes(srv, name) == (101, S_PASSWD)
    with srv.connect() as c:  # usable: it plays
        assert c.cmd(f"USER:{name}").code == 101
        assert c.cmd(f"PASS:{PASSWORD}").code == S_PASSWD
        assert c.cmd(f"JUEG:{rival}").kind == "S"
    admin = in_process(url, monkeypatch, capsys)
    row = listed(admin("users", "list"), name)
    assert row is not None and row[1] == "active", row
    assert listed(admin("subs", "list"), name) is None
    assert f"account '{name}' made by open sign-up from 127.0.0.1" in srv.log_text()
    assert PASSWORD not in srv.log_text()


def test_open_signup_keeps_the_limits_on_subs(own_db, servers):
    url, db = own_db
    srv = start(servers, url, "--open-signup", "--subs-per-address", "2")
    source = "127.0.8.1"
    first, second = unique_name("ol"), unique_name("ol")
    assert subs_reply(srv, first, source) == SUBS_ACCEPTED
    assert subs_reply(srv, second, source) == SUBS_ACCEPTED
    refused = subs_reply(srv, unique_name("ol"), source)
    assert refused[:3] == str(F_SUBSRATE).encode(), refused  # the rate per address
    # A name that is an account's, or a request's waiting for the administrator, or
    # differs from one only in case, is not given again.
    waiting = unique_name("ow")
    Accounts(db).subscribe(waiting, PASSWORD, "")
    for i, taken in enumerate((first, first.upper(), waiting), start=2):
        with srv.connect(source=f"127.0.8.{i}") as c:  # each within its address's rate
            assert c.cmd(f"SUBS:{taken}:{PASSWORD}:").code == F_NAMETAKEN, taken
    with srv.connect(source="127.0.8.9") as c:  # the name rules hold: no account made
        assert c.cmd(f"SUBS:-{unique_name('x')}:{PASSWORD}:").kind == "F"
    assert login_codes(srv, waiting) == (F_NOUSER, None)


def test_open_signup_in_the_settings_file(tmp_path: Path):
    path = tmp_path / "ajedrez.toml"
    path.write_text("open_signup = true\n")
    assert load(str(path), {}).open_signup is True
    assert load(None, {}).open_signup is False  # approval is the default
