"""Batches: writes (and, on PostgreSQL, reads) queued from an event loop and run together.

A move's write waits: on SQLite for the database's one write lock and an fsync, on
PostgreSQL for its row lock and round trips. Run one at a time, each paid the
transaction's fixed costs (SQLite's fsync; PostgreSQL's BEGIN, advisory lock and COMMIT)
alone. Here the loop queues the write and goes on; the writes queued meanwhile run in
one transaction (``Database.write_jobs``), and under load a batch holds tens of them.

Who runs the batch depends on the store. SQLite's is local calls, so the loop runs it
itself at the end of its turn (:class:`LoopBatches`). PostgreSQL's is round trips that
would stall every connection of the loop, so one thread per process, the writer
(:class:`BatchThread`), takes every queued write and wakes each waiting loop once per
batch; STAT and SPAR are queued the same way to a second thread (the reader,
``Database.read_later``), which sends a batch's statements in one pipeline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from ajedrez.domain.errors import StorageError
from ajedrez.store.eager import Eager, settle

log = logging.getLogger("ajedrez.storage")

# A job is whatever the batch function takes: the batches only carry it.
Job = TypeVar("Job")
RunBatch = Callable[[Sequence[Job]], list[Any]]
# Runs the jobs and calls its second argument, once, from any thread, with each job's
# result or exception when the batch is durable or has failed; raises if it cannot start.
RunBatchThen = Callable[[Sequence[Job], Callable[[list[Any]], None]], None]


# This process's pid, kept by a fork hook: ``alive`` runs for every queued move and read,
# and os.getpid() is a system call each time.
_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


class LoopBatches(Generic[Job]):
    """SQLite: writes queued from an event loop run on that loop, one batch at a time.

    A SQLite batch is local calls taking about a millisecond. On a thread of its own
    (``BatchThread``) it would spend more time waiting for the GIL, held by the loop,
    than writing: each statement hands the GIL back. So the loop runs the batch's
    statements itself, once the turn that queued them has read what there was to read,
    with no hand-over. Only the commit, one call that gives the GIL up for its fsync,
    goes to a thread (``run_batch``'s ``done`` is called from it), and the loop serves
    everyone else meanwhile; what is queued during a commit makes the next batch, which
    starts when the commit ends. Run on the loop, the commit held every connection of
    the loop still for a fifth of its time (``docs/performance.md``).
    """

    def __init__(self, run_batch: RunBatchThen[Job], max_batch: int) -> None:
        self._run_batch = run_batch
        self._max_batch = max(1, max_batch)
        self._pending: list[tuple[Job, asyncio.Future[Any]]] = []
        self._committing = False  # a batch is being committed: the next one waits

    def submit(self, job: Job) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future = Eager(loop)
        if not self._pending and not self._committing:
            loop.call_soon(self._flush)
        self._pending.append((job, future))
        return future

    def _flush(self) -> None:
        if self._committing or not self._pending:
            return
        batch = self._pending[: self._max_batch]
        del self._pending[: self._max_batch]
        loop = batch[0][1].get_loop()
        self._committing = True

        def done(outcomes: list[Any]) -> None:  # from the committing thread
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(self._committed, batch, outcomes)

        try:
            self._run_batch([job for job, _ in batch], done)
        except Exception as e:  # the batch could not start (no lock, no connection)
            self._committed(batch, [e] * len(batch))

    def _committed(self, batch: list[tuple[Job, asyncio.Future[Any]]], outcomes: list[Any]) -> None:
        self._committing = False
        _settle(list(zip((future for _, future in batch), outcomes, strict=True)))
        self._flush()


class _Stop:
    """Queued by :meth:`BatchThread.stop`: the thread ends once it takes it."""


class BatchThread(Generic[Job]):
    def __init__(self, run_batch: RunBatch[Job], max_batch: int, name: str) -> None:
        self._run_batch = run_batch
        self._max_batch = max(1, max_batch)
        self._queue: queue.SimpleQueue[tuple[Job, asyncio.Future[Any]] | _Stop] = (
            queue.SimpleQueue()
        )
        self._pid = _pid  # a thread does not survive a fork
        self._serving = True  # until _serve returns or raises
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self._pid == _pid and self._serving

    def submit(self, job: Job) -> asyncio.Future[Any]:
        """From an event loop: the future of ``job``'s result, set on that loop."""
        future = Eager(asyncio.get_running_loop())
        self._queue.put((job, future))
        return future

    def stop(self) -> None:
        """End the thread after the writes queued so far; waits for it."""
        if not self.alive():
            return
        self._queue.put(_Stop())
        self._thread.join()

    def _serve(self) -> None:
        try:
            self._serve_batches()
        finally:
            self._serving = False

    def _serve_batches(self) -> None:
        while True:
            batch: list[tuple[Job, asyncio.Future[Any]]] = []
            item = self._queue.get()
            stopping = isinstance(item, _Stop)
            if not isinstance(item, _Stop):
                batch.append(item)
            while not stopping and len(batch) < self._max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if isinstance(item, _Stop):
                    stopping = True
                else:
                    batch.append(item)
            if batch:
                self._run(batch)
            if stopping:
                return

    def _run(self, batch: list[tuple[Job, asyncio.Future[Any]]]) -> None:
        try:
            outcomes = _outcomes(self._run_batch, batch)
        except BaseException:
            # Never leave a loop waiting for an answer that cannot come.
            log.exception("the %s thread failed", self._thread.name)
            failed = StorageError(f"the {self._thread.name} thread failed")
            self._answer(batch, [failed] * len(batch))
            raise
        self._answer(batch, outcomes)

    @staticmethod
    def _answer(batch: list[tuple[Job, asyncio.Future[Any]]], outcomes: list[Any]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any]]] = {}
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            by_loop.setdefault(future.get_loop(), []).append((future, outcome))
        for loop, results in by_loop.items():
            # A closed loop raises RuntimeError: nobody is waiting there any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, results)


def _outcomes(run_batch: RunBatch[Job], batch: list[tuple[Job, asyncio.Future[Any]]]) -> list[Any]:
    """Each job's result or exception; every job gets the exception of a batch that
    could not start (no lock, no connection)."""
    try:
        return run_batch([job for job, _ in batch])
    except Exception as e:
        return [e] * len(batch)


def _settle(results: list[tuple[asyncio.Future[Any], Any]]) -> None:
    for future, outcome in results:
        settle(future, outcome)
