"""events' data in a neutral encoding: a JSON object of the named fields, typed

Until now ``events.data`` held an event's fields as ESPOL's stream sends them, joined by
``:`` (``P0000001:1:e2e4:0:e4:bob:<fen>``); from now on it holds them by name with typed
values (``{"partida":1,"jugada_n":1,"jugada":"e2e4",...}``, ``store/event_data.py``),
and each front end writes them its own way. The upgrade rewrites every stored event,
the downgrade writes the text back; both in batches of ids, so that an operator's many
events (30 days of them by default) are never all in memory.

The kinds and their fields are copied here as they stand at this revision: the
migration must do the same thing whatever later releases change. A row this table
cannot read as its kind (a kind it does not know, a wrong count of fields, a value that
would not be written back exactly as it is) keeps its text as fields named ``campo1``,
``campo2``..., split on every ``:``, each a str, which the downgrade joins back: so a
downgrade gives back every row exactly as the upgrade found it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 07:00:00
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 5000  # events read, and rewritten, at once

# What a field holds, as text (read) and as a value (written back).
_GAME, _USER, _FLAG, _NUMBER, _TEXT = "game", "user", "flag", "number", "text"

# Each kind's fields at this revision, in order (docs/protocol.md section 6).
_KINDS: dict[str, tuple[tuple[str, str], ...]] = {
    "DESAFIO": (("retador", _USER), ("retado", _USER), ("control", _TEXT), ("privada", _FLAG)),
    "DESAFIO_RETIRADO": (("retador", _USER), ("retado", _USER)),
    "DESAFIO_RECHAZADO": (("retador", _USER), ("retado", _USER)),
    "INICIO_PARTIDA": (
        ("partida", _GAME),
        ("blancas", _USER),
        ("negras", _USER),
        ("control", _TEXT),
        ("turno", _USER),
        ("privada", _FLAG),
    ),
    "FIN_DE_TURNO": (
        ("partida", _GAME),
        ("jugada_n", _NUMBER),
        ("jugada", _TEXT),
        ("promocion", _NUMBER),
        ("san", _TEXT),
        ("turno", _USER),
        ("fen", _TEXT),
    ),
    "TABLAS": (("partida", _GAME), ("usuario", _USER)),
    "TABLAS_RECHAZADAS": (("partida", _GAME), ("usuario", _USER)),
    "TABLAS_ACEPTADAS": (("partida", _GAME), ("usuario", _USER)),
    "ABANDONO": (("partida", _GAME), ("usuario", _USER), ("observador", _FLAG)),
    "INCORPORACION": (("partida", _GAME), ("usuario", _USER), ("observador", _FLAG)),
    "FINALIZACION": (("partida", _GAME), ("ganador", _NUMBER), ("motivo", _TEXT)),
    "CHAT": (("partida", _GAME), ("usuario", _USER), ("texto", _TEXT)),
    "SUSURRO": (("partida", _GAME), ("usuario", _USER), ("texto", _TEXT)),
    "RETROCESO": (("partida", _GAME), ("usuario", _USER)),
    "RETROCESO_ACEPTADO": (
        ("partida", _GAME),
        ("usuario", _USER),
        ("jugada_n", _NUMBER),
        ("fen", _TEXT),
    ),
    "RETROCESO_RECHAZADO": (("partida", _GAME), ("usuario", _USER)),
    "AVISO_RELOJ": (
        ("partida", _GAME),
        ("usuario", _USER),
        ("restante", _NUMBER),
        ("limite", _NUMBER),
    ),
    "LICENCIA": (("usuario", _USER), ("hasta", _NUMBER)),
    "FIN_LICENCIA": (("usuario", _USER),),
}


def _game(text: str) -> int:
    if len(text) != 8 or text[0] != "P" or not text[1:].isdigit():
        raise ValueError(text)
    return int(text[1:])


def _flag(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError(text)
    return text == "1"


_READ: dict[str, Callable[[str], Any]] = {
    _GAME: _game,
    _USER: str,
    _FLAG: _flag,
    _NUMBER: int,
    _TEXT: str,
}
_WRITE: dict[str, Callable[[Any], str]] = {
    _GAME: lambda v: f"P{v:07d}",
    _USER: str,
    _FLAG: lambda v: "1" if v else "0",
    _NUMBER: str,
    _TEXT: str,
}
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _unnamed(text: str) -> dict[str, Any]:
    if not text:
        return {}
    return {f"campo{i}": value for i, value in enumerate(text.split(":"), start=1)}


def _to_fields(kind: str, text: str) -> dict[str, Any]:
    """The fields of ``text``, the stream's text of an event of ``kind``, by name."""
    schema = _KINDS.get(kind)
    if schema is None or not text:
        return _unnamed(text)
    parts = text.split(":", len(schema) - 1)
    if len(parts) != len(schema):
        return _unnamed(text)
    try:
        fields = {n: _READ[what](part) for (n, what), part in zip(schema, parts, strict=True)}
    except ValueError:
        return _unnamed(text)
    if _to_text(kind, fields) != text:  # "007" read as 7 would be written back as "7"
        return _unnamed(text)
    return fields


def _to_text(kind: str, fields: dict[str, Any]) -> str:
    """The stream's text of an event of ``kind`` whose fields are ``fields``."""
    schema = _KINDS.get(kind)
    if schema is not None and [name for name, _what in schema] == list(fields):
        return ":".join(_WRITE[what](fields[name]) for name, what in schema)
    return ":".join(("1" if v else "0") if type(v) is bool else str(v) for v in fields.values())


def _from_data(kind: str, data: str) -> str:
    """The stream's text of an event whose data is ``data``; data that is no JSON object
    (written by a release before this one while this one ran) is left as it is."""
    try:
        fields = json.loads(data)
    except ValueError:
        return data
    return _to_text(kind, fields) if type(fields) is dict else data


def _rewrite(convert: Callable[[str, str], str]) -> None:
    """Every event's data through ``convert(kind, data)``, in batches of ids."""
    conn = op.get_bind()
    read = sa.text("SELECT id, kind, data FROM events WHERE id > :after ORDER BY id LIMIT :n")
    write = sa.text("UPDATE events SET data = :data WHERE id = :id")
    after = -1
    while True:
        rows = conn.execute(read, {"after": after, "n": BATCH}).all()
        if not rows:
            return
        changed = [
            {"id": row.id, "data": new}
            for row in rows
            if (new := convert(row.kind, row.data)) != row.data
        ]
        if changed:
            conn.execute(write, changed)
        after = rows[-1].id


def upgrade() -> None:
    _rewrite(lambda kind, text: _encode(_to_fields(kind, text)))


def downgrade() -> None:
    _rewrite(_from_data)
