"""The client library and the ajedrez command over the server's TLS listener."""

from __future__ import annotations

import ssl

import pytest

from ajedrez.client import Client, ConnectionLost, Unreachable
from ajedrez.client.errors import NotTls
from tests.client.conftest import Machine
from tests.support.common import PASSWORD
from tests.support.server import start_server, tls_port


@pytest.fixture
def tls_server(database_url, tls_certificate):  # type: ignore[no-untyped-def]
    cert, key = tls_certificate
    srv = start_server(
        database_url, "--tls-cert", str(cert), "--tls-key", str(key), "--tls-port", "0"
    )
    yield srv, tls_port(srv), cert
    srv.stop()


def test_library_logs_in_over_tls(tls_server, new_user) -> None:  # type: ignore[no-untyped-def]
    srv, port, cert = tls_server
    name = new_user()
    with Client(srv.host, port, tls=ssl.create_default_context(cafile=str(cert))) as c:
        c.login(name, PASSWORD)
        assert name in c.jaut(0).items


def test_library_refuses_a_server_it_cannot_verify(tls_server) -> None:  # type: ignore[no-untyped-def]
    srv, port, _cert = tls_server
    with pytest.raises(Unreachable, match="TLS handshake failed"):
        Client(srv.host, port, tls=ssl.create_default_context())  # system CAs only


def test_command_syncs_and_plays_over_tls(tls_server, new_user, tmp_path) -> None:  # type: ignore[no-untyped-def]
    srv, port, cert = tls_server
    ana, bob = new_user(), new_user()
    a = Machine(f"{srv.host}:{port}", ana, tmp_path / "a")
    b = Machine(f"{srv.host}:{port}", bob, tmp_path / "b")
    tls = ("--tls-ca", str(cert))
    a(*tls, "challenge", bob)
    b(*tls, "sync")
    gid = b(*tls, "accept", ana, "--color", "N").out.split("Game ", 1)[1].split(" ", 1)[0]
    a(*tls, "move", gid, "e4")
    assert "e2e4" in b(*tls, "show", gid, "--sync").out
    plain = a.fail("sync")  # the TLS port does not speak clear text
    assert "if this is the server's TLS port, add --tls" in plain.err, plain.err


def test_each_mismatch_of_tls_and_port_names_its_likely_cause(tls_server, new_user, tmp_path):  # type: ignore[no-untyped-def]
    srv, port, cert = tls_server
    ana = new_user()
    at_plain = Machine(f"{srv.host}:{srv.port}", ana, tmp_path / "p")
    wrong = at_plain.fail("--tls-ca", str(cert), "sync", rc=3).err
    assert "this port does not speak TLS; leave out --tls" in wrong, wrong
    assert "is it running" not in wrong
    with pytest.raises(NotTls):
        Client(srv.host, srv.port, tls=ssl.create_default_context(cafile=str(cert)))
    with Client(srv.host, port) as c, pytest.raises(ConnectionLost, match="add --tls"):
        c.login(ana, PASSWORD)


def test_moving_to_the_tls_port_keeps_the_local_copy(tls_server, new_user, tmp_path):  # type: ignore[no-untyped-def]
    srv, port, cert = tls_server
    ana, bob = new_user(), new_user()
    plain = Machine(f"{srv.host}:{srv.port}", ana, tmp_path / "a")
    Machine(f"{srv.host}:{srv.port}", bob, tmp_path / "b")("challenge", ana)
    assert bob in plain("challenges", "--sync").out
    tls = Machine(f"{srv.host}:{port}", ana, tmp_path / "a")  # the same machine, the TLS port
    first = tls("--tls-ca", str(cert), "sync")
    hint = f"`ajedrez move-data {srv.host}:{srv.port}` moves it here"
    assert hint in first.err, first.err
    # the copy made by that sync is in the way: the move refuses until it is gone
    refused = tls.fail("move-data", f"{srv.host}:{srv.port}", rc=1).err
    assert "has local data" in refused and "remove it first" in refused, refused
    for made in tls.data_dir.glob(f"*_{port}/{ana}.sqlite3*"):
        made.unlink()
    moved = tls("move-data", f"{srv.host}:{srv.port}")
    assert f"Moved the local data of {ana}" in moved.out
    assert bob in tls("challenges").out  # offline: the copy kept for the plain port
    assert "move-data" not in tls("--tls-ca", str(cert), "sync").err
    gone = plain.fail("games", rc=1).err
    assert "no local data" in gone, gone
