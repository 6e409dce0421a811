"""Time for tests: a clock the test moves by hand (in process), and the file a real server
reads its time from (``--clock-file``). Nothing sleeps for time to pass."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ajedrez.domain.timecontrol import DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS

# 2026-11-23 12:00:00 UTC: far from a year's end, so leave years do not turn by accident.
START_MS = 1_795_435_200_000

__all__ = ["DAY_MS", "HOUR_MS", "MINUTE_MS", "SECOND_MS", "START_MS", "FakeClock", "FileTime"]


@dataclass
class FakeClock:
    """``now_ms`` is whatever the test set; ``advance`` moves it on."""

    now: int = START_MS

    def now_ms(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


@dataclass
class FileTime:
    """The time a server started with ``--clock-file path`` reads: written whole, by
    renaming a new file over the old, so the server never reads half a number."""

    path: Path
    now: int = START_MS

    def __post_init__(self) -> None:
        self.set(self.now)

    def set(self, ms: int) -> int:
        self.now = ms
        new = self.path.with_suffix(".new")
        new.write_text(str(ms))
        os.replace(new, self.path)
        return ms

    def advance(self, ms: int) -> int:
        return self.set(self.now + ms)
