"""Which worker of a ``--workers N`` server serves a connection: the workers are the
master's children (less PostgreSQL's writer process, which the log names), and a stopped
worker (SIGSTOP) cannot accept, so stopping every other one decides which worker gets a
new connection (as tests/e2e/test_workers.py does)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tests.support.server import ServerProcess

T = TypeVar("T")


def children(master: int) -> list[int]:
    try:
        text = Path(f"/proc/{master}/task/{master}/children").read_text()
    except OSError:
        return []
    return [int(pid) for pid in text.split()]


def writer_processes(srv: ServerProcess) -> list[int]:
    return [int(p) for p in re.findall(r"the writer process started \(pid (\d+)\)", srv.log_text())]


def worker_pids(srv: ServerProcess) -> list[int]:
    writers = set(writer_processes(srv))
    return [pid for pid in children(srv.proc.pid) if pid not in writers]


def served_by(srv: ServerProcess, worker: int, open_it: Callable[[], T]) -> T:
    """``open_it()`` (which must connect and get a first answer, so that the connection
    was accepted) while every worker but ``worker`` is stopped."""
    others = [pid for pid in worker_pids(srv) if pid != worker]
    assert worker in worker_pids(srv), (worker, worker_pids(srv))
    for pid in others:
        os.kill(pid, signal.SIGSTOP)
    try:
        return open_it()
    finally:
        for pid in others:
            os.kill(pid, signal.SIGCONT)
