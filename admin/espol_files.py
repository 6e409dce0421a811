"""The data files of a 1995 ESPOL server (seed, section 3.3), read without opening any:
``read_lines`` takes an open file, a line at a time and each line bounded; each parser
takes a file's lines and returns its records and the problems found, each naming the
file, the line and what was wrong. ``espol_import.py`` opens the files and writes what
they hold into the store.

Each line is UTF-8 when it decodes as such, else Latin-1 (ISO 8859-1, what a Unix server
of 1995 wrote). Spaces around names, numbers and dates are ignored; a password is taken
exactly as written. No problem's text ever holds a password.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import BinaryIO

from ajedrez.espol import fields as values

CONFIG_KEYS = ("autorizados", "est_partida", "solicitudes")
USUARIOS_FIELDS = "user:password:comentario:fecha:#ganadas"
EST_PARTIDA_FIELDS = (
    "partida:blancas:negras:fecha:est_prt:ganador:solicitud_blancas:solicitud_negras"
)
PEN_FIELDS = "#jugada:jugada:reverso:posicion:promocion"
CHALLENGE_FIELDS = "solicitante: fecha"
SUBSCRIPCION_FIELDS = "SUBS:user:password:comentario"
MAX_SEQUENCE = 9_999_999  # seven digits
# The longest line read, in bytes: the longest a 1995 line can be is a usuarios line
# (a 32-character name, a 128-character password, a 200-character comment, two numbers),
# under 2 KiB even with every character four bytes long; 64 KiB is far above it, and bounds
# what a hostile or damaged file (one line of gigabytes) makes the import hold.
MAX_LINE = 64 * 1024
BOM = b"\xef\xbb\xbf"
_DIGITS = re.compile(r"[0-9]+")
_GAME_FILE = re.compile(r"P([0-9]{7})\.PEN", re.IGNORECASE)
# est_prt and the request fields as the seed defines them.
ACTIVE, FINISHED = 0, 2
WINNERS = (0, 1, 2, 3)
REQUESTS = (0, 1, 2, 3)


@dataclass(frozen=True)
class Problem:
    """Something in the old files that was not imported as it stands; ``line`` None: the
    file as a whole."""

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class Config:
    """server.cfg: the three directories as written (relative or absolute)."""

    autorizados: str
    est_partida: str
    solicitudes: str


@dataclass(frozen=True)
class OldUser:
    line: int
    name: str
    password: str = field(repr=False)
    comment: str
    fecha: int
    wins: int
    # Why the comment is not the one written (characters the store refuses), or "".
    comment_note: str = ""


@dataclass(frozen=True)
class OldGame:
    """One line of est_partida."""

    line: int
    game_id: int
    white: str
    black: str
    fecha: int
    status: int
    winner: int
    req_white: int
    req_black: int


@dataclass(frozen=True)
class OldMove:
    """One line of a P#######.PEN file."""

    line: int
    ply: int
    jugada: str
    reverso: int
    posicion: str
    promocion: int


@dataclass(frozen=True)
class PenFile:
    """A game's moves up to the first line that cannot be read; ``stop`` is that line's
    problem (None: every line was read), ``unread`` how many lines it and those after it
    hold."""

    moves: tuple[OldMove, ...]
    stop: Problem | None = None
    unread: int = 0


@dataclass(frozen=True)
class OldChallenge:
    """A line of the challenged user's file in the solicitudes directory."""

    line: int
    challenger: str
    challenged: str
    fecha: int


@dataclass(frozen=True)
class OldSubscription:
    line: int
    name: str
    password: str = field(repr=False)
    comment: str
    comment_note: str = ""


# -- text ----------------------------------------------------------------------------------


class Unreadable(Exception):
    """A file refused as a whole: nothing of it is imported; ``problem`` says where and
    why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def read_lines(stream: BinaryIO, file: str) -> Iterator[str]:
    """The lines of ``stream`` (without CR LF or LF), one at a time, each UTF-8 if it
    decodes so, else Latin-1; a UTF-8 byte-order mark at the start is dropped. A line of
    more than ``MAX_LINE`` bytes raises ``Unreadable`` having read at most that much of
    it: no file of the old server holds one, and a file that does is not read whole."""
    n = 0
    while True:
        # Room for the byte-order mark and CR LF beside MAX_LINE bytes of text.
        raw = stream.readline(MAX_LINE + 5)
        if not raw:
            return
        n += 1
        if n == 1 and raw.startswith(BOM):
            raw = raw[len(BOM) :]
        line = raw.removesuffix(b"\n").removesuffix(b"\r")
        if len(line) > MAX_LINE:
            raise Unreadable(
                Problem(
                    file,
                    n,
                    f"a line longer than {MAX_LINE} bytes (no 1995 ESPOL file has one): "
                    "the file is not read",
                )
            )
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError:
            yield line.decode("latin-1")


def game_file_name(game_id: int) -> str:
    """The name the old server gave a game's moves file: P0000012.PEN."""
    return f"{values.format_partida(game_id)}.PEN"


def game_file_id(name: str) -> int | None:
    """The game number of a moves file's name (P0000012.PEN, any case), or None."""
    m = _GAME_FILE.fullmatch(name)
    return int(m.group(1)) if m else None


def _number(text: str, what: str, digits: int | None = None) -> int:
    text = text.strip()
    if not _DIGITS.fullmatch(text) or (digits is not None and len(text) > digits):
        size = "a number" if digits is None else f"1-{digits} digits"
        raise ValueError(f"{what} '{values.shown(text)}' is not {size}")
    return int(text)


def _choice(text: str, what: str, allowed: tuple[int, ...]) -> int:
    text = text.strip()
    if text not in [str(n) for n in allowed]:
        shown = ", ".join(map(str, allowed))
        raise ValueError(f"{what} '{values.shown(text)}' is not one of {shown}")
    return int(text)


def _name(text: str, what: str = "user name") -> str:
    name = text.strip()
    try:
        return values.usuario(name)
    except ValueError:
        raise ValueError(
            f"invalid {what} '{values.shown(name)}': 1-32 characters of A-Z a-z 0-9 _ . -"
        ) from None


def _password(text: str) -> str:
    if not text:
        raise ValueError("empty password")
    try:
        return values.password(text)
    except ValueError:
        raise ValueError("invalid password: more than 128 characters") from None


def _fields(line: str, count: int, layout: str) -> list[str]:
    parts = line.split(":")
    if len(parts) != count:
        hint = " (a ':' in a password or comment?)" if len(parts) > count else ""
        raise ValueError(f"{len(parts)} fields where {count} are expected ({layout}){hint}")
    return parts


def clean_comment(text: str) -> tuple[str, str]:
    """(the comment as the store takes it, why it differs or ""): characters a comment may
    not hold (control, format and line-separator characters) dropped, a TAB or other such
    space made a plain space, at most 200 kept."""
    text = text.strip()
    try:
        return values.comentario(text), ""
    except ValueError:
        pass
    kept = "".join(c if _comment_char(c) else " " if c.isspace() else "" for c in text)
    notes = []
    if kept != text:
        notes.append("comment: characters a comment may not hold replaced or dropped")
    if len(kept) > 200:
        kept = kept[:200].rstrip()
        notes.append("comment cut to 200 characters")
    return kept, "; ".join(notes)


def _comment_char(c: str) -> bool:
    try:
        values.comentario(c)
    except ValueError:
        return False
    return True


# -- server.cfg and server.eje -------------------------------------------------------------


def parse_config(lines: Iterable[str], file: str) -> tuple[Config | None, list[Problem]]:
    """server.cfg: ``autorizados:DIR``, ``est_partida:DIR``, ``solicitudes:DIR``, one a
    line, in any order. None when one of the three is missing."""
    found: dict[str, str] = {}
    problems = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        key, sep, directory = line.partition(":")  # a DOS path (C:\...) keeps its ':'
        key = key.strip().lower()
        directory = directory.strip()
        if not sep or key not in CONFIG_KEYS:
            problems.append(
                Problem(file, n, f"not one of {', '.join(k + ':DIR' for k in CONFIG_KEYS)}")
            )
        elif not directory:
            problems.append(Problem(file, n, f"{key}: no directory given"))
        elif key in found:
            problems.append(Problem(file, n, f"{key} given again; the first one is used"))
        else:
            found[key] = directory
    missing = [k for k in CONFIG_KEYS if k not in found]
    if missing:
        problems.append(Problem(file, None, f"no {' nor '.join(missing)} directory"))
        return None, problems
    return Config(found["autorizados"], found["est_partida"], found["solicitudes"]), problems


def parse_eje(lines: Iterable[str], file: str) -> tuple[int | None, list[Problem]]:
    """server.eje: ``procesid:secuencial``, the old server's game sequence (seven digits)."""
    # The first two lines written: the second only to say it is not read.
    written = list(islice(((n, line) for n, line in enumerate(lines, 1) if line.strip()), 2))
    if not written:
        return None, [Problem(file, None, "empty: no game sequence")]
    n, line = written[0]
    problems = [
        Problem(file, m, "more than one line: only the first is read") for m, _ in written[1:2]
    ]
    try:
        pid, sequence = _fields(line, 2, "procesid:secuencial")
        _number(pid, "procesid")
        return _number(sequence, "secuencial", 7), problems
    except ValueError as e:
        return None, [Problem(file, n, str(e)), *problems]


# -- usuarios and subscripcion -------------------------------------------------------------


def parse_usuarios(lines: Iterable[str], file: str) -> tuple[list[OldUser], list[Problem]]:
    """usuarios: ``user:password:comentario:fecha:#ganadas``. A name given again (or again
    but for case, which the store would refuse) keeps its first line."""
    users: list[OldUser] = []
    problems: list[Problem] = []
    seen: dict[str, tuple[str, int]] = {}  # lower-case name: (name, line)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            name, password, comment, fecha, wins = _fields(line, 5, USUARIOS_FIELDS)
            name = _name(name)
            password = _password(password)
            when = _number(fecha, "fecha", values.FECHA_WIDTH)
            won = _number(wins, "#ganadas", 9)
        except ValueError as e:
            problems.append(Problem(file, n, str(e)))
            continue
        earlier = seen.get(name.lower())
        if earlier is not None:
            same = (
                "given again" if earlier[0] == name else f"differs only in case from '{earlier[0]}'"
            )
            problems.append(Problem(file, n, f"user '{name}' {same} (line {earlier[1]}): skipped"))
            continue
        seen[name.lower()] = (name, n)
        kept, note = clean_comment(comment)
        users.append(OldUser(n, name, password, kept, when, won, note))
    return users, problems


def parse_subscripcion(
    lines: Iterable[str], file: str
) -> tuple[list[OldSubscription], list[Problem]]:
    """subscripcion: ``SUBS:user:password:comentario``, the requests the administrator had
    not answered. A name requested again keeps its first line."""
    requests: list[OldSubscription] = []
    problems: list[Problem] = []
    seen: dict[str, tuple[str, int]] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            tag, name, password, comment = _fields(line, 4, SUBSCRIPCION_FIELDS)
            if tag.strip() != "SUBS":
                raise ValueError(f"'{values.shown(tag.strip()[:8])}' where SUBS is expected")
            name = _name(name)
            try:
                values.new_usuario(name)
            except ValueError as e:
                raise ValueError(str(e)) from None
            password = _password(password)
        except ValueError as e:
            problems.append(Problem(file, n, str(e)))
            continue
        earlier = seen.get(name.lower())
        if earlier is not None:
            problems.append(
                Problem(file, n, f"'{name}' requested again (line {earlier[1]}): skipped")
            )
            continue
        seen[name.lower()] = (name, n)
        kept, note = clean_comment(comment)
        requests.append(OldSubscription(n, name, password, kept, note))
    return requests, problems


# -- est_partida and the games' moves ------------------------------------------------------


def parse_est_partida(lines: Iterable[str], file: str) -> tuple[list[OldGame], list[Problem]]:
    """est_partida: one line a game (``EST_PARTIDA_FIELDS``). A game number given again
    keeps its first line."""
    games: list[OldGame] = []
    problems: list[Problem] = []
    seen: dict[int, int] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            f = _fields(line, 8, EST_PARTIDA_FIELDS)
            game_id = values.partida(f[0].strip())
            if game_id == 0:
                raise ValueError("invalid game id 'P0000000': numbers start at 1")
            white, black = _name(f[1], "white player"), _name(f[2], "black player")
            if white == black:
                raise ValueError(f"'{white}' plays both colours")
            game = OldGame(
                n,
                game_id,
                white,
                black,
                _number(f[3], "fecha", values.FECHA_WIDTH),
                _choice(f[4], "est_prt", (ACTIVE, FINISHED)),
                _choice(f[5], "ganador", WINNERS),
                _choice(f[6], "solicitud_blancas", REQUESTS),
                _choice(f[7], "solicitud_negras", REQUESTS),
            )
        except ValueError as e:
            problems.append(Problem(file, n, str(e)))
            continue
        if game_id in seen:
            pid = values.format_partida(game_id)
            problems.append(Problem(file, n, f"{pid} given again (line {seen[game_id]}): skipped"))
            continue
        seen[game_id] = n
        games.append(game)
    return games, problems


def parse_pen(lines: Iterable[str], file: str) -> PenFile:
    """A game's moves file: ``#jugada:jugada:reverso:posicion:promocion``, plies 1, 2, 3...
    in order. Reading stops at the first line that is malformed or out of order: a game
    cannot go on past a move it does not have."""
    moves: list[OldMove] = []
    written = ((n, line) for n, line in enumerate(lines, 1) if line.strip())
    for n, line in written:
        try:
            f = _fields(line, 5, PEN_FIELDS)
            ply = _number(f[0], "#jugada", 6)
            if ply != len(moves) + 1:
                raise ValueError(f"#jugada {ply} where {len(moves) + 1} is expected")
            move = OldMove(
                n,
                ply,
                values.jugada(f[1].strip().lower()),
                values.reverso(f[2].strip()),
                values.posicion(f[3].strip()),
                values.promocion(f[4].strip()),
            )
        except ValueError as e:
            unread = 1 + sum(1 for _ in written)
            return PenFile(tuple(moves), Problem(file, n, str(e)), unread)
        moves.append(move)
    return PenFile(tuple(moves))


# -- challenges ----------------------------------------------------------------------------


def parse_challenges(
    lines: Iterable[str], file: str, challenged: str
) -> tuple[list[OldChallenge], list[Problem]]:
    """The file named after ``challenged`` in the solicitudes directory: ``solicitante:
    fecha``, one challenge a line. A challenger given again keeps the first line."""
    found: list[OldChallenge] = []
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            who, fecha = _fields(line, 2, CHALLENGE_FIELDS)
            challenger = _name(who, "challenger")
            when = _number(fecha, "fecha", values.FECHA_WIDTH)
            if challenger == challenged:
                raise ValueError(f"'{challenger}' challenges themself")
        except ValueError as e:
            problems.append(Problem(file, n, str(e)))
            continue
        if challenger in seen:
            problems.append(
                Problem(
                    file, n, f"'{challenger}' challenges again (line {seen[challenger]}): skipped"
                )
            )
            continue
        seen[challenger] = n
        found.append(OldChallenge(n, challenger, challenged, when))
    return found, problems
