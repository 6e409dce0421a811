"""The scheduler: ends games on time whether or not anyone is connected.

It sleeps until the earliest stored deadline (found by its index) or ``poll`` seconds,
whichever comes first, so a deadline another process or server stored is seen within
``poll``; then it ends the games due (``Timekeeping.flag_due``: ``FOR UPDATE SKIP
LOCKED``, each game exactly once however many schedulers run). One runs per server: in
its only process, or in worker 1 of ``--workers``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from ajedrez.domain.timekeeping import Timekeeping
from ajedrez.protocol.fields import format_partida

log = logging.getLogger("ajedrez.server")

# After a pass that ended nothing although a game was due: another transaction holds
# that game (a move being stored, another server's scheduler); look again shortly.
BUSY_RETRY_SECONDS = 0.05


class Scheduler:
    def __init__(self, time: Timekeeping, poll: float) -> None:
        self.time = time
        self.poll = poll
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="scheduler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                wait = await asyncio.to_thread(self.pass_once)
            except Exception:
                log.exception("the scheduler failed; trying again in %g s", self.poll)
                wait = self.poll
            await asyncio.sleep(wait)

    def pass_once(self) -> float:
        """End the games due now; return the seconds to sleep before the next pass."""
        due = self.time.next_deadline()
        now = self.time.clock.now_ms()
        if due is None:
            return self.poll
        start = max(due, self.time.rules.flag_after_ms)
        if start > now:
            return min(self.poll, (start - now) / 1000)
        ended = self.time.flag_due()
        for game_id, reason in ended:
            log.info("%s ended on time (%s)", format_partida(game_id), reason)
        return 0.0 if ended else BUSY_RETRY_SECONDS
