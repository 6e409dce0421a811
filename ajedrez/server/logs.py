"""The server's log: one event a line on stderr, as text (the default) or JSON.

Text is ``TIME LEVEL [PROCESS] LOGGER: MESSAGE``, ``[PROCESS]`` only in the processes that
``--workers`` forks. JSON (``--log-format json``, for log shippers) is one object a line:
``time`` (ISO 8601, UTC), ``level``, ``logger``, ``process`` (``main``, ``worker K``,
``writer``), ``pid``, ``message`` and, when there is one, ``exception``.

One event is one line whatever it carries: in text, a line break or another control
character inside a message or a traceback is written as an escape (``\\n``, ``\\x1b``), so
text a client sent cannot start a line that looks like an event of its own, nor drive the
operator's terminal; JSON escapes them by itself.

Under systemd (stderr is the journal's stream: ``$JOURNAL_STREAM`` names its device and
inode), each line starts with the syslog priority, ``<3>`` for an error ..., which
journald takes off and keeps as the entry's priority (``journalctl -p warning``), and text
lines leave out the time, as the journal stamps every entry itself.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import IO

LOG_FORMATS = ("text", "json")
MAIN_PROCESS = "main"

# sd-daemon(3)'s prefixes: what journald reads as a line's priority.
_PRIORITY = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}
# C0 controls and DEL, tab kept: "\n" and "\r" as Python writes them, the rest as \xNN.
_ESCAPES = {
    c: ("\\n" if c == 10 else "\\r" if c == 13 else f"\\x{c:02x}")
    for c in (*range(32), 127)
    if c != 9
}


class TextFormatter(logging.Formatter):
    """``TIME LEVEL [PROCESS] LOGGER: MESSAGE`` on one line (without TIME in the journal)."""

    def __init__(self, process: str | None = None, *, journal: bool = False) -> None:
        tag = f" [{process}]" if process else ""
        stamp = "" if journal else "%(asctime)s "
        super().__init__(f"{stamp}%(levelname)s{tag} %(name)s: %(message)s")
        self.journal = journal

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record).translate(_ESCAPES)
        return _prefixed(line, record) if self.journal else line


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, process, pid, message, exception."""

    def __init__(self, process: str | None = None, *, journal: bool = False) -> None:
        super().__init__()
        self.process = process or MAIN_PROCESS
        self.journal = journal

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC)
        event: dict[str, object] = {
            "time": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "process": self.process,
            "pid": record.process,
            "message": record.getMessage(),
        }
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            event["exception"] = record.exc_text
        if record.stack_info:
            event["stack"] = self.formatStack(record.stack_info)
        line = json.dumps(event, ensure_ascii=False, default=str)
        return _prefixed(line, record) if self.journal else line


def _prefixed(line: str, record: logging.LogRecord) -> str:
    level = max((lv for lv in _PRIORITY if lv <= record.levelno), default=logging.DEBUG)
    return f"<{_PRIORITY[level]}>{line}"


def journal_attached(stream: IO[str], environ: Mapping[str, str] = os.environ) -> bool:
    """True when ``stream`` is the journal's own stream (systemd.exec(5), $JOURNAL_STREAM):
    the variable alone is not enough, since a child inherits it with stderr redirected."""
    device, _, inode = environ.get("JOURNAL_STREAM", "").partition(":")
    try:
        st = os.fstat(stream.fileno())
        return (st.st_dev, st.st_ino) == (int(device), int(inode))
    except (OSError, ValueError, AttributeError):
        return False


_setup: dict[str, object] = {}


def setup(
    level: str,
    log_format: str = "text",
    stream: IO[str] | None = None,
    environ: Mapping[str, str] = os.environ,
) -> None:
    """Send the root logger's records to ``stream`` (stderr) in ``log_format``."""
    stream = sys.stderr if stream is None else stream
    handler = logging.StreamHandler(stream)
    _setup.update(format=log_format, journal=journal_attached(stream, environ))
    handler.setFormatter(formatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)


def formatter(process: str | None = None) -> logging.Formatter:
    """The formatter ``setup`` chose, for lines tagged with ``process``."""
    journal = bool(_setup.get("journal", False))
    if _setup.get("format") == "json":
        return JsonFormatter(process, journal=journal)
    return TextFormatter(process, journal=journal)


def log_as(process: str) -> None:
    """Tag every line this process logs from now on (a child forked by ``--workers``)."""
    for handler in logging.getLogger().handlers:
        handler.setFormatter(formatter(process))
