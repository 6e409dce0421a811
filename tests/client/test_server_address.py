"""``--server`` forms (plain, ``espol://``, IPv6 in brackets), a URL of another protocol
refused with the form wanted, and a server that does not speak ESPOL told apart from
one that is down, by its own exit status."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ajedrez.client import Client, NotEspol, app
from ajedrez.client.app import EXIT_NOT_ESPOL, EXIT_UNREACHABLE, EXIT_USAGE
from ajedrez.client.config import ConfigError, parse_server
from tests.client.conftest import Machine, free_port
from tests.support.common import ROOT


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("chess.example.org", ("chess.example.org", 1995)),
        ("127.0.0.1:1996", ("127.0.0.1", 1996)),
        ("espol://127.0.0.1:1996", ("127.0.0.1", 1996)),
        ("ESPOL://chess.example.org/", ("chess.example.org", 1995)),
        ("[::1]:1995", ("::1", 1995)),
        ("[::1]", ("::1", 1995)),
        ("espol://[::1]:2000", ("::1", 2000)),
        ("::1", ("::1", 1995)),
    ],
)
def test_server_forms_accepted(text, expected):
    assert parse_server(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("http://127.0.0.1:1995", "http:// is not ESPOL; give HOST[:PORT]"),
        ("https://chess.example.org", "https:// is not ESPOL; give HOST[:PORT]"),
        ("[::1", "[ADDRESS]:PORT"),
        ("[::1]1995", "[ADDRESS]:PORT"),
        ("[::1]:", "no port"),
        (":1995", "HOST[:PORT]"),
        ("chess.example.org/play", "HOST[:PORT]"),
        ("host:99999", "invalid port"),
    ],
)
def test_server_forms_refused_with_the_form_wanted(text, says):
    with pytest.raises(ConfigError) as e:
        parse_server(text)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_command_refuses_a_url_and_prints_ipv6_in_brackets(tmp_path: Path):
    me = Machine("http://127.0.0.1:1995", "ana", tmp_path)
    refused = me.fail("sync", rc=EXIT_USAGE)
    assert "http:// is not ESPOL" in refused.err and "1995:1995" not in refused.err

    v6 = Machine("[::1]", "ana", tmp_path)
    assert "server:      [::1]:1995" in v6("config").out
    port = free_port()
    down = Machine(f"[::1]:{port}", "ana", tmp_path).fail("sync", rc=EXIT_UNREACHABLE)
    assert f"cannot reach the server at [::1]:{port}:" in down.err


class NotAnEspolServer:
    """Answers every connection's first line as Redis does (echoing it), then closes."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = int(self.sock.getsockname()[1])
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                line = data.split(b"\r\n")[0]
                conn.sendall(b"-ERR unknown command '" + line + b"', with args beginning with:\r\n")


@pytest.fixture
def redis_like() -> Iterator[NotAnEspolServer]:
    srv = NotAnEspolServer()
    yield srv
    srv.sock.close()


def test_library_raises_not_espol(redis_like):
    with Client("127.0.0.1", redis_like.port) as c, pytest.raises(NotEspol) as e:
        c.help()
    assert f"127.0.0.1:{redis_like.port} does not speak ESPOL" in str(e.value)
    assert e.value.answered == b"-ERR u"


def test_command_says_the_other_end_does_not_speak_espol(redis_like, tmp_path: Path):
    me = Machine(f"127.0.0.1:{redis_like.port}", "ana", tmp_path)
    for args in (("sync",), ("subscribe",)):
        failed = me.fail(*args, rc=EXIT_NOT_ESPOL, password="not sent")
        assert "does not speak ESPOL" in failed.err and "-ERR" in failed.err
    # What it answered is shown only as far as the reply header: never the password a
    # SUBS carried, which such a server may echo.
    assert "not sent" not in failed.err


def test_every_exit_status_is_documented_once():
    docs = (ROOT / "docs" / "client.md").read_text(encoding="utf-8")
    statuses = {v for k, v in vars(app).items() if k.startswith("EXIT_")}
    assert len(statuses) == len([k for k in vars(app) if k.startswith("EXIT_")])  # distinct
    for status in statuses:
        assert docs.count(f"\n| {status} | ") == 1, status


def test_a_wrong_address_leaves_no_local_data(redis_like, tmp_path: Path):
    port = free_port()
    for address, rc in (
        (f"127.0.0.1:{redis_like.port}", EXIT_NOT_ESPOL),
        (f"127.0.0.1:{port}", EXIT_UNREACHABLE),
    ):
        me = Machine(address, "ana", tmp_path)
        me.fail("sync", rc=rc)
        me.fail("challenges", rc=rc)
        me.run("games", "--sync", ok=False)  # unreachable: warns, shows no games
        made = sorted(p.relative_to(tmp_path) for p in me.data_dir.rglob("*"))
        assert made == [], (address, made)
