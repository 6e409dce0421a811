"""The protocol reference and HELP must name every code and command the server has."""

from __future__ import annotations

import re

from ajedrez.espol.codes import Reply, reply_class
from ajedrez.espol.commands import ALIASES, SPECS, help_text
from tests.support.common import ROOT

PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()
TABLE_ROW = re.compile(r"^\| (\d{3}) \| ([A-Z_]+) \| (.+) \|$", re.M)


def test_every_reply_code_is_documented_with_its_name() -> None:
    documented = {int(code): name for code, name, _ in TABLE_ROW.findall(PROTOCOL)}
    assert documented == {r.value: r.name for r in Reply}


def test_code_names_match_their_class() -> None:
    for r in Reply:
        expected = {"success": "S_", "error": "E_", "event": "V_", "failure": "F_"}[reply_class(r)]
        assert r.name.startswith(expected), r


def test_every_command_is_documented_and_in_help() -> None:
    lines = "\n".join(help_text())
    for name in [*SPECS, *ALIASES]:
        assert re.search(rf"\b{name}\b", PROTOCOL), f"{name} missing from docs/protocol.md"
    for name in SPECS:
        assert re.search(rf"^{name}\b", lines, re.M), f"{name} missing from HELP"
