"""``events.data``: an event's fields in a neutral encoding, a JSON object of the named
fields with their typed values (``{"partida":1,"jugada_n":1,...}``, compact, in the
kind's order; ``domain/event_kinds.py``). No front end's format is stored: each writes
the fields its own way on the way out (ESPOL: ``espol/stream.py``).

Reading never fails on a row: data that is not a JSON object (text an older release
wrote while a newer one had migrated the table, or a row written by hand) comes back
with its fields named ``campo1``, ``campo2``..., split on every ``:``, each a str, so
a stream goes on past it (ESPOL sends that text as it is).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ajedrez.domain.events import StoredEvent, Value

# One encoder, made once: json.dumps with arguments makes one per call.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_decode = json.JSONDecoder().decode


def encode(fields: Mapping[str, Value]) -> str:
    """``fields`` as ``events.data`` holds them."""
    return _encode(fields)


def decode(data: str) -> dict[str, Value]:
    """The fields ``events.data`` holds (see the module's docstring for other text)."""
    try:
        fields = _decode(data)
    except ValueError:
        fields = None
    if type(fields) is dict:
        return fields
    return unnamed(data)


def unnamed(text: str) -> dict[str, Value]:
    """Fields of colon-separated text whose names are not known: ``campo1``..., each a
    str, so that joining the values with ``:`` gives ``text`` back."""
    if not text:
        return {}
    return {f"campo{i}": value for i, value in enumerate(text.split(":"), start=1)}


def stored(row: Any) -> StoredEvent:
    """The event of a row of ``events`` read with its columns (``statements.EVENTS_AFTER``)."""
    return StoredEvent(
        row.id,
        row.at_ms,
        row.kind,
        decode(row.data),
        row.game_id,
        row.user_a,
        row.user_b,
        row.actor_id,
        bool(row.observers),
    )
