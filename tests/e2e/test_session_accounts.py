"""Accounts over real TCP: subscription requests (SUBS), leaving (UNSU) and the list of
users (JAUT) (contract sections 2, 3 and the session rows of section 4)."""

from __future__ import annotations

import struct
import time

import pytest
from sqlalchemy import select

from ajedrez.domain.passwords import hash_password, verify
from ajedrez.store.models import Subscription, User
from tests.support.common import PASSWORD, unique_name, wait_for
from tests.support.store import insert_users
from tests.support.tcp import (
    FAR_FUTURE,
    FECHA_RE,
    USUARIO_RE,
    assert_failure,
    assert_logged_in,
    assert_usable,
    jaut,
    raw_reply,
    subscription_row,
    user_row,
)

# -- SUBS ----------------------------------------------------------------------------------


def test_subs_stores_a_hashed_request(server, db):
    name = unique_name("subs")
    pw = "Secreto-" + unique_name("pw")
    with server.connect() as c:
        r = c.cmd(f"SUBS:{name}:{pw}:Ana María, Guayaquil")
        assert (r.code, r.data) == (103, b"")
        assert_usable(c)  # before login SUBS does not end the session
    row = subscription_row(db, name)
    assert row is not None
    assert row.comment == "Ana María, Guayaquil"
    assert row.password_hash != pw and pw not in row.password_hash
    assert verify(pw, row.password_hash)[0]
    assert not verify(pw + "x", row.password_hash)[0]
    assert user_row(db, name) is None


def test_subs_longest_valid_line(server, db):
    """32-character name, 128-character password, 200-character comment, all multi-byte
    where allowed: well under the line limit, stored exactly."""
    name = unique_name("long").ljust(32, "L")
    pw = "\U0001f511" * 128
    comment = "\u00f1" * 100 + "\U0001f600" * 100
    line = f"SUBS:{name}:{pw}:{comment}"
    assert len(line.encode()) < 2048
    with server.connect() as c:
        assert c.cmd(line).code == 103
    row = subscription_row(db, name)
    assert row.comment == comment
    assert verify(pw, row.password_hash)[0]


def test_subs_hash_is_salted(server, db):
    a, b = unique_name("salt"), unique_name("salt")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{a}:same password:").code == 103
        assert c.cmd(f"SUBS:{b}:same password:").code == 103
    assert subscription_row(db, a).password_hash != subscription_row(db, b).password_hash


def test_subs_names_unique_regardless_of_case(server, new_user, db):
    name = new_user("case")
    variant = name.upper()
    with server.connect() as c:
        r = c.cmd(f"SUBS:{variant}:clave:")
        assert_failure(r, 816)
        assert r.text == f"the name '{variant}' is taken (as '{name}')"
        assert_failure(c.cmd(f"SUBS:{name}:clave:"), 816)
        assert c.cmd(f"USER:{variant}").code == 814  # login compares names exactly
    assert subscription_row(db, variant) is None
    assert subscription_row(db, name) is None


def test_subs_trailing_colon_is_an_empty_comment(server, db):
    name = unique_name("subs")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:clave:").code == 103
    assert subscription_row(db, name).comment == ""


def test_subs_comment_trailing_colon_ignored(server, db):
    name = unique_name("subs")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:clave:hola:").code == 103
    assert subscription_row(db, name).comment == "hola"


def test_subs_after_login(login, new_user, db):
    c = login(new_user())
    name = unique_name("subs")
    r = c.cmd(f"SUBS:{name}:clave:amigo")
    assert (r.code, r.data) == (103, b"")
    assert subscription_row(db, name).comment == "amigo"
    assert_logged_in(c)


def test_subs_name_of_active_user_taken(server, new_user, db):
    name = new_user()
    with server.connect() as c:
        assert_failure(c.cmd(f"SUBS:{name}:clave:"), 816)
        assert_usable(c)
    assert subscription_row(db, name) is None


def test_subs_name_of_inactive_user_taken(server, new_user, accounts, db):
    name = new_user()
    accounts.remove_user(name)
    with server.connect() as c:
        assert_failure(c.cmd(f"SUBS:{name}:clave:"), 816)
        assert_usable(c)
    assert subscription_row(db, name) is None


def test_subs_requested_twice(server, db):
    name = unique_name("twice")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:clave:first").code == 103
    with server.connect() as c:
        assert_failure(c.cmd(f"SUBS:{name}:other:second"), 816)
        assert_usable(c)
    assert subscription_row(db, name).comment == "first"


def test_password_never_in_clear(server, db, accounts):
    """Neither the database nor the server log holds a password in clear."""
    name = unique_name("clear")
    pw_subs = "ClearSubs-" + unique_name("p")
    pw_user = "ClearUser-" + unique_name("p")
    pw_wrong = "ClearWrong-" + unique_name("p")
    user = unique_name("clear")
    accounts.add_user(user, pw_user, "")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:{pw_subs}:").code == 103
    with server.connect() as c:
        assert c.cmd(f"USER:{user}").code == 101
        assert c.cmd(f"PASS:{pw_user}").code == 102
    with server.connect() as c:
        assert c.cmd(f"USER:{user}").code == 101
        assert_failure(c.cmd(f"PASS:{pw_wrong}"), 815)
    assert wait_for(lambda: f"subscription request for '{name}'" in server.log_text())
    assert wait_for(lambda: f"failed login for '{user}'" in server.log_text())
    log = server.log_text()
    for pw in (pw_subs, pw_user, pw_wrong):
        assert pw not in log
    with db.engine.connect() as conn:
        rows = [*conn.execute(select(User.__table__)), *conn.execute(select(Subscription))]
    dump = "\n".join(repr(tuple(r)) for r in rows)
    assert name in dump and user in dump
    for pw in (pw_subs, pw_user, pw_wrong):
        assert pw not in dump


# -- UNSU ----------------------------------------------------------------------------------


def test_unsu_closes_the_account(server, login, new_user, db):
    name = new_user()
    watcher = login(new_user())
    c = login(name)
    c.send(f"UNSU:{name}:{PASSWORD}")
    assert raw_reply(c) == (b"1040\x00\x00", b"")
    assert c.is_closed()
    row = user_row(db, name)
    assert row is not None and row.active is False
    with server.connect() as again:
        assert_failure(again.cmd(f"USER:{name}"), 814)
        assert again.is_closed()
    _, names, _ = jaut(watcher, "0")
    assert name not in names


def test_unsu_trailing_colon(login, new_user, db):
    name = new_user()
    c = login(name)
    assert c.cmd(f"UNSU:{name}:{PASSWORD}:").code == 104
    assert c.is_closed()
    assert user_row(db, name).active is False


def test_unsu_naming_another_user(login, new_user, db):
    name = new_user()
    other = new_user()
    c = login(name)
    assert_failure(c.cmd(f"UNSU:{other}:{PASSWORD}"), 808)
    assert_failure(c.cmd(f"UNSU:{unique_name('nobody')}:{PASSWORD}"), 808)
    assert_logged_in(c)
    assert user_row(db, other).active is True
    assert user_row(db, name).active is True


def test_unsu_wrong_password(login, new_user, db):
    name = new_user()
    c = login(name)
    assert_failure(c.cmd(f"UNSU:{name}:wrong password"), 815)
    assert c.is_closed()  # a failed login: no second guess on this session
    assert user_row(db, name).active is True


def test_unsu_keeps_subscription_name_taken(server, login, new_user):
    name = new_user()
    c = login(name)
    assert c.cmd(f"UNSU:{name}:{PASSWORD}").code == 104
    with server.connect() as s:
        assert_failure(s.cmd(f"SUBS:{name}:clave:"), 816)


# -- JAUT ----------------------------------------------------------------------------------


def test_jaut_all(login, new_user):
    name = new_user()
    other = new_user()
    c = login(name)
    stamp, names, parts = jaut(c, "0")
    assert parts[0].code == 204
    assert {name, other} <= set(names)
    assert abs(int(stamp) - time.time()) < 3600
    assert all(USUARIO_RE.fullmatch(n) for n in names)
    assert len(names) == len(set(names))


@pytest.mark.parametrize("fecha", ["0", "00000000000", "1", "0000000001"])
def test_jaut_short_fecha_forms(login, new_user, fecha):
    name = new_user()
    c = login(name)
    _, names, _ = jaut(c, fecha)
    assert name in names


def test_jaut_nothing_since(login, new_user):
    c = login(new_user())
    r = c.cmd(f"JAUT:{FAR_FUTURE}")
    assert (r.code, r.more) == (201, False)
    assert FECHA_RE.fullmatch(r.text)
    assert abs(int(r.text) - time.time()) < 3600


def test_jaut_since_fecha(login, new_user, accounts):
    old = new_user()
    c = login(old)
    time.sleep(1.1)  # fechas are whole seconds: let the clock pass old's stamp
    since, _, _ = jaut(c, FAR_FUTURE)
    fresh = new_user()
    gone = new_user()
    accounts.remove_user(gone)
    stamp, names, _ = jaut(c, since)
    assert fresh in names
    assert old not in names
    assert gone not in names
    assert int(stamp) >= int(since)


def test_jaut_lists_active_users_only(login, new_user, accounts):
    c = login(new_user())
    gone = new_user()
    kept = new_user()
    accounts.remove_user(gone)
    _, names, _ = jaut(c, "0")
    assert kept in names
    assert gone not in names


def test_jaut_sync_round_trip(login, new_user):
    c = login(new_user())
    stamp, _, _ = jaut(c, "0")
    later = new_user()
    _, names, _ = jaut(c, stamp)
    assert later in names


@pytest.fixture(scope="module")
def many_users(db) -> list[str]:
    """200 active users with 32-character names: over 6,600 bytes of JAUT records."""
    base = unique_name("mp")
    names = [f"{base}-{i:03d}".ljust(32, "z") for i in range(200)]
    assert all(len(n) == 32 and USUARIO_RE.fullmatch(n) for n in names)
    insert_users(db, names, hash_password(PASSWORD))
    return names


def test_jaut_multi_part(login, many_users):
    c = login(many_users[0])
    c.send("JAUT:0")
    # Read the raw stream: each header's flag byte and length must hold exactly.
    raws = []
    while True:
        header, data = raw_reply(c)
        raws.append((header, data))
        assert header[:3] == b"204"
        assert header[3:4] in (b"0", b"1")
        assert struct.unpack("!H", header[4:6])[0] == len(data) <= 4096
        if header[3:4] == b"0":
            break
    assert len(raws) >= 2
    stamp = raws[0][1][:11].decode()
    assert FECHA_RE.fullmatch(stamp)
    records: list[str] = []
    for _, data in raws:
        text = data.decode("utf-8")
        assert text.startswith(stamp + ",")
        part = text[12:].split(",")
        assert all(USUARIO_RE.fullmatch(rec) for rec in part), "a record was cut"
        records.extend(part)
    assert set(many_users) <= set(records)
    assert len(records) == len(set(records))
    assert_logged_in(c)  # the stream is in step after the last part


def test_jaut_multi_part_through_client(login, many_users):
    c = login(many_users[1])
    _, names, parts = jaut(c, "1")
    assert len(parts) >= 2
    assert set(many_users) <= set(names)
