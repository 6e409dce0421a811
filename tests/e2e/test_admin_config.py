"""ajedrez-admin reads the server's settings file: given the same file (``--config``, or
``AJEDREZ_CONFIG`` in the environment of both), the server and ajedrez-admin open the
same database, on the store under test, whatever ``$HOME`` and ``AJEDREZ_DATABASE_URL``
say (docs/operations.md, "One database for the server and ajedrez-admin")."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ajedrez.domain.accounts import Accounts
from tests.support.admin import assert_error
from tests.support.admin import tcp_login as login
from tests.support.common import PASSWORD, ROOT, unique_name
from tests.support.server import ServerProcess, start_server

S_PASSWD = 102


@pytest.fixture
def settings(tmp_path: Path, own_db) -> Path:
    """The server's settings file, naming the test's own database."""
    path = tmp_path / "ajedrez.toml"
    path.write_text(f'database_url = "{own_db[0]}"\nlog_level = "INFO"\n')
    return path


@pytest.fixture
def elsewhere(tmp_path: Path) -> dict[str, str]:
    """An environment whose home and AJEDREZ_DATABASE_URL name other databases: what a
    command that ignored the settings file would open instead."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "AJEDREZ_CONFIG"}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        AJEDREZ_DATABASE_URL=f"sqlite:///{tmp_path / 'not-this-one.sqlite3'}",
    )
    return env


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for srv in started:
        srv.stop()


def admin(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ajedrez.admin.cli", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def in_settings_database(own_db, name: str) -> bool:
    return name in {u.name for u in Accounts(own_db[1]).list_users()}


def test_given_config_both_open_the_same_database(settings, elsewhere, servers, own_db):
    srv = start_server(None, "--config", str(settings), env=elsewhere)
    servers.append(srv)
    name = unique_name("cf")
    done = admin(
        elsewhere,
        "--config",
        str(settings),
        "users",
        "add",
        name,
        "--password-stdin",
        stdin=PASSWORD + "\n",
    )
    assert done.returncode == 0, done.stderr
    assert login(srv, name, PASSWORD) == (101, S_PASSWD)
    assert in_settings_database(own_db, name)
    assert not (Path(elsewhere["HOME"]) / "data").exists()  # the default was not opened


def test_ajedrez_config_in_the_environment_of_both(settings, elsewhere, servers, own_db):
    env = {**elsewhere, "AJEDREZ_CONFIG": str(settings)}
    srv = start_server(None, env=env)
    servers.append(srv)
    name = unique_name("ce")
    done = admin(env, "users", "add", name, "--password-stdin", stdin=PASSWORD + "\n")
    assert done.returncode == 0, done.stderr
    assert login(srv, name, PASSWORD) == (101, S_PASSWD)
    assert in_settings_database(own_db, name)
    listed = admin(env, "users", "list")
    assert listed.returncode == 0, listed.stderr
    assert any(line.split()[0] == name for line in listed.stdout.splitlines()[1:])


def test_the_command_line_wins_over_the_settings_file(settings, elsewhere, tmp_path):
    other = tmp_path / "given.sqlite3"
    env = {**elsewhere, "AJEDREZ_CONFIG": str(settings)}
    done = admin(env, "--database-url", f"sqlite:///{other}", "users", "list")
    assert_error(done, 3, f"no database file at {other} (from --database-url)")


def test_a_settings_file_the_server_would_refuse_is_refused(elsewhere, tmp_path):
    missing = tmp_path / "missing.toml"
    done = admin(elsewhere, "--config", str(missing), "users", "list")
    assert_error(done, 2, f"cannot read {missing}", "from --config")
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('database_url = "sqlite:////nowhere.sqlite3"\nmax_lines = 3\n')
    env = {**elsewhere, "AJEDREZ_CONFIG": str(wrong)}
    done = admin(env, "users", "list")
    assert_error(done, 2, "unknown setting(s): max_lines", "from AJEDREZ_CONFIG")
    server = subprocess.run(
        [sys.executable, "-m", "ajedrez", "--port", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert server.returncode == 2, server.stderr
    assert "unknown setting(s): max_lines" in server.stderr
