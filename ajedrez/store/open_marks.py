"""SQLite: notice a write-ahead log deleted after an unclean stop.

A SQLite database in WAL mode keeps its latest commits in ``<database>-wal`` until they
are copied into the database file (a checkpoint). The last connection to close does that
copy and deletes the WAL; a process killed (SIGKILL, a power cut) leaves it behind, and
the next connection replays it. Deleting it then silently drops those commits, moves
acknowledged to players among them, and leaves a database that looks sound.

Every process that opens the database marks it: a file in ``<database>-open/``, locked
(``flock``) for as long as the process lives and removed when it closes the database
(``Database.dispose``) or exits normally. The kernel drops the lock of a process that
dies, so a marker nobody holds is a process killed with the database open. At the start, before this
process's first connection (which would create a new, empty WAL): markers left by dead
processes, none held by a live one, and no WAL file mean that the WAL was removed after
an unclean stop. The process that closes the database last, with no other marker held,
removes the dead ones' markers too: its own close copied their commits as well.

Markers are a diagnosis, never a condition: a marker that cannot be written or read is
skipped, and the database opens as before.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import secrets
from pathlib import Path

log = logging.getLogger("ajedrez.storage")


class OpenMarks:
    def __init__(self, database: Path) -> None:
        self.database = database
        self.directory = database.with_name(database.name + "-open")
        self.wal = database.with_name(database.name + "-wal")
        self._fd: int | None = None
        self._path: Path | None = None
        self._pid = 0

    def check(self) -> bool:
        """Before this process's first connection: warn (and return True) if the WAL was
        removed after the database was last used by a process that did not close it."""
        if not self.database.exists():
            return False
        held, dead = self._others()
        for fd, _path in dead:
            os.close(fd)
        if held or not dead or self.wal.exists():
            return False
        log.warning(
            "%s: its write-ahead log %s is missing, yet the process that last used the "
            "database did not stop cleanly: the log was probably deleted, and with it every "
            "write not yet copied into the database, acknowledged moves included; never "
            "delete a -wal file (docs/operations.md, 'Backups and restore')",
            self.database,
            self.wal.name,
        )
        return True

    def mark(self) -> None:
        """After a connection opened: mark the database open by this process, once."""
        if self._pid == os.getpid():
            return
        if self._fd is not None:  # a parent's, after a fork: closing this copy keeps its lock
            os.close(self._fd)
        self._fd = self._path = None
        self._pid = os.getpid()
        name = f"{self._pid}-{secrets.token_hex(4)}"
        hidden = self.directory / f".{name}"
        try:
            self.directory.mkdir(exist_ok=True)
            fd = os.open(hidden, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                # Shown only once locked, so no other process ever takes it for a dead one.
                os.rename(hidden, self.directory / name)
            except OSError:
                os.close(fd)
                with contextlib.suppress(OSError):
                    hidden.unlink()
                raise
        except OSError as e:
            log.debug("cannot mark %s open in %s: %s", self.database, self.directory, e)
            return
        self._fd, self._path = fd, self.directory / name
        # A process that exits without dispose() still exits: its connections close (the
        # WAL copied) or its WAL stays for the next one; a marker left would be a false alarm.
        atexit.register(self.unmark)

    def unmark(self) -> None:
        """After this process closed its connections: remove its marker and, if no other
        live process holds one, the markers of dead processes."""
        if self._fd is None or self._path is None or self._pid != os.getpid():
            return
        fd, path = self._fd, self._path
        self._fd = self._path = None
        try:
            held, dead = self._others(besides=path)
            for other_fd, other in dead:
                if not held:
                    with contextlib.suppress(OSError):
                        other.unlink()  # locked meanwhile: a look at it now finds it live
                os.close(other_fd)
            with contextlib.suppress(OSError):
                path.unlink()
        finally:
            os.close(fd)

    def in_use(self) -> bool:
        """Does a live process other than this one have the database open (a server,
        its workers, ajedrez-admin)? What ``db restore`` refuses."""
        held, dead = self._others(besides=self._path)
        for fd, _path in dead:
            os.close(fd)
        return held

    def _others(self, besides: Path | None = None) -> tuple[bool, list[tuple[int, Path]]]:
        """Is any marker held by a live process; and the dead ones' markers, each with a
        descriptor that holds its lock (for the caller to close)."""
        held = False
        dead: list[tuple[int, Path]] = []
        try:
            entries = [p for p in self.directory.iterdir() if not p.name.startswith(".")]
        except OSError:
            return False, []
        for path in entries:
            if path == besides:
                continue
            try:
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            except OSError:
                continue  # removed meanwhile: its process closed the database
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                held = True
                continue
            dead.append((fd, path))
        return held, dead
