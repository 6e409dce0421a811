"""Drive the ESPOL session (``ajedrez.espol.session.Session``) without a socket: bytes in,
the reply frames out, as the transport (``ajedrez.espol.connection``) would send them.

:func:`make_session` is the one place that builds a Session; :func:`exchange` feeds it a
line. A command whose storage work is queued (``Outcome.later``: STAT, SPAR, JGDA) is
awaited on the event loop and settled, as the transport does, so the whole exchange runs
inside the loop: the SQLite write queue runs on it.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.clocks import Clock, ClockRules
from ajedrez.domain.games import Games
from ajedrez.espol.framing import decode_header
from ajedrez.espol.session import Outcome, Session
from ajedrez.service.service import Service
from ajedrez.store.db import Database
from ajedrez.store.moves import Moves

HEADER = 6


def make_session(
    db: Database,
    *,
    peer: str = "127.0.0.1:50000",
    clock: Clock | None = None,
    clock_rules: ClockRules | None = None,
    **options: Any,
) -> Session:
    """A fresh session on ``db``, not logged in, timed by ``clock`` (the system's when
    None); ``options`` are the Service's other keyword arguments (``throttle``,
    ``signups``)."""
    service = Service(
        Accounts(db), Games(db, clock, clock_rules), Moves.of(db, clock, clock_rules), **options
    )
    return Session(service, peer=peer, address=peer.rsplit(":", 1)[0])


@dataclass(frozen=True)
class Answer:
    """Everything a line got back: the bytes sent, and whether the connection closes."""

    data: bytes
    close: bool


async def answer_async(session: Session, line: bytes) -> Answer:
    """One line through ``session``, inside a running event loop."""
    outcome: Outcome = session.handle_line(line)
    data = b"".join(outcome.replies)
    close = outcome.close
    later = outcome.later
    while later is not None:  # an observer's STAT takes a second read
        with contextlib.suppress(Exception):  # settled() turns a failure into its reply
            await later.work
        final = session.settled(later, later.work)
        data += b"".join(final.replies)
        close = close or final.close
        later = final.later
    return Answer(data, close)


def answer(session: Session, line: bytes, loop: asyncio.AbstractEventLoop | None = None) -> Answer:
    """One line (CRLF optional) through ``session``: on ``loop`` when given, else on a loop
    of its own."""
    line = line.rstrip(b"\r\n")
    if loop is None:
        return asyncio.run(answer_async(session, line))
    return loop.run_until_complete(answer_async(session, line))


def exchange(session: Session, line: bytes, loop: asyncio.AbstractEventLoop | None = None) -> bytes:
    """The raw reply bytes ``session`` sends back for ``line``."""
    return answer(session, line, loop).data


@dataclass(frozen=True)
class Frame:
    code: int
    more: bool
    data: bytes

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")


def frames(raw: bytes) -> list[Frame]:
    """The reply frames of ``raw``, which must hold whole frames and nothing else."""
    out: list[Frame] = []
    while raw:
        assert len(raw) >= HEADER, raw
        code, more, length = decode_header(raw[:HEADER])
        assert len(raw) >= HEADER + length, raw
        out.append(Frame(code, more, raw[HEADER : HEADER + length]))
        raw = raw[HEADER + length :]
    return out


def frame(code: int, data: str | bytes = b"", more: bool = False) -> bytes:
    """The exact bytes of one reply (docs/protocol.md section 1), written independently of
    the server's encoder."""
    body = data.encode("utf-8") if isinstance(data, str) else data
    return b"%03d%s" % (code, b"1" if more else b"0") + len(body).to_bytes(2, "big") + body


@dataclass
class Client:
    """One session as a client sees it: lines in, frames out, and whether it was closed.
    Sending on a closed session is a test's mistake."""

    session: Session
    loop: asyncio.AbstractEventLoop
    closed: bool = False
    sent: list[str] = field(default_factory=list)

    def raw(self, line: str | bytes) -> bytes:
        assert not self.closed, f"the session was closed; sent {self.sent}"
        data = line.encode("utf-8") if isinstance(line, str) else line
        self.sent.append(repr(data))
        got = answer(self.session, data, self.loop)
        self.closed = got.close
        return got.data

    def all(self, line: str | bytes) -> list[Frame]:
        """Every frame of the answer to ``line`` (one, or the parts of a list)."""
        found = frames(self.raw(line))
        assert found or line in ("QUIT", b"QUIT"), line
        return found

    def cmd(self, line: str | bytes) -> Frame:
        """The single frame of the answer to ``line``."""
        found = self.all(line)
        assert len(found) == 1, found
        return found[0]

    def code(self, line: str | bytes) -> int:
        return self.cmd(line).code
