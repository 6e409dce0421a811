"""This machine, as the benchmark reports record it: CPUs, memory, CPU time spent."""

from __future__ import annotations

import os
import platform
import resource
import time
from pathlib import Path
from typing import Any

from bench.server_proc import Watcher, server_cpu_seconds


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


def loadavg() -> str:
    """/proc/loadavg as it reads: the 1, 5 and 15-minute averages and the run queue."""
    return Path("/proc/loadavg").read_text().strip()


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class CpuSpan:
    """Wall time and CPU over a stretch of a run: the share of the whole machine that was
    busy and the shares of one core this process and the server used. The benchmark
    shares the machine with the server, so a figure taken while something else ran shows
    as a machine busier than the two of them."""

    def __init__(self, watcher: Watcher | None) -> None:
        self.watcher = watcher
        self.start = self.end = 0.0
        self.machine_busy = 0.0  # share of every core's time
        self.own_cpu = 0.0  # share of one core
        self.server_cpu: float | None = None  # share of one core; None without a watcher
        self._ticks = (0, 0)
        self._own0 = 0.0
        self._server0: float | None = None

    def open(self) -> CpuSpan:
        self.start = time.perf_counter()
        self._own0 = own_cpu_seconds()
        self._server0 = server_cpu_seconds(self.watcher)
        self._ticks = cpu_ticks()
        return self

    def close(self) -> None:
        self.end = time.perf_counter()
        elapsed = max(self.seconds, 1e-9)
        self.own_cpu = (own_cpu_seconds() - self._own0) / elapsed
        (busy0, total0), (busy1, total1) = self._ticks, cpu_ticks()
        self.machine_busy = (busy1 - busy0) / max(total1 - total0, 1)
        after = server_cpu_seconds(self.watcher)
        before = self._server0
        self.server_cpu = None if after is None or before is None else (after - before) / elapsed

    def __enter__(self) -> CpuSpan:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def machine_busy_percent(self) -> float:
        return round(self.machine_busy * 100, 1)

    @property
    def own_cpu_percent(self) -> float:
        return round(self.own_cpu * 100, 1)

    @property
    def server_cpu_percent(self) -> float | None:
        return None if self.server_cpu is None else round(self.server_cpu * 100, 1)


def _mem_total_mib() -> int | None:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return None
