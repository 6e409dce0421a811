"""The README's hand-typed protocol example: a newcomer's first contact only reads, and
every command in it works as written against a real server."""

from __future__ import annotations

import re

from tests.support.common import PASSWORD, ROOT

# Commands that change nothing on the server (docs/protocol.md).
READ_ONLY = {"USER", "PASS", "HELP", "JAUT", "TRAN", "PPEN", "STAT", "SPAR", "SRNK", "QUIT"}


def _netcat_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.findall(r"^printf '([^']*)' \| nc ", readme, flags=re.MULTILINE)
    assert len(found) == 1, found
    return [line for line in found[0].split(r"\r\n") if line]


def test_netcat_example_only_reads():
    commands = _netcat_commands()
    verbs = [c.split(":", 1)[0] for c in commands]
    assert set(verbs) <= READ_ONLY, verbs
    assert {"HELP", "JAUT", "SRNK"} <= set(verbs)
    assert verbs[-1] == "QUIT"


def test_netcat_example_runs_as_written(server, new_user):
    name = new_user("ana")
    with server.connect() as conn:
        for line in _netcat_commands()[:-1]:
            line = line.replace("USER:ana", f"USER:{name}")
            line = line.replace("PASS:a secret", f"PASS:{PASSWORD}")
            parts = conn.cmd_all(line)
            assert all(p.kind == "S" for p in parts), (line, parts)
