"""The memory figures of ``bench.idle``: the server's and this process's resident set at
labelled points of the run, and the server's resident set by kind of mapping."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench.server_proc import Watcher, children


class Memory:
    """Server and own memory samples, labelled."""

    def __init__(self, watcher: Watcher | None) -> None:
        self.watcher = watcher
        self.points: list[dict[str, Any]] = []

    def take(self, label: str, held: int) -> dict[str, Any]:
        server = self.watcher.poll() if self.watcher is not None else None
        point = {
            "label": label,
            "held": held,
            "server_rss_mib": _mib(server.rss_kib) if server else None,
            "server_hwm_mib": _mib(server.hwm_kib) if server else None,
            "server_threads": server.threads if server else None,
            # Not server_proc.sample: that one adds the children, and the server is ours.
            "client_rss_mib": _mib(_own_rss_kib()),
            "loadavg_1min": round(os.getloadavg()[0], 2),
        }
        self.points.append(point)
        return point

    def find(self, label: str) -> dict[str, Any] | None:
        return next((p for p in self.points if p["label"] == label), None)


def _mib(kib: int) -> float:
    return round(kib / 1024.0, 1)


def _own_rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def memory_map(pid: int) -> dict[str, float]:
    """RSS (MiB) of a process and its children by kind of mapping, from /proc/PID/smaps.

    glibc gives each thread that mallocs its own arena: anonymous heaps aligned to 64 MiB,
    which keep freed memory (argon2's 19 MiB per hash, for one) resident.
    """
    totals = dict.fromkeys(("thread_arenas", "main_heap", "other_anonymous", "files"), 0.0)
    for one in [pid, *children(pid)]:
        kind = "other_anonymous"
        try:
            lines = Path(f"/proc/{one}/smaps").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            head = line.split(maxsplit=5)
            if "-" in head[0] and not head[0].endswith(":"):
                name = head[5] if len(head) > 5 else ""
                start = int(head[0].split("-")[0], 16)
                kind = (
                    "main_heap"
                    if name == "[heap]"
                    else "files"
                    if name.startswith("/")
                    else "thread_arenas"
                    if not name and start % (64 << 20) == 0
                    else "other_anonymous"
                )
            elif head[0] == "Rss:":
                totals[kind] += int(head[1]) / 1024.0
    return {k: round(v, 1) for k, v in totals.items()}
