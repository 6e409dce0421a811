"""ESPOL 2.0 framing: command lines in, 6-byte-header replies out (docs/protocol.md section 1).

Nothing here does I/O: :class:`LineBuffer` turns received bytes into lines,
:func:`parse_line` turns a line into a command code and fields, and :func:`encode_reply`
and :func:`encode_records` build the bytes to send.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ajedrez.espol.codes import Reply
from ajedrez.espol.fields import shown

MAX_DATA = 4096
# The longest valid line (SUBS with a 32-character name, a 128-character password and a
# 200-character comment, all in 4-byte UTF-8) is under 1,400 bytes; 2,048 leaves room and
# still bounds what one client can make the server hold.
MAX_LINE = 2048
HEADER = struct.Struct("!3sc H")


class LineError(Exception):
    """A line that cannot be a command; carries the failure code and the reason."""

    def __init__(self, code: Reply, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


OVERLONG = object()  # yielded by LineBuffer in place of a line that was too long


class LineBuffer:
    """Splits a byte stream into lines ending in LF (CRLF or bare LF).

    A line longer than ``max_line`` bytes is discarded whole, up to and including its
    LF, and reported once as :data:`OVERLONG`, so the stream stays in step with the next
    line. At most ``max_line`` bytes are ever held.
    """

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._buf = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> Iterator[bytes | object]:
        self._buf += data
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                if len(self._buf) > self.max_line + 1:  # +1: a CR may still be followed by LF
                    self._buf.clear()
                    if not self._discarding:
                        self._discarding = True
                        yield OVERLONG
                return
            line = bytes(self._buf[:nl])
            del self._buf[: nl + 1]
            if self._discarding:
                self._discarding = False
                continue
            if line.endswith(b"\r"):
                line = line[:-1]
            if len(line) > self.max_line:
                yield OVERLONG
                continue
            yield line

    @property
    def pending(self) -> int:
        return len(self._buf)


@dataclass(frozen=True)
class Line:
    code: str
    fields: list[str]


def parse_line(raw: bytes) -> Line:
    """Decode and split one line (without its terminator) into code and fields."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LineError(Reply.F_ENCODING, f"line is not valid UTF-8 (byte {e.start})") from e
    code, sep, rest = text.partition(":")
    if not (len(code) == 4 and code.isascii() and code.isalpha()):
        raise LineError(
            Reply.F_CMDINV,
            f"'{shown(code)}' is not a command: expected four letters such as USER",
        )
    return Line(code, rest.split(":") if sep else [])


def encode_reply(code: Reply | int, data: str | bytes = b"", more: bool = False) -> bytes:
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if len(payload) > MAX_DATA:
        raise ValueError(f"reply data of {len(payload)} bytes exceeds {MAX_DATA}")
    return HEADER.pack(b"%03d" % int(code), b"1" if more else b"0", len(payload)) + payload


def encode_records(
    code: Reply | int, records: Iterable[str], *, prefix: str | None = None, sep: str = ","
) -> list[bytes]:
    """One or more replies carrying ``records`` joined by ``sep``, cut between records.

    With a ``prefix`` (TRAN, JAUT, PPEN: the fecha) every part starts with
    ``prefix + sep``. Every part but the last has the flag set.
    """
    head = (prefix + sep).encode() if prefix is not None else b""
    bsep = sep.encode()
    parts: list[bytes] = []
    current = bytearray(head)
    has_record = False
    for record in records:
        rec = record.encode("utf-8")
        if len(head) + len(rec) > MAX_DATA:
            raise ValueError(f"a record of {len(rec)} bytes cannot fit in one reply")
        extra = len(rec) + (len(bsep) if has_record else 0)
        if has_record and len(current) + extra > MAX_DATA:
            parts.append(bytes(current))
            current = bytearray(head)
            has_record = False
        if has_record:
            current += bsep
        current += rec
        has_record = True
    parts.append(bytes(current))
    return [encode_reply(code, part, more=i < len(parts) - 1) for i, part in enumerate(parts)]


def decode_header(header: bytes) -> tuple[int, bool, int]:
    """(code, more, length) from a 6-byte header; for clients and tests."""
    code, flag, length = HEADER.unpack(header)
    return int(code), flag == b"1", length
