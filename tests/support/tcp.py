"""What the session tests over TCP share: lines every logged-in command needs, and checks
of replies read off a real connection."""

from __future__ import annotations

import re
import socket
import struct

from sqlalchemy import select

from ajedrez.store.models import Subscription, User
from tests.support.common import PASSWORD
from tests.support.espol import Conn, Reply

FAR_FUTURE = "99999999999"
FECHA_RE = re.compile(r"[0-9]{11}")
USUARIO_RE = re.compile(r"[A-Za-z0-9_.\-]{1,32}")
LOGIN_COMMANDS = [
    "JUEG:bea",
    "TRAN:0",
    "ACEP:B:bea",
    "PPEN:0",
    "JAUT:0",
    "SRNK",
    "STAT:P0000001",
    "SPAR:P0000001:0",
    "JGDA:P0000001:1:e2e4:0:1228:0",
    "TBLS:P0000001:bea",
    "TBLs:P0000001:bea",
    "RTBL:P0000001:S:bea",
    "RTBS:P0000001:S:bea",
    "REND:P0000001:bea",
    "FINP:P0000001:bea",
    "UNSU:ana:clave",
    "JAUT",  # a wrong field count is still "needs a login"
    "JAUT:abc",  # so is a malformed field
]


def raw_reply(c: Conn) -> tuple[bytes, bytes]:
    """(6-byte header, data) read straight off the stream, without interpretation."""
    header = c._read_exact(6)
    (length,) = struct.unpack("!H", header[4:6])
    return header, c._read_exact(length)


def assert_failure(r: Reply, code: int) -> None:
    assert r.code == code, r
    assert not r.more
    assert r.text.strip(), "a failure carries a reason"
    assert "\n" not in r.text and "\r" not in r.text, "the reason is one line"


def assert_usable(c: Conn) -> None:
    """The connection answers the next command (HELP works logged in or not)."""
    r = c.cmd("HELP:QUIT")
    assert r.code == 110, r
    assert r.text.startswith("QUIT")


def assert_logged_in(c: Conn) -> None:
    r = c.cmd(f"JAUT:{FAR_FUTURE}")
    assert r.code == 201, r


def vanish(c: Conn) -> None:
    """Close with a TCP reset, as a crashed client or a dropped link would."""
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()


def jaut(c: Conn, fecha: str) -> tuple[str, list[str], list[Reply]]:
    """(fecha, names, parts) of a JAUT answer, checking its framing."""
    parts = c.cmd_all(f"JAUT:{fecha}")
    if parts[0].code == 201:
        assert len(parts) == 1 and FECHA_RE.fullmatch(parts[0].text), parts
        return parts[0].text, [], parts
    stamp = parts[0].text[:11]
    assert FECHA_RE.fullmatch(stamp), parts[0].text[:20]
    names: list[str] = []
    for i, p in enumerate(parts):
        assert p.code == 204, p
        assert p.more == (i < len(parts) - 1)
        assert len(p.data) <= 4096
        assert p.text.startswith(stamp + ","), p.text[:20]
        names.extend(p.text[len(stamp) + 1 :].split(","))
    return stamp, names, parts


def user_row(db, name: str):
    with db.engine.connect() as conn:
        return conn.execute(select(User).where(User.name == name)).first()


def subscription_row(db, name: str):
    with db.engine.connect() as conn:
        return conn.execute(select(Subscription).where(Subscription.name == name)).first()


def new_connection_login(server, name: str, password: str = PASSWORD) -> Conn:
    c = server.connect()
    assert c.cmd(f"USER:{name}").code == 101
    assert c.cmd(f"PASS:{password}").code == 102
    return c
