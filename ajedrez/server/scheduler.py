"""The scheduler: ends games on time and sends clock warnings whether or not anyone is
connected, and removes events older than the retention.

It sleeps until the earliest stored deadline or clock warning (each found by its index)
or ``poll`` seconds, whichever comes first, so one that another process or server stored
is seen within ``poll``; then it ends the games due (``Timekeeping.flag_due``: ``FOR
UPDATE SKIP LOCKED``, each game exactly once however many schedulers run) and sends the
warnings due (``warn_due``, the same way). One runs per server: in its only process, or
in worker 1 of ``--workers``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from ajedrez.domain.errors import StorageError
from ajedrez.domain.timekeeping import Timekeeping
from ajedrez.domain.values import game_name as format_partida
from ajedrez.service.metrics import Metrics

log = logging.getLogger("ajedrez.server")

# After a pass that ended nothing although a game was due: another transaction holds
# that game (a move being stored, another server's scheduler); look again shortly.
BUSY_RETRY_SECONDS = 0.05
PRUNE_EVERY_SECONDS = 3600.0


class Scheduler:
    def __init__(
        self,
        time: Timekeeping,
        poll: float,
        prune: Callable[[int], int] | None = None,
        retention_ms: int = 0,
        metrics: Metrics | None = None,
    ) -> None:
        """``prune``: removes the events older than the time it is given (ms), run at
        start and every hour, when ``retention_ms`` is set."""
        self.metrics = metrics or Metrics()
        self.time = time
        self.poll = poll
        self.prune = prune
        self.retention_ms = retention_ms
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run(), name="scheduler")]
        if self.prune is not None and self.retention_ms > 0:
            self._tasks.append(loop.create_task(self._prune(), name="event-retention"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _prune(self) -> None:
        assert self.prune is not None
        while True:
            before = self.time.clock.now_ms() - self.retention_ms
            try:
                removed = await asyncio.to_thread(self.prune, before)
            except Exception as e:
                log.exception("removing old events failed; trying again in an hour")
                if isinstance(e, StorageError):
                    self.metrics.store_error("scheduler")
            else:
                if removed:
                    log.info("removed %d events older than the retention", removed)
            await asyncio.sleep(PRUNE_EVERY_SECONDS)

    async def _run(self) -> None:
        while True:
            try:
                wait = await asyncio.to_thread(self.pass_once)
            except Exception as e:
                log.exception("the scheduler failed; trying again in %g s", self.poll)
                if isinstance(e, StorageError):
                    self.metrics.store_error("scheduler")
                wait = self.poll
            await asyncio.sleep(wait)

    def pass_once(self) -> float:
        """End the games due now and send the clock warnings due; return the seconds to
        sleep before the next pass."""
        return min(self._flags(), self._warnings())

    def _flags(self) -> float:
        due = self.time.next_deadline()
        if due is not None:
            due = max(due, self.time.rules.flag_after_ms)
        ended = self._when_due(due, self.time.flag_due)
        for game_id, reason in ended or ():
            log.info("%s ended on time (%s)", format_partida(game_id), reason)
        return self._sleep(due, ended)

    def _warnings(self) -> float:
        due = self.time.next_warning()
        sent = self._when_due(due, self.time.warn_due)
        for game_id, player in sent or ():
            log.debug("%s: clock warning to %s", format_partida(game_id), player)
        return self._sleep(due, sent)

    def _when_due(
        self, due: int | None, work: Callable[[], list[tuple[int, str]]]
    ) -> list[tuple[int, str]] | None:
        """``work``'s result if ``due`` has come, else None."""
        if due is None or due > self.time.clock.now_ms():
            return None
        return work()

    def _sleep(self, due: int | None, done: list[tuple[int, str]] | None) -> float:
        """Seconds until ``due``; none after work that did something; a moment after work
        that found the games due held by another transaction."""
        if done is not None:
            return 0.0 if done else BUSY_RETRY_SECONDS
        if due is None:
            return self.poll
        return min(self.poll, max(0, due - self.time.clock.now_ms()) / 1000)
