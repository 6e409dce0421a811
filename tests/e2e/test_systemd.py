"""Running as a systemd service (docs/operations.md, "Running as a systemd service"): the
shipped unit passes ``systemd-analyze``, its settings file loads, a real server tells
``$NOTIFY_SOCKET`` it is ready once it listens and that it stops on SIGTERM, in one
process and with ``--workers 2``."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.server.settings import load
from tests.support.common import ROOT, unique_name, wait_for
from tests.support.server import start_server

SHIPPED = resources.files("ajedrez.server") / "systemd"
HARDENING = {
    "Type": "notify",
    "User": "ajedrez",
    "ProtectSystem": "strict",
    "PrivateTmp": "yes",
    "NoNewPrivileges": "yes",
    "Restart": "on-failure",
    "KillSignal": "SIGTERM",
    "ProtectHome": "yes",
    "CapabilityBoundingSet": "",
}


def _analyze() -> str:
    found = shutil.which("systemd-analyze")
    assert found, "systemd-analyze is needed (Debian: apt install systemd)"
    return found


def _unit_here(tmp_path: Path) -> Path:
    """The shipped unit, its ExecStart pointed at this checkout's server (verify checks
    that the program exists)."""
    server = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "ajedrez-server"
    if not server.exists():
        server = ROOT / ".venv" / "bin" / "ajedrez-server"
    text = (SHIPPED / "ajedrez.service").read_text()
    unit = tmp_path / "ajedrez.service"
    unit.write_text(text.replace("/opt/ajedrez/bin/ajedrez-server", str(server)))
    return unit


def _directives(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    unit = _unit_here(tmp_path)
    done = subprocess.run(
        [_analyze(), "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr  # no unknown or misspelt directive


def test_the_unit_carries_the_hardening_and_scores_low(tmp_path: Path) -> None:
    unit = _unit_here(tmp_path)
    found = _directives(unit.read_text())
    assert {k: found.get(k) for k in HARDENING} == HARDENING
    done = subprocess.run(
        [_analyze(), "security", "--offline=yes", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    m = re.search(r"Overall exposure level for ajedrez.service: ([0-9.]+)", done.stdout)
    assert m is not None, done.stdout + done.stderr
    assert float(m.group(1)) <= 2.0  # systemd's "OK"; 10 is a unit with no hardening


def test_the_settings_file_loads_as_shipped() -> None:
    settings = load(str(SHIPPED / "ajedrez.toml"), {})
    assert settings.database_url == "sqlite:////var/lib/ajedrez/ajedrez.sqlite3"
    assert settings.metrics_port == 9195
    assert settings.host == "127.0.0.1"


def test_the_shipped_files_are_in_the_package_data() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    for name in ("ajedrez.service", "ajedrez.toml"):
        assert f'"systemd/{name}"' in pyproject
        assert (SHIPPED / name).is_file()


def test_the_unit_points_at_the_docs_the_package_installs(tmp_path: Path) -> None:
    """Documentation= names files under the service's environment (/opt/ajedrez, as
    docs/operations.md makes it), and the built wheel installs each of them there: the
    project's own docs, as in this checkout."""
    documentation = _directives((SHIPPED / "ajedrez.service").read_text())["Documentation"]
    prefix = "file:///opt/ajedrez/"
    uris = documentation.split()
    assert uris and all(u.startswith(prefix) for u in uris), uris
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("ajedrez-*.whl")
    with zipfile.ZipFile(wheel) as built:
        # A wheel's <name>.data/data/ is installed under the environment's prefix.
        data = {n.split("/data/", 1)[1]: n for n in built.namelist() if ".data/data/" in n}
        for uri in uris:
            installed = uri.removeprefix(prefix)
            assert installed in data, (uri, sorted(data))
            shipped = built.read(data[installed]).decode()
            assert shipped == (ROOT / "docs" / Path(installed).name).read_text()


@pytest.fixture
def notify_socket() -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket in the abstract namespace, as systemd gives one."""
    name = f"ajedrez-test-{uuid.uuid4().hex}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(60)
    yield sock, "@" + name
    sock.close()


def _states(sock: socket.socket) -> dict[str, str]:
    data = sock.recv(4096).decode()
    return dict(line.split("=", 1) for line in data.splitlines())


@pytest.mark.parametrize("workers", [1, 2], ids=["one-process", "workers-2"])
def test_ready_once_it_listens_and_stopping_on_sigterm(
    database_url: str, notify_socket: tuple[socket.socket, str], workers: int
) -> None:
    sock, address = notify_socket
    srv = start_server(database_url, "--workers", str(workers), env={"NOTIFY_SOCKET": address})
    try:
        states = _states(sock)
        assert states["READY"] == "1"
        assert states["STATUS"]
        with socket.create_connection((srv.host, srv.port), timeout=10) as client:
            client.sendall(b"HELP\n")
            assert client.recv(3) == b"110"
        srv.proc.send_signal(signal.SIGTERM)
        assert _states(sock)["STOPPING"] == "1"
        assert srv.proc.wait(30) == 0
        # Workers never speak to systemd: the master's READY and STOPPING were all.
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            sock.recv(4096)
    finally:
        srv.stop()


def test_without_notify_socket_nothing_is_sent_and_the_server_serves(
    database_url: str,
) -> None:
    assert "NOTIFY_SOCKET" not in os.environ
    srv = start_server(database_url)
    try:
        assert srv.connect().cmd("HELP").code == 110
    finally:
        srv.stop()
    assert "service manager" not in srv.log_text()


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_every_log_line_is_one_event_and_none_holds_a_password(
    database_url: str, accounts: Accounts, fmt: str
) -> None:
    name, secret = unique_name("lg"), "s3cret-" + uuid.uuid4().hex
    accounts.add_user(name, secret, "")
    srv = start_server(database_url, "--log-format", fmt, "--workers", "2")
    try:
        with srv.connect() as bad:
            assert bad.cmd(f"USER:{name}").code == 101
            assert bad.cmd(f"PASS:{secret}x\nINFO forged line").code == 815
        with srv.connect() as good:
            assert good.cmd(f"USER:{name}").code == 101
            assert good.cmd(f"PASS:{secret}").kind == "S"
        assert wait_for(lambda: f"login {name}" in srv.log_text())
    finally:
        srv.stop()
    lines = srv.log
    assert any("stopped" in line for line in lines)
    for line in lines:
        assert secret not in line
        assert not line.startswith("INFO forged")
        if fmt == "json":
            event = json.loads(line)
            assert {"time", "level", "logger", "process", "pid", "message"} <= set(event)
        else:
            assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ ", line), line
    if fmt == "json":
        processes = {json.loads(line)["process"] for line in lines}
        assert {"main", "worker 1", "worker 2"} <= processes
