"""The command table: per command its fields, whether it needs a login, where it runs
(the service's choice for the operation it calls: ``service/work.py``), and its help line.

Checked in one place (:func:`parse_args`) before dispatch, so handlers only ever see
well-formed values; the transport reads :attr:`Spec.runs` to decide where a line runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ajedrez.espol import fields as v
from ajedrez.espol.codes import Reply
from ajedrez.espol.framing import Line, LineError
from ajedrez.service.work import Work, work_of

Parser = Callable[[str], Any]


@dataclass(frozen=True)
class Spec:
    name: str
    fields: tuple[tuple[str, Parser], ...]
    login: bool
    summary: str
    optional: int = 0  # how many trailing fields may be left out
    runs: Work = Work.THREAD
    rest: bool = False  # the last field is the rest of the line, ':' and all (CHAT)

    @property
    def syntax(self) -> str:
        shown = [f"<{label}>" for label, _ in self.fields]
        if self.optional:
            shown[-self.optional :] = [f"[{f}]" for f in shown[-self.optional :]]
        return ":".join([self.name, *shown])


def _spec(
    name: str,
    login: bool,
    summary: str,
    *fields: tuple[str, Parser],
    optional: int = 0,
    runs: Work = Work.THREAD,
    rest: bool = False,
) -> Spec:
    return Spec(name, fields, login, summary, optional, runs, rest)


_PARTIDA = ("partida", v.partida)
_DESTINO = ("usuario destino", v.usuario)
_USUARIO = ("usuario", v.usuario)
_FECHA = ("fecha", v.fecha)
_CONTROL = ("control", v.control)
_WITH_CONTROLS = ("1", v.with_controls)
_PRIVADA = ("privada", v.privada)

SPECS: dict[str, Spec] = {
    s.name: s
    for s in (
        _spec("USER", False, "start the login with your user name", ("usuario", v.usuario)),
        _spec(
            "PASS",
            False,
            "finish the login with your password",
            ("password", v.password),
            runs=work_of("log_in"),
        ),
        _spec(
            "FICH",
            False,
            "log in with a token from FICN instead of USER and PASS",
            ("usuario", v.usuario),
            ("secreto", v.secreto),
            runs=work_of("token_log_in"),
        ),
        _spec(
            "SUBS",
            False,
            "ask the administrator for an account",
            ("usuario", v.usuario),
            ("password", v.password),
            ("comentario", v.comentario),
            runs=work_of("sign_up"),
        ),
        _spec(
            "HELP",
            False,
            "this list, or one command's syntax",
            ("comando", v.help_topic),
            optional=1,
            runs=work_of("help"),
        ),
        _spec("QUIT", False, "end the session (no reply)", runs=work_of("quit")),
        _spec(
            "JUEG",
            True,
            "challenge a user to a game, with a time control (3d, 10m, 50d+5d, none...); "
            "privada 1: no observers",
            _DESTINO,
            _CONTROL,
            _PRIVADA,
            optional=2,
        ),
        _spec(
            "TRAN",
            True,
            "challenges to you made since fecha (1: with their time controls)",
            _FECHA,
            _WITH_CONTROLS,
            optional=1,
        ),
        _spec(
            "ACEP",
            True,
            "accept a user's challenge, playing color (B or N), if it has that time control",
            ("color", v.color),
            _DESTINO,
            _CONTROL,
            optional=1,
        ),
        _spec(
            "DECL", True, "decline a user's challenge to you, or withdraw yours to them", _DESTINO
        ),
        _spec(
            "SOLI",
            True,
            "your open challenges: E:<usuario> made, R:<usuario> received (1: with controls)",
            _WITH_CONTROLS,
            optional=1,
        ),
        _spec("PPEN", True, "your games created or changed since fecha", _FECHA),
        _spec(
            "BAJA",
            True,
            "what went away since fecha: P:<partida> purged games, R:<usuario> closed challenges",
            _FECHA,
        ),
        _spec("JAUT", True, "active users admitted or changed since fecha (0 = all)", _FECHA),
        _spec(
            "JUGA",
            True,
            "players admitted or changed since fecha: accounts (R), guests connected now (I)",
            _FECHA,
        ),
        _spec("SRNK", True, "the ten users with most won games"),
        _spec(
            "STAT",
            True,
            "the status of one of your games (1: and who asks a takeback)",
            _PARTIDA,
            ("1", v.opt_in),
            optional=1,
            runs=work_of("game"),
        ),
        _spec(
            "SPAR",
            True,
            "the moves of one of your games after #jugada (0 = all)",
            _PARTIDA,
            ("#jugada", v.ply),
            runs=work_of("moves"),
        ),
        _spec(
            "JGDA",
            True,
            "play a move",
            _PARTIDA,
            ("#jugada", v.ply),
            ("jugada", v.jugada),
            ("reverso", v.reverso),
            ("posicion", v.posicion),
            ("promocion", v.promocion),
            runs=work_of("move"),
        ),
        _spec("TBLS", True, "offer your opponent a draw", _PARTIDA, _DESTINO),
        _spec(
            "RTBL",
            True,
            "answer your opponent's draw offer: S accept, N decline",
            _PARTIDA,
            ("S o N", v.yes_no),
            _DESTINO,
        ),
        _spec("REND", True, "resign the game", _PARTIDA, _DESTINO),
        _spec(
            "FINP",
            True,
            "claim a draw by threefold repetition or the fifty-move rule",
            _PARTIDA,
            _DESTINO,
        ),
        _spec(
            "PGNX",
            True,
            "a game you play or observe as PGN (1: with its chat as comments)",
            _PARTIDA,
            ("1", v.with_chat),
            optional=1,
        ),
        _spec(
            "RELJ",
            True,
            "the clocks of one of your games (1: and the end of the start-up grace)",
            _PARTIDA,
            ("1", v.opt_in),
            optional=1,
        ),
        _spec(
            "LICE",
            True,
            "leave: I start (for dias, or all you have left), F end, E status",
            ("accion", v.leave_action),
            ("dias", v.dias),
            optional=1,
        ),
        _spec(
            "EVEN",
            True,
            "stream your events after cursor (left out: from now on); commands still work",
            ("cursor", v.cursor),
            optional=1,
            runs=work_of("stream"),
        ),
        _spec("OBSV", True, "observe a game: its events reach your stream (EVEN)", _PARTIDA),
        _spec("OBSF", True, "stop observing a game", _PARTIDA),
        _spec("OBSL", True, "who observes a game you play or observe", _PARTIDA),
        _spec(
            "CHAT",
            True,
            "say something in a game (players to players, observers to observers)",
            _PARTIDA,
            ("texto", v.texto),
            rest=True,
        ),
        _spec("CHLE", True, "a game's messages since fecha", _PARTIDA, _FECHA),
        _spec(
            "BUSC",
            True,
            "seek a game with that time control (corr: any correspondence control): paired at "
            "once with a matching seek",
            ("control", v.required_seek_control),
            _PRIVADA,
            optional=1,
        ),
        _spec("BUSL", True, "the waiting seeks: <usuario>:<control>"),
        _spec(
            "BUSR",
            True,
            "withdraw your seek of that time control (left out: all)",
            ("control", v.seek_control),
            optional=1,
        ),
        _spec(
            "HOVR",
            True,
            "the squares the piece on casilla may move to now",
            _PARTIDA,
            ("casilla", v.casilla),
        ),
        _spec("ATRS", True, "ask your opponent to take back your last move", _PARTIDA, _DESTINO),
        _spec(
            "RATR",
            True,
            "answer your opponent's takeback request: S take it back, N decline",
            _PARTIDA,
            ("S o N", v.yes_no),
            _DESTINO,
        ),
        _spec(
            "BLOQ",
            True,
            "block a user: no challenges, chat, pairing or observing from them",
            _USUARIO,
        ),
        _spec("BLOR", True, "unblock a user", _USUARIO),
        _spec("BLOL", True, "the users you block"),
        _spec(
            "FICN",
            True,
            "make a login token (FICH) labelled etiqueta; its secret is shown this once",
            ("etiqueta", v.etiqueta),
        ),
        _spec("FICL", True, "your login tokens: <id>:<etiqueta>:<creada>:<usada>:<caduca>"),
        _spec("FICR", True, "revoke a login token of yours, or all of them (*)", ("id", v.ficha)),
        _spec(
            "UNSU",
            True,
            "close your account (your active games are lost)",
            ("usuario", v.usuario),
            ("password", v.password),
            runs=work_of("close_account"),
        ),
    )
}

ALIASES = {"TBLs": "TBLS", "RTBS": "RTBL"}  # spellings found in the seed
PRE_LOGIN = frozenset(name for name, spec in SPECS.items() if not spec.login)


def lookup(code: str) -> Spec | None:
    return SPECS.get(ALIASES.get(code, code))


def line_spec(raw: bytes) -> Spec | None:
    """The command a line names, read from its code alone (the line is parsed when it
    runs); None for a line that names none. Read once per line: where it runs, and its
    label in the metrics."""
    if len(raw) > 4 and raw[4:5] != b":":
        return None
    return lookup(raw[:4].decode("ascii", "replace"))


def parse_args(spec: Spec, line: Line) -> list[Any]:
    """Check the field count and syntax; return the parsed values."""
    fields = line.fields
    most = len(spec.fields)
    least = most - spec.optional
    if spec.rest and len(fields) > most:
        fields = [*fields[: most - 1], ":".join(fields[most - 1 :])]
    # A trailing ':' that would make one field too many is ignored (docs/protocol.md section 1).
    if len(fields) == most + 1 and fields[-1] == "":
        fields = fields[:-1]
    if not least <= len(fields) <= most:
        wanted = str(most) if least == most else f"{least} to {most}"
        raise LineError(
            Reply.F_NFIELDS,
            f"{spec.name} takes {wanted} field(s), got {len(fields)}: {spec.syntax}",
        )
    parsed = []
    for (_label, parse), raw in zip(spec.fields, fields, strict=False):
        try:
            parsed.append(parse(raw))
        except ValueError as e:
            raise LineError(Reply.F_PARAM, f"{spec.name}: {e}") from e
    return parsed


def help_text(topic: str = "") -> list[str]:
    specs = [lookup(topic)] if topic else list(SPECS.values())
    lines = [f"{s.syntax} - {s.summary}" for s in specs if s is not None]
    if not topic:
        lines.append("TBLs and RTBS are accepted as TBLS and RTBL. See docs/protocol.md.")
    return lines


def command_name(line: bytes) -> str:
    """The label of a request line: its command's name, or ``unknown`` (so that what a
    client sends can never make new labels)."""
    spec = line_spec(line)
    return spec.name if spec is not None else "unknown"
