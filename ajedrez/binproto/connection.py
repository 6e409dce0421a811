"""One connection of the binary protocol (seed 004) on the event loop: bytes to packets
(``packets.py``), packets and the player's events to the session (``session.py``), and
the session's steps carried out against the service (``service/tables.py``, which every
seed protocol's connection shares).

The protocol has no packet for an error of the connection itself: a type the server
does not know, a turnaway, an idle table each close the connection, logged, with
nothing said.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import cast

from ajedrez.binproto import codes as c
from ajedrez.binproto import packets as p
from ajedrez.binproto import session as s
from ajedrez.domain.timecontrol import control_name, parse_control
from ajedrez.service.frontend import Frontend, Host, Turnaway
from ajedrez.service.tables import Close, Send, TableConnection

log = logging.getLogger("ajedrez.server")

# The first bytes of a refusal, by the packet type that carries it.
_REFUSED = (b"NAME", b"JOIN\x00", b"MOVE", b"DENY")


def frontend(control: str) -> Frontend:
    """The front end of a listener whose tables have the time control ``control``."""
    name = control_name(parse_control(control))
    return lambda host: BinaryConnection(host, name)


class BinaryConnection(TableConnection):
    label = "binary"
    session: s.Session

    def __init__(self, host: Host, control: str) -> None:
        super().__init__(host, control, s.Session())
        self.reader = p.PacketReader()

    def words(self, why: Turnaway | str) -> bytes:
        return b""

    def received(self, data: bytes) -> None:
        for packet in self.reader.feed(data):
            self.put(packet)
            if isinstance(packet, p.Unknown):
                self.transport.pause_reading()  # type: ignore[union-attr]

    async def handle(self, item: object) -> None:
        if isinstance(item, p.Unknown):
            log.info("%s sent an unknown packet type %r; closing", self.who(), item.head)
            await self.run([Close()])
            return
        steps = self.session.receive(cast(p.Packet, item))  # the reader's, queued
        first = steps[0] if steps else None
        if isinstance(first, Send) and first.lines[0].startswith(_REFUSED):
            answer = first.lines[0]
            if answer != p.name_answer(c.ACCEPTED):
                said = f"{answer[:4].decode()} {answer[4]}" if len(answer) > 4 else "DENY"
                log.info("%s: %s refused: %s", self.who(), type(item).__name__, said)
        await self.run(steps)

    async def carry_out_more(self, step: object) -> Sequence[object]:
        me = self.player
        assert me is not None  # the session asks nothing else before it has a name
        if isinstance(step, s.WatchNewest):
            return self.session.games(await me.games_in_play())
        if isinstance(step, s.AskTakeback):
            await me.ask_takeback(step.game_id, step.opponent)
            return []
        if isinstance(step, s.AnswerTakeback):
            await me.answer_takeback(step.game_id, step.accept, step.opponent)
            return []
        assert isinstance(step, s.Say)
        await me.say(step.game_id, step.text)
        return []
