"""A client of the event stream (EVEN, docs/protocol.md section 6), written from the
document alone.

``Stream`` is ``Conn`` with one difference: every reply of class 6xx (an event, 601, 602,
603) is set aside as it is read, so ``cmd`` still returns the command's own answer on a
streaming connection, and the events are read apart with ``event``/``until_caught_up``.
Answers read while waiting for an event are set aside the same way, for ``reply``.

Reading is safe against timeouts: a reply is taken from the buffer only once it is whole,
so a socket timeout in the middle of one loses nothing.
"""

from __future__ import annotations

import re
import select
import socket
import struct
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tests.support.common import PASSWORD
from tests.support.espol import Closed, Conn, Reply

V_EVENTO, V_ALDIA, V_HUECO, V_LATIDO = 600, 601, 602, 603
CURSOR = re.compile(r"[0-9]+")
MS = re.compile(r"[0-9]{13}")

# The fields of each kind the document lists, in order (section 6). A kind whose last
# field is free text (``texto``) may hold ``:`` there; every other field never does.
FIELDS: dict[str, tuple[str, ...]] = {
    "DESAFIO": ("retador", "retado", "control", "privada"),
    "DESAFIO_RETIRADO": ("retador", "retado"),
    "DESAFIO_RECHAZADO": ("retador", "retado"),
    "INICIO_PARTIDA": ("partida", "blancas", "negras", "control", "turno", "privada"),
    "FIN_DE_TURNO": ("partida", "ply", "jugada", "promocion", "san", "turno", "fen"),
    "TABLAS": ("partida", "usuario"),
    "TABLAS_ACEPTADAS": ("partida", "usuario"),
    "TABLAS_RECHAZADAS": ("partida", "usuario"),
    "ABANDONO": ("partida", "usuario", "observador"),
    "INCORPORACION": ("partida", "usuario", "observador"),
    "FINALIZACION": ("partida", "ganador", "motivo"),
    "CHAT": ("partida", "usuario", "texto"),
    "SUSURRO": ("partida", "usuario", "texto"),
    "RETROCESO": ("partida", "usuario"),
    "RETROCESO_ACEPTADO": ("partida", "usuario", "ply", "fen"),
    "RETROCESO_RECHAZADO": ("partida", "usuario"),
    "AVISO_RELOJ": ("partida", "usuario", "restante", "limite"),
    "LICENCIA": ("usuario", "hasta"),
    "FIN_LICENCIA": ("usuario",),
}
TEXT_LAST = {"CHAT", "SUSURRO"}
# Fields a newer version of the document added at the end of a kind: a server of the
# version before sends the kind without them. Nothing else may be missing.
ADDED_LATER = {"DESAFIO": 1, "INICIO_PARTIDA": 1}


@dataclass(frozen=True)
class Event:
    """One ``600 V_EVENTO``: ``<cursor>:<ms>:<KIND>[:<field>...]``."""

    cursor: int
    ms: int
    kind: str
    fields: tuple[str, ...]
    raw: str

    def get(self, name: str, default: str | None = None) -> str | None:
        names = FIELDS.get(self.kind, ())
        if name not in names:
            raise KeyError(f"{self.kind} has no field {name!r}")
        i = names.index(name)
        return self.fields[i] if i < len(self.fields) else default

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(f"{self.raw!r}: no field {name!r}")
        return value

    @property
    def body(self) -> str:
        """The record without its cursor and time: what the same event is everywhere."""
        return ":".join((self.kind, *self.fields))


def parse_event(data: str) -> Event:
    """Parse and check the record of a 600 (the cursor, ``ms`` and the fields' count)."""
    head = data.split(":", 3)
    assert len(head) >= 3, f"event record too short: {data!r}"
    cursor, ms, kind = head[:3]
    assert CURSOR.fullmatch(cursor) and int(cursor) > 0, f"bad cursor in {data!r}"
    assert MS.fullmatch(ms), f"bad ms in {data!r}"
    assert re.fullmatch(r"[A-Z_]+", kind), f"bad kind in {data!r}"
    rest = head[3] if len(head) == 4 else None
    names = FIELDS.get(kind)
    if names is None:  # a kind this client does not know: kept, fields as they split
        fields = tuple(rest.split(":")) if rest is not None else ()
    elif kind in TEXT_LAST:
        assert rest is not None, data
        fields = tuple(rest.split(":", len(names) - 1))
        assert len(fields) == len(names), f"{kind} needs {len(names)} fields: {data!r}"
    else:
        fields = tuple(rest.split(":")) if rest is not None else ()
        least = len(names) - ADDED_LATER.get(kind, 0)
        assert least <= len(fields) <= len(names), (
            f"{kind} has {len(fields)} fields, not {len(names)}: {data!r}"
        )
    return Event(int(cursor), int(ms), kind, fields, data)


@dataclass
class CatchUp:
    """What an ``EVEN`` answered: the 219's cursor, a 602's oldest cursor if one came, the
    stored events (600) before the 601, and the 601's cursor."""

    start: int
    gap: int | None = None
    events: list[Event] = field(default_factory=list)
    aldia: int = 0


class Stream(Conn):
    """A ``Conn`` that sets 6xx replies aside (see the module's docstring)."""

    def __init__(
        self,
        host: str,
        port: int,
        timeout: float = 20.0,
        *,
        source: str | None = None,
        rcvbuf: int | None = None,
    ) -> None:
        """``rcvbuf``: a receive buffer this small (bytes, set before connecting), and
        small segments, so that a client that does not read holds up the server's writes
        soon (the kernels on both ends hold little)."""
        if rcvbuf is None:
            super().__init__(host, port, timeout, source=source)
        else:
            raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            # A small segment size, announced in the SYN: the server's kernel then sizes
            # its send buffer for this connection by it, not by loopback's 64 KiB segments.
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
            raw.settimeout(timeout)
            if source is not None:
                raw.bind((source, 0))
            raw.connect((host, port))
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock = raw
            self._buf = b""
        self.pending: deque[Reply] = deque()  # 6xx not yet consumed, in arrival order
        self.answers: deque[Reply] = deque()  # other replies read while reading events
        self.received: list[Reply] = []  # every 6xx ever read, in order
        self.set_aside = 0  # 6xx read while waiting for an answer
        self.timeout = 20.0

    # -- framing ---------------------------------------------------------------------------

    def _frame(self) -> Reply | None:
        """A whole reply from the buffer, or None (nothing consumed) if not all there."""
        if len(self._buf) < 6:
            return None
        (length,) = struct.unpack("!H", self._buf[4:6])
        if len(self._buf) < 6 + length:
            return None
        header, data = self._buf[:6], self._buf[6 : 6 + length]
        self._buf = self._buf[6 + length :]
        code, flag = header[:3], header[3:4]
        assert code.isdigit(), f"bad reply code bytes {code!r}"
        assert flag in (b"0", b"1"), f"bad flag byte {flag!r}"
        assert length <= 4096, f"reply data of {length} bytes"
        reply = Reply(int(code), flag == b"1", data)
        if reply.code // 100 == 6:
            assert not reply.more, f"a 6xx with flag 1: {reply}"
        return reply

    def _fill(self, deadline: float) -> None:
        """Read more bytes; TimeoutError at the deadline, Closed at EOF."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no reply in time")
        self.sock.settimeout(left)
        chunk = self.sock.recv(65536)
        if not chunk:
            raise Closed(f"connection closed with {len(self._buf)} bytes unparsed")
        self._buf += chunk

    def frame(self, timeout: float | None = None) -> Reply:
        """The next reply on the wire, whatever its class."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while (reply := self._frame()) is None:
            self._fill(deadline)
        if reply.code // 100 == 6:
            self.received.append(reply)
        return reply

    def poll(self) -> int:
        """Read what has arrived, without waiting; sort it. Returns the replies read."""
        count = 0
        while True:
            ready, _, _ = select.select([self.sock], [], [], 0)
            if not ready:
                break
            self.sock.settimeout(5)
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise Closed("connection closed")
            self._buf += chunk
        while (reply := self._frame()) is not None:
            count += 1
            if reply.code // 100 == 6:
                self.received.append(reply)
                self.pending.append(reply)
            else:
                self.answers.append(reply)
        return count

    # -- commands: Conn's cmd/cmd_all/replies go through reply() --------------------------

    def reply(self, timeout: float | None = None) -> Reply:
        """The next reply that is not a 6xx (an answer); 6xx read meanwhile are set aside."""
        if self.answers:
            return self.answers.popleft()
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            reply = self.frame(max(0.0, deadline - time.monotonic()) or 1e-3)
            if reply.code // 100 != 6:
                return reply
            self.pending.append(reply)
            self.set_aside += 1

    def replies(self) -> list[Reply]:
        """Every part of one answer; no 6xx may come between its parts."""
        parts = [self.reply()]
        while parts[-1].more:
            nxt = self.frame()
            assert nxt.code // 100 != 6, f"event {nxt} inside a multi-part answer"
            parts.append(nxt)
        return parts

    def login(self, name: str, password: str = PASSWORD) -> Stream:
        r = self.cmd(f"USER:{name}")
        assert r.code == 101, r
        r = self.cmd(f"PASS:{password}")
        assert r.code == 102, r
        return self

    # -- events ----------------------------------------------------------------------------

    def v(self, timeout: float | None = None) -> Reply:
        """The next 6xx reply (an event, 601, 602 or 603)."""
        if self.pending:
            return self.pending.popleft()
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            reply = self.frame(max(0.0, deadline - time.monotonic()) or 1e-3)
            if reply.code // 100 == 6:
                return reply
            self.answers.append(reply)

    def event(self, timeout: float | None = None, *, heartbeats: bool = False) -> Event:
        """The next event (600); heartbeats (603) are skipped unless asked for, when they
        fail the call. Any other 6xx here fails."""
        while True:
            r = self.v(timeout)
            if r.code == V_LATIDO and not heartbeats:
                assert CURSOR.fullmatch(r.text), r
                continue
            assert r.code == V_EVENTO, f"expected an event, got {r}"
            return parse_event(r.text)

    def events(self, count: int, timeout: float | None = None) -> list[Event]:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        return [self.event(max(1e-3, deadline - time.monotonic())) for _ in range(count)]

    def expect(self, *kinds: str, timeout: float | None = None) -> list[Event]:
        """The next events, which must be of these kinds in this order."""
        got = self.events(len(kinds), timeout)
        assert [e.kind for e in got] == list(kinds), [e.raw for e in got]
        return got

    def quiet(self, seconds: float) -> list[Reply]:
        """The 6xx replies other than heartbeats that come within ``seconds`` (none
        expected): waits the whole time only when nothing comes."""
        got: list[Reply] = []
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return got
            try:
                r = self.v(left)
            except TimeoutError:
                return got
            if r.code != V_LATIDO:
                got.append(r)

    def even(self, cursor: int | str | None = None) -> int:
        """Send EVEN (with the cursor, if any); returns the 219's cursor."""
        r = self.cmd("EVEN" if cursor is None else f"EVEN:{cursor}")
        assert r.code == 219, r
        assert CURSOR.fullmatch(r.text), r
        if cursor is not None and str(cursor) != "":
            assert int(r.text) == int(cursor), (cursor, r)
        return int(r.text)

    def until_caught_up(self, start: int, timeout: float | None = None) -> CatchUp:
        """After the 219: an optional 602, the stored events, then the 601."""
        out = CatchUp(start)
        first = True
        while True:
            r = self.v(timeout)
            if r.code == V_HUECO and first:
                assert CURSOR.fullmatch(r.text), r
                out.gap = int(r.text)
            elif r.code == V_EVENTO:
                out.events.append(parse_event(r.text))
            elif r.code == V_ALDIA:
                assert CURSOR.fullmatch(r.text), r
                out.aldia = int(r.text)
                return out
            else:
                raise AssertionError(f"unexpected {r} before 601")
            first = False

    def subscribe(self, cursor: int | str | None = None) -> CatchUp:
        """EVEN, its 219, the catch-up and the 601, checked as the document says."""
        start = self.even(cursor)
        got = self.until_caught_up(start)
        cursors = [e.cursor for e in got.events]
        assert cursors == sorted(set(cursors)), f"catch-up not in cursor order: {cursors}"
        after = start if got.gap is None else got.gap  # a 602: the stream goes on after it
        if cursors:
            assert cursors[0] > after, (start, got.gap, cursors)
            assert got.aldia >= cursors[-1], (got.aldia, cursors[-1])
        else:
            assert got.aldia >= after, (start, got.gap, got.aldia)
        return got

    def wait_events(
        self, predicate: Callable[[list[Event]], bool], timeout: float | None = None
    ) -> list[Event]:
        """Events until ``predicate`` holds for the events read here so far."""
        got: list[Event] = []
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not predicate(got):
            got.append(self.event(max(1e-3, deadline - time.monotonic())))
        return got


def connect(  # type: ignore[no-untyped-def]
    srv, name: str | None = None, *, timeout: float = 20.0, rcvbuf: int | None = None
) -> Stream:
    """A ``Stream`` to ``srv`` (a ServerProcess), logged in as ``name`` if given."""
    s = Stream(srv.host, srv.port, timeout, rcvbuf=rcvbuf)
    if name is not None:
        s.login(name)
    return s


def bodies(events: Iterable[Event]) -> list[str]:
    return [e.body for e in events]


def fields_of(event: Event, *expected: str) -> None:
    """The event's fields are ``expected``; a field the document added later may be
    missing (an older server) or, when ``expected`` does not name it, must be ``0``."""
    names = FIELDS[event.kind]
    got = event.fields
    assert got[: len(expected)] == expected, (event.raw, expected)
    for extra in got[len(expected) :]:
        assert extra == "0", (event.raw, names)
