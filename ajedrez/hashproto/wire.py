"""The `#` protocol's messages on the wire (seed 000, docs/dialects.md): bytes in,
messages out; messages out, bytes. No I/O.

A message is ``#COMMAND#field#...#``. The seed names no terminator: the server ends each
of its messages with LF, and takes a client's message as ended by LF (CRLF too), by the
``#`` that starts the next one right after its own last ``#`` (``...#e2e4##CONSULTAR...``:
no field is ever empty, so ``##`` is always a boundary), or, for a client that sends
none of these, by a pause after a final ``#`` (:meth:`MessageBuffer.flush`).
"""

from __future__ import annotations

from dataclasses import dataclass

SEPARATOR = "#"
END = b"\n"
# The longest message a client may send, its terminator not counted: an INSCRIBIR with
# a 32-character name and a 128-character password in 4-byte UTF-8 is under 600 bytes.
MAX_MESSAGE = 1024


@dataclass(frozen=True)
class Message:
    """A client's message: its command in upper case, then its fields as sent."""

    command: str
    fields: tuple[str, ...]


class Unreadable(Exception):
    """A message that is not ``#COMMAND#field#...#`` in UTF-8: the reason, in English."""


class Overlong:
    """What :meth:`MessageBuffer.feed` gives for a message longer than the limit."""


OVERLONG = Overlong()


class MessageBuffer:
    def __init__(self, max_message: int = MAX_MESSAGE) -> None:
        self.max_message = max_message
        self._buffer = b""

    @property
    def pending(self) -> bool:
        """Part of a message has come."""
        return bool(self._buffer.strip())

    @property
    def complete(self) -> bool:
        """What has come of a message ends in ``#``: :meth:`flush` would take it."""
        return self._buffer.rstrip().endswith(b"#")

    def feed(self, data: bytes) -> list[bytes | Overlong]:
        """The messages ``data`` completes, in order (blank lines skipped); OVERLONG for
        one over the limit, after which nothing more is read (the connection ends)."""
        buf = self._buffer + data
        out: list[bytes | Overlong] = []
        # Where the next message starts, and the next LF and '##' at or after it: each
        # searched for again only once passed, and the buffer cut once, after the loop,
        # so that a read full of short messages costs time in proportion to its length.
        at = 0
        line_end, boundary = buf.find(b"\n"), buf.find(b"##")
        while True:
            if 0 <= line_end < at:
                line_end = buf.find(b"\n", at)
            if 0 <= boundary < at:
                boundary = buf.find(b"##", at)
            if boundary >= 0 and (line_end < 0 or boundary < line_end):
                message, at = buf[at : boundary + 1], boundary + 1
            elif line_end >= 0:
                message, at = buf[at:line_end], line_end + 1
            else:
                break
            if len(message) > self.max_message:
                self._buffer = buf[at:]
                return [*out, OVERLONG]
            if message.strip():
                out.append(message)
        self._buffer = buf[at:]
        if len(self._buffer) > self.max_message:
            self._buffer = b""
            out.append(OVERLONG)
        return out

    def flush(self) -> list[bytes]:
        """The message under way, if it ends in ``#`` (a client that sends no terminator
        and has paused)."""
        if not self.complete:
            return []
        message, self._buffer = self._buffer, b""
        return [message]


def parse(raw: bytes) -> Message:
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8") from None
    if len(text) < 2 or not text.startswith(SEPARATOR) or not text.endswith(SEPARATOR):
        raise Unreadable("a message starts and ends with '#'")
    command, *fields = text[1:-1].split(SEPARATOR)
    if not command or not command.isascii() or not command.isalpha():
        raise Unreadable("no command")
    return Message(command.upper(), tuple(fields))


def encode(*fields: str) -> bytes:
    """``#field#field#...#`` and LF. A field never holds ``#`` or a line break: the
    server's own texts hold none, and anything else is replaced so it cannot split."""
    clean = (f.replace(SEPARATOR, "?").replace("\r", " ").replace("\n", " ") for f in fields)
    return f"{SEPARATOR}{SEPARATOR.join(clean)}{SEPARATOR}".encode() + END
