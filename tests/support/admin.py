"""What the ajedrez-admin tests share: running its main() in this process or the real
program on a terminal of its own, and checks of what it printed and stored."""

from __future__ import annotations

import getpass
import io
import os
import pty
import select as select_fds
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from sqlalchemy import select

from ajedrez.admin.cli import main
from ajedrez.store.models import AdminAudit, User
from tests.support.common import ROOT


@dataclass
class Result:
    status: int
    out: str
    err: str
    prompts: list[str] = field(default_factory=list)  # getpass's, on a terminal


class Terminal(io.StringIO):
    """Standard input as a terminal, holding what the operator types."""

    def isatty(self) -> bool:
        return True


def in_process(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Result]:
    """Run ajedrez-admin's main() in-process: cli(*args, stdin=..., url=...). With
    ``tty=True`` standard input is a terminal and ``typed`` what is typed at getpass's
    prompts (then end of input)."""

    def run(
        *args: str,
        stdin: str = "",
        url: str | None = None,
        tty: bool = False,
        typed: tuple[str, ...] = (),
    ) -> Result:
        monkeypatch.setattr(sys, "stdin", Terminal(stdin) if tty else io.StringIO(stdin))
        prompts: list[str] = []
        answers = iter(typed)

        def fake_getpass(prompt: str = "Password: ", stream: object = None) -> str:
            prompts.append(prompt)
            try:
                return next(answers)
            except StopIteration:
                raise EOFError from None

        monkeypatch.setattr(getpass, "getpass", fake_getpass)
        capsys.readouterr()
        try:
            status = main(["--database-url", url or database_url, *args])
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 1
        out, err = capsys.readouterr()
        return Result(status, out, err, prompts)

    return run


def on_terminal(url: str, *args: str, answers: tuple[tuple[str, str], ...] = ()):
    """Run the real program on a terminal of its own (a pty, its controlling terminal):
    for each (prompt, line) of ``answers``, wait for the prompt, then type the line.
    Returns (exit status, all the terminal showed)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: never back into pytest
        try:
            os.chdir(ROOT)
            argv = [sys.executable, "-m", "ajedrez.admin.cli", "--database-url", url, *args]
            os.execv(sys.executable, argv)
        finally:
            os._exit(127)
    shown = b""
    deadline = time.monotonic() + 60

    def read_more() -> bool:
        nonlocal shown
        ready, _, _ = select_fds.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no output in time; so far: {shown!r}"
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the program has ended and closed the terminal
            return False
        shown += chunk
        return bool(chunk)

    try:
        seen = 0
        for prompt, line in answers:
            while prompt.encode() not in shown[seen:]:
                assert read_more(), f"ended before {prompt!r}: {shown!r}"
            seen = shown.index(prompt.encode(), seen) + len(prompt)
            os.write(fd, line.encode() + b"\n")
        while read_more():
            pass
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), shown.decode().replace("\r\n", "\n")


def assert_ok(r: Result) -> None:
    assert r.status == 0, r
    assert r.err == "", r


def assert_error(r, status: int, *words: str) -> None:
    """Exactly one line on stderr, the given status, no traceback."""
    code = r.status if isinstance(r, Result) else r.returncode
    err = r.err if isinstance(r, Result) else r.stderr
    assert code == status, r
    assert "Traceback" not in err, err
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert lines[0].startswith("ajedrez-admin: "), err
    assert len(lines[0]) > len("ajedrez-admin: ")
    for word in words:
        assert word in lines[0], (word, lines[0])


def answered(r: Result) -> Result:
    """``r`` with only the stderr after its last question: what came of the answer."""
    return Result(r.status, r.out, r.err.rsplit("[y/N] ", 1)[-1].lstrip("\n"), r.prompts)


def listed(r: Result, name: str) -> list[str] | None:
    """The whitespace-split row of ``name`` in a listing, or None."""
    for line in r.out.splitlines()[1:]:
        cols = line.split()
        if cols and cols[0] == name:
            return cols
    return None


def audit_rows(db, *targets: str):
    """The audit trail's rows about ``targets``, oldest first."""
    with db.engine.connect() as conn:
        return conn.execute(
            select(AdminAudit).where(AdminAudit.target.in_(targets)).order_by(AdminAudit.id)
        ).all()


def user_row(db, name: str):
    with db.engine.connect() as conn:
        return conn.execute(select(User).where(User.name == name)).first()


def tcp_login(server, name: str, password: str):
    """(USER reply code, PASS reply code or None) over a fresh connection."""
    with server.connect() as c:
        r = c.cmd(f"USER:{name}")
        if r.code != 101:
            return r.code, None
        return r.code, c.cmd(f"PASS:{password}").code


def pid(game_id: int) -> str:
    """A game's id as the protocol and the admin command write it."""
    return f"P{game_id:07d}"
