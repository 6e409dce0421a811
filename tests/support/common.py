"""Names every tier shares: the repository root, the test password, unique user names,
and polling for a condition."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PASSWORD = "correct horse battery"

_counter = itertools.count()
_run = uuid.uuid4().hex[:6]


def unique_name(prefix: str = "u") -> str:
    """A user name no other test (or earlier run on the same database) uses."""
    return f"{prefix}{_run}{next(_counter)}"[:32]


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
