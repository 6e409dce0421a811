"""A small, typed ESPOL 2.0 client: one TCP connection, one method per command.

Written from ``docs/protocol.md`` alone; it imports no server code, only the protocol's
own vocabulary under :mod:`ajedrez.espol`: the reply codes, the header layout, the
field syntax and the reply records with their parsers.

>>> with Client("127.0.0.1", 1995) as c:           # doctest: +SKIP
...     c.login("ana", "a secret")
...     fecha, games = c.ppen(0)
...     moves = c.spar("P0000001", 0)

A command whose reply is an error (4xx-5xx) raises :class:`~ajedrez.client.errors.ServerError`,
a failure (8xx-9xx) :class:`~ajedrez.client.errors.ProtocolFailure` (or a subclass such as
``WrongPassword``, ``NotYourTurn``, ``IllegalMove``); both carry ``code`` and ``reason``.
A reply this library cannot read raises :class:`~ajedrez.client.errors.ProtocolError`.

Events (docs/protocol.md section 6): after :meth:`Client.even` the connection streams the
user's events, replies of class 6xx, while it still takes every command. The reader sets
every 6xx aside while it waits for a command's answer, so a command sent on a streaming
connection gets its own answer; :meth:`Client.next_event` hands out what was set aside,
then what arrives.

>>> with Client("127.0.0.1", 1995) as c:           # doctest: +SKIP
...     c.login("ana", "a secret")
...     for item in c.events(cursor=0):
...         print(item)
"""

from __future__ import annotations

import functools
import re
import socket
import ssl
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar

from ajedrez.client.errors import (
    ConnectionLost,
    MalformedEvent,
    NoMoreMoves,
    NotEspol,
    NotTls,
    ProtocolError,
    ProtocolFailure,
    Unreachable,
    reply_error,
)
from ajedrez.domain.timecontrol import ANY_CORRESPONDENCE, parse_control
from ajedrez.espol import records
from ajedrez.espol.codes import Reply
from ajedrez.espol.events import EventRecord, parse_event
from ajedrez.espol.fields import format_fecha, format_partida, partida
from ajedrez.espol.framing import HEADER, MAX_DATA
from ajedrez.espol.records import (
    BLACK,
    WHITE,
    Challenger,
    ClockStatus,
    GameStatus,
    GameSummary,
    LeaveStatus,
    MalformedRecord,
    MoveRecord,
    OpenChallenge,
    RankEntry,
    Removal,
)

__all__ = [
    "CHANNEL_OBSERVERS",
    "CHANNEL_PLAYERS",
    "DEFAULT_PORT",
    "Changes",
    "ChatMessage",
    "Client",
    "Response",
    "Seek",
    "StreamItem",
    "StreamMark",
    "Trace",
    "Transport",
    "game_id",
    "parse_challenger",
    "parse_chat_message",
    "parse_clock_status",
    "parse_game_status",
    "parse_game_summary",
    "parse_leave_status",
    "parse_move_record",
    "parse_open_challenge",
    "parse_rank_entry",
    "parse_removal",
    "parse_seek",
    "reply_header",
    "stream_item",
]

# docs/protocol.md section 1. The server's own constant lives in its settings, which a
# client must not import.
DEFAULT_PORT = 1995
# What ssl calls a handshake answered in clear text (the server's plain ESPOL port).
CLEAR_TEXT_ANSWERS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "HTTP_REQUEST"})
# The first bytes of a TLS record (an alert or a handshake), as a TLS port answers a
# client that speaks clear text to it, if it answers at all.
TLS_RECORDS = (b"\x15\x03", b"\x16\x03")

_FORBIDDEN = (":", "\r", "\n")

T = TypeVar("T")
Trace = Callable[[str], None]


# -- records ---------------------------------------------------------------------------


class Changes(NamedTuple, Generic[T]):
    """The answer of TRAN, JAUT or PPEN: the fecha to send next time, and the records."""

    fecha: int
    items: list[T]


def _reading(parse: Callable[[str], T]) -> Callable[[str], T]:
    """``parse`` raising :class:`ProtocolError`, the library's error for a reply it cannot
    read, where the shared parser raises :class:`MalformedRecord`; the message is kept."""

    @functools.wraps(parse)
    def checked(record: str) -> T:
        try:
            return parse(record)
        except MalformedRecord as e:
            raise ProtocolError(str(e)) from None

    return checked


parse_game_summary = _reading(records.parse_game_summary)
parse_game_status = _reading(records.parse_game_status)
parse_move_record = _reading(records.parse_move_record)
parse_rank_entry = _reading(records.parse_rank_entry)
parse_removal = _reading(records.parse_removal)
parse_open_challenge = _reading(records.parse_open_challenge)
parse_challenger = _reading(records.parse_challenger)
parse_clock_status = _reading(records.parse_clock_status)
parse_leave_status = _reading(records.parse_leave_status)

# LICE's accion: start leave (inicio), end it (fin), only ask (estado).
LEAVE_START = "I"
LEAVE_END = "F"
LEAVE_STATUS = "E"
MAX_LEAVE_DAYS = 366


# CHLE's canal: the players' channel (jugadores) and the observers' (observadores).
CHANNEL_PLAYERS = "J"
CHANNEL_OBSERVERS = "O"
_SQUARE = re.compile(r"[a-h][1-8]")


class ChatMessage(NamedTuple):
    """One message of CHLE: when (``ms``), its channel (J players, O observers), the ply
    it followed (0: before the first move), who said it, and what."""

    at_ms: int
    channel: str
    ply: int
    user: str
    text: str


def parse_chat_message(record: str) -> ChatMessage:
    """``<ms>:<canal>:<#jugada>:<usuario>:<texto>``; the text is the rest and may hold ':'."""
    f = record.split(":", 4)
    if (
        len(f) != 5
        or not f[0].isdigit()
        or f[1] not in (CHANNEL_PLAYERS, CHANNEL_OBSERVERS)
        or not f[2].isdigit()
        or not f[3]
    ):
        raise ProtocolError(f"malformed chat message {record!r}")
    return ChatMessage(int(f[0]), f[1], int(f[2]), f[3], f[4])


class Seek(NamedTuple):
    """A waiting seek of BUSL: who seeks, with which time control."""

    user: str
    control: str


def parse_seek(record: str) -> Seek:
    user, sep, control = record.partition(":")
    if not sep or not user or not control:
        raise ProtocolError(f"malformed seek {record!r}")
    return Seek(user, control)


@dataclass(frozen=True)
class StreamMark:
    """A reply of the event stream that is not an event: ``601 V_ALDIA`` (everything up to
    now was sent), ``602 V_HUECO`` (the stream cannot go on from the cursor asked: sync by
    fecha) or ``603 V_LATIDO`` (still alive), each with the cursor a client may store."""

    code: int
    cursor: int

    @property
    def caught_up(self) -> bool:
        return self.code == Reply.V_ALDIA

    @property
    def gap(self) -> bool:
        return self.code == Reply.V_HUECO

    @property
    def heartbeat(self) -> bool:
        return self.code == Reply.V_LATIDO


StreamItem = EventRecord | StreamMark
_MARKS = (Reply.V_ALDIA, Reply.V_HUECO, Reply.V_LATIDO)


def stream_item(code: int, data: str) -> StreamItem | None:
    """A 6xx reply as the stream's item; None for a 6xx this library does not know (a
    newer server's), which a reader skips. :class:`MalformedEvent` when it cannot be read."""
    if code == Reply.V_EVENTO:
        try:
            return parse_event(data)
        except MalformedRecord as e:
            head = data.split(":", 1)[0]
            raise MalformedEvent(str(e), data, int(head) if head.isdigit() else None) from None
    if code in _MARKS:
        if not data.isdigit():
            raise MalformedEvent(f"reply {code}: {data!r} is not a cursor", data, None)
        return StreamMark(code, int(data))
    return None


@dataclass(frozen=True)
class TokenEntry:
    """A login token as FICL lists it; the dates are fechas."""

    id: int
    label: str
    created_at: int
    last_used_at: int
    expires_at: int


def parse_token_entry(record: str) -> TokenEntry:
    """``<id>:<etiqueta>:<creada>:<usada>:<caduca>``; a label holds no ':'."""
    fields = record.split(":")
    if len(fields) != 5 or not all(f.isdigit() for f in (fields[0], *fields[2:])):
        raise ProtocolError(f"malformed FICL record {record!r}")
    return TokenEntry(int(fields[0]), fields[1], *(int(f) for f in fields[2:]))


class Transport(Protocol):
    """What :class:`Client` reads and writes: a connected socket, or a test's stand-in."""

    def sendall(self, data: bytes, /) -> None: ...

    def recv(self, bufsize: int, /) -> bytes: ...

    def settimeout(self, value: float | None, /) -> None: ...

    def close(self) -> None: ...


def reply_header(head: bytes) -> tuple[int, bool, int]:
    """(code, more, length) of a 6-byte reply header; :class:`ProtocolError` when it is not
    three digits, a flag 0 or 1 and a length of at most ``MAX_DATA``."""
    code_b, flag, length = HEADER.unpack(head)
    if not code_b.isdigit() or flag not in (b"0", b"1") or length > MAX_DATA:
        raise ProtocolError(f"malformed reply header {code_b!r} {flag!r} {length}")
    return int(code_b), flag == b"1", length


@dataclass(frozen=True)
class Response:
    """Every part of one answer: the code and each part's data, in order."""

    code: int
    parts: list[str]

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def records(self, sep: str = ",") -> list[str]:
        """The records of a (possibly multi-part) list; parts are cut between records."""
        out: list[str] = []
        for part in self.parts:
            if part:
                out.extend(part.split(sep))
        return out

    def dated_records(self) -> Changes[str]:
        """TRAN, JAUT, PPEN, BAJA: every part is ``<fecha>,rec,rec...``; S_NODATA is ``<fecha>``."""
        fecha: int | None = None
        out: list[str] = []
        for part in self.parts:
            head, _, rest = part.partition(",")
            if not head.isdigit():
                raise ProtocolError(f"reply {self.code} part does not start with a fecha: {part!r}")
            fecha = int(head) if fecha is None else max(fecha, int(head))
            if rest:
                out.extend(rest.split(","))
        if fecha is None:
            raise ProtocolError(f"reply {self.code} without a fecha")
        return Changes(fecha, out)


def game_id(value: str | int) -> str:
    """Normalise a game id: ``P0000012``, ``p12`` or ``12`` -> ``P0000012``."""
    text = str(value).strip()
    if text[:1] in ("P", "p"):
        text = text[1:]
    if not text.isdigit() or len(text) > 7:
        raise ValueError(f"invalid game id {value!r}: P followed by up to 7 digits")
    return format_partida(int(text))


def _field(value: str, what: str) -> str:
    if any(c in value for c in _FORBIDDEN):
        raise ValueError(f"{what} cannot contain ':', CR or LF")
    return value


def _control(control: str) -> str:
    """A time control as sent: checked for syntax here (ValueError saying what is wrong),
    its bounds left to the server, which may set its own."""
    parse_control(control)
    return control


def _seek_control(control: str) -> str:
    """A seek's control: a time control, or ``corr`` (any correspondence control)."""
    return control if control == ANY_CORRESPONDENCE else _control(control)


# -- the connection --------------------------------------------------------------------


class Client:
    """One ESPOL session over one TCP connection (``TCP_NODELAY``, timeouts).

    ``trace``, when given, receives one line per command sent and reply received (a
    password is never shown). ``sent`` counts the commands sent by code and
    ``plies_fetched`` the moves SPAR returned, so callers can see what a sync cost.
    ``unknown`` holds the codes the server answered ``800 F_CMDINV`` (a server older
    than the command), so a caller can stop asking it.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
        trace: Trace | None = None,
        tls: ssl.SSLContext | None = None,
        transport: Transport | None = None,
    ) -> None:
        """``tls``: speak to the server's TLS listener, verifying it with this context.
        ``transport``: speak over this connection instead of opening one (tests)."""
        self.host = host
        self.port = port
        self.user: str | None = None
        self.sent: Counter[str] = Counter()
        self.plies_fetched = 0
        self.unknown: set[str] = set()
        self.shorter: set[str] = set()  # commands whose optional ``1`` the server refused
        self.streaming = False  # EVEN was answered on this connection
        self._trace = trace
        self._buf = bytearray()
        self._events: deque[tuple[int, str]] = deque()  # 6xx set aside while a command waited
        self._answered = False  # a well-formed reply came: the other end speaks ESPOL
        self._tls = tls is not None
        self._timeout = timeout
        self._sock: Transport | None
        if transport is not None:
            self._sock = transport
            transport.settimeout(timeout)
            return
        try:
            sock = socket.create_connection((host, port), timeout=connect_timeout)
        except TimeoutError:
            raise Unreachable(host, port, f"no answer within {connect_timeout:g} s") from None
        except socket.gaierror as e:
            raise Unreachable(host, port, f"unknown host ({e.strerror})") from None
        except OSError as e:
            raise Unreachable(host, port, (e.strerror or str(e)).lower()) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            try:
                sock = tls.wrap_socket(sock, server_hostname=host)
            except (ssl.SSLError, OSError) as e:
                sock.close()
                why = getattr(e, "reason", None) or e.strerror or str(e)
                if why in CLEAR_TEXT_ANSWERS:
                    raise NotTls(host, port, why) from None
                raise Unreachable(host, port, f"TLS handshake failed: {why}") from None
        sock.settimeout(timeout)
        self._sock = sock

    # -- plumbing ------------------------------------------------------------------

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._sock is None

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def _log(self, text: str) -> None:
        if self._trace is not None:
            self._trace(text)

    def _send_line(self, line: str, shown: str) -> None:
        if self._sock is None:
            raise ConnectionLost("the connection is closed")
        self._log(f"> {shown}")
        try:
            self._sock.sendall(line.encode("utf-8") + b"\r\n")
        except OSError as e:
            self.close()
            raise ConnectionLost(f"the connection broke while sending: {e}") from None

    def _read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            if self._sock is None:
                raise ConnectionLost("the connection is closed")
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError:
                self.close()
                raise ConnectionLost(
                    f"no reply from the server within {self._timeout:g} s"
                ) from None
            except OSError as e:
                self.close()
                raise ConnectionLost(f"the connection broke: {e}") from None
            if not chunk:
                self.close()
                raise ConnectionLost(self._closed_why())
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _closed_why(self) -> str:
        """Why a connection the server closed ended, with the likely cause of one closed
        before any answer: a clear-text client at the server's TLS port."""
        if self._answered or self._tls:
            return "the server closed the connection"
        return (
            "the server closed the connection without answering: if this is the server's "
            "TLS port, add --tls"
        )

    def _read_part(self) -> tuple[int, bool, str]:
        head = self._read_exact(HEADER.size)
        try:
            code, more, length = reply_header(head)
        except ProtocolError:
            self.close()
            if not self._answered and head.startswith(TLS_RECORDS) and not self._tls:
                raise ConnectionLost(self._closed_why()) from None
            if not self._answered:
                raise NotEspol(self.host, self.port, head) from None
            raise
        data = self._read_exact(length)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            self.close()
            if not self._answered:
                raise NotEspol(self.host, self.port, head) from None
            raise ProtocolError("reply data is not UTF-8") from None
        self._answered = True
        return code, more, text

    def read_response(self) -> Response:
        """Read every part of one answer (until a part with flag 0). Events that come
        first are set aside for :meth:`next_event`: they may arrive between two answers,
        never inside one."""
        code, more, text = self._read_part()
        while code // 100 == 6:
            self._log(f"< {code} {_short([text])} (set aside)")
            self._events.append((code, text))
            code, more, text = self._read_part()
        parts = [text]
        while more:
            code2, more, text = self._read_part()
            if code2 != code:
                self.close()
                raise ProtocolError(f"multi-part reply changed code from {code} to {code2}")
            parts.append(text)
        # FICN's answer holds a token's secret: shown as the password is, never.
        shown = (
            [p.partition(":")[0] + ":********" for p in parts] if code == Reply.S_FICN else parts
        )
        self._log(
            f"< {code} " + (f"({len(parts)} parts) " if len(parts) > 1 else "") + _short(shown)
        )
        return Response(code, parts)

    def request(
        self,
        code: str,
        *fields: str,
        shown: Sequence[str] | None = None,
        rest: str | None = None,
    ) -> Response:
        """Send one command and return its answer; a non-success reply raises. ``rest``:
        a last field that may hold ':' (CHAT's text), which only CR and LF would break."""
        for value in fields:
            _field(value, f"{code} field")
        if rest is not None and ("\r" in rest or "\n" in rest):
            raise ValueError(f"{code}: the text cannot contain CR or LF")
        line = ":".join([code, *fields, *(() if rest is None else (rest,))])
        display = ":".join([code, *shown]) if shown is not None else line
        self.sent[code] += 1
        self._send_line(line, display)
        response = self.read_response()
        if response.code // 100 not in (1, 2, 3):
            if response.code == Reply.F_CMDINV:
                self.unknown.add(code)
            raise reply_error(response.code, response.text)
        return response

    # -- the event stream ------------------------------------------------------------

    def even(self, cursor: int | None = None) -> int:
        """EVEN[:cursor]: stream the user's events after ``cursor`` (0: every event the
        server keeps; None: from now on). Returns the cursor the stream follows (219).
        Events of an earlier stream not yet read stay queued ahead of the new stream's:
        an event may come twice, none is dropped."""
        if cursor is not None and cursor < 0:
            raise ValueError("an event cursor is 0 or more")
        r = self.request("EVEN") if cursor is None else self.request("EVEN", str(cursor))
        if not r.text.isdigit():
            raise ProtocolError(f"EVEN answered {r.text!r}, not a cursor")
        self.streaming = True
        return int(r.text)

    def next_event(self, wait: float | None = None) -> StreamItem | None:
        """The stream's next item: an :class:`~ajedrez.espol.events.EventRecord`
        (600), or a :class:`StreamMark` (601, 602, 603). Those set aside while a command
        waited come first. None when ``wait`` seconds pass with nothing (None: wait as
        long as it takes). A 6xx this library does not know is skipped; an unreadable
        event raises :class:`~ajedrez.client.errors.MalformedEvent` and the stream goes
        on."""
        while True:
            if self._events:
                item = stream_item(*self._events.popleft())
            else:
                if not self._wait_for_data(wait):
                    return None
                code, _more, text = self._read_part()
                if code // 100 != 6:
                    self.close()
                    raise ProtocolError(f"reply {code} came with no command waiting for it")
                self._log(f"< {code} {_short([text])}")
                item = stream_item(code, text)
            if item is not None:
                return item

    def events(self, cursor: int | None = None) -> Iterator[StreamItem]:
        """EVEN[:cursor], then every item of the stream as it comes, for as long as the
        connection lasts. Commands may be sent between two items."""
        self.even(cursor)
        while True:
            item = self.next_event()
            if item is not None:
                yield item

    def ping(self) -> None:
        """A command with no effect (HELP:QUIT), to learn that a quiet connection still
        works: ConnectionLost when it does not answer within the timeout."""
        self.request("HELP", "QUIT")

    def _wait_for_data(self, wait: float | None) -> bool:
        """True once reply bytes are held; False when ``wait`` seconds pass with none, the
        connection still usable."""
        if self._buf:
            return True
        if self._sock is None:
            raise ConnectionLost("the connection is closed")
        self._sock.settimeout(wait)
        try:
            chunk = self._sock.recv(65536)
        except TimeoutError:
            return False
        except OSError as e:
            self.close()
            raise ConnectionLost(f"the connection broke: {e}") from None
        finally:
            if self._sock is not None:
                self._sock.settimeout(self._timeout)
        if not chunk:
            self.close()
            raise ConnectionLost("the server closed the connection")
        self._buf += chunk
        return True

    # -- session -------------------------------------------------------------------

    def user_cmd(self, name: str) -> str:
        return self.request("USER", name).text

    def pass_cmd(self, password: str) -> str:
        _field(password, "a password")
        return self.request("PASS", password, shown=["********"]).text

    def login(self, user: str, password: str) -> str:
        """USER then PASS; returns the user name. Raises NoSuchUser / WrongPassword."""
        _field(user, "a user name")
        _field(password, "a password")
        self.user_cmd(user)
        self.pass_cmd(password)
        self.user = user
        return user

    def token_login(self, user: str, secret: str) -> str:
        """FICH: log in with a token instead of USER and PASS; returns the user name.
        Raises WrongToken (the server closes the connection)."""
        _field(user, "a user name")
        try:
            self.request("FICH", user, secret, shown=[user, "********"])
        except ProtocolFailure:
            self.close()  # every failure of FICH closes the connection (protocol.md 3)
            raise
        self.user = user
        return user

    def ficn(self, label: str) -> tuple[int, str]:
        """FICN: a new token labelled ``label``: (its id, its secret)."""
        text = self.request("FICN", label).text
        head, _, secret = text.partition(":")
        if not head.isdigit() or not secret:
            raise ProtocolError(f"FICN answer is not <id>:<secreto>: {len(text)} characters")
        return int(head), secret

    def ficl(self) -> list[TokenEntry]:
        """FICL: the caller's tokens, oldest first (never their secrets)."""
        lines = "\n".join(self.request("FICL").parts).split("\n")
        return [parse_token_entry(line) for line in lines if line]

    def ficr(self, token_id: int | None) -> int:
        """FICR: revoke a token (None: all of the caller's); how many were."""
        text = self.request("FICR", "*" if token_id is None else str(token_id)).text
        if not text.isdigit():
            raise ProtocolError(f"FICR answer is not a count: {text!r}")
        return int(text)

    def quit(self) -> None:
        """Send QUIT (no reply) and close the connection."""
        if self._sock is not None:
            try:
                self.sent["QUIT"] += 1
                self._send_line("QUIT", "QUIT")
            except ConnectionLost:
                pass
        self.close()

    def help(self, topic: str = "") -> str:
        r = self.request("HELP", topic) if topic else self.request("HELP")
        return "\n".join(r.parts)

    def subs(self, user: str, password: str, comment: str = "") -> None:
        self.request("SUBS", user, password, comment, shown=[user, "********", comment])

    def unsu(self, user: str, password: str) -> None:
        """Close the logged-in account; the server closes the connection afterwards."""
        self.request("UNSU", user, password, shown=[user, "********"])
        self.close()

    # -- users and challenges ------------------------------------------------------

    def jaut(self, fecha: int = 0) -> Changes[str]:
        return self.request("JAUT", format_fecha(fecha)).dated_records()

    def tran(self, fecha: int = 0) -> Changes[str]:
        return self.request("TRAN", format_fecha(fecha)).dated_records()

    def tran_controls(self, fecha: int = 0) -> Changes[Challenger]:
        """``TRAN:<fecha>:1``: the challengers, each with the challenge's time control."""
        fecha2, found = self.request("TRAN", format_fecha(fecha), "1").dated_records()
        return Changes(fecha2, [parse_challenger(r) for r in found])

    def juego(self, user: str, control: str | None = None) -> None:
        """JUEG: challenge ``user``; ``control``, the game's time control (``3d``,
        ``50d+5d``, ``none``), else the server's default."""
        if control is None:
            self.request("JUEG", user)
        else:
            self.request("JUEG", user, _control(control))

    def acep(self, color: str, user: str, control: str | None = None) -> str:
        """Accept ``user``'s challenge playing ``color`` (B or N); returns the new game id.
        With ``control``, only if the challenge still has that time control (else
        :class:`~ajedrez.client.errors.TimeControlChanged`)."""
        if color not in (WHITE, BLACK):
            raise ValueError("color must be 'B' (white) or 'N' (black)")
        fields = (color, user) if control is None else (color, user, _control(control))
        gid = self.request("ACEP", *fields).text
        try:
            partida(gid)
        except ValueError:
            raise ProtocolError(f"ACEP answered {gid!r}, not a game id") from None
        return gid

    def decl(self, user: str) -> None:
        self.request("DECL", user)

    def bloq(self, user: str) -> None:
        """Block ``user``: no challenges, chat, pairing or observing from them."""
        self.request("BLOQ", user)

    def blor(self, user: str) -> None:
        """Unblock ``user`` (:class:`NotBlocked` when not blocked)."""
        self.request("BLOR", user)

    def blol(self) -> list[str]:
        """The users the caller blocks, sorted by name."""
        return self.request("BLOL").records()

    def srnk(self) -> list[RankEntry]:
        return [parse_rank_entry(r) for r in self.request("SRNK").records()]

    # -- games ---------------------------------------------------------------------

    def ppen(self, fecha: int = 0) -> Changes[GameSummary]:
        fecha2, records = self.request("PPEN", format_fecha(fecha)).dated_records()
        return Changes(fecha2, [parse_game_summary(r) for r in records])

    def baja(self, fecha: int = 0) -> Changes[Removal]:
        """What went away since ``fecha``: purged games, challenges closed without a game."""
        fecha2, records = self.request("BAJA", format_fecha(fecha)).dated_records()
        return Changes(fecha2, [parse_removal(r) for r in records])

    def soli(self, *, controls: bool = False) -> list[OpenChallenge]:
        """Every open challenge, made and received: the whole present state; with
        ``controls`` (``SOLI:1``) each carries its time control."""
        r = self.request("SOLI", "1") if controls else self.request("SOLI")
        return [parse_open_challenge(rec) for rec in r.records()]

    def stat(self, game: str) -> GameStatus:
        """STAT:<partida>:1: the status, and who asks a takeback now; plain STAT from a
        server older than that field (takeback None: not known)."""
        return parse_game_status(self._longer_record("STAT", game_id(game)).text)

    def spar(self, game: str, after: int = 0) -> list[MoveRecord]:
        """The moves with ply greater than ``after``; ``[]`` when there are none (839)."""
        try:
            records = self.request("SPAR", game_id(game), str(after)).records()
        except NoMoreMoves:
            return []
        moves = [parse_move_record(r) for r in records]
        self.plies_fetched += len(moves)
        return moves

    def jgda(
        self,
        game: str,
        ply: int,
        jugada: str,
        posicion: str,
        promocion: int = 0,
        reverso: int = 0,
    ) -> None:
        self.request(
            "JGDA", game_id(game), str(ply), jugada, str(reverso), posicion, str(promocion)
        )

    def tbls(self, game: str, opponent: str) -> None:
        self.request("TBLS", game_id(game), opponent)

    def rtbl(self, game: str, accept: bool, opponent: str) -> None:
        self.request("RTBL", game_id(game), "S" if accept else "N", opponent)

    def rend(self, game: str, opponent: str) -> None:
        self.request("REND", game_id(game), opponent)

    def finp(self, game: str, opponent: str) -> None:
        self.request("FINP", game_id(game), opponent)

    def pgnx(self, game: str, *, chat: bool = False) -> str:
        """The game as PGN; with ``chat`` (``PGNX:<partida>:1``) the messages the caller
        may read as comments."""
        fields = (game_id(game), "1") if chat else (game_id(game),)
        return "\n".join(self.request("PGNX", *fields).parts) + "\n"

    # -- live play -----------------------------------------------------------------

    def obsv(self, game: str) -> str:
        """Observe a game (its events reach this user's stream until :meth:`obsf`)."""
        return self.request("OBSV", game_id(game)).text

    def obsf(self, game: str) -> str:
        """Stop observing a game."""
        return self.request("OBSF", game_id(game)).text

    def obsl(self, game: str) -> list[str]:
        """Who observes a game, sorted by name."""
        return self.request("OBSL", game_id(game)).records()

    def chat(self, game: str, text: str) -> None:
        """Say ``text`` in a game (it may hold ':'): to the players' channel from a
        player, to the observers' from an observer."""
        if not text:
            raise ValueError("a chat message needs some text")
        self.request("CHAT", game_id(game), rest=text)

    def chle(self, game: str, fecha: int = 0) -> Changes[ChatMessage]:
        """The game's messages since ``fecha`` that the caller may read, oldest first,
        and the fecha to send next time."""
        lines = "\n".join(self.request("CHLE", game_id(game), format_fecha(fecha)).parts)
        head, *records = lines.split("\n")
        if not head.isdigit():
            raise ProtocolError(f"CHLE answer does not start with a fecha: {head!r}")
        return Changes(int(head), [parse_chat_message(r) for r in records if r])

    def busc(self, control: str, *, private: bool = False) -> str | None:
        """Seek a game with that time control (``none``: no clock). The new game's id when
        paired at once, else None: the seek waits."""
        fields = (_seek_control(control), "1") if private else (_seek_control(control),)
        gid = self.request("BUSC", *fields).text
        if not gid:
            return None
        try:
            partida(gid)
        except ValueError:
            raise ProtocolError(f"BUSC answered {gid!r}, not a game id") from None
        return gid

    def busl(self) -> list[Seek]:
        """Every waiting seek, oldest first, the caller's own included."""
        return [parse_seek(r) for r in self.request("BUSL").records()]

    def busr(self, control: str | None = None) -> None:
        """Withdraw the caller's seek for ``control``, or every one of them."""
        if control is None:
            self.request("BUSR")
        else:
            self.request("BUSR", _seek_control(control))

    def hovr(self, game: str, square: str) -> list[str]:
        """The squares the piece on ``square`` may move to now, sorted a1..h8; empty when
        it has none (or the square is empty, or not the side to move's)."""
        if not _SQUARE.fullmatch(square):
            raise ValueError(f"invalid square {square!r}: a file a-h and a rank 1-8, as e2")
        return self.request("HOVR", game_id(game), square).records()

    def atrs(self, game: str, opponent: str) -> None:
        """Ask the opponent to take back the caller's last move."""
        self.request("ATRS", game_id(game), opponent)

    def ratr(self, game: str, accept: bool, opponent: str) -> None:
        """Answer the opponent's takeback request."""
        self.request("RATR", game_id(game), "S" if accept else "N", opponent)

    # -- time ----------------------------------------------------------------------

    def relj(self, game: str) -> ClockStatus:
        """RELJ:<partida>:1: the game's clocks at the server's ``now_ms`` (finished games
        too), and the end of the server's start-up grace while it lasts; plain RELJ from
        a server older than that field."""
        return parse_clock_status(self._longer_record("RELJ", game_id(game)).text)

    def _longer_record(self, command: str, *fields: str) -> Response:
        """``command`` with its optional last field ``1`` (a longer record), and without
        it where the server does not know that field yet (801)."""
        if command not in self.shorter:
            try:
                return self.request(command, *fields, "1")
            except ProtocolFailure as e:
                if e.code != Reply.F_NFIELDS:
                    raise
                self.shorter.add(command)
        return self.request(command, *fields)

    def lice(self, action: str, days: int | None = None) -> LeaveStatus:
        """LICE: ``action`` LEAVE_START (for ``days``, else every day left this year),
        LEAVE_END or LEAVE_STATUS. A refusal raises
        :class:`~ajedrez.client.errors.LeaveRefused`."""
        if action not in (LEAVE_START, LEAVE_END, LEAVE_STATUS):
            raise ValueError(f"LICE action must be {LEAVE_START}, {LEAVE_END} or {LEAVE_STATUS}")
        if days is not None and (action != LEAVE_START or not 1 <= days <= MAX_LEAVE_DAYS):
            raise ValueError(f"leave days go with a start only, 1 to {MAX_LEAVE_DAYS}")
        fields = (action,) if days is None else (action, str(days))
        return parse_leave_status(self.request("LICE", *fields).text)

    def leave_start(self, days: int | None = None) -> LeaveStatus:
        return self.lice(LEAVE_START, days)

    def leave_end(self) -> LeaveStatus:
        return self.lice(LEAVE_END)

    def leave_status(self) -> LeaveStatus:
        return self.lice(LEAVE_STATUS)


def _short(parts: list[str], limit: int = 120) -> str:
    text = "".join(parts).replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + "..."
