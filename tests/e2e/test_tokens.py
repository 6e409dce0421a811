"""Logins that last over real TCP (docs/protocol.md, "Tokens"): FICH through the
connection's login gate on a server process, and the lifetime a server is started with
(``--token-days``), on the server's injected time."""

from __future__ import annotations

from tests.support.clock import FileTime
from tests.support.common import PASSWORD
from tests.support.server import start_server

DAY_MS = 86_400_000


def fich(server, name: str, secret: str) -> int:  # type: ignore[no-untyped-def]
    with server.connect() as c:
        c.send(f"FICH:{name}:{secret}")
        code = c.reply().code
        if code == 102:
            c.send("FICL")
            assert c.reply().code == 236
        return int(code)


def test_a_token_lapses_after_token_days_unused(database_url, new_user, tmp_path) -> None:  # type: ignore[no-untyped-def]
    now = FileTime(tmp_path / "now")
    srv = start_server(database_url, "--clock-file", str(now.path), "--token-days", "2")
    try:
        name = new_user("tok")
        with srv.connect() as c:
            c.send(f"USER:{name}")
            assert c.reply().code == 101
            c.send(f"PASS:{PASSWORD}")
            assert c.reply().code == 102
            c.send("FICN:e2e")
            made = c.reply()
            assert made.code == 235
        secret = made.text.split(":", 1)[1]
        assert fich(srv, name, secret) == 102
        now.advance(DAY_MS + DAY_MS // 2)  # used within 2 days: good again for 2 more
        assert fich(srv, name, secret) == 102
        now.advance(DAY_MS + DAY_MS // 2)
        assert fich(srv, name, secret) == 102
        now.advance(2 * DAY_MS + 1000)  # 2 days and a second unused: lapsed
        assert fich(srv, name, secret) == 854
    finally:
        srv.stop()
