"""The health and metrics listener under hostile clients (docs/security.md, "The health and
metrics listener"): its connection cap, the time a client has to send a request, the size
of a request's head, one reading of the metrics files a second, one log line per error,
and the warning when it listens beyond loopback. A real server process, except where the
listener is run on the test's own loop to see its log records and readings."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http.client
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ajedrez.server import http_guard
from ajedrez.server.monitor import RENDER_SECONDS, Checks, WebServer, monitor_app
from ajedrez.server.prefork import open_listener
from ajedrez.store.db import Database
from tests.e2e.test_metrics import MONITOR, Monitored, _monitored
from tests.support.common import wait_for
from tests.support.play import Match, challenge_and_accept

HALF_SENT = b"GET /metrics HTTP/1.1\r\nHost: monitor\r\nAccept: text/plain"  # no end of head


def _address(m: Monitored) -> tuple[str, int]:
    host, port = m.base.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _opened(m: Monitored, n: int, first: bytes = HALF_SENT) -> list[socket.socket]:
    out = []
    for _ in range(n):
        s = socket.create_connection(_address(m), timeout=10)
        s.sendall(first)
        out.append(s)
    return out


def _answer(s: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while chunk := s.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _status(m: Monitored, path: str = "/metrics") -> int:
    host, port = _address(m)
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status
    except (ConnectionError, http.client.HTTPException):
        return 0  # closed without an answer
    finally:
        conn.close()


def _sockets(pid: int) -> int:
    """The sockets the process holds open."""
    found = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # closed while we looked
            found += fd.readlink().name.startswith("socket:")
    return found


@pytest.fixture
def capped(own_db: tuple[str, Database]) -> Iterator[Monitored]:
    yield from _monitored(
        own_db, "--metrics-max-connections", "8", "--metrics-request-timeout", "120"
    )


def test_at_the_cap_new_connections_get_503_and_players_play_on(capped: Monitored) -> None:
    m = capped
    held = _opened(m, 8)  # half-sent requests: each holds a place
    try:
        assert wait_for(lambda: _status(m) == 503)
        sockets = _sockets(m.srv.proc.pid)
        # A flood of half-sent requests beyond the cap, all held open by the client: each
        # answered 503 and closed at once, so the server holds no socket for them.
        flood = _opened(m, 300)
        try:
            assert wait_for(lambda: _sockets(m.srv.proc.pid) <= sockets + 2)
            for s in flood:
                answer = _answer_or_reset(s)
                assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n"), answer
                assert answer.endswith(
                    b"too many connections to this listener: try again shortly\n"
                )
        finally:
            for s in flood:
                s.close()
        # The players' port is another matter: a game goes on meanwhile.
        white, black = m.user(), m.user()
        game = challenge_and_accept(white, m.login(white), black, m.login(black))
        assert isinstance(game, Match)
        game.play("e4", "e5")
        log = m.srv.log_text()
        assert log.count("answered 503 and closed") == 1, log  # at most one line a minute
        assert "8 connection(s) open, the most allowed (metrics_max_connections)" in log
    finally:
        for s in held:
            s.close()
    assert wait_for(lambda: _status(m) == 200)
    assert _status(m, "/healthz") == 200
    assert m.srv.proc.poll() is None


def test_a_half_sent_request_is_closed_after_the_request_timeout(
    own_db: tuple[str, Database],
) -> None:
    for m in _monitored(own_db, "--metrics-request-timeout", "0.5"):
        [s] = _opened(m, 1)
        with s:
            start = time.monotonic()
            assert _answer(s) == b""  # closed without an answer
            waited = time.monotonic() - start
        assert 0.4 <= waited < 5, waited
        # One that trickles its head, a byte every 0.1 s, is closed all the same.
        with socket.create_connection(_address(m), timeout=0.1) as s:
            start = time.monotonic()
            closed = False
            for byte in HALF_SENT:
                try:
                    s.sendall(bytes([byte]))
                    closed = s.recv(1) == b""
                except TimeoutError:
                    continue  # nothing from the server in 0.1 s: the next byte
                except OSError:
                    closed = True
                if closed:
                    break
            assert closed, "a trickled head was still open after all its bytes"
            assert time.monotonic() - start < 5
        # A request sent in time is answered; the next one on the same connection has the
        # same time from that answer on.
        with socket.create_connection(_address(m), timeout=10) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: monitor\r\n\r\n")
            answer = b""
            while not answer.endswith(b"\r\n\r\nok\n"):
                chunk = s.recv(4096)
                assert chunk, answer
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
            s.sendall(HALF_SENT)
            start = time.monotonic()
            assert _answer(s) == b""
            assert time.monotonic() - start < 5
        assert _status(m) == 200


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(x for x in status.splitlines() if x.startswith("VmRSS:")).split()[1])


def test_an_oversized_head_gets_431_and_nothing_is_kept(own_db: tuple[str, Database]) -> None:
    """160 connections each sending 99 header fields of 65 kB (1 GB in all): each gets 431
    at its first field, and what it sent is not kept: the server's memory grows by well
    under a megabyte a connection (the listener thread's arena, and read buffers the
    collector has not freed yet), where 58 such connections once kept 326 MB."""
    for m in _monitored(own_db):
        assert _status(m) == 200
        before = _rss_kib(m.srv.proc.pid)
        big = b"X-Filler: " + b"a" * 65_000 + b"\r\n"
        grown = []
        for round_ in range(8):
            conns = _opened(m, 20, b"GET /metrics HTTP/1.1\r\nHost: m\r\n")
            for s in conns:
                with s:
                    try:
                        for _ in range(99):
                            s.sendall(big)
                    except OSError:
                        pass  # closed once the first field was too long: what is wanted
                    answer = _answer_or_reset(s)
                    assert _code(answer) == b"431", (round_, answer[:200])
            grown.append(_rss_kib(m.srv.proc.pid) - before)
        # Too many fields, each small.
        with socket.create_connection(_address(m), timeout=10) as s:
            s.sendall(
                b"GET /metrics HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(40))
            )
            s.sendall(b"\r\n")
            assert _code(_answer_or_reset(s)) == b"431"
        # Bounded by the header limit, not by what was sent: under 1 MiB a connection
        # (160 MiB), against 5.6 MiB a connection (326 MB for 58) when heads were kept.
        assert max(grown) < 160 * 1024, grown

        def bad(m: Monitored = m) -> list[str]:
            return [line for line in m.srv.log if "bad request from 127.0.0.1" in line]

        assert wait_for(lambda: len(bad()) >= 161), m.srv.log_text()
        log = m.srv.log_text()
        assert len(bad()) == 161, log
        assert all("request head too large" in line for line in bad())
        assert "Traceback" not in log
        assert _status(m) == 200


def _code(answer: bytes) -> bytes:
    """The status code of an HTTP answer (aiohttp answers a malformed request in HTTP/1.0)."""
    assert answer.startswith(b"HTTP/1."), answer[:200]
    return answer.split(b" ", 2)[1]


def _answer_or_reset(s: socket.socket) -> bytes:
    chunks = []
    try:
        while chunk := s.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass  # the server closed with our unread bytes in its buffer: the answer came first
    return b"".join(chunks)


def test_a_listener_beyond_loopback_is_logged_as_a_warning(own_db: tuple[str, Database]) -> None:
    for m in _monitored(own_db, "--metrics-host", "0.0.0.0"):
        warning = [line for line in m.srv.log if "open to other machines" in line]
        assert len(warning) == 1 and "WARNING" in warning[0], m.srv.log_text()
    for m in _monitored(own_db):
        assert "open to other machines" not in m.srv.log_text()
        assert MONITOR.search(m.srv.log_text())


# -- on the test's own loop ----------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_scrapes_within_a_second_share_one_reading_of_the_files(tmp_path: Path) -> None:
    clock = Clock()
    checks = Checks(lambda: (True, ""), str(tmp_path), clock=clock)
    try:
        first = checks._collect("", "", [])
        clock.now += RENDER_SECONDS / 2
        assert checks._collect("", "", []) == first
        assert checks.renders == 1
        # Other forms, and any name[] list, are written from the same reading.
        gzipped = checks._collect("", "gzip", [])
        assert gzip.decompress(gzipped[0]) == first[0]
        checks._collect("application/openmetrics-text; version=1.0.0", "", [])
        for i in range(20):
            checks._collect("", "", [f"ajedrez_{i}"])
        assert checks.renders == 1
        clock.now += RENDER_SECONDS / 2
        checks._collect("", "", [])
        assert checks.renders == 2  # a second after the first: read again
    finally:
        checks.close()


def test_a_flood_of_scrapes_reads_the_files_once(tmp_path: Path) -> None:
    """Twenty scrapes at once over HTTP: one reading of the files."""
    checks = Checks(lambda: (True, ""), str(tmp_path), clock=lambda: 0.0)

    async def scenario() -> list[int]:
        server = WebServer(monitor_app(checks), open_listener("127.0.0.1", 0, 64))
        await server.start()
        host, port = server.address

        def get() -> int:
            conn = http.client.HTTPConnection(host, port, timeout=10)
            conn.request("GET", "/metrics")
            status = conn.getresponse().status
            conn.close()
            return status

        try:
            loop = asyncio.get_running_loop()
            return list(await asyncio.gather(*(loop.run_in_executor(None, get) for _ in range(20))))
        finally:
            await server.stop()

    try:
        assert asyncio.run(scenario()) == [200] * 20
        assert checks.renders == 1
    finally:
        checks.close()


def test_a_failure_while_answering_is_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A rendering that fails makes /metrics answer 500, and one ERROR line naming the
    reason, no traceback, nothing from aiohttp."""

    class Broken:
        def collect(self) -> list[object]:
            raise RuntimeError("the metrics files cannot be read\nsecond line")

    checks = Checks(lambda: (True, ""), str(tmp_path))
    checks.registry = Broken()  # type: ignore[assignment]

    async def scenario() -> int:
        server = WebServer(monitor_app(checks), open_listener("127.0.0.1", 0, 8))
        await server.start()
        host, port = server.address

        def get() -> int:
            conn = http.client.HTTPConnection(host, port, timeout=10)
            conn.request("GET", "/metrics")
            status = conn.getresponse().status
            conn.close()
            return status

        try:
            return await asyncio.get_running_loop().run_in_executor(None, get)
        finally:
            await server.stop()

    caplog.set_level(logging.DEBUG)
    try:
        assert asyncio.run(scenario()) == 500
    finally:
        checks.close()
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    [record] = errors
    assert record.name == "ajedrez.monitor" and record.levelno == logging.ERROR
    assert record.getMessage() == (
        "error answering a request from 127.0.0.1: RuntimeError: the metrics files cannot be read"
    )
    assert record.exc_info is None and "\n" not in record.getMessage()


def test_the_guard_never_holds_more_than_the_cap(tmp_path: Path) -> None:
    """A burst of connects all accepted in one turn of the loop: the count starts at the
    accept, so the cap holds however many come at once."""
    checks = Checks(lambda: (True, ""), str(tmp_path))
    limits = http_guard.HttpLimits(max_connections=4, request_timeout=30)

    async def scenario() -> tuple[int, int]:
        server = WebServer(monitor_app(checks), open_listener("127.0.0.1", 0, 128), limits)
        await server.start()
        host, port = server.address
        socks = []
        for _ in range(40):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex((host, port))
            socks.append(s)
        try:
            guard = server.guard
            assert guard is not None
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while loop.time() < deadline and guard.open < 4:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # every connect accepted by now
            return guard.open, len(guard.server.connections)
        finally:
            for s in socks:
                s.close()
            await server.stop()

    try:
        assert asyncio.run(scenario()) == (4, 4)
    finally:
        checks.close()
