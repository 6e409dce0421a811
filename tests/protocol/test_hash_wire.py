"""The `#` protocol's framing and messages with no I/O (``hashproto/wire.py``): what ends
a message (LF, CRLF, the next message's '#', a pause after a final '#'), the limit on a
message's length, what is not a message, and the server's lines."""

from __future__ import annotations

import time

import pytest

from ajedrez.hashproto.wire import (
    MAX_MESSAGE,
    OVERLONG,
    Message,
    MessageBuffer,
    Unreadable,
    encode,
    parse,
)


def feed(*chunks: bytes) -> list[object]:
    buffer = MessageBuffer()
    out: list[object] = []
    for chunk in chunks:
        out += buffer.feed(chunk)
    return out


def test_lf_and_crlf_end_a_message_and_blank_lines_are_skipped() -> None:
    assert feed(b"#A#1#\n#B#\r\n\r\n  \n#C#") == [b"#A#1#", b"#B#\r"]


def test_a_message_may_come_in_pieces() -> None:
    assert feed(b"#INSCRI", b"BIR#Ali", b"ce#", b"\n") == [b"#INSCRIBIR#Alice#"]


def test_the_next_message_s_hash_ends_one_without_a_terminator() -> None:
    assert feed(b"#MOVIMIENTO#1#e2e4##CONSULTARTABLERO#1##RENDIRSE#1#") == [
        b"#MOVIMIENTO#1#e2e4#",
        b"#CONSULTARTABLERO#1#",
    ]


def test_a_final_hash_is_taken_on_flush() -> None:
    buffer = MessageBuffer()
    assert buffer.feed(b"#PARTIDAS") == [] and not buffer.complete and buffer.pending
    assert buffer.flush() == []
    assert buffer.feed(b"#") == [] and buffer.complete
    assert buffer.flush() == [b"#PARTIDAS#"]
    assert not buffer.pending and buffer.flush() == []


def test_a_message_over_the_limit_is_overlong() -> None:
    buffer = MessageBuffer()
    assert buffer.feed(b"#A#" + b"x" * (MAX_MESSAGE - 4) + b"#\n") == [
        b"#A#" + b"x" * (MAX_MESSAGE - 4) + b"#"
    ]
    assert buffer.feed(b"#A#" + b"x" * MAX_MESSAGE + b"#\n") == [OVERLONG]
    # Without a terminator, the buffer never holds more than the limit.
    buffer = MessageBuffer()
    assert buffer.feed(b"x" * (MAX_MESSAGE + 1)) == [OVERLONG]
    assert not buffer.pending


def test_parse() -> None:
    assert parse(b"#INSCRIBIR#Alice#") == Message("INSCRIBIR", ("Alice",))
    assert parse(b"  #inscribir#Alice#clave secreta#\r") == Message(
        "INSCRIBIR", ("Alice", "clave secreta")
    )
    assert parse(b"#PARTIDAS#") == Message("PARTIDAS", ())
    assert parse("#MOVIMIENTO#12345#Ñf3#".encode()) == Message("MOVIMIENTO", ("12345", "Ñf3"))


@pytest.mark.parametrize(
    "raw",
    [b"", b"#", b"##", b"INSCRIBIR#x#", b"#INSCRIBIR#x", b"#INSCRIBIR#\xff#", b"#12#", b"#A B#"],
)
def test_what_is_not_a_message(raw: bytes) -> None:
    with pytest.raises(Unreadable):
        parse(raw)


def test_encode() -> None:
    assert encode("OK", "B", "17") == b"#OK#B#17#\n"
    assert encode("OK") == b"#OK#\n"
    assert encode("NOK", "Movimiento inválido") == "#NOK#Movimiento inválido#\n".encode()
    # Nothing inside a field can split the message.
    assert encode("OK", "a#b\r\nc") == b"#OK#a?b  c#\n"


def test_a_read_full_of_short_messages_takes_time_in_proportion() -> None:
    """256 KiB of short messages in one read (asyncio's largest): the buffer is not
    copied, nor searched again from its start, for each message (that took half a
    minute of the loop's time)."""
    buffer = MessageBuffer()
    started = time.perf_counter()
    got = buffer.feed(b"#A#\n" * 32768 + b"#B##C#" * 16384 + b"#D")
    assert len(got) == 32768 + 2 * 16384 and got[-1] == b"#C#" and buffer.pending
    assert time.perf_counter() - started < 5.0
