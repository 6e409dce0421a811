"""The binary protocol's packets on the wire (seed 004, *Chess Protocol v1.0*;
docs/dialects.md): bytes in, packets out; packets out, bytes. No I/O.

A packet is a 4-byte ASCII type, then its fields at the offsets the seed's tables give;
nothing else frames it, so a packet's length follows from its type and its length
fields. A type the server does not know leaves it no way to find where the next packet
starts: :class:`PacketReader` gives :class:`Unknown` and reads nothing more.

Squares are (column, row), each 0-7: column 0 is the a-file, row 0 white's first rank.
A board is 64 bytes, a1, b1, ... h1, a2, ... h8 (byte ``row * 8 + column``), each the
seed's 0-12 code of what stands there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import chess

# -- the client's packets ---------------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    """JOIN (the seed's table heads it "NAME", which is accepted too): a name, as sent."""

    name: bytes


@dataclass(frozen=True)
class Login:
    """AUTH (this server's): an account's name and its password."""

    name: bytes
    password: bytes


@dataclass(frozen=True)
class Role:
    """INIT: the role wished for (1 or 2 a player, 3 a spectator)."""

    role: int


@dataclass(frozen=True)
class Watch:
    """OBSV (this server's): be a spectator of the game with this number."""

    game_id: int


@dataclass(frozen=True)
class Play:
    """PLAY (the seed says it "should be MOVE", which is accepted too)."""

    origin: tuple[int, int]
    target: tuple[int, int]


@dataclass(frozen=True)
class Hover:
    square: tuple[int, int]


@dataclass(frozen=True)
class Chat:
    text: bytes


@dataclass(frozen=True)
class Signal:
    """A packet that is its type alone: PASS, CHEK, CKMT, UNDO, and this server's DENY
    and RSGN."""

    kind: str


@dataclass(frozen=True)
class Unknown:
    """Bytes that are no packet the server knows: nothing after them can be read."""

    head: bytes


Packet = Name | Login | Role | Watch | Play | Hover | Chat | Signal

# The types, as they come on the wire.
JOIN = b"JOIN"
NAME = b"NAME"
AUTH = b"AUTH"
INIT = b"INIT"
OBSV = b"OBSV"
PLAY = b"PLAY"
MOVE = b"MOVE"
HOVR = b"HOVR"
CHAT = b"CHAT"
PASS = "PASS"
CHEK = "CHEK"
CKMT = "CKMT"
UNDO = "UNDO"
DENY = "DENY"  # a takeback declined
RSGN = "RSGN"  # resignation
SIGNALS = frozenset({PASS, CHEK, CKMT, UNDO, DENY, RSGN})
UPDT = b"UPDT"

# The longest packet a client may send: AUTH with a 255-byte name and password.
MAX_PACKET = 4 + 1 + 255 + 1 + 255


class PacketReader:
    def __init__(self) -> None:
        self._buffer = b""
        self._stopped = False

    @property
    def pending(self) -> bool:
        """Part of a packet has come."""
        return bool(self._buffer) and not self._stopped

    def feed(self, data: bytes) -> list[Packet | Unknown]:
        """The packets ``data`` completes, in order; after an :class:`Unknown`, nothing."""
        if self._stopped:
            return []
        self._buffer += data
        out: list[Packet | Unknown] = []
        at = 0  # where the next packet starts: the buffer is cut once, after the loop
        while len(self._buffer) - at >= 4:
            # No packet is longer than MAX_PACKET: read each from a window that long, so
            # that many small packets in one read cost no copy of the rest each.
            taken = _read(self._buffer[at : at + MAX_PACKET])
            if taken is None:
                break
            packet, size = taken
            out.append(packet)
            if isinstance(packet, Unknown):
                self._stopped = True
                self._buffer = b""
                return out
            at += size
        self._buffer = self._buffer[at:]
        return out


def _read(buf: bytes) -> tuple[Packet | Unknown, int] | None:
    """The packet at the start of ``buf`` and its size; None while it is incomplete."""
    kind = buf[:4]
    if kind in (JOIN, NAME, CHAT):
        if len(buf) < 5:
            return None
        size = buf[4]
        if kind == CHAT:
            return _chat(buf, size)
        end = 5 + size
        return (Name(buf[5:end]), end) if len(buf) >= end else None
    if kind == AUTH:
        if len(buf) < 5 or len(buf) < 6 + buf[4]:
            return None
        name_end = 5 + buf[4]
        end = name_end + 1 + buf[name_end]
        if len(buf) < end:
            return None
        return Login(buf[5:name_end], buf[name_end + 1 : end]), end
    if kind == INIT:
        return (Role(buf[4]), 5) if len(buf) >= 5 else None
    if kind == OBSV:
        return (Watch(int.from_bytes(buf[4:8], "big")), 8) if len(buf) >= 8 else None
    if kind == HOVR:
        return (Hover((buf[4], buf[5])), 6) if len(buf) >= 6 else None
    if kind in (PLAY, MOVE):
        return (Play((buf[4], buf[5]), (buf[6], buf[7])), 8) if len(buf) >= 8 else None
    text = kind.decode("latin-1")
    if text in SIGNALS:
        return Signal(text), 4
    return Unknown(kind), 4


def _chat(buf: bytes, size: int) -> tuple[Packet, int] | None:
    """CHAT's text follows its length byte at offset 5; the seed's table puts it at
    offset 6, so a 0 byte at offset 5 (no text starts with a NUL) is taken as a pad
    before the text. An empty message has neither."""
    if size == 0:
        return Chat(b""), 5
    if len(buf) < 6:
        return None
    start = 6 if buf[5] == 0 else 5
    end = start + size
    return (Chat(buf[start:end]), end) if len(buf) >= end else None


# -- the server's packets ---------------------------------------------------------------------

EMPTY = 0
# The seed's board codes: player 1's (white's) pieces 1-6, player 2's 7-12.
_PIECE_CODES = {
    chess.PAWN: 1,
    chess.ROOK: 2,
    chess.KNIGHT: 3,
    chess.BISHOP: 4,
    chess.QUEEN: 5,
    chess.KING: 6,
}
BLACK_OFFSET = 6


def board_bytes(fen: str) -> bytes:
    """The 64 bytes of the position ``fen``, a1 first."""
    board = chess.Board(fen)
    out = bytearray(64)
    for square, piece in board.piece_map().items():
        code = _PIECE_CODES[piece.piece_type]
        out[square] = code if piece.color == chess.WHITE else code + BLACK_OFFSET
    return bytes(out)


def name_answer(code: int) -> bytes:
    return b"NAME" + bytes([code])


def join_answer(joined: bool) -> bytes:
    return b"JOIN" + bytes([1 if joined else 0])


def init(role: int, player1: str, player2: str, fen: str | None) -> bytes:
    """INIT: the role, both names, and the board (when ``fen`` is given)."""
    one, two = player1.encode(), player2.encode()
    head = b"INIT" + bytes([role, len(one), len(two), 0 if fen is None else 1])
    return head + one + two + (b"" if fen is None else board_bytes(fen))


def move_error(code: int) -> bytes:
    return b"MOVE" + bytes([code])


def hover(square: tuple[int, int], targets: Iterable[tuple[int, int]] | None) -> bytes:
    """HOVR: the square, then (to the player to move alone) its targets as 8 bytes, one
    a row (row 0 first), bit ``1 << column`` set for each target on it."""
    head = b"HOVR" + bytes(square)
    if targets is None:
        return head
    rows = bytearray(8)
    for column, row in targets:
        rows[row] |= 1 << column
    return head + bytes(rows)


def update(turn: int, victory: int, fen: str) -> bytes:
    return UPDT + bytes([turn, victory]) + board_bytes(fen)


def chat(user: str, text: str) -> bytes:
    """CHAT: the name's length (1 byte), the message's (2 bytes, big-endian), the name,
    the message, in UTF-8."""
    name, said = user.encode()[:255], text.encode()[:65535]
    return CHAT + bytes([len(name)]) + len(said).to_bytes(2, "big") + name + said


def signal(kind: str) -> bytes:
    """CHEK, CKMT, UNDO, DENY: the type alone."""
    return kind.encode()
