"""A clock read from a file, for tests that move a real server's time (``--clock-file``).

The file holds the time as milliseconds since 1970-01-01 UTC, one integer. A test writes
it whole (to a new file renamed over the old), and the server reads it at every use:
the scheduler, moves, draw offers and leave all see the test's time.
"""

from __future__ import annotations

from pathlib import Path


class FileClock:
    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def now_ms(self) -> int:
        return int(self.path.read_text().strip())
