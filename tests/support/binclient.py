"""A client of the binary protocol written from seed 004 (*Chess Protocol v1.0*) and
docs/dialects.md alone: packets of a 4-byte ASCII type and fields at fixed offsets.
Squares are (column, row), a1 = (0, 0); a board is 64 bytes, a1 first."""

from __future__ import annotations

import re
import socket
import ssl
import time
from dataclasses import dataclass

import chess

from tests.support.common import wait_for
from tests.support.server import ServerProcess

LISTENING = re.compile(r"binary protocol \(seed 004\) listening on (\S+):(\d+)")
LISTENING_TLS = re.compile(r"binary protocol \(seed 004\) listening with TLS on (\S+):(\d+)")
# The seed's board codes, by python-chess's symbols.
CODES = {sym: i + 1 for i, sym in enumerate("PRNBQKprnbqk")}


def binary_port(srv: ServerProcess, *, tls: bool = False) -> int:
    """The port of a server's binary listener, from its log."""
    pattern = LISTENING_TLS if tls else LISTENING
    assert wait_for(lambda: pattern.search(srv.log_text()) is not None), srv.log_text()
    found = pattern.search(srv.log_text())
    assert found
    return int(found.group(2))


def board_of(fen: str) -> bytes:
    """The 64 bytes the seed's table gives the position ``fen``."""
    board = chess.Board(fen)
    return bytes(
        0 if (piece := board.piece_at(sq)) is None else CODES[piece.symbol()]
        for sq in chess.SQUARES
    )


def xy(square: str) -> tuple[int, int]:
    return "abcdefgh".index(square[0]), int(square[1]) - 1


@dataclass(frozen=True)
class Packet:
    kind: str
    body: bytes  # the bytes after the type

    def __getitem__(self, i: int) -> int:
        return self.body[i]


class BinaryClient:
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
        self.playing = False  # this client is the player to move (HOVR's move set)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> BinaryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sending ---------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def join(self, name: str) -> None:
        raw = name.encode()
        self.send_raw(b"JOIN" + bytes([len(raw)]) + raw)

    def auth(self, name: str, password: str) -> None:
        n, pw = name.encode(), password.encode()
        self.send_raw(b"AUTH" + bytes([len(n)]) + n + bytes([len(pw)]) + pw)

    def role(self, role: int) -> None:
        self.send_raw(b"INIT" + bytes([role]))

    def play(self, origin: str | tuple[int, int], target: str | tuple[int, int]) -> None:
        a = xy(origin) if isinstance(origin, str) else origin
        b = xy(target) if isinstance(target, str) else target
        self.send_raw(b"PLAY" + bytes([*a, *b]))

    def hover(self, square: str) -> None:
        self.send_raw(b"HOVR" + bytes(xy(square)))

    def chat(self, text: str) -> None:
        raw = text.encode()
        self.send_raw(b"CHAT" + bytes([len(raw)]) + raw)

    def signal(self, kind: str) -> None:
        self.send_raw(kind.encode())

    # -- receiving -------------------------------------------------------------------------

    def _take(self, n: int, timeout: float | None = None) -> bytes:
        self.sock.settimeout(self.timeout if timeout is None else timeout)
        while len(self._buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError(f"closed; unfinished: {self._buf!r}")
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def packet(self, timeout: float | None = None) -> Packet:
        kind = self._take(4, timeout).decode()
        if kind in ("NAME", "JOIN", "MOVE"):
            return Packet(kind, self._take(1))
        if kind in ("CHEK", "CKMT", "UNDO", "DENY"):
            return Packet(kind, b"")
        if kind == "UPDT":
            return Packet(kind, self._take(66))
        if kind == "HOVR":
            # The move set comes to the player to move alone.
            return Packet(kind, self._take(10 if self.playing else 2))
        if kind == "INIT":
            head = self._take(4)
            rest = self._take(head[1] + head[2] + (64 if head[3] else 0))
            return Packet(kind, head + rest)
        if kind == "CHAT":
            head = self._take(3)
            rest = self._take(head[0] + int.from_bytes(head[1:3], "big"))
            return Packet(kind, head + rest)
        raise AssertionError(f"unknown packet {kind!r}")

    def expect(self, kind: str) -> Packet:
        got = self.packet()
        assert got.kind == kind, (kind, got)
        return got

    def quiet(self, seconds: float) -> list[Packet]:
        """The packets that come within ``seconds`` (none expected)."""
        got: list[Packet] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                got.append(self.packet(left))
            except (TimeoutError, EOFError, ConnectionResetError):
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


def init_fields(packet: Packet) -> tuple[int, str, str, bytes | None]:
    """INIT's role, player 1's name, player 2's, and the board if sent."""
    b = packet.body
    role, n1, n2, has_board = b[0], b[1], b[2], b[3]
    one, two = b[4 : 4 + n1].decode(), b[4 + n1 : 4 + n1 + n2].decode()
    return role, one, two, (b[4 + n1 + n2 :] if has_board else None)


def update_fields(packet: Packet) -> tuple[int, int, bytes]:
    """UPDT's turn (1/2), victory state and board."""
    return packet.body[0], packet.body[1], packet.body[2:]


def chat_fields(packet: Packet) -> tuple[str, str]:
    b = packet.body
    n = b[0]
    return b[3 : 3 + n].decode(), b[3 + n :].decode()


def move_set(packet: Packet) -> set[str]:
    """HOVR's 8-byte move set: a byte a row, bit (1 << column) a target."""
    rows = packet.body[2:]
    return {
        "abcdefgh"[col] + str(row + 1)
        for row in range(8)
        for col in range(8)
        if rows[row] >> col & 1
    }
