"""EVEN's frames: what the event hub's streams send (``service/hub.py``), as ESPOL
writes it (docs/protocol.md section 6)."""

from __future__ import annotations

from typing import Any

from ajedrez.espol.codes import Reply
from ajedrez.espol.framing import encode_reply
from ajedrez.service.hub import Mark, Marker

# The reply that carries each of a stream's marks.
MARK_CODES = {
    Mark.CAUGHT_UP: Reply.V_ALDIA,
    Mark.GAP: Reply.V_HUECO,
    Mark.HEARTBEAT: Reply.V_LATIDO,
}


def stream_frame(item: Any) -> bytes:
    """The frame of what a stream sends (``service/hub.py``): a stored event's row as
    ``600`` (``<cursor>:<ms>:<KIND>[:<fields>]``), or a mark with its cursor."""
    if isinstance(item, Marker):
        return encode_reply(MARK_CODES[item.mark], str(item.cursor))
    data = f"{item.id}:{item.at_ms}:{item.kind}"
    if item.data:
        data = f"{data}:{item.data}"
    return encode_reply(Reply.V_EVENTO, data)
