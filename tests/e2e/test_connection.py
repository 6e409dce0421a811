"""The transport's connection (``ajedrez/espol/connection.py``) over real sockets: lines queued
behind one that waits for storage, a client that half-closes, a client that does not
read its replies, and a client that leaves while its move is being written."""

from __future__ import annotations

import socket

import chess

from tests.support.common import wait_for
from tests.support.play import jgda, start_match


def test_lines_behind_a_move_are_answered_after_it_in_order(login, new_user):
    m = start_match(login, new_user)
    e4, e5 = chess.Move.from_uci("e2e4"), chess.Move.from_uci("e7e5")
    # The JGDA waits for its write; the SPAR, STAT and HELP sent with it wait behind it
    # and must see the stored move.
    m.w.send_raw(
        f"{jgda(m.pid, 1, e4)}\r\nSPAR:{m.pid}:0\r\nSTAT:{m.pid}\r\nHELP:JGDA\r\n".encode()
    )
    assert m.w.reply().code == 208
    spar = m.w.reply()
    assert (spar.code, spar.text) == (207, "1:e2e4:0:1228:0")
    stat = m.w.reply()
    assert stat.code == 206 and stat.text.endswith(":2")  # the next ply
    assert m.w.reply().code == 110
    m.board.push(e4)
    m.play("e7e5")
    assert m.b.cmd(f"SPAR:{m.pid}:1").text == f"2:e7e5:0:{e5.from_square}{e5.to_square}:0"


def test_a_half_closed_client_gets_every_reply_then_the_server_closes(server, login, new_user):
    m = start_match(login, new_user)
    m.w.send_raw(f"{jgda(m.pid, 1, chess.Move.from_uci('e2e4'))}\r\nSTAT:{m.pid}\r\n".encode())
    m.w.sock.shutdown(socket.SHUT_WR)
    assert m.w.reply().code == 208
    assert m.w.reply().code == 206
    assert m.w.is_closed()
    assert m.b.cmd(f"SPAR:{m.pid}:0").text == "1:e2e4:0:1228:0"


def test_a_client_that_does_not_read_its_replies_is_not_read_either(server, login, new_user):
    """The server stops taking lines from a client whose replies pile up, so the
    client's own sends block: a reader that never reads cannot fill the server's memory."""
    c = login(new_user())
    c.sock.settimeout(2.0)
    chunk = b"HELP\r\n" * 10_000  # 60 KB of requests, each answered with ~2 KB of help
    sent = 0
    blocked = False
    while sent < 200_000_000:
        try:
            c.sock.sendall(chunk)
        except TimeoutError:
            blocked = True
            break
        sent += len(chunk)
    assert blocked, f"the server took {sent} bytes of requests without their replies leaving"
    # Everyone else is still served.
    other = login(new_user())
    assert other.cmd("HELP:STAT").code == 110
    c.close()
    assert other.cmd("HELP:STAT").code == 110


def test_a_client_gone_before_its_move_is_answered_leaves_the_move_stored(server, login, new_user):
    m = start_match(login, new_user)
    m.w.send_raw(f"{jgda(m.pid, 1, chess.Move.from_uci('e2e4'))}\r\n".encode())
    m.w.close()
    assert wait_for(lambda: m.b.cmd(f"SPAR:{m.pid}:0").code == 207)
    again = login(m.white)
    assert again.cmd(f"STAT:{m.pid}").text.endswith(":2")
    assert server.proc.poll() is None


def test_many_lines_in_one_packet_while_a_move_waits(login, new_user):
    """A long pipeline behind a waiting move: every line is answered, in order."""
    m = start_match(login, new_user)
    lines = [jgda(m.pid, 1, chess.Move.from_uci("e2e4"))] + [f"STAT:{m.pid}"] * 500
    m.w.send_raw(("\r\n".join(lines) + "\r\n").encode())
    assert m.w.reply().code == 208
    for _ in range(500):
        r = m.w.reply()
        assert r.code == 206 and r.text.endswith(":2")
    assert m.w.cmd("HELP:QUIT").code == 110
