"""The kinds of event and each kind's fields, in order (docs/protocol.md section 6).

Kinds named in seed 002 keep that name (INCORPORACION, INICIO_PARTIDA, FIN_DE_TURNO,
ABANDONO, FINALIZACION). Every front end names an event's fields as :data:`FIELDS` does.
"""

from __future__ import annotations

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

# Each kind's fields after the kind, in order (docs/protocol.md section 6).
FIELDS: dict[str, tuple[str, ...]] = {
    DESAFIO: ("retador", "retado", "control", "privada"),
    DESAFIO_RETIRADO: ("retador", "retado"),
    DESAFIO_RECHAZADO: ("retador", "retado"),
    INICIO_PARTIDA: ("partida", "blancas", "negras", "control", "turno", "privada"),
    FIN_DE_TURNO: ("partida", "jugada_n", "jugada", "promocion", "san", "turno", "fen"),
    TABLAS: ("partida", "usuario"),
    TABLAS_RECHAZADAS: ("partida", "usuario"),
    TABLAS_ACEPTADAS: ("partida", "usuario"),
    ABANDONO: ("partida", "usuario", "observador"),
    INCORPORACION: ("partida", "usuario", "observador"),
    FINALIZACION: ("partida", "ganador", "motivo"),
    CHAT: ("partida", "usuario", "texto"),
    SUSURRO: ("partida", "usuario", "texto"),
    RETROCESO: ("partida", "usuario"),
    RETROCESO_ACEPTADO: ("partida", "usuario", "jugada_n", "fen"),
    RETROCESO_RECHAZADO: ("partida", "usuario"),
    AVISO_RELOJ: ("partida", "usuario", "restante", "limite"),
    LICENCIA: ("usuario", "hasta"),
    FIN_LICENCIA: ("usuario",),
}
KINDS = frozenset(FIELDS)
