"""The protocol library's event stream and live-play commands, in memory: a scripted
stand-in for the connection, no socket, no server, no sleeping."""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from ajedrez.client import (
    BlocksFull,
    ChatMessage,
    ChatRate,
    Client,
    ConnectionLost,
    MalformedEvent,
    NoSeek,
    NotAccepted,
    NotBlocked,
    ObserveRefused,
    PrivateGame,
    ProtocolError,
    ProtocolFailure,
    Seek,
    SeekExists,
    StreamMark,
    TakebackRefused,
    Unreachable,
)
from ajedrez.client.app import App
from ajedrez.client.cli import build_parser
from ajedrez.client.follow import Handler, follow
from ajedrez.client.live_commands import Observe
from ajedrez.client.protocol import StreamItem
from ajedrez.espol.codes import Reply
from ajedrez.espol.events import FIN_DE_TURNO, EventRecord
from ajedrez.espol.framing import encode_records, encode_reply

FEN_E4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
MOVE_1 = f"13:1795000060000:FIN_DE_TURNO:P0000001:1:e2e4:0:e4:bob:{FEN_E4}"


def event(data: str) -> bytes:
    return encode_reply(Reply.V_EVENTO, data)


class Wire:
    """The connection as the client sees it: ``answer`` maps each line the client sends
    to the bytes the server sends back; :meth:`push` sends bytes unasked (events). With
    ``chunk`` every ``recv`` returns at most that many bytes. Nothing to read: the read
    times out, as a socket with a timeout does."""

    def __init__(self, answer: Callable[[str], bytes], chunk: int = 65536) -> None:
        self.answer = answer
        self.chunk = chunk
        self.incoming = bytearray()
        self.sent: list[str] = []
        self.closed = False
        self.hung_up = False
        self.timeouts: list[float | None] = []

    def push(self, data: bytes) -> None:
        self.incoming += data

    def sendall(self, data: bytes, /) -> None:
        line = data.decode()
        assert line.endswith("\r\n")
        self.sent.append(line[:-2])
        self.incoming += self.answer(line[:-2])

    def recv(self, bufsize: int, /) -> bytes:
        if not self.incoming:
            if self.hung_up:
                return b""
            raise TimeoutError
        n = min(bufsize, self.chunk)
        out = bytes(self.incoming[:n])
        del self.incoming[:n]
        return out

    def settimeout(self, value: float | None, /) -> None:
        self.timeouts.append(value)

    def close(self) -> None:
        self.closed = True


def scripted(replies: dict[str, bytes | list[bytes]], chunk: int = 65536) -> tuple[Client, Wire]:
    """A client over a wire that answers each known line with its scripted bytes (a list:
    one item per time the line is sent)."""
    queues = {k: deque(v) if isinstance(v, list) else v for k, v in replies.items()}

    def answer(line: str) -> bytes:
        found = queues.get(line)
        assert found is not None, f"unexpected line {line!r}"
        return found.popleft() if isinstance(found, deque) else found

    wire = Wire(answer, chunk)
    return Client("fake", 1995, timeout=7, transport=wire), wire


STAT = "P0000001:ana:bob:01795000060:0:0:0:0:B:2"


def test_a_command_on_a_streaming_connection_gets_its_answer_between_events():
    client, wire = scripted(
        {
            "EVEN:12": encode_reply(Reply.S_EVEN, "12")
            + event("13:1795000000000:DESAFIO:ana:bob:3d:0")
            + event(MOVE_1),
            # The server sends an event just before the answer to STAT.
            "STAT:P0000001:1": event("14:1795000061000:TABLAS:P0000001:bob")
            + encode_reply(Reply.S_STAT, STAT),
        }
    )
    assert client.even(12) == 12 and client.streaming
    st = client.stat("P0000001")
    assert (st.game, st.next_ply) == ("P0000001", 2)
    wire.push(encode_reply(Reply.V_ALDIA, "20") + encode_reply(Reply.V_LATIDO, "21"))

    items = [client.next_event(wait=0) for _ in range(6)]
    assert items[0] == EventRecord(13, 1795000000000, "DESAFIO", ("ana", "bob", "3d", "0"))
    assert isinstance(items[1], EventRecord) and items[1].kind == FIN_DE_TURNO
    assert items[1].get("fen") == FEN_E4 and items[1].get("turno") == "bob"
    assert isinstance(items[2], EventRecord) and items[2].kind == "TABLAS"
    assert items[3] == StreamMark(Reply.V_ALDIA, 20) and items[3].caught_up
    assert items[4] == StreamMark(Reply.V_LATIDO, 21) and items[4].heartbeat
    assert items[5] is None  # nothing more: the wait ran out, the connection is fine
    assert not wire.closed
    assert wire.sent == ["EVEN:12", "STAT:P0000001:1"]


def test_every_byte_alone_still_makes_the_same_items():
    client, _wire = scripted(
        {
            "EVEN": encode_reply(Reply.S_EVEN, "40") + encode_reply(Reply.V_ALDIA, "40"),
            "OBSL:P0000001": event(MOVE_1) + encode_reply(Reply.S_OBSL, "carl,dora"),
        },
        chunk=1,
    )
    assert client.even() == 40
    assert client.obsl("P0000001") == ["carl", "dora"]
    assert client.next_event(wait=0) == StreamMark(Reply.V_ALDIA, 40)
    item = client.next_event(wait=0)
    assert isinstance(item, EventRecord) and item.cursor == 13
    assert client.next_event(wait=0) is None


def test_events_before_a_multi_part_answer_are_set_aside_and_none_may_come_inside():
    parts = encode_records(Reply.S_BUSL, [f"user{i:04d}:3d" for i in range(600)])
    assert len(parts) > 1
    client, _wire = scripted(
        {
            "EVEN:0": encode_reply(Reply.S_EVEN, "0"),
            "BUSL": [event(MOVE_1) + b"".join(parts), parts[0] + event(MOVE_1) + parts[1]],
        }
    )
    client.even(0)
    seeks = client.busl()
    assert len(seeks) == 600 and seeks[0] == Seek("user0000", "3d")
    assert isinstance(client.next_event(wait=0), EventRecord)
    with pytest.raises(ProtocolError, match="changed code"):
        client.busl()


def test_gap_unknown_kinds_unknown_codes_and_unreadable_events():
    client, wire = scripted({"EVEN:3": encode_reply(Reply.S_EVEN, "3")})
    client.even(3)
    wire.push(
        encode_reply(Reply.V_HUECO, "100")
        + encode_reply(699, "whatever a newer server sends")
        + event("101:1795000000000:NUEVO:a:b:c")
        + event("102:1795000000000:TABLAS:P0000001")  # a field missing
        + event("garbage")
        + event("103:1795000000000:CHAT:P0000001:bob:see: a colon")
        + encode_reply(Reply.V_LATIDO, "x")
    )
    gap = client.next_event(wait=0)
    assert gap == StreamMark(Reply.V_HUECO, 100) and gap.gap
    assert client.next_event(wait=0) == EventRecord(101, 1795000000000, "NUEVO", ("a", "b", "c"))
    with pytest.raises(MalformedEvent) as e:
        client.next_event(wait=0)
    assert e.value.cursor == 102 and "TABLAS" in e.value.data
    with pytest.raises(MalformedEvent) as e2:
        client.next_event(wait=0)
    assert e2.value.cursor is None
    chat = client.next_event(wait=0)
    assert isinstance(chat, EventRecord) and chat.get("texto") == "see: a colon"
    with pytest.raises(MalformedEvent):
        client.next_event(wait=0)
    assert not wire.closed


def test_an_answer_with_no_command_waiting_and_a_hang_up():
    client, wire = scripted({"EVEN": encode_reply(Reply.S_EVEN, "1")})
    client.even()
    wire.push(encode_reply(Reply.S_STAT, STAT))
    with pytest.raises(ProtocolError, match="no command waiting"):
        client.next_event(wait=0)
    assert wire.closed

    client, wire = scripted({"EVEN": encode_reply(Reply.S_EVEN, "1")})
    client.even()
    wire.hung_up = True
    with pytest.raises(ConnectionLost, match="closed the connection"):
        client.next_event(wait=5)
    # The wait for events is the caller's; the timeout for answers is set back after it.
    assert wire.timeouts[-2:] == [5, 7]


def test_even_again_keeps_what_the_old_stream_left_unread():
    client, _wire = scripted(
        {
            "EVEN:5": encode_reply(Reply.S_EVEN, "5") + event(MOVE_1),
            "EVEN": encode_reply(Reply.S_EVEN, "50") + encode_reply(Reply.V_ALDIA, "50"),
        }
    )
    client.even(5)
    assert client.even() == 50
    first = client.next_event(wait=0)
    assert isinstance(first, EventRecord) and first.cursor == 13
    assert client.next_event(wait=0) == StreamMark(Reply.V_ALDIA, 50)
    with pytest.raises(ValueError):
        client.even(-1)


def test_block_commands_send_their_lines_and_read_their_answers():
    client, wire = scripted(
        {
            "BLOQ:bob": encode_reply(Reply.S_BLOQ, "bob"),
            "BLOL": encode_reply(Reply.S_BLOL, "bob,carl"),
            "BLOR:bob": encode_reply(Reply.S_BLOR, "bob"),
            "BLOR:dora": encode_reply(Reply.F_NOBLOCK, "you do not block 'dora'"),
            "BLOQ:eve": encode_reply(Reply.F_BLOCKFULL, "you block 1000 users already"),
            "JUEG:ana": encode_reply(Reply.F_NOTACCEPTED, "'ana' does not accept challenges"),
        }
    )
    client.bloq("bob")
    assert client.blol() == ["bob", "carl"]
    client.blor("bob")
    with pytest.raises(NotBlocked):
        client.blor("dora")
    with pytest.raises(BlocksFull):
        client.bloq("eve")
    with pytest.raises(NotAccepted) as refused:
        client.juego("ana")
    assert refused.value.code == 851 and "ana" in refused.value.reason
    assert wire.sent[:3] == ["BLOQ:bob", "BLOL", "BLOR:bob"]


def test_live_commands_send_their_lines_and_read_their_answers():
    client, wire = scripted(
        {
            "OBSV:P0000002": encode_reply(Reply.S_OBSV, "P0000002"),
            "OBSF:P0000002": encode_reply(Reply.S_OBSF, "P0000002"),
            "OBSL:P0000002": encode_reply(Reply.S_OBSL, ""),
            "OBSV:P0000003": encode_reply(Reply.F_PRIVATE, "P0000003 is private"),
            "OBSF:P0000003": encode_reply(Reply.F_OBSERVE, "you do not observe P0000003"),
            "CHAT:P0000002:good luck: have fun": encode_reply(Reply.S_CHAT),
            "CHAT:P0000002:again": encode_reply(Reply.F_RATE, "try again in 20 s"),
            "CHLE:P0000002:00000000000": b"".join(
                encode_records(
                    Reply.S_CHLE,
                    ["01795000100"]
                    + [f"17950000{i:05d}:J:{i}:ana:line {i}: with a colon" for i in range(200)]
                    + ["1795000099999:O:0:carl:hmm"],
                    sep="\n",
                )
            ),
            "CHLE:P0000002:01795000100": encode_reply(Reply.S_CHLE, "01795000100"),
            "BUSC:3d": encode_reply(Reply.S_BUSC),
            "BUSC:none:1": encode_reply(Reply.S_BUSC, "P0000009"),
            "BUSC:10m": encode_reply(Reply.F_SEEKEXISTS, "you already seek 10m"),
            "BUSL": encode_reply(Reply.S_BUSL, "ana:3d,bob:iccf-10/50"),
            "BUSR": encode_reply(Reply.S_BUSR),
            "BUSR:3d": encode_reply(Reply.F_NOSEEK, "no seek of yours"),
            "HOVR:P0000002:g1": encode_reply(Reply.S_HOVR, "f3,h3"),
            "HOVR:P0000002:e5": encode_reply(Reply.S_HOVR, ""),
            "PGNX:P0000002:1": encode_reply(Reply.S_PGNX, '[Event "x"]\n\n1. e4 {ana: hi} *'),
            "ATRS:P0000002:bob": encode_reply(Reply.F_TAKEBACK, "bob has replied"),
            "RATR:P0000002:S:bob": encode_reply(Reply.S_RATR),
        }
    )
    assert client.obsv("2") == "P0000002" and client.obsf("P0000002") == "P0000002"
    assert client.obsl("P0000002") == []
    with pytest.raises(PrivateGame):
        client.obsv("P0000003")
    with pytest.raises(ObserveRefused):
        client.obsf("P0000003")

    client.chat("P0000002", "good luck: have fun")
    with pytest.raises(ChatRate) as rate:
        client.chat("P0000002", "again")
    assert rate.value.reason == "try again in 20 s"
    for bad in ("two\nlines", "cr\r", ""):
        with pytest.raises(ValueError):
            client.chat("P0000002", bad)

    fecha, messages = client.chle("P0000002")
    assert fecha == 1795000100 and len(messages) == 201
    assert messages[3] == ChatMessage(1795000000003, "J", 3, "ana", "line 3: with a colon")
    assert messages[-1] == ChatMessage(1795000099999, "O", 0, "carl", "hmm")
    assert client.chle("P0000002", fecha) == (fecha, [])

    assert client.busc("3d") is None
    assert client.busc("none", private=True) == "P0000009"
    with pytest.raises(SeekExists):
        client.busc("10m")
    with pytest.raises(ValueError):
        client.busc("3 days")
    assert client.busl() == [Seek("ana", "3d"), Seek("bob", "iccf-10/50")]
    client.busr()
    with pytest.raises(NoSeek):
        client.busr("3d")

    assert client.hovr("P0000002", "g1") == ["f3", "h3"]
    assert client.hovr("P0000002", "e5") == []
    with pytest.raises(ValueError):
        client.hovr("P0000002", "E2")
    assert "{ana: hi}" in client.pgnx("P0000002", chat=True)
    with pytest.raises(TakebackRefused):
        client.atrs("P0000002", "bob")
    client.ratr("P0000002", True, "bob")
    assert "CHAT:P0000002:good luck: have fun" in wire.sent


# -- following the stream across connections -----------------------------------------------


class Recorder(Handler):
    """Keeps every item, its cursor like a watcher, and stops at ``stop_at``."""

    def __init__(self, stop_at: int) -> None:
        self.items: list[StreamItem] = []
        self.cursor = 5
        self.stop_at = stop_at

    def item(self, client: Client, item: StreamItem) -> None:
        self.items.append(item)
        self.cursor = item.cursor
        self.done = item.cursor >= self.stop_at


class Sessions:
    """Stands for :class:`~ajedrez.client.app.App` in :func:`follow`: each session is
    the next of ``script``, a client over a scripted wire or an error to raise."""

    def __init__(self, script: list[Client | Exception]) -> None:
        self.script = deque(script)
        self.warnings: list[str] = []
        self.err = io.StringIO()

    @contextmanager
    def session(self) -> Iterator[Client]:
        step = self.script.popleft()
        if isinstance(step, Exception):
            raise step
        try:
            yield step
        finally:
            step.quit()

    def warn(self, text: str) -> None:
        self.warnings.append(text)


def hanging_up(replies: dict[str, bytes], after: str) -> Client:
    """A client whose wire closes once it has answered ``after``."""
    wire: Wire

    def answer(line: str) -> bytes:
        if line == after:
            wire.hung_up = True
        return replies.get(line, b"")

    wire = Wire(answer)
    return Client("fake", 1995, timeout=7, transport=wire)


def test_follow_probes_a_quiet_connection_resumes_from_the_cursor_and_backs_off():
    first = hanging_up(
        {
            "EVEN:5": encode_reply(Reply.S_EVEN, "5") + event(MOVE_1),
            "HELP:QUIT": encode_reply(Reply.S_HELP, "QUIT - end the session"),
        },
        after="HELP:QUIT",  # the probe is answered, then the connection dies
    )
    second = hanging_up(
        {"EVEN:13": encode_reply(Reply.S_EVEN, "13") + encode_reply(Reply.V_ALDIA, "20")},
        after="EVEN:13",
    )
    third = hanging_up(
        {"EVEN:20": encode_reply(Reply.S_EVEN, "20") + encode_reply(Reply.V_LATIDO, "21")},
        after="",
    )
    app = Sessions(
        [Unreachable("fake", 1995, "refused"), ConnectionLost("reset"), first, second, third]
    )
    handler = Recorder(stop_at=21)
    slept: list[float] = []
    follow(app, handler, sleep=slept.append, quiet=90)  # type: ignore[arg-type]

    assert [i.cursor for i in handler.items] == [13, 20, 21]
    assert isinstance(handler.items[0], EventRecord)
    assert handler.items[1] == StreamMark(Reply.V_ALDIA, 20)
    # Doubling while nothing works; back to the first pause once a stream caught up.
    assert slept == [1, 2, 4, 1]
    assert all("connecting again in" in w for w in app.warnings) and len(app.warnings) == 4
    assert first._sock is None and handler.done


def test_follow_gives_up_on_what_a_retry_cannot_mend():
    refused = hanging_up({"EVEN:5": encode_reply(Reply.F_CMDINV, "unknown command EVEN")}, "")
    with pytest.raises(ProtocolFailure) as e:
        follow(Sessions([refused]), Recorder(stop_at=99), sleep=pytest.fail)  # type: ignore[arg-type]
    assert e.value.code == Reply.F_CMDINV


def test_observe_asks_once_and_ends_when_the_observing_is_stopped_elsewhere():
    args = build_parser().parse_args(["--user", "carl", "observe", "P0000001"])
    app = App(args, {}, io.StringIO(), io.StringIO(), io.StringIO())
    first, first_wire = scripted(
        {
            "OBSV:P0000001": encode_reply(Reply.S_OBSV, "P0000001"),
            "EVEN": encode_reply(Reply.S_EVEN, "5"),
            "STAT:P0000001:1": encode_reply(Reply.S_STAT, STAT),
            "SPAR:P0000001:0": encode_reply(Reply.F_NOMASJUG, "no moves"),
        }
    )
    first_wire.hung_up = True  # the connection dies once the board is drawn
    # While this one was away, `observe P0000001 --stop` ran elsewhere: the stream
    # resumed brings its ABANDONO, and an OBSV here would have observed the game again
    # (the scripted wire refuses any line it does not expect).
    second, second_wire = scripted(
        {
            "EVEN:5": encode_reply(Reply.S_EVEN, "5")
            + event("6:1795000070000:ABANDONO:P0000001:carl:1")
            + event(MOVE_1.replace("13:", "7:", 1)),
            "QUIT": b"",
        }
    )
    slept: list[float] = []
    handler = Observe(app, "P0000001")
    follow(Sessions([first, second]), handler, sleep=slept.append)  # type: ignore[arg-type]

    assert first_wire.sent[:4] == ["OBSV:P0000001", "EVEN", "STAT:P0000001:1", "SPAR:P0000001:0"]
    assert second_wire.sent == ["EVEN:5", "QUIT"]
    assert slept == [1] and handler.done
    out = app.out.getvalue()  # type: ignore[attr-defined]
    assert out.rstrip().endswith("No longer observing P0000001.")
    assert "played" not in out  # the move after it never drawn
