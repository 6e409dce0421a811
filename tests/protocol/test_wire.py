"""Socket-free unit tests of the framing (ajedrez.protocol.framing), the command table
(ajedrez.protocol.commands) and the field syntax (ajedrez.protocol.fields): contract
sections 1 and 2."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajedrez.protocol import fields as v
from ajedrez.protocol.codes import Reply, reply_class
from ajedrez.protocol.commands import ALIASES, PRE_LOGIN, SPECS, help_text, lookup, parse_args
from ajedrez.protocol.framing import (
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


# -- commands.parse_args -------------------------------------------------------------------


def args(line: str):
    parsed = parse_line(line.encode("utf-8"))
    spec = lookup(parsed.code)
    assert spec is not None
    return parse_args(spec, parsed)


def failure(line: str) -> Reply:
    with pytest.raises(LineError) as e:
        args(line)
    assert e.value.reason and "\n" not in e.value.reason
    return e.value.code


class TestParseArgs:
    @pytest.mark.parametrize(
        "line, expected",
        [
            ("QUIT", []),
            ("QUIT:", []),
            ("HELP", []),
            ("HELP:", [""]),
            ("HELP:JGDA", ["JGDA"]),
            ("HELP:JGDA:", ["JGDA"]),
            ("HELP::", [""]),
            ("USER:ana", ["ana"]),
            ("USER:ana:", ["ana"]),
            ("PASS:clave:", ["clave"]),
            ("SUBS:ana:clave:", ["ana", "clave", ""]),
            ("SUBS:ana:clave:hola", ["ana", "clave", "hola"]),
            ("SUBS:ana:clave:hola:", ["ana", "clave", "hola"]),
            ("JAUT:0", [0]),
            ("JAUT:0:", [0]),
            ("JAUT:00000000000", [0]),
            ("JAUT:01795000000", [1795000000]),
            ("JAUT:99999999999", [99999999999]),
            ("JAUT:7", [7]),
            ("UNSU:ana:clave", ["ana", "clave"]),
            ("UNSU:ana:clave:", ["ana", "clave"]),
            ("SPAR:P0000001:0:", [1, 0]),
            ("JGDA:P0000012:3:e7e8:1:5260:5", [12, 3, "e7e8", 1, "5260", 5]),
            ("ACEP:N:bea", ["N", "bea"]),
            ("RTBL:P0000001:S:bea", [1, True, "bea"]),
            ("TBLs:P0000001:bea", [1, "bea"]),
            ("RTBS:P0000001:N:bea", [1, False, "bea"]),
        ],
    )
    def test_accepted(self, line, expected):
        assert args(line) == expected

    @pytest.mark.parametrize(
        "line",
        [
            "QUIT:x",
            "QUIT::",
            "HELP:JGDA:JGDA",
            "USER",
            "USER:ana:x",
            "USER:ana::",
            "PASS",
            "PASS:a:b",
            "SUBS:ana:clave",
            "SUBS:ana",
            "SUBS:ana:clave:hola:mundo",
            "SUBS:ana:clave:hola::",
            "JAUT",
            "JAUT:0:0",
            "JAUT:0::",
            "UNSU:ana",
            "UNSU:ana:clave:x",
            "SRNK:x",
            "JGDA:P0000001:1:e2e4:0:1228",
        ],
    )
    def test_wrong_field_count(self, line):
        assert failure(line) == Reply.F_NFIELDS

    @pytest.mark.parametrize(
        "line",
        [
            "USER:",
            "USER:ana maria",
            "USER:" + "a" * 33,
            "USER:a\u00f1\u0430",  # n-tilde, Cyrillic a
            "PASS:",
            "PASS:" + "x" * 129,
            "SUBS::clave:",
            "SUBS:ana::",
            "SUBS:ana:clave:" + "c" * 201,
            "SUBS:ana maría:clave:",
            "JAUT:",
            "JAUT::",
            "JAUT:123456789012",
            "JAUT:-1",
            "JAUT:+1",
            "JAUT:1a",
            "JAUT: 1",
            "JAUT:1 ",
            "JAUT:0x10",
            "JAUT:\uff11\uff12",  # fullwidth digits
            "JAUT:\u0661\u0662",  # Arabic-Indic digits
            "HELP:JG",
            "HELP:JGDAX",
            "HELP:1234",
            "UNSU:ana:",
            "UNSU::clave",
            "SPAR:P000001:0",
            "SPAR:p0000001:0",
            "ACEP:b:bea",
            "RTBL:P0000001:s:bea",
            "JGDA:P0000001:1:E2E4:0:1228:0",
            "JGDA:P0000001:1:e2e4:2:1228:0",
            "JGDA:P0000001:1:e2e4:0:1264:0",
            "JGDA:P0000001:1:e2e4:0:1228:1",
        ],
    )
    def test_malformed_field(self, line):
        assert failure(line) == Reply.F_PARAM

    def test_count_checked_before_syntax(self):
        assert failure("UNSU:bad name") == Reply.F_NFIELDS

    def test_reason_names_the_command_and_syntax(self):
        with pytest.raises(LineError) as e:
            args("SUBS:ana:clave")
        assert "SUBS" in e.value.reason and "<comentario>" in e.value.reason


class TestCommandTable:
    def test_contract_commands_present(self):
        for name in [
            *("USER", "PASS", "SUBS", "UNSU", "HELP", "QUIT", "JUEG", "TRAN", "ACEP", "PPEN"),
            *("JAUT", "SRNK", "STAT", "SPAR", "JGDA", "TBLS", "RTBL", "REND", "FINP"),
        ]:
            assert name in SPECS, name

    def test_pre_login_set(self):
        assert frozenset({"USER", "PASS", "SUBS", "HELP", "QUIT"}) == PRE_LOGIN

    def test_aliases(self):
        assert ALIASES == {"TBLs": "TBLS", "RTBS": "RTBL"}
        assert lookup("TBLs") is SPECS["TBLS"]
        assert lookup("RTBS") is SPECS["RTBL"]

    @pytest.mark.parametrize("code", ["quit", "Quit", "QUIt", "help", "tbls", "RTBs", "ABCD"])
    def test_codes_are_case_sensitive(self, code):
        assert lookup(code) is None

    def test_field_counts(self):
        counts = {name: len(spec.fields) for name, spec in SPECS.items()}
        assert counts["USER"] == 1
        assert counts["PASS"] == 1
        assert counts["SUBS"] == 3
        assert counts["UNSU"] == 2
        assert counts["JAUT"] == 1
        assert counts["QUIT"] == 0
        assert counts["HELP"] == 1 and SPECS["HELP"].optional == 1

    def test_help_text_full(self):
        lines = help_text()
        starts = {line.split(" ", 1)[0].split(":", 1)[0] for line in lines}
        assert set(SPECS) <= starts
        assert any(line.startswith("JAUT:<fecha> - ") for line in lines)
        assert any(line.startswith("UNSU:<usuario>:<password> - ") for line in lines)
        assert any(line.startswith("SUBS:<usuario>:<password>:<comentario> - ") for line in lines)
        assert any(line.startswith("HELP:[<comando>]") for line in lines)
        assert all("\n" not in line for line in lines)

    def test_help_text_one_command(self):
        (line,) = help_text("JGDA")
        assert line.startswith(
            "JGDA:<partida>:<#jugada>:<jugada>:<reverso>:<posicion>:<promocion> - "
        )
        assert help_text("TBLs") == help_text("TBLS")


# -- values --------------------------------------------------------------------------------


class TestValues:
    @pytest.mark.parametrize(
        "name", ["a", "Z", "0", "ana", "Ana.Maria_2-b", "-", "_", ".", "a" * 32, "A-Z.a_z.0-9"]
    )
    def test_usuario_ok(self, name):
        assert v.usuario(name) == name

    @pytest.mark.parametrize(
        "name", ["", "a" * 33, "ana maria", "ana:b", "año", "ana\n", "ana\r", "a/b", "a@b", "é"]
    )
    def test_usuario_bad(self, name):
        with pytest.raises(ValueError):
            v.usuario(name)

    @pytest.mark.parametrize("pw", ["x", "x" * 128, "contraseña segura", "🔑" * 128, " ", "a;b,c"])
    def test_password_ok(self, pw):
        assert v.password(pw) == pw

    @pytest.mark.parametrize("pw", ["", "x" * 129, "a:b", "a\rb", "a\nb", "🔑" * 129])
    def test_password_bad(self, pw):
        with pytest.raises(ValueError):
            v.password(pw)

    @pytest.mark.parametrize("c", ["", "x" * 200, "Ana María, Guayaquil", "ñ" * 200])
    def test_comentario_ok(self, c):
        assert v.comentario(c) == c

    @pytest.mark.parametrize("c", ["x" * 201, "a:b", "a\rb", "a\nb"])
    def test_comentario_bad(self, c):
        with pytest.raises(ValueError):
            v.comentario(c)

    @pytest.mark.parametrize(
        "text, value",
        [
            ("0", 0),
            ("1", 1),
            ("00000000000", 0),
            ("01795000000", 1795000000),
            ("9" * 11, 10**11 - 1),
        ],
    )
    def test_fecha_ok(self, text, value):
        assert v.fecha(text) == value

    @pytest.mark.parametrize("text", ["", "1" * 12, "-1", "+1", "1.0", "1e5", " 1", "1 ", "\uff11"])
    def test_fecha_bad(self, text):
        with pytest.raises(ValueError):
            v.fecha(text)

    def test_format_fecha(self):
        assert v.format_fecha(0) == "00000000000"
        assert v.format_fecha(1795000000) == "01795000000"
        assert v.format_fecha(10**11 - 1) == "99999999999"
        assert len(v.format_fecha(1)) == 11

    def test_partida(self):
        assert v.partida("P0000001") == 1
        assert v.partida("P1234567") == 1234567
        assert v.format_partida(1) == "P0000001"
        assert v.format_partida(1234567) == "P1234567"
        for bad in ["P000001", "P00000001", "p0000001", "Q0000001", "P000000a", "", "0000001"]:
            with pytest.raises(ValueError):
                v.partida(bad)

    def test_ply(self):
        assert v.ply("0") == 0
        assert v.ply("1") == 1
        assert v.ply(str(v.MAX_PLY)) == v.MAX_PLY
        for bad in ["", "-1", str(v.MAX_PLY + 1), "1234567", "a", " 1"]:
            with pytest.raises(ValueError):
                v.ply(bad)

    def test_jugada(self):
        assert v.jugada("e2e4") == "e2e4"
        assert v.jugada("a1h8") == "a1h8"
        for bad in ["E2E4", "e2e9", "i2i4", "e2e4q", "e2", "e2-e4", ""]:
            with pytest.raises(ValueError):
                v.jugada(bad)

    def test_posicion(self):
        assert v.posicion("1228") == "1228"
        assert v.posicion("0063") == "0063"
        for bad in ["6400", "0064", "123", "12345", "12a8", ""]:
            with pytest.raises(ValueError):
                v.posicion(bad)

    def test_small_enums(self):
        assert [v.reverso(x) for x in "01"] == [0, 1]
        assert [v.promocion(x) for x in "02345"] == [0, 2, 3, 4, 5]
        assert [v.color(x) for x in "BN"] == ["B", "N"]
        assert [v.yes_no(x) for x in "SN"] == [True, False]
        for parse, bad in [
            (v.reverso, "2"),
            (v.promocion, "1"),
            (v.promocion, "6"),
            (v.color, "b"),
            (v.color, "W"),
            (v.yes_no, "s"),
            (v.yes_no, "Y"),
        ]:
            with pytest.raises(ValueError):
                parse(bad)

    def test_help_topic(self):
        assert v.help_topic("") == ""
        assert v.help_topic("JGDA") == "JGDA"
        for bad in ["JG", "JGDAX", "12AB", "JGDÁ"]:
            with pytest.raises(ValueError):
                v.help_topic(bad)

    def test_error_reason_is_one_printable_line(self):
        with pytest.raises(ValueError) as e:
            v.usuario("bad\r\nname" + "x" * 100)
        reason = str(e.value)
        assert "\n" not in reason and "\r" not in reason
        assert len(reason) < 200


# -- codes ---------------------------------------------------------------------------------


class TestCodes:
    def test_one_meaning_per_code(self):
        assert len({int(c) for c in Reply}) == len(Reply.__members__)

    def test_seed_codes(self):
        assert Reply.S_USER == 101
        assert Reply.F_NOUSER == 814

    def test_symbolic_names_match_class(self):
        prefix = {"success": "S_", "error": "E_", "failure": "F_"}
        for c in Reply:
            assert c.name.startswith(prefix[reply_class(c)]), c
            assert 100 <= c <= 999

    def test_reply_class(self):
        assert reply_class(101) == "success"
        assert reply_class(399) == "success"
        assert reply_class(401) == "error"
        assert reply_class(500) == "error"
        assert reply_class(800) == "failure"
        assert reply_class(999) == "failure"
        for bad in (0, 600, 700):
            with pytest.raises(ValueError):
                reply_class(bad)
