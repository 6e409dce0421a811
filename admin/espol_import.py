"""``ajedrez-admin import espol PATH``: the accounts, games, challenges and subscription
requests of a 1995 ESPOL server (seed, section 3.3) brought into the store.

The files are read by ``espol_files.py`` and each game replayed by ``espol_games.py``;
this module finds the files, decides what is new, writes it (``store/imported.py``) and
reports. Every batch of rows is written in one transaction, which checks again what is
there already and records each row it writes (``imported_rows``): an interrupted import
leaves whole batches only, and running it again imports what is missing and nothing
twice, whatever players did since with what was imported. docs/operations.md,
"Importing from a 1995 ESPOL server", is the operator's reference.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar

from ajedrez.domain.errors import Conflict
from ajedrez.domain.passwords import hash_password
from ajedrez.domain.values import STATUS_ACTIVE
from ajedrez.domain.values import game_name as format_partida
from ajedrez.espol.fields import shown
from ajedrez.store import imported
from ajedrez.store.db import Database
from ajedrez.store.tx import Tx

from .common import EXIT_REFUSED, AdminError, actor, count
from .espol_files import (
    OldChallenge,
    OldGame,
    OldSubscription,
    OldUser,
    PenFile,
    Problem,
    Unreadable,
    game_file_id,
    game_file_name,
    parse_challenges,
    parse_config,
    parse_eje,
    parse_est_partida,
    parse_pen,
    parse_subscripcion,
    parse_usuarios,
    read_lines,
)
from .espol_games import PlannedGame, plan_game

# Rows per transaction. Users are hashed a batch at a time (argon2, ~40 ms each), so
# their batches are small; a progress line is shown after each batch of a kind that has
# more than one batch.
USER_BATCH = 50
GAME_BATCH = 200
CHALLENGE_BATCH = 500
CONFIG = "server.cfg"
EJE = "server.eje"
USUARIOS = "usuarios"
EST_PARTIDA = "est_partida"
SUBSCRIPCION = "subscripcion"
# Files of the solicitudes directory that are no user's challenges.
NOT_CHALLENGES = {CONFIG, EJE, USUARIOS, EST_PARTIDA, SUBSCRIPCION}
AUDIT_ACTION = "import espol"

T = TypeVar("T")


@dataclass
class Tally:
    imported: int = 0
    already: int = 0
    skipped: int = 0

    def text(self, dry_run: bool) -> str:
        done = "to import" if dry_run else "imported"
        return f"{self.imported} {done}, {self.already} already imported, {self.skipped} skipped"


@dataclass
class Source:
    """Where the old server's files are."""

    base: Path  # server.cfg's directory
    config: Path
    autorizados: Path
    est_partida: Path
    solicitudes: Path

    def shown(self, path: Path) -> str:
        """A file's name as the report gives it: relative to server.cfg's directory."""
        try:
            return str(path.relative_to(self.base))
        except ValueError:
            return str(path)

    def lines(self, path: Path) -> Iterator[str]:
        """The lines of a file of the data directory, read as they are parsed.
        ``Unreadable``: a link to a file outside the data directory, or a line too long;
        ``OSError``: the file cannot be read."""
        real = path.resolve()
        if not real.is_relative_to(self.base):
            raise Unreadable(
                Problem(
                    self.shown(path),
                    None,
                    f"a link to {real}, outside the data directory {self.base}: not read",
                )
            )
        return _lines(path, self.shown(path))


@dataclass
class Decisions:
    """What one batch comes to: the rows to write, the rows there already, the rows
    skipped with why; ``reported``: what the report says of rows counted as there
    already that are not (a game purged since it was imported)."""

    new: list[object] = field(default_factory=list)
    already: list[object] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    reported: list[Problem] = field(default_factory=list)


def import_espol(db: Database, args: argparse.Namespace) -> None:
    source = locate(Path(args.path))
    run = Import(db, source, dry_run=args.dry_run, by=actor(), progress=_progress)
    run.all()
    for line in run.report():
        print(line)


def _progress(text: str) -> None:
    print(f"import espol: {text}", file=sys.stderr, flush=True)


# -- the files -----------------------------------------------------------------------------


def _entry(directory: Path, name: str) -> Path | None:
    """The file ``name`` in ``directory``, its name in any case (Server.cfg, USUARIOS)."""
    exact = directory / name
    if exact.is_file():
        return exact
    try:
        for p in sorted(directory.iterdir()):
            if p.name.lower() == name.lower() and p.is_file():
                return p
    except OSError:
        return None
    return None


def _lines(path: Path, file: str) -> Iterator[str]:
    with path.open("rb") as stream:
        yield from read_lines(stream, file)


def locate(path: Path) -> Source:
    """The files of the data directory ``path`` (or of the server.cfg ``path`` names).
    Not an ESPOL data directory (exit status 1): no server.cfg, one without the three
    directories, or no usuarios file."""
    if path.is_dir():
        found = _entry(path, CONFIG)
        if found is None:
            raise AdminError(f"{path} is not an ESPOL data directory: it has no {CONFIG}")
        config_path = found
    elif path.is_file():
        config_path = path
    else:
        raise AdminError(f"no such file or directory: {path}", EXIT_REFUSED)
    base = config_path.parent.resolve()
    try:
        config, problems = parse_config(_lines(config_path, config_path.name), config_path.name)
    except OSError as e:
        raise AdminError(f"cannot read {config_path}: {e.strerror or e}") from None
    except Unreadable as e:
        raise AdminError(f"{config_path.parent}/{e.problem}") from None
    if config is None:
        raise AdminError(
            f"{config_path} is not an ESPOL server.cfg: {'; '.join(map(str, problems))}"
        )
    source = Source(
        base,
        config_path.resolve(),
        _directory(base, "autorizados", config.autorizados),
        _directory(base, "est_partida", config.est_partida),
        _directory(base, "solicitudes", config.solicitudes),
    )
    if _entry(source.autorizados, USUARIOS) is None:
        raise AdminError(
            f"{path} is not an ESPOL data directory: no {USUARIOS} file in {source.autorizados}"
        )
    return source


def _directory(base: Path, key: str, written: str) -> Path:
    """A directory of server.cfg: a relative one is relative to server.cfg's directory.
    An absolute one that does not exist here (the files were copied from the old
    machine) is looked for by its last component in server.cfg's directory, else the
    files are looked for in server.cfg's directory itself. One that is, once links are
    followed, outside server.cfg's directory is refused: the import reads the data
    directory it is given and nothing else of the machine (docs/security.md)."""
    d = Path(written.replace("\\", "/"))
    if not d.is_absolute():
        found = (base / d).resolve()
    elif d.is_dir():
        found = d.resolve()
    else:
        moved = base / d.name
        found = moved.resolve() if moved.is_dir() else base
    if not found.is_relative_to(base):
        raise AdminError(
            f"server.cfg: {key}:{shown(written)} is {found}, outside the data directory "
            f"{base}: copy the old server's files into the data directory and name its "
            "directories from there"
        )
    return found


# -- the import ----------------------------------------------------------------------------


class Import:
    def __init__(
        self,
        db: Database,
        source: Source,
        *,
        dry_run: bool = False,
        by: str | None = None,
        progress: Callable[[str], None] = lambda _text: None,
    ) -> None:
        self.db = db
        self.source = source
        self.dry_run = dry_run
        self.by = by
        self.progress = progress
        self.users = Tally()
        self.subscriptions = Tally()
        self.games = Tally()
        self.challenges = Tally()
        self.problems: list[Problem] = []  # what was not imported
        self.changes: list[str] = []  # what was imported otherwise than written
        self.not_replaying: list[str] = []
        self.ended: list[str] = []
        # The usuarios accounts imported now or before: only these play imported games
        # and make imported challenges (an account of the same name made otherwise is
        # somebody else).
        self.ours: set[str] = set()
        # Players of the active games imported (or to import) in this run.
        self.pairs: dict[frozenset[str], int] = {}
        self.sequence: int | None = None
        self.next_game = 1

    def shown(self, path: Path) -> str:
        return self.source.shown(path)

    def all(self) -> None:
        src = self.source
        usuarios = _entry(src.autorizados, USUARIOS)
        assert usuarios is not None  # locate() made sure
        try:
            users, problems = parse_usuarios(src.lines(usuarios), self.shown(usuarios))
        except OSError as e:
            raise AdminError(f"cannot read {usuarios}: {e.strerror or e}") from None
        except Unreadable as e:
            raise AdminError(f"{src.base}/{e.problem}") from None
        self._unread(self.users, problems)
        self._sequence()
        self._users(users, self.shown(usuarios))
        self._subscriptions()
        self._games()
        self._challenges()
        self._finish()

    # -- server.eje ------------------------------------------------------------------------

    def _sequence(self) -> None:
        eje = _entry(self.source.base, EJE)
        if eje is None:
            self.problems.append(
                Problem(EJE, None, "not found: new games continue after the highest game")
            )
            return
        try:
            self.sequence, problems = parse_eje(self.source.lines(eje), self.shown(eje))
        except OSError as e:
            problems = [Problem(self.shown(eje), None, f"cannot be read: {e.strerror or e}")]
        except Unreadable as e:
            problems = [e.problem]
        self.problems += problems

    # -- users -----------------------------------------------------------------------------

    def _users(self, users: list[OldUser], file: str) -> None:
        for done, batch in _batches(users, USER_BATCH):
            with self.db.reading() as tx:
                found = self._decide_users(tx, batch, file)
            new: list[OldUser] = [u for u in found.new if isinstance(u, OldUser)]
            hashes = {} if self.dry_run else _hashed({u.name: u.password for u in new})

            def decide(tx: Tx, part: list[OldUser]) -> Decisions:
                return self._decide_users(tx, part, file)

            write = partial(_write_accounts, hashes)
            result = self._written(new, decide, write, lambda u: f"user '{u.name}'")
            # Rows imported before are reported as on the run that imported them.
            for u in _by_line(result.new + result.already + found.already):
                assert isinstance(u, OldUser)
                self.ours.add(u.name)
                if u.comment_note:
                    self.changes.append(f"{file}:{u.line}: user '{u.name}': {u.comment_note}")
            self._count(self.users, result, found)
            self._show("users", done, len(users), USER_BATCH)

    def _decide_users(self, tx: Tx, batch: Sequence[OldUser], file: str) -> Decisions:
        found = imported.accounts_named(tx, [u.name for u in batch])
        known = imported.recorded(tx, imported.USER, [u.name for u in batch])
        out = Decisions()
        for u in batch:
            account = found.get(u.name.lower())
            if (u.name, "") in known:
                # The account imported, whatever became of it since (closed, say).
                out.already.append(u)
            elif account is None:
                out.new.append(u)
            elif (account.name, account.admitted_at, account.comment) == (
                u.name,
                u.fecha,
                u.comment,
            ):
                out.already.append(u)
            else:
                spelled = "" if account.name == u.name else f" (as '{account.name}')"
                out.skipped.append(
                    Problem(
                        file,
                        u.line,
                        f"user '{u.name}': the name is taken{spelled} by an account not "
                        "imported from these files: skipped, with their games and challenges",
                    )
                )
        return out

    # -- subscription requests -------------------------------------------------------------

    def _subscriptions(self) -> None:
        src = self.source
        path = None
        for directory in (src.autorizados, src.solicitudes, src.base):
            path = _entry(directory, SUBSCRIPCION)
            if path is not None:
                break
        if path is None:
            return
        file = self.shown(path)
        try:
            requests, problems = parse_subscripcion(src.lines(path), file)
        except OSError as e:
            self.problems.append(Problem(file, None, f"cannot be read: {e.strerror or e}"))
            return
        except Unreadable as e:
            self.problems.append(e.problem)
            return
        self._unread(self.subscriptions, problems)
        for done, batch in _batches(requests, USER_BATCH):
            with self.db.reading() as tx:
                found = self._decide_requests(tx, batch, file)
            new = [s for s in found.new if isinstance(s, OldSubscription)]
            hashes = {} if self.dry_run else _hashed({s.name: s.password for s in new})

            def decide(tx: Tx, part: list[OldSubscription]) -> Decisions:
                return self._decide_requests(tx, part, file)

            write = partial(_write_requests, hashes)
            result = self._written(new, decide, write, lambda s: f"request for '{s.name}'")
            for s in _by_line(result.new + result.already + found.already):
                assert isinstance(s, OldSubscription)
                if s.comment_note:
                    self.changes.append(f"{file}:{s.line}: request '{s.name}': {s.comment_note}")
            self._count(self.subscriptions, result, found)
            self._show("subscription requests", done, len(requests), USER_BATCH)

    def _decide_requests(self, tx: Tx, batch: Sequence[OldSubscription], file: str) -> Decisions:
        names = [s.name for s in batch]
        accounts = imported.accounts_named(tx, names)
        pending = imported.requests_named(tx, names)
        known = imported.recorded(tx, imported.REQUEST, names)
        ours = {n.lower() for n in self.ours}
        out = Decisions()
        for s in batch:
            key = s.name.lower()
            request = pending.get(key)
            if (s.name, "") in known:
                out.already.append(s)
                if request is None:
                    answer = "approved" if key in accounts else "rejected"
                    out.reported.append(
                        Problem(
                            file,
                            s.line,
                            f"request for '{s.name}': {answer} since it was imported: "
                            "not imported again",
                        )
                    )
            elif key in accounts or key in ours:
                out.skipped.append(
                    Problem(file, s.line, f"request for '{s.name}': the name is an account's")
                )
            elif request is None:
                out.new.append(s)
            elif (request.name, request.comment) == (s.name, s.comment):
                out.already.append(s)
            else:
                out.skipped.append(
                    Problem(
                        file,
                        s.line,
                        f"request for '{s.name}': another request for '{request.name}' is "
                        "pending already",
                    )
                )
        return out

    # -- games -----------------------------------------------------------------------------

    def _games(self) -> None:
        src = self.source
        path = _entry(src.est_partida, EST_PARTIDA)
        moves_files = self._moves_files()
        if path is None:
            self.problems.append(
                Problem(
                    self.shown(src.est_partida / EST_PARTIDA), None, "not found: no games imported"
                )
            )
            games: list[OldGame] = []
        else:
            try:
                games, problems = parse_est_partida(src.lines(path), self.shown(path))
            except OSError as e:
                raise AdminError(f"cannot read {path}: {e.strerror or e}") from None
            except Unreadable as e:
                raise AdminError(f"{src.base}/{e.problem}") from None
            self._unread(self.games, problems)
        listed = {g.game_id for g in games}
        for game_id, pen in sorted(moves_files.items()):
            if game_id not in listed:
                self.problems.append(
                    Problem(self.shown(pen), None, "no line in est_partida: not imported")
                )
        self._reserve_numbers(max([g.game_id for g in games], default=0))
        games.sort(key=lambda g: g.game_id)
        est = self.shown(path) if path is not None else EST_PARTIDA
        for done, batch in _batches(games, GAME_BATCH):
            with self.db.reading() as tx:
                there = imported.games_numbered(tx, [g.game_id for g in batch])
                purged = imported.games_purged(tx, [g.game_id for g in batch])
                known = _games_recorded(tx, batch)
            before, planned = Decisions(), []
            for g in batch:
                ours = g.white in self.ours and g.black in self.ours
                if _gone(g, there, known, purged, ours):
                    # Not replayed: nothing of it is here for the report to describe.
                    before.already.append(g)
                    before.reported.append(_purged_problem(est, g.line, g.game_id))
                    continue
                plan = self._plan(g, moves_files, est)
                if g.game_id in known or (
                    ours and there.get(g.game_id) == (g.white, g.black, g.fecha)
                ):
                    # Imported before, and not written again; replayed all the same, so
                    # that the report of every run over the same files is the same.
                    before.already.append(g if isinstance(plan, Problem) else plan)
                elif isinstance(plan, Problem):
                    self.games.skipped += 1
                    self.problems.append(plan)
                else:
                    planned.append(plan)

            def decide(tx: Tx, part: list[PlannedGame]) -> Decisions:
                return self._decide_games(tx, part, est)

            def write(tx: Tx, rows: list[object]) -> None:
                games_ = [g for g in rows if isinstance(g, PlannedGame)]
                ids = imported.user_ids(tx, [n for g in games_ for n in (g.white, g.black)])
                imported.add_games(tx, [(g, ids[g.white], ids[g.black], g.credit) for g in games_])
                imported.record(tx, imported.GAME, [(g.pid, "") for g in games_])
                for g in games_:
                    if g.all_notes:
                        tx.audit(self.by, AUDIT_ACTION, g.pid, "; ".join(g.all_notes))

            self._compare_moves([p for p in before.already if isinstance(p, PlannedGame)])
            result = self._written(planned, decide, write, lambda g: g.pid)
            for p in result.new:
                assert isinstance(p, PlannedGame)
                if p.status == STATUS_ACTIVE:
                    self.pairs[frozenset((p.white, p.black))] = p.game_id
            done_games = result.new + result.already + before.already
            for p in sorted(
                (p for p in done_games if isinstance(p, PlannedGame)), key=lambda p: p.game_id
            ):
                if p.replay_note:
                    self.not_replaying.append(f"{p.pid}: {p.replay_note}")
                if p.end_note:
                    self.ended.append(f"{p.pid}: {p.end_note}")
                self.changes += [f"{p.pid}: {note}" for note in p.notes]
            self._count(self.games, result, before)
            self._show("games", done, len(games), GAME_BATCH)

    def _moves_files(self) -> dict[int, Path]:
        """The P#######.PEN files of the solicitudes directory, by game number."""
        found: dict[int, Path] = {}
        try:
            entries = sorted(self.source.solicitudes.iterdir())
        except OSError as e:
            self.problems.append(
                Problem(
                    self.shown(self.source.solicitudes),
                    None,
                    f"cannot be read: {e.strerror or e}: no moves nor challenges imported",
                )
            )
            return found
        for p in entries:
            game_id = game_file_id(p.name)
            if game_id is not None and p.is_file():
                found.setdefault(game_id, p)
        return found

    def _compare_moves(self, games: list[PlannedGame]) -> None:
        """A game imported before is not written again: a moves file whose moves are no
        longer those the game holds here (corrected since, or the game taken back) is
        reported, so that its game is not taken for one imported as the file now reads."""
        if not games:
            return
        with self.db.reading() as tx:
            held = imported.moves_played(tx, [g.game_id for g in games])
        for g in games:
            here = held[g.game_id]
            ply = next(
                (i + 1 for i, m in enumerate(g.moves) if i >= len(here) or here[i] != m.jugada),
                None,
            )
            if ply is not None:
                file = self.shown(self.source.solicitudes / game_file_name(g.game_id))
                self.problems.append(
                    Problem(
                        file,
                        None,
                        f"{g.pid} was imported before and differs from this file from ply "
                        f"{ply}: not imported again",
                    )
                )

    def _plan(self, game: OldGame, moves_files: dict[int, Path], est: str) -> PlannedGame | Problem:
        """The game as it is to be stored, or why it cannot be imported."""
        pid = format_partida(game.game_id)
        missing = [n for n in (game.white, game.black) if n not in self.ours]
        if missing:
            who = " and ".join(f"'{n}'" for n in missing)
            return Problem(
                est,
                game.line,
                f"{pid}: {who} {'is' if len(missing) == 1 else 'are'} not a user imported "
                "from usuarios: skipped",
            )
        path = moves_files.get(game.game_id)
        name = self.shown(self.source.solicitudes / game_file_name(game.game_id))
        if path is None:
            return Problem(est, game.line, f"{pid}: no {name}: skipped")
        try:
            pen: PenFile = parse_pen(self.source.lines(path), self.shown(path))
        except OSError as e:
            return Problem(est, game.line, f"{pid}: {name} cannot be read ({e.strerror}): skipped")
        except Unreadable as e:
            return Problem(est, game.line, f"{pid}: {e.problem}: skipped")
        return plan_game(game, pen, self.shown(path))

    def _decide_games(self, tx: Tx, batch: Sequence[PlannedGame], file: str) -> Decisions:
        there = imported.games_numbered(tx, [g.game_id for g in batch])
        purged = imported.games_purged(tx, [g.game_id for g in batch])
        known = _games_recorded(tx, batch)
        playing = imported.active_pairs(tx, [n for g in batch for n in (g.white, g.black)])
        # Each pair with an active game, and its number.
        pairs = playing | self.pairs
        out = Decisions()
        for g in batch:
            found = there.get(g.game_id)
            pair = frozenset((g.white, g.black))
            if _gone(g, there, known, purged, ours=True):
                out.already.append(g)
                out.reported.append(_purged_problem(file, g.line, g.game_id))
            elif g.game_id in known or found == (g.white, g.black, g.created_at):
                out.already.append(g)
            elif found is not None:
                out.skipped.append(
                    Problem(
                        file,
                        g.line,
                        f"{g.pid}: the number is another game's in the store "
                        f"({found[0]} - {found[1]}): skipped",
                    )
                )
            elif g.status == STATUS_ACTIVE and pair in pairs:
                out.skipped.append(
                    Problem(
                        file,
                        g.line,
                        f"{g.pid}: '{g.white}' and '{g.black}' have another active game "
                        f"({format_partida(pairs[pair])}); this server allows one at a time: "
                        "skipped",
                    )
                )
            else:
                out.new.append(g)
                if g.status == STATUS_ACTIVE:
                    pairs[pair] = g.game_id
        return out

    def _reserve_numbers(self, highest: int) -> None:
        """New games get numbers above the old sequence and every imported game's, taken
        before any game is written: a server running meanwhile cannot take one."""
        top = max(self.sequence or 0, highest)
        with self.db.reading() as tx:
            last = self.db.last_ids(tx.conn)["games"]
        if top > last and not self.dry_run:
            with self.db.write() as tx:
                last = self.db.last_ids(tx.conn)["games"]
                if top > last:
                    self.db.continue_ids(tx.conn, {"games": top})
        self.next_game = max(top, last) + 1

    # -- challenges ------------------------------------------------------------------------

    def _challenges(self) -> None:
        src = self.source
        found: list[OldChallenge] = []
        try:
            entries = sorted(src.solicitudes.iterdir())
        except OSError:
            return  # reported with the moves files
        for p in entries:
            if (
                not p.is_file()
                or p.name.startswith(".")
                or p.name.lower() in NOT_CHALLENGES
                or game_file_id(p.name) is not None
            ):
                continue
            file = self.shown(p)
            try:
                challenges, problems = parse_challenges(src.lines(p), file, p.name)
            except OSError as e:
                self.problems.append(Problem(file, None, f"cannot be read: {e.strerror or e}"))
                continue
            except Unreadable as e:
                self.problems.append(e.problem)
                continue
            self._unread(self.challenges, problems)
            if p.name not in self.ours:
                self.challenges.skipped += len(challenges)
                self.problems.append(
                    Problem(
                        file,
                        None,
                        f"'{p.name}' is not a user imported from usuarios: "
                        f"{count(len(challenges), 'challenge')} to them skipped",
                    )
                )
                continue
            for c in challenges:
                if c.challenger in self.ours:
                    found.append(c)
                else:
                    self.challenges.skipped += 1
                    self.problems.append(
                        Problem(
                            file,
                            c.line,
                            f"'{c.challenger}' is not a user imported from usuarios: skipped",
                        )
                    )
        found = self._first_of_each_pair(found)
        for done, batch in _batches(found, CHALLENGE_BATCH):

            def decide(tx: Tx, part: list[OldChallenge]) -> Decisions:
                return self._decide_challenges(tx, part)

            def write(tx: Tx, rows: list[object]) -> None:
                chosen = [c for c in rows if isinstance(c, OldChallenge)]
                ids = imported.user_ids(
                    tx, [n for c in chosen for n in (c.challenger, c.challenged)]
                )
                imported.add_challenges(
                    tx, [(ids[c.challenger], ids[c.challenged]) for c in chosen]
                )
                imported.record(
                    tx, imported.CHALLENGE, [(c.challenger, c.challenged) for c in chosen]
                )

            result = self._written(
                batch, decide, write, lambda c: f"challenge of '{c.challenger}' to '{c.challenged}'"
            )
            self._count(self.challenges, result, None)
            self._show("challenges", done, len(found), CHALLENGE_BATCH)

    def _first_of_each_pair(self, challenges: list[OldChallenge]) -> list[OldChallenge]:
        """The first challenge of each pair of users, either way; the others are skipped,
        by the files alone, so that every run reports them alike."""
        first: dict[frozenset[str], OldChallenge] = {}
        for c in challenges:
            pair = frozenset((c.challenger, c.challenged))
            made = first.setdefault(pair, c)
            if made is not c:
                self.challenges.skipped += 1
                self.problems.append(
                    Problem(
                        self.shown(self.source.solicitudes / c.challenged),
                        c.line,
                        f"'{made.challenger}' challenged '{made.challenged}' already "
                        f"({self.shown(self.source.solicitudes / made.challenged)}:"
                        f"{made.line}): skipped",
                    )
                )
        return list(first.values())

    def _decide_challenges(self, tx: Tx, batch: Sequence[OldChallenge]) -> Decisions:
        names = [n for c in batch for n in (c.challenger, c.challenged)]
        there = imported.challenges_among(tx, names)
        known = imported.recorded(tx, imported.CHALLENGE, [c.challenger for c in batch])
        closed = imported.closed_accounts(tx, names)
        playing = set(self.pairs) | set(imported.active_pairs(tx, names))
        out = Decisions()
        for c in batch:
            pair = frozenset((c.challenger, c.challenged))
            file = self.shown(self.source.solicitudes / c.challenged)
            found = there.get(pair)
            left = [n for n in (c.challenger, c.challenged) if n in closed]
            if (c.challenger, c.challenged) in known:
                out.already.append(c)
                if found != (c.challenger, c.challenged):
                    out.reported.append(
                        Problem(
                            file,
                            c.line,
                            f"challenge of '{c.challenger}' to '{c.challenged}': closed since "
                            "it was imported (answered, withdrawn, or a player left): not "
                            "imported again",
                        )
                    )
            elif found == (c.challenger, c.challenged):
                out.already.append(c)
            elif left:
                who = " and ".join(f"'{n}'" for n in left)
                accounts = "the account of" if len(left) == 1 else "the accounts of"
                out.skipped.append(
                    Problem(
                        file,
                        c.line,
                        f"{accounts} {who} {'is' if len(left) == 1 else 'are'} closed: "
                        "challenge skipped",
                    )
                )
            elif found is not None:
                out.skipped.append(
                    Problem(
                        file,
                        c.line,
                        f"'{found[0]}' has challenged '{found[1]}' already: this challenge skipped",
                    )
                )
            elif pair in playing:
                out.skipped.append(
                    Problem(
                        file,
                        c.line,
                        f"'{c.challenger}' and '{c.challenged}' have an active game: "
                        "challenge skipped",
                    )
                )
            else:
                out.new.append(c)
        return out

    # -- writing and reporting -------------------------------------------------------------

    def _written(
        self,
        rows: Sequence[T],
        decide: Callable[[Tx, list[T]], Decisions],
        write: Callable[[Tx, list[object]], None],
        label: Callable[[T], str],
    ) -> Decisions:
        """Decide again and write ``rows`` in one transaction (a dry run only decides);
        if the store refuses the batch (a row made meanwhile by somebody else), each
        row alone, those refused then skipped."""
        if not rows:
            return Decisions()
        if self.dry_run:
            with self.db.reading() as tx:
                return decide(tx, list(rows))
        try:
            with self.db.write() as tx:
                out = decide(tx, list(rows))
                write(tx, out.new)
            return out
        except Conflict:
            pass
        total = Decisions()
        for row in rows:
            try:
                with self.db.write() as tx:
                    out = decide(tx, [row])
                    write(tx, out.new)
            except Conflict:
                why = "the store refused it (made meanwhile by somebody else?): skipped"
                out = Decisions(skipped=[Problem("store", None, f"{label(row)}: {why}")])
            total.new += out.new
            total.already += out.already
            total.skipped += out.skipped
            total.reported += out.reported
        return total

    def _unread(self, tally: Tally, problems: list[Problem]) -> None:
        """A file's lines that could not be read: each a row skipped."""
        tally.skipped += sum(1 for p in problems if p.line is not None)
        self.problems += problems

    def _count(self, tally: Tally, result: Decisions, before: Decisions | None) -> None:
        """Add a batch's outcome; ``before``: the decisions of the read before hashing,
        whose rows found there already were not written again."""
        tally.imported += len(result.new)
        tally.already += len(result.already) + (len(before.already) if before else 0)
        skipped = result.skipped + (before.skipped if before else [])
        tally.skipped += len(skipped)
        self.problems += skipped + result.reported + (before.reported if before else [])

    def _show(self, kind: str, done: int, total: int, batch: int) -> None:
        if total > batch:
            self.progress(f"{kind} {done}/{total}")

    def _finish(self) -> None:
        with self.db.reading() as tx:
            last = self.db.last_ids(tx.conn)["games"]
        self.next_game = max(self.next_game, last + 1)
        if self.dry_run or not self.written:
            return
        with self.db.write() as tx:
            tx.audit(self.by, AUDIT_ACTION, str(self.source.base)[-64:], self.summary())

    @property
    def written(self) -> int:
        return sum(
            t.imported for t in (self.users, self.subscriptions, self.games, self.challenges)
        )

    def summary(self) -> str:
        """The counts on one line, for the audit trail."""
        d = self.dry_run
        return (
            f"users {self.users.text(d)}; subscription requests {self.subscriptions.text(d)}; "
            f"games {self.games.text(d)}; challenges {self.challenges.text(d)}; "
            f"next game {format_partida(self.next_game)}"
        )

    def report(self) -> list[str]:
        d = self.dry_run
        lines = [f"ESPOL data: {self.source.config}"]
        if d:
            lines.append("dry run: nothing is written; the counts are what an import would do")
        for title, items in (
            (
                "games that do not replay (imported up to their last legal move):",
                self.not_replaying,
            ),
            ("games finished on import:", self.ended),
            ("other changes made on import:", self.changes),
            ("not imported:", [str(p) for p in sorted(self.problems, key=_order)]),
        ):
            if items:
                lines.append(title)
                lines += [f"  {item}" for item in items]
        replaying = f"{len(self.not_replaying)} not replaying, {len(self.ended)} finished on import"
        lines += [
            f"users: {self.users.text(d)}",
            f"subscription requests: {self.subscriptions.text(d)}",
            f"games: {self.games.text(d)} ({replaying})",
            f"challenges: {self.challenges.text(d)}",
            f"next game number: {format_partida(self.next_game)}",
        ]
        return lines


def _write_accounts(hashes: dict[str, str], tx: Tx, rows: list[object]) -> None:
    users = [u for u in rows if isinstance(u, OldUser)]
    imported.add_accounts(tx, [(u.name, hashes[u.name], u.comment, u.fecha, u.wins) for u in users])
    imported.record(tx, imported.USER, [(u.name, "") for u in users])


def _write_requests(hashes: dict[str, str], tx: Tx, rows: list[object]) -> None:
    requests = [s for s in rows if isinstance(s, OldSubscription)]
    imported.add_requests(tx, [(s.name, hashes[s.name], s.comment) for s in requests])
    imported.record(tx, imported.REQUEST, [(s.name, "") for s in requests])


def _games_recorded(tx: Tx, games: Sequence[OldGame | PlannedGame]) -> set[int]:
    """The numbers of these games recorded as imported."""
    numbers = {format_partida(g.game_id): g.game_id for g in games}
    return {numbers[n] for n, _ in imported.recorded(tx, imported.GAME, list(numbers))}


def _gone(
    game: OldGame | PlannedGame,
    there: dict[int, tuple[str, str, int]],
    known: set[int],
    purged: dict[int, set[str]],
    ours: bool,
) -> bool:
    """Was this game imported and purged since? Recorded as imported and no longer
    here; or, imported before imports were recorded, purged with both its players."""
    if game.game_id in known:
        return game.game_id not in there
    return ours and game.game_id not in there and _purged(game, purged)


def _purged(game: OldGame | PlannedGame, purged: dict[int, set[str]]) -> bool:
    """Was this game imported (or played) and purged since? Both its players were told of
    the purge of its number: a game this server numbered so before the import and
    purged was another pair's."""
    return {game.white, game.black} <= purged.get(game.game_id, set())


def _purged_problem(file: str, line: int, game_id: int) -> Problem:
    pid = format_partida(game_id)
    return Problem(file, line, f"{pid}: purged since it was imported: not imported again")


def _by_line(rows: list[object]) -> list[object]:
    """Rows of one file in the order of their lines."""
    return sorted(rows, key=lambda r: getattr(r, "line", 0))


def _order(p: Problem) -> tuple[str, int]:
    return p.file, p.line or 0


def _batches(rows: Sequence[T], size: int) -> Iterator[tuple[int, list[T]]]:
    """(rows done once this batch is, the batch)."""
    for start in range(0, len(rows), size):
        batch = list(rows[start : start + size])
        yield start + len(batch), batch


def _hashed(passwords: dict[str, str]) -> dict[str, str]:
    """Each password's argon2 hash, by name, on every processor (argon2 leaves Python's
    lock while it works)."""
    if not passwords:
        return {}
    names = list(passwords)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        hashes = list(pool.map(hash_password, [passwords[n] for n in names]))
    return dict(zip(names, hashes, strict=True))
