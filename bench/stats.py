"""Latency samples and reply codes per command and phase, and their summaries.

A run has phases: ``login`` (connect, USER, PASS), ``warmup`` (games already running, not
counted), ``measure`` (the window every figure of the report comes from) and ``drain``
(after the window, while players stop). Every request lands in the current phase.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ajedrez.client.errors import code_name
from ajedrez.espol.codes import reply_class

PHASES = ("login", "warmup", "measure", "drain")
CONNECTION_FAILED = "conn"  # the pseudo reply code of a request whose connection failed


@dataclass(frozen=True)
class Summary:
    """Latency figures of one command in one phase, in milliseconds."""

    command: str
    count: int
    p50: float
    p95: float
    p99: float
    max: float
    mean: float
    replies: dict[str, int]
    p90: float = 0.0  # not in the reports' JSON; bench.seed_load prints it

    def percentiles_ms(self) -> dict[str, Any]:
        """The count and the percentiles, as every report names them."""
        return {
            "count": self.count,
            "p50_ms": round(self.p50, 3),
            "p95_ms": round(self.p95, 3),
            "p99_ms": round(self.p99, 3),
            "max_ms": round(self.max, 3),
        }

    def as_dict(self) -> dict[str, Any]:
        return {**self.percentiles_ms(), "mean_ms": round(self.mean, 3), "replies": self.replies}


def summarize(command: str, seconds: Iterable[float], replies: dict[str, int]) -> Summary:
    """The figures of one command's latencies (in seconds) and reply counts."""
    ms = sorted(v * 1000.0 for v in seconds)
    return Summary(
        command=command,
        count=len(ms),
        p50=percentile(ms, 50),
        p95=percentile(ms, 95),
        p99=percentile(ms, 99),
        max=ms[-1] if ms else 0.0,
        mean=sum(ms) / len(ms) if ms else 0.0,
        replies=replies,
        p90=percentile(ms, 90),
    )


def percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile of an already sorted list (0.0 for an empty one)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


class Recorder:
    """Collects every request's latency and reply code, keyed by the current phase."""

    def __init__(self) -> None:
        self.phase = "login"
        self._samples: dict[tuple[str, str], list[float]] = defaultdict(list)
        self._replies: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self.events: dict[str, Counter[str]] = {p: Counter() for p in PHASES}

    def observe(self, command: str, seconds: float, code: int | None) -> None:
        key = (self.phase, command)
        self._samples[key].append(seconds)
        self._replies[key][CONNECTION_FAILED if code is None else str(code)] += 1

    def observe_wake(self, command: str, seconds: float, code: int | None) -> None:
        """The same request timed until its reading task resumed (``bench/aclient.py``)."""
        self.observe(f"{command}+wake", seconds, code)

    def count(self, event: str, n: int = 1) -> None:
        """A named event (``moves``, ``games_started``, ``end_checkmate``...) in this phase."""
        self.events[self.phase][event] += n

    def commands(self, phase: str) -> list[str]:
        return sorted(cmd for (p, cmd) in self._samples if p == phase)

    def summary(self, phase: str, command: str) -> Summary:
        return summarize(
            command,
            self._samples.get((phase, command), []),
            dict(sorted(self._replies.get((phase, command), Counter()).items())),
        )

    def summaries(self, phase: str) -> list[Summary]:
        return [self.summary(phase, cmd) for cmd in self.commands(phase)]

    def errors(self, phase: str, expected: set[tuple[str, str]]) -> dict[str, int]:
        """Non-success replies of a phase by ``code name``, minus the ``expected`` ones.

        ``expected`` holds (command, code) pairs that are part of normal play, such as
        SPAR's ``839 F_NOMASJUG`` when polling with SPAR.
        """
        out: Counter[str] = Counter()
        for (p, command), replies in self._replies.items():
            if p != phase:
                continue
            for code, n in replies.items():
                if (command, code) in expected or _is_success(code):
                    continue
                out[f"{code} {_name(code)}"] += n
        return dict(sorted(out.items()))


def _is_success(code: str) -> bool:
    return code != CONNECTION_FAILED and reply_class(int(code)) == "success"


def _name(code: str) -> str:
    return "connection failed" if code == CONNECTION_FAILED else code_name(int(code))
