"""``--no-writer-process``: with ``--workers`` on PostgreSQL, each worker commits its own
moves (its writer thread) instead of sending them to one writer process. The setting
exists so that the two can be measured side by side (docs/performance.md); on SQLite,
whose workers always commit their own moves, it changes nothing."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.common import PASSWORD, wait_for
from tests.support.play import challenge_and_accept, stat
from tests.support.server import start_server


def test_without_the_writer_process_each_worker_commits_its_moves(database_url, new_user):
    srv = start_server(database_url, "--workers", "2", "--no-writer-process")
    try:
        assert wait_for(lambda: srv.log_text().count("serving") >= 2), srv.log_text()
        log = srv.log_text()
        assert not re.search(r"the writer process started", log), log
        children = Path(f"/proc/{srv.proc.pid}/task/{srv.proc.pid}/children").read_text()
        assert len(children.split()) == 2  # the two workers, and nothing else
        white, black = new_user("nw"), new_user("nb")
        w, b = srv.connect(), srv.connect()
        for conn, name in ((w, white), (b, black)):
            assert conn.cmd(f"USER:{name}").code == 101
            assert conn.cmd(f"PASS:{PASSWORD}").code == 102
        m = challenge_and_accept(white, w, black, b)
        m.play("f3", "e5", "g4", "Qh4#")
        st = stat(b, m.pid)
        assert (st.status, st.winner, st.next_ply) == (2, 2, 5)
        w.close()
        b.close()
    finally:
        if srv.proc.poll() is None:
            srv.stop()
