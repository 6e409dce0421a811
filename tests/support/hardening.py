"""Helpers shared by the hardening tests (crash, fuzz, stateful, secrets).

Strict reply checks written from the contract and ``docs/protocol.md`` (section 1 and the
annex A1 table), a login helper that works on any server process, and the conversion of
stored move rows back into python-chess moves.
"""

from __future__ import annotations

import re

import chess
from sqlalchemy import make_url

from tests.support.common import ROOT
from tests.support.espol import Conn, Reply

# Answers that may come in several parts (docs/protocol.md section 1).
MULTI_PART = {110, 200, 203, 204, 205, 207, 214}
PROMOTION_PIECES = {0: None, 2: chess.KNIGHT, 3: chess.BISHOP, 4: chess.ROOK, 5: chess.QUEEN}


def documented_codes() -> set[int]:
    """Every code of the annex A1 table in docs/protocol.md."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    codes = {int(m) for m in re.findall(r"^\| (\d{3}) \| [A-Z_]+ \|", text, re.M)}
    assert len(codes) > 30, "the reply-code table of docs/protocol.md was not found"
    return codes


DOCUMENTED = documented_codes()


def check_reply(reply: Reply) -> str:
    """Check one reply beyond the framing ``Conn.reply`` checks; returns its text.

    Codes are three digits in 1xx-3xx, 4xx-5xx or 8xx-9xx, listed in docs/protocol.md, and
    never 500 (an internal fault is a server bug whatever the client sent); data is UTF-8;
    an error or failure carries a one-line, human-readable reason (no CR, LF or other
    control characters).
    """
    assert reply.code // 100 in (1, 2, 3, 4, 5, 8, 9), reply
    assert reply.code != 500, f"500 E_INTERNAL: {reply.data!r}"
    assert reply.code in DOCUMENTED, f"undocumented reply code {reply.code}: {reply.data!r}"
    assert len(reply.data) <= 4096, reply
    try:
        text = reply.data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError(f"reply data is not UTF-8: {reply!r}") from e
    if reply.code >= 400:
        assert text, f"failure {reply.code} without a reason"
        assert "\n" not in text and "\r" not in text, f"reason is not one line: {text!r}"
        assert text.isprintable(), f"reason with control characters: {text!r}"
        assert not reply.more, f"failure {reply.code} in several parts"
    return text


def answer(conn: Conn) -> list[Reply]:
    """Read one whole answer (parts until flag 0), checking every part strictly."""
    parts = conn.replies()
    for i, part in enumerate(parts):
        check_reply(part)
        assert part.code == parts[0].code, f"parts of one answer with different codes: {parts}"
        assert part.more == (i < len(parts) - 1)
    if len(parts) > 1:
        assert parts[0].code in MULTI_PART, f"{parts[0].code} answered in {len(parts)} parts"
    return parts


def ask(conn: Conn, line: str) -> Reply:
    """Send a command that answers in one part; strict checks."""
    conn.send(line)
    parts = answer(conn)
    assert len(parts) == 1, f"{line!r} got {len(parts)} parts"
    return parts[0]


def log_in(host: str, port: int, name: str, password: str, timeout: float = 30.0) -> Conn:
    """A logged-in connection; the socket timeout covers the login throttle's delays."""
    conn = Conn(host, port, timeout)
    try:
        r = conn.cmd(f"USER:{name}")
        assert r.code == 101, r
        r = conn.cmd(f"PASS:{password}")
        assert r.code == 102, r
    except BaseException:
        conn.close()
        raise
    return conn


def stored_move(jugada: str, promocion: int) -> chess.Move:
    """A stored move row (``jugada`` without promotion letter, ``promocion`` code)."""
    base = chess.Move.from_uci(jugada)
    return chess.Move(base.from_square, base.to_square, PROMOTION_PIECES[promocion])


def sqlite_path(url: str) -> str | None:
    """The file of a ``sqlite:///PATH`` URL, else None."""
    u = make_url(url)
    if u.get_backend_name() != "sqlite":
        return None
    assert u.database and u.database != ":memory:", url
    return u.database
