"""Fixtures of the end-to-end tests of ajedrez-admin."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ajedrez.store.db import Database
from tests.support.admin import Result, in_process


@pytest.fixture
def cli(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Result]:
    """Run ajedrez-admin's main() in-process: cli(*args, stdin=..., url=...). With
    ``tty=True`` standard input is a terminal and ``typed`` what is typed at getpass's
    prompts (then end of input)."""
    return in_process(database_url, monkeypatch, capsys)


@pytest.fixture
def private_db(own_db: tuple[str, Database]) -> tuple[str, Database]:
    """(URL, Database) of the test's own, on the store under test: for purges."""
    return own_db
