"""No password appears in the database, the logs, or any reply.

Distinctive passwords (each one used once, some with non-ASCII letters) go through every
path that carries one: SUBS before and after login (accepted and refused), the approval of
a request, USER/PASS (right, wrong, malformed), UNSU (wrong password, another user's name,
right password), ``ajedrez-admin users add`` and ``users passwd`` (accepted and refused).
Then every column of every row of every table, the raw SQLite files (database and WAL:
freed pages too), the server's log, the admin command's output and every reply received
are searched for each password; none may appear.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

from sqlalchemy import column, inspect, select, table, text

from tests.support.common import PASSWORD, unique_name, wait_for
from tests.support.espol import Conn, Reply
from tests.support.hardening import check_reply, sqlite_path
from tests.support.server import admin


class Recorder:
    """Connections whose every reply is kept (and checked) for the final scan."""

    def __init__(self, server) -> None:  # type: ignore[no-untyped-def]
        self.server = server
        self.replies: list[Reply] = []

    def connect(self) -> Conn:
        recorder = self

        class Recorded(Conn):
            def reply(self) -> Reply:
                r = super().reply()
                check_reply(r)
                recorder.replies.append(r)
                return r

        return Recorded(self.server.host, self.server.port, timeout=40)


def secret(label: str) -> str:
    """A password no other text contains (the throttle's delays are at most 15 s)."""
    return f"{label}-{uuid.uuid4().hex}-Ñandú"


def test_no_password_in_database_logs_or_replies(server, db, database_url):
    rec = Recorder(server)
    log_from = len(server.log)
    pw = {
        k: secret(k)
        for k in (
            "subs-before-login",
            "subs-after-login",
            "subs-refused",
            "admin-add",
            "admin-passwd",
            "admin-passwd-refused",
            "admin-add-refused",
            "pass-wrong",
            "unsu-wrong",
            "unsu-not-self",
        )
    }
    pw["pass-malformed"] = ("malformed-" + uuid.uuid4().hex) * 4  # over 128 characters
    pw["admin-malformed"] = ("admmalformed-" + uuid.uuid4().hex) * 4
    applicant, player = unique_name("sa"), unique_name("sp")
    admin_out: list[str] = []

    def run_admin(*args: str, stdin: str, ok: bool) -> None:
        done = admin(database_url, *args, stdin=stdin + "\n")
        admin_out.extend([done.stdout, done.stderr])
        assert (done.returncode == 0) == ok, (args, done.returncode, done.stderr)

    # The administrator creates accounts and changes a password; refusals too.
    run_admin("users", "add", player, "--password-stdin", stdin=pw["admin-add"], ok=True)
    run_admin("users", "add", player, "--password-stdin", stdin=pw["admin-add-refused"], ok=False)
    run_admin("users", "passwd", player, "--password-stdin", stdin=pw["admin-passwd"], ok=True)
    run_admin(
        "users",
        "passwd",
        unique_name("nobody"),
        "--password-stdin",
        stdin=pw["admin-passwd-refused"],
        ok=False,
    )
    run_admin("users", "passwd", player, "--password-stdin", stdin=pw["admin-malformed"], ok=False)

    # A subscription request before login, approved: its password logs in.
    with rec.connect() as c:
        assert c.cmd(f"SUBS:{applicant}:{pw['subs-before-login']}:a comment").code == 103
        r = c.cmd(f"SUBS:{applicant}:{pw['subs-refused']}:again")
        assert r.code == 816, r
    run_admin("subs", "approve", applicant, stdin="", ok=True)

    # Logins: wrong, malformed, right.
    with rec.connect() as c:
        assert c.cmd(f"USER:{player}").code == 101
        assert c.cmd(f"PASS:{pw['pass-wrong']}").code == 815
        assert c.is_closed()
    with rec.connect() as c:
        assert c.cmd(f"USER:{player}").code == 101
        assert c.cmd(f"PASS:{pw['pass-malformed']}").code == 802
        assert c.is_closed()
    with rec.connect() as c:
        assert c.cmd(f"USER:{applicant}").code == 101
        assert c.cmd(f"PASS:{pw['subs-before-login']}").code == 102
        # SUBS after login, then UNSU: another user's name, a wrong password, the right one.
        assert c.cmd(f"SUBS:{unique_name('sb')}:{pw['subs-after-login']}:").code == 103
        assert c.cmd(f"UNSU:{player}:{pw['unsu-not-self']}").code == 808
        assert c.cmd(f"UNSU:{applicant}:{pw['unsu-wrong']}").code == 815
        assert c.is_closed()  # a wrong password in UNSU is a failed login
    with rec.connect() as c:
        assert c.cmd(f"USER:{applicant}").code == 101
        assert c.cmd(f"PASS:{pw['subs-before-login']}").code == 102  # after the delay
        assert c.cmd(f"UNSU:{applicant}:{pw['subs-before-login']}").code == 104
        assert c.is_closed()
    with rec.connect() as c:
        assert c.cmd(f"USER:{player}").code == 101
        assert c.cmd(f"PASS:{pw['admin-passwd']}").code == 102
        c.send("QUIT")
        assert c.is_closed()

    # Wait until the server has logged the last steps (stderr is read by a thread).
    assert wait_for(lambda: f"login {player}@" in server.log_text(), 15)
    log = "\n".join(server.log[log_from:])
    assert "account closed by its user" in log and "failed login" in log

    found: list[str] = []
    for label, password in pw.items():
        needles = _needles(password)
        for where, haystack in (
            ("server log", log),
            ("admin output", "\n".join(admin_out)),
            ("replies", "\n".join(r.data.decode("utf-8") for r in rec.replies)),
        ):
            found += [f"{label} in {where}" for n in needles if n in haystack]
        found += [f"{label} in table {t}" for t in _tables_holding(db, needles)]
        found += [f"{label} in file {f}" for f in _sqlite_files_holding(database_url, needles)]
    assert not found, found
    assert len(rec.replies) >= 14
    # The scans do see what is there: the user names are in the tables, log and replies.
    assert "users" in _tables_holding(db, [applicant]) and applicant in log
    assert any(applicant in r.data.decode() for r in rec.replies)
    if db.is_sqlite:
        assert _sqlite_files_holding(database_url, [applicant])


def _needles(password: str) -> list[str]:
    """The password, and its long ASCII part alone (in case the non-ASCII tail was cut)."""
    head = password.split("-Ñandú")[0]
    return [password, head] if len(head) >= 16 else [password]


def _tables_holding(db, needles: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
    hits = []
    insp = inspect(db.engine)
    with db.engine.connect() as conn:
        for name in insp.get_table_names():
            cols = [c["name"] for c in insp.get_columns(name)]
            t = table(name, *(column(c) for c in cols))
            for row in conn.execute(select(t)):
                cells = " ".join(str(v) for v in row)
                if any(n in cells for n in needles):
                    hits.append(name)
                    break
        if db.is_sqlite:
            assert conn.execute(text("SELECT count(*) FROM users")).scalar_one() > 0
    return hits


def _sqlite_files_holding(database_url: str, needles: list[str]) -> list[str]:
    path = sqlite_path(database_url)
    if path is None:
        return []
    hits = []
    for suffix in ("", "-wal", "-journal", "-shm"):
        f = Path(path + suffix)
        if f.exists():
            data = f.read_bytes()
            hits += [f.name for n in needles if n.encode("utf-8") in data]
    return hits


def test_no_token_secret_in_database_logs_or_other_replies(server, db, database_url, new_user):
    """A login token's secret (docs/security.md, "Login tokens") is in FICN's reply and
    nowhere else: not in the tables or the SQLite files (only its SHA-256), not in the
    log, not in FICL's reply; nor is a wrong one a client sent."""
    rec = Recorder(server)
    log_from = len(server.log)
    player = new_user("st")
    with rec.connect() as c:
        assert c.cmd(f"USER:{player}").code == 101
        assert c.cmd(f"PASS:{PASSWORD}").code == 102
        made = c.cmd("FICN:secrets test")
        assert made.code == 235
        revoked = c.cmd("FICN:revoked")
        assert revoked.code == 235
    token = made.data.decode().split(":", 1)[1]
    gone_id, gone = revoked.data.decode().split(":", 1)
    wrong = uuid.uuid4().hex + uuid.uuid4().hex[:11]  # 43 characters, as a secret
    with rec.connect() as c:
        assert c.cmd(f"FICH:{player}:{token}").code == 102
        assert c.cmd("FICL").code == 236
        assert c.cmd(f"FICR:{gone_id}").code == 237
    with rec.connect() as c:
        assert c.cmd(f"FICH:{player}:{gone}").code == 854
    with rec.connect() as c:
        assert c.cmd(f"FICH:{player}:{wrong}").code == 854

    assert wait_for(lambda: "failed token login" in server.log_text(), 15)
    log = "\n".join(server.log[log_from:])
    assert f"login {player}@" in log and "(token)" in log
    others = [r for r in rec.replies if r.code != 235]
    found: list[str] = []
    for label, value in (("token", token), ("revoked", gone), ("wrong", wrong)):
        for where, haystack in (
            ("server log", log),
            ("replies", "\n".join(r.data.decode("utf-8") for r in others)),
        ):
            found += [f"{label} in {where}"] if value in haystack else []
        found += [f"{label} in table {t}" for t in _tables_holding(db, [value])]
        found += [f"{label} in file {f}" for f in _sqlite_files_holding(database_url, [value])]
    assert not found, found
    assert "tokens" in _tables_holding(db, [hashlib.sha256(token.encode()).hexdigest()])
