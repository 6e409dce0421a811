"""Every word of the `#` protocol (seed 000): its commands, roles, states and results, and
the texts of ``#NOK#texto#``, among them the service's refusals, one text per kind
(the seed's own texts where it gives them: "Nombre duplicado", "Movimiento inválido",
"No es tu turno")."""

from __future__ import annotations

from ajedrez.domain.errors import Refusal
from ajedrez.domain.positions import Standing
from ajedrez.domain.values import WINNER_BLACK, WINNER_DRAW, WINNER_WHITE
from ajedrez.service.frontend import Turnaway

# The client's commands: the seed's, then this server's (docs/dialects.md).
INSCRIBIR = "INSCRIBIR"
MOVIMIENTO = "MOVIMIENTO"
CONSULTARTABLERO = "CONSULTARTABLERO"
RENDIRSE = "RENDIRSE"
OBSERVAR = "OBSERVAR"
PARTIDAS = "PARTIDAS"
HISTORIAL = "HISTORIAL"
RELOJ = "RELOJ"
SALIR = "SALIR"

# The server's messages.
OK = "OK"
NOK = "NOK"
INICIO = "INICIO"
FIN = "FIN"

SPECTATOR = "E"  # the role of a spectator, beside the seed's B and N
NO_CLOCK = "-"  # RELOJ's turn when no clock runs

STANDINGS = {
    Standing.PLAYING: "EN_JUEGO",
    Standing.CHECK: "JAQUE",
    Standing.CHECKMATE: "JAQUE_MATE",
    Standing.DRAWN: "TABLAS",
}
RESULTS = {WINNER_WHITE: "GANADOR_B", WINNER_BLACK: "GANADOR_N", WINNER_DRAW: "TABLAS"}
NO_RESULT = "ANULADA"  # a game ended on time before the side out of time ever moved

# The session's own refusals.
UNKNOWN_COMMAND = "Mensaje desconocido"
UNREADABLE = "Mensaje inválido"
FIELD_COUNT = "Número de campos incorrecto"
TOO_LONG = "Mensaje demasiado largo"
NOT_REGISTERED = "No estás inscrito"
ALREADY_REGISTERED = "Ya estás inscrito"
OTHER_NAME = "Esta conexión ya tiene otro nombre"
WRONG_CODE = "Código inválido"
NO_GAME = "No estás en una partida"
NOT_STARTED = "La partida no ha empezado"
INVALID_NAME = "Nombre inválido"
INVALID_MOVE = "Movimiento inválido"
INVALID_GAME = "Partida inválida"
NOT_YOUR_TURN = "No es tu turno"
SERVER_ERROR = "Error del servidor; inténtalo más tarde"
NAME_LOST = "Tu nombre ha pasado a otra conexión"
IDLE = "Mesa cerrada por inactividad"

TURNAWAYS = {
    Turnaway.BUSY: "Servidor ocupado; inténtalo más tarde",
    Turnaway.ADDRESS_LIMIT: "Demasiadas conexiones desde tu dirección",
    Turnaway.LOGIN_TIMEOUT: "Tiempo para inscribirse agotado",
}

REFUSALS: dict[Refusal, str] = {
    Refusal.INVALID: UNREADABLE,
    Refusal.NOT_SELF: WRONG_CODE,
    Refusal.SIGNUP_RATE: "Demasiados invitados desde tu dirección",
    Refusal.SIGNUPS_FULL: "Demasiados invitados",
    Refusal.SESSION_LIMIT: "Demasiadas sesiones de esa cuenta",
    Refusal.NO_SUCH_USER: "Usuario desconocido",
    Refusal.WRONG_PASSWORD: "Contraseña incorrecta",
    Refusal.NAME_TAKEN: "Nombre duplicado",
    Refusal.SELF_CHALLENGE: "No puedes jugar contra ti mismo",
    Refusal.CHALLENGE_EXISTS: "Ya hay un desafío abierto",
    Refusal.GAME_EXISTS: "Ya tienes una partida con ese jugador",
    Refusal.NO_SUCH_CHALLENGE: "No hay tal desafío",
    Refusal.TIME_CONTROL_DIFFERS: "Otro control de tiempo",
    Refusal.NO_SUCH_GAME: "Partida inexistente",
    Refusal.NOT_A_PLAYER: "No juegas ni observas esa partida",
    Refusal.NOT_OPPONENT: "No es tu rival",
    Refusal.GAME_OVER: "Partida terminada",
    Refusal.NOT_YOUR_TURN: NOT_YOUR_TURN,
    # The game moved on since the position the move was read in: not the player's turn.
    Refusal.WRONG_PLY: NOT_YOUR_TURN,
    Refusal.MOVE_MISMATCH: INVALID_MOVE,
    Refusal.ILLEGAL_MOVE: INVALID_MOVE,
    Refusal.NO_MORE_MOVES: "No hay más jugadas",
    Refusal.DRAW_OFFERED: "Ya hay una oferta de tablas",
    Refusal.NO_DRAW_OFFER: "No hay oferta de tablas",
    Refusal.NO_CLAIM: "No hay tablas que reclamar",
    Refusal.LEAVE_REFUSED: "Licencia no permitida",
    Refusal.OBSERVE_REFUSED: "No puedes observar esa partida",
    Refusal.CHAT_RATE: "Demasiados mensajes",
    Refusal.SEEK_EXISTS: ALREADY_REGISTERED,
    Refusal.SEEK_LIMIT: "Demasiadas búsquedas abiertas",
    Refusal.NO_SUCH_SEEK: NO_GAME,
    Refusal.TAKEBACK_REFUSED: "No se puede deshacer",
    Refusal.EVENT_RATE: "Demasiadas peticiones",
    Refusal.NOT_ACCEPTED: "No aceptado",
    Refusal.NOT_BLOCKED: "No bloqueado",
    Refusal.BLOCKS_FULL: "Demasiados bloqueos",
    # The seed protocols have no tokens; a front end never meets these.
    Refusal.WRONG_TOKEN: "Ficha incorrecta",
    Refusal.NO_SUCH_TOKEN: "No existe la ficha",
    Refusal.TOKENS_FULL: "Demasiadas fichas",
}
