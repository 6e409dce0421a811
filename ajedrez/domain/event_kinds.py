"""The kinds of event and each kind's fields, in order, by name and type (docs/protocol.md
section 6).

Kinds named in seed 002 keep that name (INCORPORACION, INICIO_PARTIDA, FIN_DE_TURNO,
ABANDONO, FINALIZACION). An event carries its fields by name with typed values
(:data:`SCHEMA`); every front end names them as :data:`FIELDS` does and writes them in
its own way (ESPOL: ``espol/stream.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

# Challenges.
DESAFIO = "DESAFIO"  # a challenge was made
DESAFIO_RETIRADO = "DESAFIO_RETIRADO"  # its maker withdrew it (or left the service)
DESAFIO_RECHAZADO = "DESAFIO_RECHAZADO"  # the challenged declined it (or left)
INICIO_PARTIDA = "INICIO_PARTIDA"  # a challenge was accepted: the game started
# Games.
FIN_DE_TURNO = "FIN_DE_TURNO"  # a move was played; the turn passed
TABLAS = "TABLAS"  # a draw was offered
TABLAS_RECHAZADAS = "TABLAS_RECHAZADAS"  # the offer was declined
TABLAS_ACEPTADAS = "TABLAS_ACEPTADAS"  # the offer was accepted (FINALIZACION follows)
ABANDONO = "ABANDONO"  # a player resigned or left the service; an observer left
INCORPORACION = "INCORPORACION"  # an observer joined
FINALIZACION = "FINALIZACION"  # the game ended
# Chat, takeback, clocks.
CHAT = "CHAT"  # a player's message (to the players)
SUSURRO = "SUSURRO"  # an observer's message (to the observers)
RETROCESO = "RETROCESO"  # a player asked to take back their last move
RETROCESO_ACEPTADO = "RETROCESO_ACEPTADO"  # the move was taken back
RETROCESO_RECHAZADO = "RETROCESO_RECHAZADO"  # the request was declined
AVISO_RELOJ = "AVISO_RELOJ"  # the clock of the player to move is running low
# Players.
LICENCIA = "LICENCIA"  # the opponent's leave started
FIN_LICENCIA = "FIN_LICENCIA"  # the opponent's leave ended

# What a field holds: its value's type in the event (``Event.fields``), and what it is.
GAME = "game"  # int: a game's id (ESPOL writes it as a partida, P0000001)
USER = "user"  # str: a user's name
FLAG = "flag"  # bool
NUMBER = "number"  # int: a ply, a code, a time or a time left (ms)
TEXT = "text"  # str: a control, a move, SAN, a FEN, an end reason, a chat message
TYPES: dict[str, type] = {GAME: int, USER: str, FLAG: bool, NUMBER: int, TEXT: str}

# Each kind's fields, in order (docs/protocol.md section 6): the one definition of an
# event's fields, by name and what each holds. A text that may hold ``:`` (a chat
# message's) is always the last.
SCHEMA: dict[str, tuple[tuple[str, str], ...]] = {
    DESAFIO: (("retador", USER), ("retado", USER), ("control", TEXT), ("privada", FLAG)),
    DESAFIO_RETIRADO: (("retador", USER), ("retado", USER)),
    DESAFIO_RECHAZADO: (("retador", USER), ("retado", USER)),
    INICIO_PARTIDA: (
        ("partida", GAME),
        ("blancas", USER),
        ("negras", USER),
        ("control", TEXT),
        ("turno", USER),
        ("privada", FLAG),
    ),
    FIN_DE_TURNO: (
        ("partida", GAME),
        ("jugada_n", NUMBER),
        ("jugada", TEXT),
        ("promocion", NUMBER),
        ("san", TEXT),
        ("turno", USER),
        ("fen", TEXT),
    ),
    TABLAS: (("partida", GAME), ("usuario", USER)),
    TABLAS_RECHAZADAS: (("partida", GAME), ("usuario", USER)),
    TABLAS_ACEPTADAS: (("partida", GAME), ("usuario", USER)),
    ABANDONO: (("partida", GAME), ("usuario", USER), ("observador", FLAG)),
    INCORPORACION: (("partida", GAME), ("usuario", USER), ("observador", FLAG)),
    FINALIZACION: (("partida", GAME), ("ganador", NUMBER), ("motivo", TEXT)),
    CHAT: (("partida", GAME), ("usuario", USER), ("texto", TEXT)),
    SUSURRO: (("partida", GAME), ("usuario", USER), ("texto", TEXT)),
    RETROCESO: (("partida", GAME), ("usuario", USER)),
    RETROCESO_ACEPTADO: (
        ("partida", GAME),
        ("usuario", USER),
        ("jugada_n", NUMBER),
        ("fen", TEXT),
    ),
    RETROCESO_RECHAZADO: (("partida", GAME), ("usuario", USER)),
    AVISO_RELOJ: (
        ("partida", GAME),
        ("usuario", USER),
        ("restante", NUMBER),
        ("limite", NUMBER),
    ),
    LICENCIA: (("usuario", USER), ("hasta", NUMBER)),
    FIN_LICENCIA: (("usuario", USER),),
}
# Each kind's field names, in order.
FIELDS: dict[str, tuple[str, ...]] = {
    kind: tuple(name for name, _what in fields) for kind, fields in SCHEMA.items()
}
KINDS = frozenset(FIELDS)


def conforms(kind: str, fields: Mapping[str, object]) -> bool:
    """Has ``fields`` the names of ``kind``'s, in order, each value of its type? (A bool
    is no number, nor a number a bool.)"""
    schema = SCHEMA.get(kind)
    if schema is None or tuple(fields) != FIELDS[kind]:
        return False
    return all(type(fields[name]) is TYPES[what] for name, what in schema)
