"""Upgrades from every earlier migration, and back: a database as each earlier release left
it, with realistic data (tests/support/upgrades.py), reaches head with nothing lost, and a
downgrade to any earlier migration followed by an upgrade gives back the same rows.

The revisions come from Alembic's script directory: a new migration is covered without
editing this file. Each test has a database of its own, on the store under test.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import import_module, resources
from pathlib import Path

import pytest
from sqlalchemy import text

from ajedrez.admin.schema import LOSSES
from ajedrez.store.db import Database
from ajedrez.store.migrate import current_revision, downgrade, is_current, upgrade
from tests.store.test_migrations import schema_diff
from tests.support.upgrades import (
    HEAD,
    REVISIONS,
    build,
    check,
    empty_database,
    migrate_to,
    snapshot,
    table_counts,
)

EARLIER = REVISIONS[:-1]


@pytest.fixture
def empty(tmp_path: Path) -> Iterator[Database]:
    with empty_database(tmp_path) as (_url, database):
        yield database


def test_every_migration_file_is_in_the_chain():
    """The revisions tested are every file of migrations/versions, oldest first."""
    files = sorted(resources.files("ajedrez.migrations").joinpath("versions").iterdir(), key=str)
    named = [f.name.split("_", 1)[0] for f in files if f.name[:4].isdigit()]
    assert named == REVISIONS
    assert REVISIONS[:-1] == EARLIER and REVISIONS[-1] == HEAD


@pytest.mark.parametrize("revision", EARLIER)
def test_upgrade_from_an_earlier_revision_loses_nothing(revision, empty):
    migrate_to(empty, revision)
    assert current_revision(empty) == revision
    built = build(empty, revision)
    before = table_counts(empty)
    upgrade(empty)
    assert is_current(empty)
    assert schema_diff(empty) == []
    after = table_counts(empty)
    assert {t: after[t] for t in before} == before  # no row of any old table is lost
    check(empty, built)


@pytest.mark.parametrize("revision", EARLIER)
def test_down_to_an_earlier_revision_and_up_again_keeps_every_row(revision, empty):
    """Data that revision can hold survives head -> revision -> head unchanged."""
    migrate_to(empty, revision)
    built = build(empty, revision)
    as_built = snapshot(empty)
    upgrade(empty)
    at_head = snapshot(empty)
    downgrade(empty, revision)
    assert current_revision(empty) == revision
    assert snapshot(empty) == as_built
    upgrade(empty)
    assert snapshot(empty) == at_head
    assert schema_diff(empty) == []
    check(empty, built)


def test_every_migration_says_what_its_downgrade_loses():
    """``db downgrade`` counts what it would drop from the table ``LOSSES``: each migration
    but the first has an entry there, empty when its downgrade drops nothing made by a
    player or the operator."""
    assert set(LOSSES) == set(REVISIONS[1:])


@pytest.mark.parametrize("revision", REVISIONS[1:])
def test_the_counts_of_losses_run_at_their_revision(revision, empty):
    """Each count is valid SQL on the schema of its migration, and counts the data
    ``build`` writes there."""
    migrate_to(empty, revision)
    build(empty, revision)
    with empty.engine.connect() as conn:
        counted = [int(conn.scalar(text(loss.query)) or 0) for loss in LOSSES[revision]]
    assert all(n > 0 for n in counted), counted


def test_a_forced_downgrade_drops_only_what_the_older_schema_cannot_hold(empty):
    """Head's data taken back to 0004 (no clocks, events, observers, chat, seeks,
    takebacks) and forward again: the rest still works, the clocked game goes on
    without its clock."""
    migrate_to(empty, HEAD)
    built = build(empty, HEAD)
    downgrade(empty, "0004")
    upgrade(empty)
    with empty.engine.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM games WHERE tc_initial_ms IS NOT NULL")) == 0
    check(empty, built, kept="0004")


# Events as a server at 0009 stored them (ESPOL's text), and as 0010 stores them (JSON of
# the named fields); text that cannot be read as its kind is kept by position.
EVENTS_0009_0010 = [
    ("DESAFIO", "ana:bob:3d:0", '{"retador":"ana","retado":"bob","control":"3d","privada":false}'),
    (
        "FIN_DE_TURNO",
        "P0000001:1:e2e4:0:e4:bob:rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
        '{"partida":1,"jugada_n":1,"jugada":"e2e4","promocion":0,"san":"e4","turno":"bob",'
        '"fen":"rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"}',
    ),
    ("INCORPORACION", "P0000001:eva:1", '{"partida":1,"usuario":"eva","observador":true}'),
    ("FINALIZACION", "P0000001:3:agreement", '{"partida":1,"ganador":3,"motivo":"agreement"}'),
    (
        "CHAT",
        'P0012345:дмитрий:привет: 1:0 "ok"',
        '{"partida":12345,"usuario":"дмитрий","texto":"привет: 1:0 \\"ok\\""}',
    ),
    (
        "AVISO_RELOJ",
        "P0000001:ana:86400000:1795086400000",
        '{"partida":1,"usuario":"ana","restante":86400000,"limite":1795086400000}',
    ),
    ("LICENCIA", "bob:1795600000000", '{"usuario":"bob","hasta":1795600000000}'),
    ("FIN_LICENCIA", "bob", '{"usuario":"bob"}'),
    # A kind 0010 does not know; a field short; no partida; no flag; a number not written
    # back as it was read; nothing at all.
    ("NUEVO", "a:b:c", '{"campo1":"a","campo2":"b","campo3":"c"}'),
    ("TABLAS", "P0000001", '{"campo1":"P0000001"}'),
    ("TABLAS", "P01:ana", '{"campo1":"P01","campo2":"ana"}'),
    ("ABANDONO", "P0000001:ana:2", '{"campo1":"P0000001","campo2":"ana","campo3":"2"}'),
    ("LICENCIA", "bob:007", '{"campo1":"bob","campo2":"007"}'),
    ("x", "", "{}"),
]


def test_0010_rewrites_the_events_as_json_and_its_downgrade_writes_the_text_back(empty):
    """Every row, whatever its kind, over more than two batches, and back exactly."""
    batch = import_module("ajedrez.migrations.versions.0010_neutral_event_data").BATCH
    rows = [(kind, text_0009) for kind, text_0009, _json in EVENTS_0009_0010]
    rows += [("TABLAS", f"P{n:07d}:ana") for n in range(2 * batch + 1)]
    as_json = [j for _kind, _text, j in EVENTS_0009_0010]
    as_json += [f'{{"partida":{n},"usuario":"ana"}}' for n in range(2 * batch + 1)]
    migrate_to(empty, "0009")
    with empty.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO events (id, at_ms, kind, game_id, user_a, user_b, actor_id, "
                "observers, data) VALUES (:id, 1795000000000, :kind, NULL, NULL, NULL, "
                "NULL, false, :data)"
            ),
            [{"id": i, "kind": k, "data": d} for i, (k, d) in enumerate(rows, start=1)],
        )

    def stored() -> list[str]:
        with empty.engine.connect() as conn:
            return list(conn.scalars(text("SELECT data FROM events ORDER BY id")))

    migrate_to(empty, "0010")
    assert stored() == as_json
    downgrade(empty, "0009")
    assert stored() == [d for _kind, d in rows]
