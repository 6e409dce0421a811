"""Socket-free unit tests of the framing (ajedrez.espol.framing): lines in, replies out;
contract section 1. The command table and the fields are in test_commands.py."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajedrez.espol.codes import Reply
from ajedrez.espol.framing import (
    MAX_DATA,
    MAX_LINE,
    OVERLONG,
    Line,
    LineBuffer,
    LineError,
    decode_header,
    encode_records,
    encode_reply,
    parse_line,
)

# -- helpers ---------------------------------------------------------------------------


def feed_all(buf: LineBuffer, *chunks: bytes) -> list[object]:
    out: list[object] = []
    for chunk in chunks:
        out.extend(buf.feed(chunk))
    return out


def split_reply(raw: bytes) -> tuple[bytes, bytes, int, bytes]:
    """(code bytes, flag byte, declared length, data) of one encoded reply."""
    code, flag = raw[:3], raw[3:4]
    (length,) = struct.unpack("!H", raw[4:6])
    return code, flag, length, raw[6:]


def records_of(parts: list[bytes], prefix: str | None, sep: str = ",") -> list[str]:
    """The records carried by encoded parts, after checking each part's framing."""
    records: list[str] = []
    for i, raw in enumerate(parts):
        _, flag, length, data = split_reply(raw)
        assert len(data) == length <= MAX_DATA
        assert flag == (b"1" if i < len(parts) - 1 else b"0")
        text = data.decode("utf-8")
        if prefix is not None:
            assert text.startswith(prefix + sep), (i, text[:40])
            text = text[len(prefix) + len(sep) :]
        records.extend(text.split(sep))
    return records


# -- LineBuffer --------------------------------------------------------------------------


class TestLineBuffer:
    def test_crlf_and_bare_lf(self):
        buf = LineBuffer()
        assert feed_all(buf, b"USER:ana\r\nPASS:x\nQUIT\r\n") == [b"USER:ana", b"PASS:x", b"QUIT"]
        assert buf.pending == 0

    def test_no_line_until_terminator(self):
        buf = LineBuffer()
        assert feed_all(buf, b"USER:ana") == []
        assert buf.pending == len(b"USER:ana")
        assert feed_all(buf, b"\r") == []
        assert feed_all(buf, b"\n") == [b"USER:ana"]
        assert buf.pending == 0

    def test_cr_and_lf_in_separate_packets(self):
        buf = LineBuffer()
        assert feed_all(buf, b"HELP\r", b"\nQUIT\r", b"\n") == [b"HELP", b"QUIT"]

    def test_split_packets(self):
        buf = LineBuffer()
        assert feed_all(buf, b"US", b"ER:a", b"na\r\nPA", b"SS:clave\r\nJA", b"UT:0\n") == [
            b"USER:ana",
            b"PASS:clave",
            b"JAUT:0",
        ]

    def test_byte_at_a_time(self):
        stream = b"USER:ana\r\nPASS:cl\xc3\xa1ve\r\nJAUT:0\nQUIT\r\n"
        buf = LineBuffer()
        got = feed_all(buf, *(stream[i : i + 1] for i in range(len(stream))))
        assert got == [b"USER:ana", "PASS:cláve".encode(), b"JAUT:0", b"QUIT"]

    def test_empty_lines_are_lines(self):
        assert feed_all(LineBuffer(), b"\r\n\n") == [b"", b""]

    def test_only_one_cr_is_stripped(self):
        assert feed_all(LineBuffer(), b"HELP\r\r\n") == [b"HELP\r"]

    def test_cr_inside_a_line_is_kept(self):
        assert feed_all(LineBuffer(), b"HE\rLP\r\n") == [b"HE\rLP"]

    @pytest.mark.parametrize("term", [b"\r\n", b"\n"])
    def test_exact_limit_line_accepted(self, term):
        line = b"J" * MAX_LINE
        assert feed_all(LineBuffer(), line + term + b"QUIT" + term) == [line, b"QUIT"]

    @pytest.mark.parametrize("term", [b"\r\n", b"\n"])
    def test_exact_limit_line_accepted_byte_at_a_time(self, term):
        stream = b"J" * MAX_LINE + term + b"QUIT" + term
        got = feed_all(LineBuffer(), *(stream[i : i + 1] for i in range(len(stream))))
        assert got == [b"J" * MAX_LINE, b"QUIT"]

    @pytest.mark.parametrize("term", [b"\r\n", b"\n"])
    def test_one_byte_over_limit_is_overlong(self, term):
        stream = b"J" * (MAX_LINE + 1) + term + b"QUIT" + term
        assert feed_all(LineBuffer(), stream) == [OVERLONG, b"QUIT"]

    @pytest.mark.parametrize("term", [b"\r\n", b"\n"])
    def test_one_byte_over_limit_byte_at_a_time(self, term):
        stream = b"J" * (MAX_LINE + 1) + term + b"QUIT" + term
        got = feed_all(LineBuffer(), *(stream[i : i + 1] for i in range(len(stream))))
        assert got == [OVERLONG, b"QUIT"]

    def test_overlong_discarded_whole_and_reported_once(self):
        buf = LineBuffer()
        got = feed_all(buf, b"HELP\r\n", b"A" * 3000, b"B" * 3000, b"C" * 100, b"D\r\nQUIT\r\n")
        assert got == [b"HELP", OVERLONG, b"QUIT"]
        assert buf.pending == 0

    def test_overlong_in_one_packet_with_neighbours(self):
        got = feed_all(LineBuffer(), b"HELP\r\n" + b"X" * 10_000 + b"\r\nJAUT:0\r\n")
        assert got == [b"HELP", OVERLONG, b"JAUT:0"]

    def test_overlong_tail_that_looks_like_a_command_is_discarded(self):
        # The rest of an overlong line must not be taken as a command of its own.
        got = feed_all(LineBuffer(), b"Z" * 5000, b"QUIT:\r\n", b"HELP\r\n")
        assert got == [OVERLONG, b"HELP"]

    def test_two_overlong_lines_report_twice(self):
        got = feed_all(LineBuffer(), b"A" * 3000 + b"\n", b"B" * 3000 + b"\n", b"HELP\n")
        assert got == [OVERLONG, OVERLONG, b"HELP"]

    def test_memory_bounded_while_discarding(self):
        buf = LineBuffer()
        for _ in range(50):
            list(buf.feed(b"Q" * 1000))
            assert buf.pending <= MAX_LINE + 1
        assert feed_all(buf, b"\nHELP\n") == [b"HELP"]

    def test_custom_limit(self):
        buf = LineBuffer(max_line=4)
        assert feed_all(buf, b"HELP\r\nHELPX\r\nQUIT\n") == [b"HELP", OVERLONG, b"QUIT"]

    @settings(max_examples=200, deadline=None, database=None)
    @given(
        lines=st.lists(
            st.one_of(
                st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b"")),
                st.integers(MAX_LINE + 1, MAX_LINE + 3000).map(lambda n: b"L" * n),
            ),
            max_size=8,
        ),
        crlf=st.lists(st.booleans(), min_size=8, max_size=8),
        cuts=st.lists(st.integers(0, 20_000), max_size=10),
    )
    def test_any_chunking_gives_the_same_lines(self, lines, crlf, cuts):
        stream = b"".join(
            line + (b"\r\n" if c else b"\n") for line, c in zip(lines, crlf, strict=False)
        )
        expected = [OVERLONG if len(line) > MAX_LINE else line for line in lines]
        bounds = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
        chunks = [stream[a:b] for a, b in itertools.pairwise(bounds)]
        assert feed_all(LineBuffer(), *chunks) == expected


# -- parse_line --------------------------------------------------------------------------


class TestParseLine:
    @pytest.mark.parametrize(
        "raw, code, fields",
        [
            (b"QUIT", "QUIT", []),
            (b"QUIT:", "QUIT", [""]),
            (b"USER:ana", "USER", ["ana"]),
            (b"SUBS:ana:clave:", "SUBS", ["ana", "clave", ""]),
            (b"SUBS:ana:clave:hola mundo", "SUBS", ["ana", "clave", "hola mundo"]),
            (b"JGDA:P0000001:1:e2e4:0:1228:0", "JGDA", ["P0000001", "1", "e2e4", "0", "1228", "0"]),
            (b"SUBS: a : b :", "SUBS", [" a ", " b ", ""]),  # verbatim, no trimming
            (b"JAUT::", "JAUT", ["", ""]),
            (b"quit", "quit", []),  # syntactically a code; unknown to the table
            ("PASS:contraseña".encode(), "PASS", ["contraseña"]),
        ],
    )
    def test_split(self, raw, code, fields):
        assert parse_line(raw) == Line(code, fields)

    @pytest.mark.parametrize(
        "raw",
        [b"", b"QUI", b"QUITS", b"QUIT5", b"QU T", b"1234", b":QUIT", b" QUIT", b"QUIT ", b"QU_T"],
    )
    def test_bad_code(self, raw):
        with pytest.raises(LineError) as e:
            parse_line(raw)
        assert e.value.code == Reply.F_CMDINV
        assert e.value.reason and "\n" not in e.value.reason

    def test_non_ascii_letters_are_not_a_code(self):
        with pytest.raises(LineError) as e:
            parse_line("QUÍT".encode())
        assert e.value.code == Reply.F_CMDINV

    @pytest.mark.parametrize("raw", [b"USER:\xff", b"\xc3(", b"PASS:ab\xed\xa0\x80", b"\x80QUIT"])
    def test_not_utf8(self, raw):
        with pytest.raises(LineError) as e:
            parse_line(raw)
        assert e.value.code == Reply.F_ENCODING

    def test_long_bad_code_reason_is_short(self):
        with pytest.raises(LineError) as e:
            parse_line(b"X" * 2000)
        assert e.value.code == Reply.F_CMDINV
        assert len(e.value.reason) < 200


# -- encode_reply ------------------------------------------------------------------------


class TestEncodeReply:
    def test_header_bytes_exactly(self):
        assert encode_reply(Reply.S_USER, "ana") == b"1010\x00\x03ana"

    def test_empty_data(self):
        assert encode_reply(Reply.S_SUBS) == b"1030\x00\x00"

    def test_more_flag(self):
        assert encode_reply(Reply.S_JAUT, "x", more=True) == b"2041\x00\x01x"

    def test_length_is_big_endian_bytes_of_utf8(self):
        data = "ñ" * 300  # 600 bytes: 0x0258
        raw = encode_reply(Reply.S_HELP, data)
        assert raw[:6] == b"1100\x02\x58"
        assert raw[6:] == data.encode("utf-8")

    def test_code_is_three_zero_padded_digits(self):
        assert encode_reply(5, b"")[:3] == b"005"
        assert encode_reply(Reply.F_NOUSER, b"no")[:6] == b"8140\x00\x02"

    def test_bytes_data_passed_through(self):
        assert encode_reply(201, b"01795000000") == b"2010\x00\x0b01795000000"

    def test_max_data_accepted(self):
        raw = encode_reply(Reply.S_JAUT, b"a" * MAX_DATA)
        assert raw[:6] == b"2040\x10\x00"
        assert len(raw) == 6 + MAX_DATA

    def test_over_max_data_refused(self):
        with pytest.raises(ValueError):
            encode_reply(Reply.S_JAUT, b"a" * (MAX_DATA + 1))
        with pytest.raises(ValueError):
            encode_reply(Reply.S_JAUT, "ñ" * (MAX_DATA // 2 + 1))

    def test_decode_header_round_trip(self):
        raw = encode_reply(Reply.F_PARAM, "bad", more=True)
        assert decode_header(raw[:6]) == (802, True, 3)
        assert decode_header(encode_reply(101, "")[:6]) == (101, False, 0)


# -- encode_records ----------------------------------------------------------------------


FECHA = "01795000000"


class TestEncodeRecords:
    def test_single_part_with_prefix(self):
        parts = encode_records(Reply.S_JAUT, ["ana", "bea"], prefix=FECHA)
        assert parts == [b"2040" + struct.pack("!H", 19) + b"01795000000,ana,bea"]

    def test_single_part_without_prefix(self):
        assert encode_records(Reply.S_SRNK, ["ana:3", "bea:1"]) == [b"2050\x00\x0bana:3,bea:1"]

    def test_other_separator(self):
        assert encode_records(Reply.S_HELP, ["a", "b"], sep="\n") == [b"1100\x00\x03a\nb"]

    def test_no_records_without_prefix_is_one_empty_reply(self):
        assert encode_records(Reply.S_SRNK, []) == [b"2050\x00\x00"]

    def test_exactly_full_part_is_not_split(self):
        head = len(FECHA) + 1
        rec = "a" * (MAX_DATA - head)
        parts = encode_records(Reply.S_JAUT, [rec], prefix=FECHA)
        assert len(parts) == 1
        assert split_reply(parts[0])[2] == MAX_DATA

    def test_two_records_filling_exactly_one_part(self):
        head = len(FECHA) + 1
        a = "a" * 2000
        b = "b" * (MAX_DATA - head - 2000 - 1)
        parts = encode_records(Reply.S_JAUT, [a, b], prefix=FECHA)
        assert len(parts) == 1
        assert split_reply(parts[0])[2] == MAX_DATA

    def test_one_byte_more_splits_between_records(self):
        head = len(FECHA) + 1
        a = "a" * 2000
        b = "b" * (MAX_DATA - head - 2000)
        parts = encode_records(Reply.S_JAUT, [a, b], prefix=FECHA)
        assert len(parts) == 2
        assert parts[0] == encode_reply(Reply.S_JAUT, f"{FECHA},{a}", more=True)
        assert parts[1] == encode_reply(Reply.S_JAUT, f"{FECHA},{b}")

    def test_record_too_big_for_a_part_is_refused(self):
        with pytest.raises(ValueError):
            encode_records(Reply.S_JAUT, ["a" * (MAX_DATA - len(FECHA))], prefix=FECHA)

    def test_many_records(self):
        names = [f"user{i:04d}".ljust(32, "x") for i in range(400)]
        parts = encode_records(Reply.S_JAUT, names, prefix=FECHA)
        assert len(parts) == 4  # 400 * 33 bytes over parts of at most 4096
        assert records_of(parts, FECHA) == names
        for raw in parts:
            assert raw[:3] == b"204"

    def test_multibyte_records_never_cut(self):
        recs = ["ñandú" * 7 + str(i) for i in range(300)]
        parts = encode_records(Reply.S_SPAR, recs)
        assert len(parts) > 1
        assert records_of(parts, None) == recs

    @settings(max_examples=150, deadline=None, database=None)
    @given(
        recs=st.lists(
            st.text(
                alphabet=st.characters(blacklist_characters=",", blacklist_categories=("Cs",)),
                min_size=1,
                max_size=700,
            ),
            max_size=60,
        ),
        prefix=st.one_of(st.none(), st.just(FECHA)),
    )
    def test_split_properties(self, recs, prefix):
        parts = encode_records(Reply.S_JAUT, recs, prefix=prefix)
        got = records_of(parts, prefix)
        if recs:
            assert got == recs
        # Greedy: a part is only closed when the next record would not fit in it.
        for raw, nxt in itertools.pairwise(parts):
            data = split_reply(raw)[3]
            nxt_data = split_reply(nxt)[3]
            head = len(prefix) + 1 if prefix is not None else 0
            first_next = nxt_data[head:].split(b",")[0]
            assert len(data) + 1 + len(first_next) > MAX_DATA
