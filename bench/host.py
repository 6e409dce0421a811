"""This machine, as the benchmark reports record it: CPUs, memory, CPU time spent."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    return {
        "cpu_count": os.cpu_count(),
        "mem_total_mib": _mem_total_mib(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of every CPU from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def _mem_total_mib() -> int | None:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return None
