"""Events in words, one line each, and as environment variables for ``watch --exec``.

The vocabulary (kinds, their fields) is :mod:`ajedrez.espol.events`, which the server
shares; this module only words it for a person and names it for a script.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import chess

from ajedrez.client.clocks import control_text, describe_control, span, when
from ajedrez.client.output import numbered
from ajedrez.domain.values import WHITE, color_of_ply
from ajedrez.espol import events as ev
from ajedrez.espol.events import FIELDS, EventRecord

# (white, black) of a game, when this client knows them.
PlayersOf = Callable[[str], tuple[str, str] | None]

ENV_PREFIX = "AJEDREZ_"
# The variables every event sets, besides one per field (AJEDREZ_<FIELD>).
ENV_EVENT = "AJEDREZ_EVENT"
ENV_CURSOR = "AJEDREZ_CURSOR"
ENV_AT_MS = "AJEDREZ_AT_MS"
ENV_SUMMARY = "AJEDREZ_SUMMARY"
# Never handed to CMD, whatever the environment watch was started with.
ENV_SECRET = "AJEDREZ_PASSWORD"


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


# Every name an event may set: an inherited one (a watch started by another watch's CMD)
# would otherwise pass for a field of this event that the kind does not have.
_EVENT_NAMES = frozenset(
    {ENV_EVENT, ENV_CURSOR, ENV_AT_MS, ENV_SUMMARY}
    | {env_name(f) for names in FIELDS.values() for f in names}
)


def event_environment(
    e: EventRecord, summary: str, base: Mapping[str, str], own: Mapping[str, str]
) -> dict[str, str]:
    """The environment of ``--exec``'s CMD for event ``e``: ``base`` without the
    password nor any other event's variables, then ``own`` (the user, server and data
    directory in use), then AJEDREZ_EVENT, AJEDREZ_CURSOR, AJEDREZ_AT_MS,
    AJEDREZ_SUMMARY and one AJEDREZ_<FIELD> per field of the kind (an unknown kind's
    fields as AJEDREZ_CAMPO1, AJEDREZ_CAMPO2...)."""
    env = {
        k: v
        for k, v in base.items()
        if k != ENV_SECRET
        and k not in _EVENT_NAMES
        and not (k.startswith(env_name("campo")) and k[len(env_name("campo")) :].isdigit())
    }
    env.update(own)
    env[ENV_EVENT] = e.kind
    env[ENV_CURSOR] = str(e.cursor)
    env[ENV_AT_MS] = str(e.at_ms)
    env[ENV_SUMMARY] = summary
    for name, value in e.named().items():
        env[env_name(name)] = value
    return env


def event_line(e: EventRecord, me: str, players: PlayersOf) -> str:
    """``2026-03-05 14:03:07 FIN_DE_TURNO P0000001: bob played 1. e4 (e2e4); your move``:
    when (this machine's time zone), the kind, and what happened in words."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.at_ms / 1000))
    return f"{stamp} {e.kind} {describe(e, me, players)}"


def describe(e: EventRecord, me: str, players: PlayersOf) -> str:
    """What happened, from ``me``'s side: "you" where ``me`` is meant, and the command
    that answers where there is one."""
    if e.kind not in FIELDS:
        return ", ".join(e.fields) if e.fields else "(a kind this client does not know)"
    f = e.named()

    def who(name: str) -> str:
        return "you" if name == me else name

    def whose(name: str) -> str:
        return "your" if name == me else f"{name}'s"

    gid = f.get("partida", "")
    kind = e.kind
    if kind == ev.DESAFIO:
        made, to = f["retador"], f["retado"]
        terms = _terms(f["control"]) + (", a private game" if f["privada"] == "1" else "")
        if to == me:
            return (
                f"{made} challenged you, {terms}: `ajedrez accept {made} --color B|N` "
                f"or `ajedrez decline {made}`"
            )
        return f"{who(made)} challenged {who(to)}, {terms}"
    if kind == ev.DESAFIO_RETIRADO:
        made, to = f["retador"], f["retado"]
        return f"{who(made)} withdrew {'your' if made == me else 'their'} challenge to {who(to)}"
    if kind == ev.DESAFIO_RECHAZADO:
        made, to = f["retador"], f["retado"]
        return f"{who(to)} declined {whose(made)} challenge"
    if kind == ev.INICIO_PARTIDA:
        white, black, turn = f["blancas"], f["negras"], f["turno"]
        terms = _terms(f["control"]) + (", private" if f["privada"] == "1" else "")
        return f"{gid}: game started, {white} (white) vs {black} (black), {terms}; " + _to_move(
            gid, turn, me
        )
    if kind == ev.FIN_DE_TURNO:
        ply, turn = int(f["jugada_n"]), f["turno"]
        known = players(gid)
        if known is not None and turn in known:
            mover = who(known[1] if turn == known[0] else known[0])
        else:
            mover = "white" if color_of_ply(ply) == WHITE else "black"
        played = f"{gid}: {mover} played {numbered(ply, f['san'])} ({f['jugada']}); "
        ended = _ended_by(f["fen"], known, me)
        return played + (ended if ended is not None else _to_move(gid, turn, me))
    if kind == ev.TABLAS:
        user = f["usuario"]
        if user == me:
            return f"{gid}: you offered a draw"
        known = players(gid)
        if known is not None and me in known:
            return (
                f"{gid}: {user} offers a draw: `ajedrez draw accept {gid}` or "
                f"`ajedrez draw decline {gid}`"
            )
        return f"{gid}: {user} offers a draw"
    if kind == ev.TABLAS_ACEPTADAS:
        return f"{gid}: {who(f['usuario'])} accepted the draw offer"
    if kind == ev.TABLAS_RECHAZADAS:
        return f"{gid}: {who(f['usuario'])} declined the draw offer; play goes on"
    if kind == ev.ABANDONO:
        if f["observador"] == "1":
            return f"{gid}: {who(f['usuario'])} stopped observing"
        return f"{gid}: {who(f['usuario'])} resigned (or left the service)"
    if kind == ev.INCORPORACION:
        user = f["usuario"]
        return f"{gid}: {who(user)} {'are' if user == me else 'is'} observing the game"
    if kind == ev.FINALIZACION:
        return f"{gid} is over: {_result(f['ganador'], players(gid), me)}: {f['motivo']}"
    if kind == ev.CHAT:
        return f"{gid}: {who(f['usuario'])}: {f['texto']}"
    if kind == ev.SUSURRO:
        return f"{gid}: {who(f['usuario'])} (whisper, to observers): {f['texto']}"
    if kind == ev.RETROCESO:
        user = f["usuario"]
        if user == me:
            return f"{gid}: you asked to take back your last move"
        known = players(gid)
        if known is not None and me in known:
            return (
                f"{gid}: {user} asks to take back their last move: `ajedrez takeback accept "
                f"{gid}` or `ajedrez takeback decline {gid}`"
            )
        return f"{gid}: {user} asks to take back their last move"
    if kind == ev.RETROCESO_ACEPTADO:
        return f"{gid}: {who(f['usuario'])} accepted the takeback: ply {f['jugada_n']} undone"
    if kind == ev.RETROCESO_RECHAZADO:
        return f"{gid}: {who(f['usuario'])} declined the takeback"
    if kind == ev.AVISO_RELOJ:
        user = f["usuario"]
        left, deadline = int(f["restante"]), int(f["limite"])
        return f"{gid}: {whose(user)} clock is running low: {span(left)} left (by {when(deadline)})"
    if kind == ev.LICENCIA:
        return f"{f['usuario']} is on leave until {when(int(f['hasta']))}"
    if kind == ev.FIN_LICENCIA:
        return f"{f['usuario']} is back from leave"
    return ", ".join(e.fields)


def _terms(control: str) -> str:
    """``time control 3d (3 d a move)``, or ``no clock``."""
    if describe_control(control) == "no clock":
        return "no clock"
    return f"time control {control_text(control)}"


def _to_move(gid: str, turn: str, me: str) -> str:
    return f"your move: `ajedrez move {gid} MOVE`" if turn == me else f"{turn} to move"


# The ends the server declares on the move that reaches them and that the position after
# it shows. Fivefold repetition needs the game's history, which an event does not carry:
# after such a move the line says whose move it is, and FINALIZACION follows.
_ENDINGS = {
    chess.Termination.CHECKMATE: "checkmate",
    chess.Termination.STALEMATE: "stalemate",
    chess.Termination.INSUFFICIENT_MATERIAL: "insufficient material",
    chess.Termination.SEVENTYFIVE_MOVES: "seventy-five-move rule",
}


def _ended_by(fen: str, known: tuple[str, str] | None, me: str) -> str | None:
    """``game over: you (black) won: checkmate`` when the position after a move ends the
    game, else None."""
    try:
        outcome = chess.Board(fen).outcome(claim_draw=False)
    except ValueError:  # a FEN this client cannot read: say whose move it is, as before
        return None
    if outcome is None or outcome.termination not in _ENDINGS:
        return None
    ganador = "3" if outcome.winner is None else ("1" if outcome.winner else "2")
    return f"game over: {_result(ganador, known, me)}: {_ENDINGS[outcome.termination]}"


def _result(ganador: str, known: tuple[str, str] | None, me: str) -> str:
    if ganador in ("1", "2"):
        color = "white" if ganador == "1" else "black"
        if known is None:
            return f"{color} won"
        name = known[0] if ganador == "1" else known[1]
        return f"{'you' if name == me else name} ({color}) won"
    if ganador == "3":
        return "draw"
    return "no result"
