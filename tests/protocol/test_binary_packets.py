"""The binary protocol's packets with no I/O (``binproto/packets.py``): each client packet
read at the seed document's offsets, whole or in pieces, both readings where the document
gives two (JOIN or NAME, PLAY or MOVE, CHAT's text at offset 5 or 6), an unknown type
ending the stream, and the server's packets byte by byte."""

from __future__ import annotations

import chess
import pytest

from ajedrez.binproto import packets as p


def read(*chunks: bytes) -> list[object]:
    reader = p.PacketReader()
    out: list[object] = []
    for chunk in chunks:
        out += reader.feed(chunk)
    return out


def test_the_name_packet_typed_join_or_named_name() -> None:
    assert read(b"JOIN\x05Alice") == [p.Name(b"Alice")]
    assert read(b"NAME\x03Bob") == [p.Name(b"Bob")]
    assert read(b"JOIN\x00") == [p.Name(b"")]


def test_every_packet_at_its_offsets() -> None:
    stream = (
        b"AUTH\x03ana\x05clave"
        + b"INIT\x01"
        + b"OBSV\x00\x00\x01\x02"
        + b"PLAY\x04\x01\x04\x03"
        + b"MOVE\x06\x00\x05\x02"
        + b"HOVR\x03\x06"
        + b"PASSCHEKCKMTUNDODENYRSGN"
    )
    assert read(stream) == [
        p.Login(b"ana", b"clave"),
        p.Role(1),
        p.Watch(258),
        p.Play((4, 1), (4, 3)),
        p.Play((6, 0), (5, 2)),
        p.Hover((3, 6)),
        *(p.Signal(kind) for kind in ("PASS", "CHEK", "CKMT", "UNDO", "DENY", "RSGN")),
    ]


def test_a_packet_may_come_byte_by_byte() -> None:
    stream = b"JOIN\x05AliceAUTH\x01a\x02pwCHAT\x02hiPLAY\x04\x01\x04\x03INIT\x03"
    expected = read(stream)
    assert len(expected) == 5
    assert read(*(stream[i : i + 1] for i in range(len(stream)))) == expected
    assert read(b"PLAY\x04\x01\x04") == []  # not complete yet


def test_chat_s_text_at_offset_5_or_after_a_pad_at_offset_5() -> None:
    assert read(b"CHAT\x05hello") == [p.Chat(b"hello")]
    assert read(b"CHAT\x05\x00hello") == [p.Chat(b"hello")]  # the seed's offset 6
    assert read(b"CHAT\x00UNDO") == [p.Chat(b""), p.Signal("UNDO")]


def test_an_unknown_type_ends_the_stream() -> None:
    reader = p.PacketReader()
    assert reader.feed(b"UNDOxyzwUNDO") == [p.Signal("UNDO"), p.Unknown(b"xyzw")]
    assert reader.feed(b"UNDO") == []
    assert read(b"Chat\x01x") == [p.Unknown(b"Chat")]  # types are upper case


def test_the_longest_packets_fit_the_limit() -> None:
    auth = b"AUTH\xff" + b"a" * 255 + b"\xff" + b"b" * 255
    assert len(auth) == p.MAX_PACKET
    assert read(auth) == [p.Login(b"a" * 255, b"b" * 255)]


def test_the_board_is_a1_first_in_the_seed_s_codes() -> None:
    board = p.board_bytes(chess.STARTING_FEN)
    assert len(board) == 64
    assert list(board[:8]) == [2, 3, 4, 5, 6, 4, 3, 2]  # white's first rank, a1..h1
    assert list(board[8:16]) == [1] * 8
    assert list(board[16:48]) == [0] * 32
    assert list(board[48:56]) == [7] * 8
    assert list(board[56:]) == [8, 9, 10, 11, 12, 10, 9, 8]


def test_the_server_s_packets() -> None:
    assert p.name_answer(7) == b"NAME\x07"
    assert p.join_answer(True) == b"JOIN\x01" and p.join_answer(False) == b"JOIN\x00"
    assert p.move_error(5) == b"MOVE\x05"
    start = p.board_bytes(chess.STARTING_FEN)
    assert p.init(1, "ana", "bob", chess.STARTING_FEN) == b"INIT\x01\x03\x03\x01anabob" + start
    assert p.init(3, "ana", "bo", None) == b"INIT\x03\x03\x02\x00anabo"
    assert p.update(2, 0, chess.STARTING_FEN) == b"UPDT\x02\x00" + start
    assert p.signal("CKMT") == b"CKMT"
    assert p.chat("ana", "hola") == b"CHAT\x03\x00\x04anahola"
    assert p.chat("ana", "ñ" * 200)[4:7] == b"\x03\x01\x90"  # 400 bytes, big-endian


@pytest.mark.parametrize(
    ("targets", "rows"),
    [
        ([(4, 2), (4, 3)], [0, 0, 16, 16, 0, 0, 0, 0]),
        ([(0, 0), (7, 7)], [1, 0, 0, 0, 0, 0, 0, 128]),
        ([], [0] * 8),
    ],
)
def test_hovr_s_move_set_is_a_row_a_byte(targets: list[tuple[int, int]], rows: list[int]) -> None:
    assert p.hover((4, 1), targets) == b"HOVR\x04\x01" + bytes(rows)
    assert p.hover((4, 1), None) == b"HOVR\x04\x01"


def test_each_packet_is_read_from_a_window_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """256 KiB of 4-byte packets in one read (asyncio's largest) cost no copy of the rest
    of the read for each packet: each is read from at most MAX_PACKET bytes."""
    seen: list[int] = []
    read = p._read

    def spy(buf: bytes) -> object:
        seen.append(len(buf))
        return read(buf)

    monkeypatch.setattr(p, "_read", spy)
    reader = p.PacketReader()
    packets = reader.feed(b"PASS" * 65536 + b"PLAY\x04")
    assert len(packets) == 65536 and reader.pending
    assert reader.feed(b"\x01\x04\x03") == [p.Play((4, 1), (4, 3))]
    assert max(seen) <= p.MAX_PACKET
