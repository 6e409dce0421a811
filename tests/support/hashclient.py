"""A client of the `#` protocol written from seed 000 (*Protocolo para Ajedrez Distribuido
v1.0*) and docs/dialects.md alone: messages ``#FIELD#FIELD#...#``, one a line."""

from __future__ import annotations

import re
import socket
import ssl
import time

from tests.support.common import wait_for
from tests.support.server import ServerProcess

LISTENING = re.compile(r"# protocol \(seed 000\) listening on (\S+):(\d+)")
LISTENING_TLS = re.compile(r"# protocol \(seed 000\) listening with TLS on (\S+):(\d+)")
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def hash_port(srv: ServerProcess, *, tls: bool = False) -> int:
    """The port of a server's `#` listener, from its log (logged after ESPOL's)."""
    pattern = LISTENING_TLS if tls else LISTENING
    assert wait_for(lambda: pattern.search(srv.log_text()) is not None), srv.log_text()
    found = pattern.search(srv.log_text())
    assert found
    return int(found.group(2))


class HashClient:
    def __init__(
        self,
        port: int,
        timeout: float = 20.0,
        host: str = "127.0.0.1",
        tls: ssl.SSLContext | None = None,
    ) -> None:
        raw = socket.create_connection((host, port), timeout=timeout)
        self.sock = tls.wrap_socket(raw, server_hostname=host) if tls else raw
        self.timeout = timeout
        self._buf = b""

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> HashClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, *fields: str, end: str = "\n") -> None:
        self.send_raw(("#" + "#".join(fields) + "#" + end).encode())

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def line(self, timeout: float | None = None) -> str:
        """The next line the server sent, without its LF."""
        self.sock.settimeout(self.timeout if timeout is None else timeout)
        while b"\n" not in self._buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError(f"closed; unfinished: {self._buf!r}")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\n", 1)
        return raw.decode()

    def msg(self, timeout: float | None = None) -> list[str]:
        """The next message's fields: ``#OK#B#12#`` is ``["OK", "B", "12"]``."""
        text = self.line(timeout)
        assert text.startswith("#") and text.endswith("#") and len(text) >= 2, text
        return text[1:-1].split("#")

    def ask(self, *fields: str) -> list[str]:
        self.send(*fields)
        return self.msg()

    def quiet(self, seconds: float) -> list[str]:
        """The lines that come within ``seconds`` (none expected)."""
        got: list[str] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                got.append(self.line(left))
            except (TimeoutError, EOFError):
                break
        return got

    def closed(self, timeout: float = 10.0) -> bool:
        """The server closed the connection (whatever it sent first is read and dropped)."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
        except TimeoutError:
            return False
        except OSError:
            return True
        return True
