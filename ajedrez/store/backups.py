"""What the backups of both stores share (``ajedrez-admin db backup`` and ``db restore``;
each store's own way is in ``sqlite_backup.py`` and ``postgres_backup.py``): the
refusals, the file being written, and the external programs PostgreSQL's need.

A backup is written under a temporary name beside its file (``.<name>.partial-<random>``,
readable by its owner alone: it holds password hashes) and linked to its name only once
complete, so a backup cut off (a full disk, a kill) never looks complete, and an existing
file is never overwritten, not even one that appeared meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import URL

# A line of progress for the operator ("copied 1,024 of 9,000 pages").
Progress = Callable[[str], None]
# Ask the operator; returns only if the answer is yes.
Confirm = Callable[[str], None]


class Refused(Exception):
    """The backup or restore was not done, and nothing was changed: the message says why."""


class ToolMissing(Refused):
    """A program the operation runs (pg_dump, pg_restore, psql) is not installed."""


@contextmanager
def written(file: Path) -> Iterator[Path]:
    """The temporary path to write ``file``'s content to; once the block ends without
    an error it becomes ``file``, made durable. Refused when ``file`` exists."""
    try:
        exists = file.exists() or file.is_symlink()
        directory = file.parent.is_dir()
    except OSError as e:  # a directory on the way this user may not enter
        raise Refused(f"cannot write in {file.parent}: {e.strerror or e}") from None
    if exists:
        raise Refused(f"{file} already exists: name a new file (a backup never replaces one)")
    if not directory:
        raise Refused(f"no directory {file.parent} for the backup")
    partial = file.with_name(f".{file.name}.partial-{secrets.token_hex(4)}")
    try:
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as e:
        raise Refused(f"cannot write in {file.parent}: {e.strerror or e}") from None
    try:
        yield partial
        _fsync(partial)
        try:
            os.link(partial, file)  # unlike a rename, never replaces a file of that name
        except FileExistsError:
            raise Refused(f"{file} appeared while the backup was written: kept as it is") from None
        _fsync(file.parent)
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()


def readable(file: Path) -> None:
    """Refused unless ``file`` is a file this process can read."""
    try:
        with file.open("rb"):
            pass
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise Refused(f"no backup file {file}") from None
    except OSError as e:
        raise Refused(f"cannot read {file}: {e.strerror or e}") from None


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(new: Path, path: Path) -> None:
    """Rename ``new`` over ``path`` once its content is on disk, and the rename too."""
    _fsync(new)
    os.replace(new, path)
    _fsync(path.parent)


# -- PostgreSQL's programs ---------------------------------------------------------------


def libpq_target(url: URL) -> tuple[str, str | None]:
    """The URL as a libpq connection string without its password, and the password
    (for the child's ``PGPASSWORD``: never on a command line, where ``ps`` shows it)."""
    from psycopg.conninfo import make_conninfo

    _args, params = url.get_dialect()().create_connect_args(url)
    password = params.pop("password", None)
    return make_conninfo(**{k: str(v) for k, v in params.items()}), password


def program(name: str, command: list[str]) -> str:
    """The path of ``name``, or ToolMissing saying what to install and what to run."""
    found = shutil.which(name)
    if found is None:
        raise ToolMissing(
            f"{name} is not installed here (not on PATH): install PostgreSQL's client "
            f"programs (package postgresql-client, the server's major version or newer) "
            f"and run this again, or run on a machine that has them: {shown(command)}"
        )
    return found


def shown(command: list[str]) -> str:
    """A command line an operator can paste (the password goes in PGPASSWORD)."""
    return "PGPASSWORD=... " + shlex.join(command)


def run(
    command: list[str], password: str | None, progress: Progress | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a PostgreSQL program; its error output is kept (and, with ``progress``, each
    line of it passed on as it comes)."""
    env: Mapping[str, str] = dict(os.environ)
    if password is not None:
        env = {**env, "PGPASSWORD": password}
    if progress is None:
        return subprocess.run(
            command, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
        )
    with subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            progress(line.rstrip("\n"))
        status = proc.wait()
    return subprocess.CompletedProcess(command, status, "", "".join(lines))


def first_error(stderr: str) -> str:
    """The line of a PostgreSQL program's output that says what went wrong."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower() or "fatal" in line.lower():
            return line
    return lines[0] if lines else "no message"
