"""One connection of the `#` protocol on the event loop: bytes to messages
(``wire.py``), messages and the player's events to the session (``session.py``), and the
session's steps carried out against the service (``service/tables.py``, which every
seed protocol's connection shares).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from ajedrez.domain.timecontrol import control_name, parse_control
from ajedrez.hashproto import session as s
from ajedrez.hashproto import texts as t
from ajedrez.hashproto.wire import MessageBuffer, Overlong, Unreadable, encode, parse
from ajedrez.service.frontend import Frontend, Host, Turnaway
from ajedrez.service.tables import Close, Send, TableConnection

log = logging.getLogger("ajedrez.server")

FLUSH_DELAY = 0.2  # seconds after a final '#' before a message with no terminator is taken
_LAST_WORDS = {"idle": t.IDLE, "name_lost": t.NAME_LOST}


def frontend(control: str) -> Frontend:
    """The front end of a listener whose tables have the time control ``control``."""
    name = control_name(parse_control(control))
    return lambda host: HashConnection(host, name)


class HashConnection(TableConnection):
    label = "hash"
    session: s.Session

    def __init__(self, host: Host, control: str) -> None:
        super().__init__(host, control, s.Session())
        self.buffer = MessageBuffer()
        self.flush_timer: asyncio.TimerHandle | None = None

    def words(self, why: Turnaway | str) -> bytes:
        text = t.TURNAWAYS[why] if isinstance(why, Turnaway) else _LAST_WORDS[why]
        return encode(t.NOK, text)

    def received(self, data: bytes) -> None:
        for item in self.buffer.feed(data):
            self.put(item)
            if isinstance(item, Overlong):
                self.transport.pause_reading()  # type: ignore[union-attr]
                break
        if self.flush_timer is not None:
            self.flush_timer.cancel()
            self.flush_timer = None
        if self.buffer.complete:
            self.flush_timer = self.loop.call_later(FLUSH_DELAY, self.guarded, self._flush)

    def at_eof(self) -> None:
        for message in self.buffer.flush():  # its last message needs no pause now
            self.put(message)

    def stopped(self) -> None:
        if self.flush_timer is not None:
            self.flush_timer.cancel()

    async def handle(self, item: object) -> None:
        if isinstance(item, Overlong):
            log.info(
                "%s sent a message over %d bytes; closing", self.who(), self.buffer.max_message
            )
            await self.run([*s.nok(t.TOO_LONG), Close()])
            return
        assert isinstance(item, bytes)
        try:
            message = parse(item)
        except Unreadable as e:
            # Not the bytes themselves: they may hold a password.
            log.info("%s sent an unreadable message (%s)", self.who(), e)
            await self.run(s.nok(t.UNREADABLE))
            return
        steps = self.session.receive(message)
        first = steps[0] if steps else None
        if isinstance(first, Send) and first.lines[0].startswith(b"#NOK#"):
            said = first.lines[0].decode().strip()
            log.info("%s: %s refused: %s", self.who(), message.command, said)
        await self.run(steps)

    async def carry_out_more(self, step: object) -> Sequence[object]:
        if isinstance(step, s.ListGames):
            found = await self.service.run("games_in_play", self.service.games.live.games_in_play)
            return self.session.games(found)
        me = self.player
        assert me is not None  # the session asks nothing else before it has a name
        if isinstance(step, s.History):
            return self.session.history(await me.moves(step.game_id))
        assert isinstance(step, s.Clocks)
        return self.session.clocks(await me.clocks(step.game_id))

    def _flush(self) -> None:
        self.flush_timer = None
        for message in self.buffer.flush():
            self.put(message)
        self.flow()
