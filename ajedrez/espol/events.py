"""The event stream's vocabulary (docs/protocol.md section 6): event kinds, their fields,
and the record an event travels in.

An event is one reply of class 6xx, ``600 V_EVENTO``, whose data is
``<cursor>:<ms>:<KIND>[:<field>...]``: the cursor to resume from after it, when it
happened (ms since 1970), its kind, and the kind's fields in the order of
:data:`FIELDS`. The last field of a kind may hold ``:`` (a chat message's text), so a
reader splits off only as many fields as the kind has. Kinds named in seed 002 keep
that name (INCORPORACION, INICIO_PARTIDA, FIN_DE_TURNO, ABANDONO, FINALIZACION).
"""

from __future__ import annotations

from dataclasses import dataclass

from ajedrez.domain.event_kinds import *  # noqa: F403 (the kinds, defined in the domain)
from ajedrez.domain.event_kinds import FIELDS
from ajedrez.espol.records import MalformedRecord


@dataclass(frozen=True)
class EventRecord:
    """One event as the stream sends it."""

    cursor: int
    at_ms: int
    kind: str
    fields: tuple[str, ...]

    def encode(self) -> str:
        return ":".join((str(self.cursor), str(self.at_ms), self.kind, *self.fields))

    def get(self, name: str) -> str:
        """The field called ``name`` in :data:`FIELDS` (KeyError: this kind has none)."""
        names = FIELDS.get(self.kind, ())
        if name not in names:
            raise KeyError(f"{self.kind} has no field {name!r}")
        return self.fields[names.index(name)]

    def named(self) -> dict[str, str]:
        """The fields by name; an unknown kind's fields as ``campo1``, ``campo2``..."""
        names = FIELDS.get(self.kind) or tuple(f"campo{i + 1}" for i in range(len(self.fields)))
        return dict(zip(names, self.fields, strict=False))


def parse_event(record: str) -> EventRecord:
    """An event's data. A kind this module does not know is kept with its fields split
    on every ``:``, so a client reads events of a newer server."""
    head = record.split(":", 3)
    if len(head) < 3 or not head[0].isdigit() or not head[1].isdigit() or not head[2]:
        raise MalformedRecord(f"event: {record!r} is not <cursor>:<ms>:<KIND>[:...]")
    cursor, at_ms, kind = int(head[0]), int(head[1]), head[2]
    rest = head[3] if len(head) == 4 else None
    names = FIELDS.get(kind)
    if rest is None:
        fields: tuple[str, ...] = ()
    elif names is None:
        fields = tuple(rest.split(":"))
    else:
        fields = tuple(rest.split(":", len(names) - 1))
    if names is not None and len(fields) != len(names):
        raise MalformedRecord(f"event {kind}: {len(fields)} field(s), not {len(names)}: {record!r}")
    return EventRecord(cursor, at_ms, kind, fields)
