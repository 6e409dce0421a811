"""What every ``ajedrez-admin`` action shares: its errors and exit statuses, the
operator's confirmation, who the operator is, and how stored text is shown."""

from __future__ import annotations

import argparse
import getpass
import os
import sys

from ajedrez.espol import fields as values

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_DATABASE = 3


class AdminError(Exception):
    def __init__(self, message: str, status: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.status = status


def asks(args: argparse.Namespace) -> bool:
    """Should a change be confirmed first? On a terminal, unless ``--yes``; scripts (no
    terminal) go on without a question, as they always have."""
    return not args.yes and sys.stdin.isatty()


def confirm(question: str) -> None:
    """Ask on the terminal; any answer but yes refuses, before anything has changed."""
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline()
    if not answer.endswith("\n"):
        print(file=sys.stderr)  # end of input: the error must not share the prompt's line
    if answer.strip().lower() not in ("y", "yes"):
        raise AdminError("not confirmed: nothing changed", EXIT_REFUSED)


def actor() -> str:
    """Who runs this command, for the audit trail: the operating-system user."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # a uid without a name (some containers)
        return f"uid {os.getuid()}"


def one_line(e: BaseException) -> str:
    text = str(getattr(e, "orig", None) or e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def shown(text: str) -> str:
    """Stored text for a listing's line: what is not printable (U+202E, a line
    separator, a control character) as an escape such as \\u202e, so that no stored
    text, however old, can reorder or forge a row."""
    return values.escaped(text)


def count(n: int, thing: str) -> str:
    """``no games``, ``1 game``, ``2 games``."""
    return f"{n or 'no'} {thing}{'' if n == 1 else 's'}"
