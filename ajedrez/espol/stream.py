"""EVEN's frames: what the event hub's streams send (``service/hub.py``), as ESPOL
writes it (docs/protocol.md section 6).

An event comes typed and by name (``domain/events.py``); ESPOL writes its fields in the
order of the kind's :data:`~ajedrez.domain.event_kinds.FIELDS`, joined by ``:``: a game
as its partida (``P0000001``), a flag as ``1`` or ``0``, a number in decimal, a name or
a text as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ajedrez.domain import event_kinds as ev
from ajedrez.domain.events import StoredEvent, Value
from ajedrez.espol.codes import Reply
from ajedrez.espol.fields import format_partida
from ajedrez.espol.framing import encode_reply
from ajedrez.service.hub import Mark, Marker

# The reply that carries each of a stream's marks.
MARK_CODES = {
    Mark.CAUGHT_UP: Reply.V_ALDIA,
    Mark.GAP: Reply.V_HUECO,
    Mark.HEARTBEAT: Reply.V_LATIDO,
}


def _flag(value: Value) -> str:
    return "1" if value else "0"


def _as_is(value: Value) -> str:
    """A value of a field whose kind is unknown (a newer release's) or unnamed."""
    if type(value) is bool:
        return _flag(value)
    return str(value)


_FORMAT: dict[str, Callable[[Value], str]] = {
    ev.GAME: format_partida,  # type: ignore[dict-item]  # an int, by the schema
    ev.USER: str,
    ev.FLAG: _flag,
    ev.NUMBER: str,
    ev.TEXT: str,
}
# Each kind's fields in ESPOL's order, each with how it is written.
_WRITERS: dict[str, tuple[tuple[str, Callable[[Value], str]], ...]] = {
    kind: tuple((name, _FORMAT[what]) for name, what in fields)
    for kind, fields in ev.SCHEMA.items()
}


def event_data(kind: str, fields: Mapping[str, Value]) -> str:
    """The fields of an event of ``kind`` as ESPOL writes them after the kind. Fields
    that are not the kind's (a kind this release does not know; an event stored as
    text, ``store/event_data.py``) are written in the order they come."""
    writers = _WRITERS.get(kind)
    if writers is not None:
        try:
            return ":".join([write(fields[name]) for name, write in writers])
        except KeyError:
            pass
    return ":".join([_as_is(value) for value in fields.values()])


# The last event framed and its frame: the hub hands one event to every stream it goes
# to, one after another, so an event sent to 1,000 observers is encoded once.
_last: tuple[object, bytes] = (None, b"")


def stream_frame(item: StoredEvent | Marker) -> bytes:
    """The frame of what a stream sends (``service/hub.py``): a stored event as ``600``
    (``<cursor>:<ms>:<KIND>[:<fields>]``), or a mark with its cursor."""
    global _last
    if isinstance(item, Marker):
        return encode_reply(MARK_CODES[item.mark], str(item.cursor))
    last = _last
    if last[0] is item:
        return last[1]
    data = f"{item.id}:{item.at_ms}:{item.kind}"
    fields = event_data(item.kind, item.fields)
    if fields:
        data = f"{data}:{fields}"
    frame = encode_reply(Reply.V_EVENTO, data)
    _last = (item, frame)
    return frame
