"""Helpers for the client tests: run the ``ajedrez`` command as a user would.

Each :class:`Machine` is one user's terminal on one computer: a data directory and a
config directory of its own, so two machines of the same user share nothing but the
server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import chess
import pytest

from tests.support.common import PASSWORD, ROOT


@dataclass(frozen=True)
class Run:
    rc: int
    out: str
    err: str


@dataclass
class Machine:
    address: str
    user: str
    home: Path
    password: str = PASSWORD

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    def env(self, password: str | None) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("AJEDREZ_PASSWORD", "AJEDREZ_SERVER", "AJEDREZ_USER", "AJEDREZ_CONFIG")
        }
        env["XDG_CONFIG_HOME"] = str(self.home / "config")
        env["XDG_DATA_HOME"] = str(self.home / "xdg-data")
        env["PYTHONIOENCODING"] = "utf-8"
        # Login tokens go to the machine's own config directory, never to the keyring of
        # whoever runs the tests.
        env["AJEDREZ_KEYRING"] = "no"
        if password is not None:
            env["AJEDREZ_PASSWORD"] = password
        return env

    def run(
        self,
        *args: str,
        password: str | None = "",
        stdin: str | None = None,
        ok: bool = True,
        options: bool = True,
    ) -> Run:
        """``ajedrez --server ... --user ... --data-dir ... ARGS``; checks exit 0 if ``ok``."""
        pw = self.password if password == "" else password
        head = (
            ["--server", self.address, "--user", self.user, "--data-dir", str(self.data_dir)]
            if options
            else []
        )
        proc = subprocess.run(
            [sys.executable, "-m", "ajedrez.client.cli", *head, *args],
            cwd=ROOT,
            env=self.env(pw),
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
        )
        result = Run(proc.returncode, proc.stdout, proc.stderr)
        if ok:
            assert result.rc == 0, (args, result)
        return result

    __call__ = run

    def fail(self, *args: str, rc: int | None = None, **kw: object) -> Run:
        result = self.run(*args, ok=False, **kw)  # type: ignore[arg-type]
        assert result.rc != 0, (args, result)
        if rc is not None:
            assert result.rc == rc, (args, result)
        assert "Traceback" not in result.err, result.err
        assert len(result.err.strip().splitlines()) == 1, result.err
        return result


MachineFactory = Callable[..., Machine]


@pytest.fixture
def machine(server, tmp_path: Path) -> MachineFactory:
    """``machine(user, name="m1", srv=server)``: a terminal of ``user`` on its own disk."""

    def make(user: str, name: str | None = None, srv=None) -> Machine:
        srv = srv or server
        home = tmp_path / (name or user)
        home.mkdir(parents=True, exist_ok=True)
        return Machine(f"{srv.host}:{srv.port}", user, home)

    return make


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def play_game(
    white: Machine,
    black: Machine,
    gid: str,
    sans: list[str],
    *,
    coordinates: tuple[bool, bool] = (False, False),
) -> chess.Board:
    """Play ``sans`` through the command, white and black in turn. With
    ``coordinates[i]`` that side types coordinates (``e2e4``, ``e7e8q``) instead of SAN."""
    board = chess.Board()
    for i, san in enumerate(sans):
        side = i % 2
        mover = (white, black)[side]
        move = board.parse_san(san)
        typed = move.uci() if coordinates[side] else san
        result = mover("move", gid, typed)
        assert f"({move.uci()[:4]})" in result.out, result
        board.push(move)
    return board


def start_game(white: Machine, black: Machine) -> str:
    """``black`` challenges ``white``, who accepts playing white: returns the game id."""
    black("challenge", white.user)
    white("sync")
    out = white("accept", black.user, "--color", "B").out
    gid = out.split("Game ", 1)[1].split(" ", 1)[0]
    assert gid.startswith("P") and len(gid) == 8, out
    return gid
