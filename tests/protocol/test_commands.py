"""Socket-free unit tests of the command table (ajedrez.espol.commands), the field syntax
(ajedrez.espol.fields) and the reply codes (ajedrez.espol.codes): contract sections 1
and 2."""

from __future__ import annotations

import pytest

from ajedrez.espol import fields as v
from ajedrez.espol.codes import Reply, reply_class
from ajedrez.espol.commands import ALIASES, PRE_LOGIN, SPECS, help_text, lookup, parse_args
from ajedrez.espol.framing import LineError, parse_line

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
        assert frozenset({"USER", "PASS", "FICH", "SUBS", "HELP", "QUIT"}) == PRE_LOGIN

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
        prefix = {"success": "S_", "error": "E_", "event": "V_", "failure": "F_"}
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
        assert reply_class(600) == "event"
        assert reply_class(699) == "event"
        for bad in (0, 700, 1000):
            with pytest.raises(ValueError):
                reply_class(bad)
