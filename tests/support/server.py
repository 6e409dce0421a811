"""Real server processes (``python -m ajedrez``), the admin command, and TLS material."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.common import ROOT, wait_for
from tests.support.espol import Conn

LISTENING = re.compile(r"listening on (\S+):(\d+)")


@dataclass
class ServerProcess:
    proc: subprocess.Popen[str]
    host: str
    port: int
    database_url: str | None  # None: the server chose it (a settings file, its default)
    log: list[str] = field(default_factory=list)

    def connect(self, timeout: float = 20.0, source: str | None = None) -> Conn:
        return Conn(self.host, self.port, timeout, source=source)

    def log_text(self) -> str:
        return "\n".join(self.log)

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(timeout)


def start_server(
    database_url: str | None, *extra: str, env: dict[str, str] | None = None
) -> ServerProcess:
    """Start ``python -m ajedrez`` on a free port and wait until it listens; with
    ``database_url`` None it is given no ``--database-url``."""
    cmd = [
        sys.executable,
        "-m",
        "ajedrez",
        *(() if database_url is None else ("--database-url", database_url)),
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        # Every test's clients come from 127.0.0.1 and share one database: the caps on
        # SUBS per address would soon refuse them, and servers killed by a test leave
        # their sessions counted against the cap per account until their leases lapse.
        # The tests of those caps set their own (a later option overrides an earlier one).
        *("--subs-per-address", "1000000", "--max-pending-per-address", "1000000"),
        # Likewise the requests one account may send that notify others: the tests of
        # that limit set their own.
        *("--events-burst", "1000000"),
        *("--max-sessions-per-account", "1000000"),
        # And the replay a stream may ask for: tests that read a whole history from 0.
        *("--event-catch-up-limit", "1000000"),
        *extra,
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )
    lines: list[str] = []
    found = threading.Event()
    address: list[tuple[str, int]] = []

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            m = LISTENING.search(line)
            if m and not found.is_set():
                address.append((m.group(1), int(m.group(2))))
                found.set()
        found.set()

    threading.Thread(target=drain, daemon=True).start()
    if not found.wait(60) or not address:
        proc.kill()
        raise RuntimeError("server did not start:\n" + "\n".join(lines))
    host, port = address[0]
    return ServerProcess(proc, host, port, database_url, lines)


def admin(
    database_url: str, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``ajedrez-admin`` as a script would (a separate process, standard input not a
    terminal: never the terminal pytest may have been started from, where it would ask)."""
    return subprocess.run(
        [sys.executable, "-m", "ajedrez.admin.cli", "--database-url", database_url, *args],
        cwd=ROOT,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        timeout=120,
    )


def make_tls_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key, in ``directory``."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def tls_port(srv: ServerProcess) -> int:
    """The port of a server's TLS listener, from its log."""
    assert wait_for(lambda: "listening with TLS on" in srv.log_text())
    m = re.search(r"listening with TLS on \S+:(\d+)", srv.log_text())
    assert m
    return int(m.group(1))
