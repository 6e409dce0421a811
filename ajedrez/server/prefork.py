"""``--workers N``: one master process, N worker processes sharing the listening sockets.

The master opens the sockets, forks the workers and supervises them; each worker runs
the usual asyncio reactor on the inherited sockets, with its own database connections
(none crosses a fork), so both cores of a small machine run Python. The kernel hands
each new connection to whichever worker accepts it first: a busy worker takes fewer.
SIGTERM or SIGINT to the master stops every worker gracefully; a worker that dies
otherwise is replaced, unless workers keep dying as soon as they start. On PostgreSQL
the master also runs the writer process (``store/writer_process.py``), supervised the
same way.

The master tells systemd it is ready (``notify.py``) once every worker has reported, over
a pipe, that it serves: a worker calls the ``serving`` function ``run_worker`` is given.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import select
import signal
import socket
import time
from collections.abc import Callable
from functools import partial

from ajedrez.server import notify

log = logging.getLogger("ajedrez")

# A worker that dies sooner than this after its start counts as failing to start;
# after that many such deaths in a row the master gives up instead of looping.
QUICK_DEATH_SECONDS = 5.0
QUICK_DEATHS_ALLOWED = 3
# After SIGTERM a worker gets its own stop grace plus this before it is killed.
STOP_MARGIN_SECONDS = 5.0
WAIT_POLL_SECONDS = 0.2

Listeners = dict[str, socket.socket]
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _end_with_parent(master: int) -> None:
    """Linux: SIGTERM this worker when the master dies, even by SIGKILL, so that no
    worker is left serving on its own."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != master:  # the master died before the call above took effect
        os.kill(os.getpid(), signal.SIGTERM)


def open_listener(host: str, port: int, backlog: int) -> socket.socket:
    family, *_rest = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    return socket.create_server((host, port), family=family, backlog=backlog)


class Master:
    def __init__(
        self,
        workers: int,
        listeners: Listeners,
        run_worker: Callable[[int, Callable[[], None]], int],
        stop_grace: float,
        run_writer: Callable[[], int] | None = None,
    ) -> None:
        """``run_worker(number, serving)``: a worker's life; it calls ``serving()`` once it
        serves. ``run_writer``: a process started before the workers, and replaced like
        them if it dies (PostgreSQL's writer process, ``store/writer_process.py``)."""
        self.workers = workers
        self.run_writer = run_writer
        self.stop_grace = stop_grace
        self.stop_deadline: float | None = None
        self.listeners = listeners
        self.run_worker = run_worker
        self.children: dict[int, tuple[int, float]] = {}  # pid -> (worker number, start)
        self.stopping = False
        self.on_exit: Callable[[int], None] | None = None  # called with each ended child's pid
        # Workers write their number to it once they serve; None until run() opens it.
        self.serving_pipe: tuple[int, int] | None = None
        self.not_serving_yet = set(range(1, workers + 1))

    def run(self) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)
        self.serving_pipe = os.pipe()
        os.set_blocking(self.serving_pipe[0], False)
        first = 0 if self.run_writer is not None else 1
        for number in range(first, self.workers + 1):
            self._spawn(number)
        quick_deaths, failed = 0, False
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                self._kill_late_workers()
                self._read_serving(WAIT_POLL_SECONDS)
                continue
            number, started = self.children.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            if self.on_exit is not None:
                self.on_exit(pid)
            if self.stopping:
                log.info("%s (pid %d) stopped", _name(number), pid)
                continue
            log.error("%s (pid %d) exited unexpectedly (status %d)", _name(number), pid, code)
            quick_deaths = (
                quick_deaths + 1 if time.monotonic() - started < QUICK_DEATH_SECONDS else 0
            )
            if quick_deaths > QUICK_DEATHS_ALLOWED:
                log.error("workers keep dying at start; stopping the server")
                failed = True
                self._stop_all(signal.SIGTERM)
                continue
            self._spawn(number)
        for sock in self.listeners.values():
            sock.close()
        for fd in self.serving_pipe:
            os.close(fd)
        return 1 if failed else 0

    def _read_serving(self, timeout: float) -> None:
        """Wait up to ``timeout`` for workers' reports; the first time every worker has
        reported, the service is ready."""
        assert self.serving_pipe is not None
        readable, _, _ = select.select([self.serving_pipe[0]], [], [], timeout)
        if not readable:
            return
        try:
            data = os.read(self.serving_pipe[0], 4096)
        except BlockingIOError:
            return
        if not self.not_serving_yet:
            return  # a replaced worker's report: the service was ready long ago
        self.not_serving_yet -= {int(n) for n in data.split()}
        if not self.not_serving_yet and not self.stopping:
            notify.ready(f"{self.workers} workers serving")

    def _on_signal(self, signum: int, _frame: object) -> None:
        if not self.stopping:
            log.info(
                "received %s, stopping %d processes",
                signal.Signals(signum).name,
                len(self.children),
            )
            notify.stopping()
        self._stop_all(signal.SIGTERM)

    def _kill_late_workers(self) -> None:
        """A worker still running long after SIGTERM is killed: the master must end."""
        if self.stop_deadline is None or time.monotonic() < self.stop_deadline:
            return
        for pid, (number, _started) in self.children.items():
            log.error("%s (pid %d) did not stop in time; killing it", _name(number), pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.stop_deadline = None

    def _stop_all(self, signum: int) -> None:
        if not self.stopping:
            self.stop_deadline = time.monotonic() + self.stop_grace + STOP_MARGIN_SECONDS
        self.stopping = True
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def _spawn(self, number: int) -> None:
        master = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the master's loop
            code = 1
            try:
                for signum in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(signum, signal.SIG_DFL)
                _end_with_parent(master)
                notify.forget()  # only the master speaks to systemd (NotifyAccess=main)
                assert self.serving_pipe is not None
                os.close(self.serving_pipe[0])
                if number == 0 and self.run_writer is not None:
                    code = self.run_writer()
                else:
                    serving = partial(_report, self.serving_pipe[1], number)
                    code = self.run_worker(number, serving)
            except BaseException:
                log.exception("%s failed", _name(number))
            finally:
                logging.shutdown()
                os._exit(code)
        self.children[pid] = (number, time.monotonic())
        log.info("%s started (pid %d)", _name(number), pid)


def _report(fd: int, number: int) -> None:
    """In a worker: tell the master it serves (a write under PIPE_BUF is atomic)."""
    with contextlib.suppress(OSError):
        os.write(fd, f"{number}\n".encode())


def _name(number: int) -> str:
    return "the writer process" if number == 0 else f"worker {number}"
