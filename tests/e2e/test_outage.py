"""A database outage gives 4xx replies; the server keeps running and recovers by itself."""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import threading

from sqlalchemy import make_url

from tests.support.common import wait_for
from tests.support.espol import Conn
from tests.support.server import start_server


class CuttableProxy:
    """A TCP relay to the database that a test can cut and restore."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self._open.is_set():
                client.close()  # the database is "down": refuse at once
                continue
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._pairs.append((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self._open.clear()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

    def restore(self) -> None:
        self._open.set()

    def close(self) -> None:
        self.cut()
        self.listener.close()


def _login(conn: Conn, name: str) -> None:
    from tests.support.common import PASSWORD

    assert conn.cmd(f"USER:{name}").code == 101
    assert conn.cmd(f"PASS:{PASSWORD}").code == 102


def test_database_outage_gives_401_and_the_server_recovers(database_url, db, new_user) -> None:  # type: ignore[no-untyped-def]
    ana, bob = new_user(), new_user()
    if db.is_sqlite:
        _sqlite_outage(database_url, ana, bob)
    else:
        _postgresql_outage(database_url, ana, bob)


def _postgresql_outage(database_url: str, ana: str, bob: str) -> None:
    url = make_url(database_url)
    proxy = CuttableProxy((url.host or "127.0.0.1", url.port or 5432))
    through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    srv = start_server(through)
    try:
        with srv.connect() as c:
            _login(c, ana)
            assert c.cmd("SRNK").code == 205
            proxy.cut()
            down = c.cmd("SRNK")
            assert down.code == 401 and "database" in down.text
            assert c.cmd(f"JUEG:{bob}").code == 401  # a write: nothing half-done
            proxy.restore()
            assert wait_for(lambda: c.cmd("SRNK").code == 205, timeout=30)
            assert c.cmd(f"JUEG:{bob}").code == 200  # the failed JUEG left nothing behind
        assert srv.proc.poll() is None  # still running
        assert wait_for(lambda: "storage error" in srv.log_text())
    finally:
        srv.stop()
        proxy.close()


def _sqlite_outage(database_url: str, ana: str, bob: str) -> None:
    srv = start_server(database_url, "--sqlite-busy-timeout", "0.5")
    path = make_url(database_url).database
    assert path
    blocker = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        with srv.connect() as c:
            _login(c, ana)
            blocker.execute("BEGIN EXCLUSIVE")  # another process holds the database
            down = c.cmd(f"JUEG:{bob}")
            assert down.code == 401 and "database" in down.text
            assert c.cmd("SRNK").code == 205  # WAL readers are not blocked
            blocker.execute("ROLLBACK")
            assert c.cmd(f"JUEG:{bob}").code == 200
        assert srv.proc.poll() is None
        assert wait_for(lambda: "storage error" in srv.log_text())
    finally:
        blocker.close()
        srv.stop()
