"""A minimal ESPOL 2.0 client for the tests, written from the contract alone."""

from __future__ import annotations

import socket
import ssl
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class Reply:
    code: int
    more: bool
    data: bytes

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")

    @property
    def kind(self) -> str:
        first = self.code // 100
        return {1: "S", 2: "S", 3: "S", 4: "E", 5: "E", 6: "V", 8: "F", 9: "F"}[first]


class Closed(Exception):
    """The server closed the connection."""


class Conn:
    def __init__(
        self,
        host: str,
        port: int,
        timeout: float = 20.0,
        tls: ssl.SSLContext | None = None,
        source: str | None = None,
    ) -> None:
        """``source``: the local address to connect from (any of 127.0.0.0/8 on loopback),
        so one test can be many clients."""
        where = None if source is None else (source, 0)
        raw = socket.create_connection((host, port), timeout=timeout, source_address=where)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = tls.wrap_socket(raw, server_hostname=host) if tls else raw
        self._buf = b""

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Conn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, line: str) -> None:
        self.sock.sendall(line.encode("utf-8") + b"\r\n")

    def _read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Closed(f"connection closed with {len(self._buf)} of {n} bytes read")
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def reply(self) -> Reply:
        header = self._read_exact(6)
        code, flag = header[:3], header[3:4]
        assert code.isdigit(), f"bad reply code bytes {code!r}"
        assert flag in (b"0", b"1"), f"bad flag byte {flag!r}"
        (length,) = struct.unpack("!H", header[4:6])
        assert length <= 4096, f"reply data of {length} bytes"
        return Reply(int(code), flag == b"1", self._read_exact(length))

    def replies(self) -> list[Reply]:
        """Every part of one answer (until a reply with flag 0)."""
        parts = [self.reply()]
        while parts[-1].more:
            parts.append(self.reply())
        return parts

    def cmd(self, line: str) -> Reply:
        """Send a command expected to get a single-part answer."""
        self.send(line)
        parts = self.replies()
        assert len(parts) == 1, f"{line!r} got {len(parts)} parts"
        return parts[0]

    def cmd_all(self, line: str) -> list[Reply]:
        self.send(line)
        return self.replies()

    def is_closed(self, timeout: float = 5.0) -> bool:
        """True when the server has closed its side (EOF), False if data or nothing came."""
        if self._buf:
            return False
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
