"""The server's log lines (ajedrez/server/logs.py) and sd_notify (notify.py), in memory."""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ajedrez.server import logs, notify


def _record(message: str, level: int = logging.INFO, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("bad\nvalue")
        except ValueError:
            exc_info = sys.exc_info()
    return logging.LogRecord("ajedrez.session", level, __file__, 1, message, (), exc_info)


def test_text_is_one_line_whatever_the_message_holds() -> None:
    line = logs.TextFormatter().format(_record("login of 'x\nINFO forged' \x1b[2J", exc=True))
    assert "\n" not in line and "\x1b" not in line
    assert "x\\nINFO forged" in line and "\\x1b[2J" in line
    assert "Traceback" in line and "ValueError: bad\\nvalue" in line
    assert " INFO ajedrez.session: " in line


def test_text_tags_a_workers_lines() -> None:
    line = logs.TextFormatter("worker 2").format(_record("serving"))
    assert line.endswith(" INFO [worker 2] ajedrez.session: serving")


def test_json_is_one_object_a_line() -> None:
    line = logs.JsonFormatter("writer").format(_record("a\nb", logging.WARNING, exc=True))
    assert "\n" not in line
    event = json.loads(line)
    assert event["level"] == "WARNING" and event["logger"] == "ajedrez.session"
    assert event["process"] == "writer" and event["pid"] == os.getpid()
    assert event["message"] == "a\nb"
    assert event["time"].endswith("Z")
    assert "ValueError: bad\nvalue" in event["exception"]


def test_under_the_journal_lines_carry_their_priority_and_no_time(tmp_path: Path) -> None:
    stream = (tmp_path / "journal").open("w")
    st = os.fstat(stream.fileno())
    environ = {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
    assert logs.journal_attached(stream, environ)
    # The variable alone (a child whose stderr was redirected) is not the journal.
    assert not logs.journal_attached(io.StringIO(), environ)
    assert not logs.journal_attached(stream, {})
    try:
        logs.setup("INFO", "text", stream, environ)
        logging.getLogger("ajedrez.test").error("it failed")
        logging.getLogger("ajedrez.test").info("it went on")
        logs.setup("INFO", "json", stream, environ)
        logging.getLogger("ajedrez.test").warning("careful")
    finally:
        stream.close()
        logging.getLogger().handlers.clear()
    lines = (tmp_path / "journal").read_text().splitlines()
    assert lines[0] == "<3>ERROR ajedrez.test: it failed"
    assert lines[1] == "<6>INFO ajedrez.test: it went on"
    assert lines[2].startswith("<4>{") and json.loads(lines[2][3:])["message"] == "careful"


@pytest.fixture
def listening(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    path = tmp_path / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(5)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    monkeypatch.setattr(notify, "_failed", [])
    yield sock
    sock.close()


def test_notify_sends_one_datagram_to_a_path(listening: socket.socket) -> None:
    assert notify.ready("listening on 127.0.0.1:1995")
    assert listening.recv(4096) == b"READY=1\nSTATUS=listening on 127.0.0.1:1995"
    assert notify.stopping()
    assert listening.recv(4096) == b"STOPPING=1\nSTATUS=stopping"


def test_notify_to_the_abstract_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"ajedrez-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert notify.send("READY=1")
        assert sock.recv(100) == b"READY=1"


def test_without_a_socket_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert not notify.ready("x")


def test_a_socket_nobody_listens_on_is_logged_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    monkeypatch.setattr(notify, "_failed", [])
    with caplog.at_level(logging.WARNING):
        assert not notify.ready("x")
        assert not notify.stopping()
    warnings = [r for r in caplog.records if "service manager" in r.getMessage()]
    assert len(warnings) == 1


def test_forget_silences_a_forked_process(listening: socket.socket) -> None:
    notify.forget()
    assert not notify.ready("x")
    assert "NOTIFY_SOCKET" not in os.environ
