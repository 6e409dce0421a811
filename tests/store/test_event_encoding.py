"""Events are typed values stored in a neutral encoding, and ESPOL writes them on the way
out exactly as before (issue 31): each kind built by ``domain/events.py``, stored on the
store under test, read back the way the hub and a catching-up stream read it
(``EventReads``) and framed by ``espol/stream.py`` gives, byte for byte, the frame the
stream sent when ``events.data`` held ESPOL's text (the literals below are that text).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from sqlalchemy import insert

from ajedrez.domain import event_kinds as ev
from ajedrez.domain import events
from ajedrez.domain.events import Event, StoredEvent
from ajedrez.espol.stream import stream_frame
from ajedrez.service.hub import _observer_change
from ajedrez.store.db import Database
from ajedrez.store.event_data import decode, encode
from ajedrez.store.events import EventReads
from ajedrez.store.models import Event as EventRow

AT = 1_795_000_000_000
START = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
TAKEN = "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2"
PROMOTED = "8/8/8/8/8/8/8/Q6k b - - 0 9"


@dataclass(frozen=True)
class Players:
    white_id: int
    black_id: int


P = Players(1, 2)
ANA, BOB, EVA = (1, "ana"), (2, "bob"), (5, "eva")

# Each event as domain/events.py makes it, and the text ESPOL's stream sent for it after
# <cursor>:<ms>: when events.data held that text (migration 0009 and before).
CASES: list[tuple[Event, str]] = [
    (events.challenge_made(AT, ANA, BOB, "3d", False), "DESAFIO:ana:bob:3d:0"),
    (events.challenge_made(AT, BOB, ANA, "none", True), "DESAFIO:bob:ana:none:1"),
    (events.challenge_closed(AT, ANA, BOB, 1), "DESAFIO_RETIRADO:ana:bob"),
    (events.challenge_closed(AT, ANA, BOB, 2), "DESAFIO_RECHAZADO:ana:bob"),
    (
        events.game_started(AT, 7, ANA, BOB, "10m+5s", 2, False),
        "INICIO_PARTIDA:P0000007:ana:bob:10m+5s:ana:0",
    ),
    (
        events.game_started(AT, 12345678, BOB, ANA, "none", 1, True),
        "INICIO_PARTIDA:P12345678:bob:ana:none:bob:1",
    ),
    (
        events.move_played(AT, P, 7, 1, (1, "e2e4", 0, "e4"), "bob", START),
        f"FIN_DE_TURNO:P0000007:1:e2e4:0:e4:bob:{START}",
    ),
    (
        events.move_played(AT, P, 7, 1, (17, "b7a8", 5, "bxa8=Q+"), "bob", PROMOTED),
        f"FIN_DE_TURNO:P0000007:17:b7a8:5:bxa8=Q+:bob:{PROMOTED}",
    ),
    (events.draw_offered(AT, P, 7, ANA), "TABLAS:P0000007:ana"),
    (events.draw_answered(AT, P, 7, BOB, True), "TABLAS_ACEPTADAS:P0000007:bob"),
    (events.draw_answered(AT, P, 7, BOB, False), "TABLAS_RECHAZADAS:P0000007:bob"),
    (events.player_left(AT, P, 7, BOB), "ABANDONO:P0000007:bob:0"),
    (events.observer_joined(AT, P, 7, EVA), "INCORPORACION:P0000007:eva:1"),
    (events.observer_left(AT, P, 7, EVA), "ABANDONO:P0000007:eva:1"),
    (events.game_ended(AT, P, 7, 3, "agreement"), "FINALIZACION:P0000007:3:agreement"),
    (
        events.game_ended(AT, P, 7, 0, "left the service"),
        "FINALIZACION:P0000007:0:left the service",
    ),
    (
        events.chat_said(AT, P, 7, ANA, "hola: ¿qué tal? 1:0", False),
        "CHAT:P0000007:ana:hola: ¿qué tal? 1:0",
    ),
    (events.chat_said(AT, P, 7, EVA, 'psst: "e5"!\\', True), 'SUSURRO:P0000007:eva:psst: "e5"!\\'),
    (events.chat_said(AT, P, 7, (3, "дмитрий"), ":", False), "CHAT:P0000007:дмитрий::"),
    (events.takeback_asked(AT, P, 7, ANA), "RETROCESO:P0000007:ana"),
    (
        events.takeback_answered(AT, P, 7, BOB, 3, TAKEN),
        f"RETROCESO_ACEPTADO:P0000007:bob:3:{TAKEN}",
    ),
    (events.takeback_answered(AT, P, 7, BOB, 3, None), "RETROCESO_RECHAZADO:P0000007:bob"),
    (
        events.clock_warning(AT, 7, ANA, 86_400_000, 1_795_086_400_000),
        "AVISO_RELOJ:P0000007:ana:86400000:1795086400000",
    ),
    (events.leave_started(AT, BOB, 1_795_600_000_000, 1), "LICENCIA:bob:1795600000000"),
    (events.leave_ended(AT, BOB, 1), "FIN_LICENCIA:bob"),
]


def wire(text: str) -> bytes:
    """A 600 as it goes on the wire: code, no-more flag, length (2 bytes), data."""
    data = text.encode("utf-8")
    return b"6000" + len(data).to_bytes(2, "big") + data


def store(db: Database, emitted: list[Event]) -> list[StoredEvent]:
    """``emitted`` written in one transaction, read back as the hub reads the stream."""
    with db.engine.connect() as conn:
        before = int(conn.exec_driver_sql("SELECT last FROM event_counter").scalar_one())
    with db.write() as tx:
        for event in emitted:
            tx.emit(event)
    return asyncio.run(EventReads(db).after(before, len(emitted) + 1))


def test_every_kind_has_a_case_and_its_fields_by_its_schema():
    assert {e.kind for e, _text in CASES} == ev.KINDS
    for event, _text in CASES:
        assert ev.conforms(event.kind, event.fields), event
        assert list(event.fields) == list(ev.FIELDS[event.kind]), event


def test_each_kind_is_stored_as_json_and_framed_as_before(own_db):
    _url, db = own_db
    got = store(db, [e for e, _text in CASES])
    assert len(got) == len(CASES)
    for stored, (event, text) in zip(got, CASES, strict=True):
        assert stored.kind == event.kind and stored.fields == event.fields, stored
        assert ev.conforms(stored.kind, stored.fields), stored  # types survive the store
        assert stream_frame(stored) == wire(f"{stored.id}:{AT}:{text}"), text
        assert stream_frame(stored) is stream_frame(stored)  # encoded once

    # A catching-up stream reads the same through its own query.
    mine = asyncio.run(EventReads(db).of_user(1, got[0].id - 1, 100))
    by_id = {e.id: stream_frame(e) for e in got}
    assert mine and all(stream_frame(e) == by_id[e.id] for e in mine)


def test_the_stored_data_is_compact_json_of_the_named_fields(own_db):
    _url, db = own_db
    move = events.move_played(AT, P, 7, 1, (1, "e2e4", 0, "e4"), "bob", START)
    chat = events.chat_said(AT, P, 7, (3, "дмитрий"), "привет: 1:0", False)
    [m, c] = store(db, [move, chat])
    with db.engine.connect() as conn:
        rows = conn.exec_driver_sql(f"SELECT id, data FROM events WHERE id >= {m.id}").all()
    data = dict(rows)
    assert data[m.id] == (
        '{"partida":7,"jugada_n":1,"jugada":"e2e4","promocion":0,"san":"e4","turno":"bob",'
        f'"fen":"{START}"}}'
    )
    assert data[c.id] == '{"partida":7,"usuario":"дмитрий","texto":"привет: 1:0"}'
    assert json.loads(data[m.id]) == move.fields


def test_the_hub_reads_an_observer_joining_and_leaving_from_the_fields(own_db):
    _url, db = own_db
    joined, left, resigned = store(
        db,
        [
            events.observer_joined(AT, P, 7, EVA),
            events.observer_left(AT, P, 7, EVA),
            events.player_left(AT, P, 7, BOB),
        ],
    )
    assert _observer_change(joined) == (ev.INCORPORACION, 5, 7)
    assert _observer_change(left) == (ev.ABANDONO, 5, 7)
    assert _observer_change(resigned) is None


def test_text_the_store_cannot_read_as_fields_is_sent_as_it_is(own_db):
    """An older release's text (written while a newer one had migrated the table) and a
    newer release's kind: the stream goes on, each framed with the text as stored."""
    _url, db = own_db
    rows = [
        (990001, "ABANDONO", "P0000007:eva:1"),
        (990002, "CHAT", "P0000007:ana:hola: 1:0"),
        (990003, "NUEVO", '{"partida":7,"listo":true,"n":3}'),
        (990004, "NUEVO", "a:b:c"),
        (990005, "x", ""),
        (990006, "FIN_LICENCIA", "[1]"),
    ]
    with db.engine.begin() as conn:
        for id_, kind, data in rows:
            conn.execute(
                insert(EventRow).values(
                    id=id_, at_ms=AT, kind=kind, game_id=None, user_a=None, user_b=None,
                    actor_id=None, observers=False, data=data,
                )
            )  # fmt: skip
    got = asyncio.run(EventReads(db).after(990000, 10))
    frames = [stream_frame(e) for e in got]
    assert frames == [
        wire(f"990001:{AT}:ABANDONO:P0000007:eva:1"),
        wire(f"990002:{AT}:CHAT:P0000007:ana:hola: 1:0"),
        wire(f"990003:{AT}:NUEVO:7:1:3"),
        wire(f"990004:{AT}:NUEVO:a:b:c"),
        wire(f"990005:{AT}:x"),
        wire(f"990006:{AT}:FIN_LICENCIA:[1]"),
    ]
    assert got[0].fields == {"campo1": "P0000007", "campo2": "eva", "campo3": "1"}


def test_the_encoding_round_trips_every_value():
    for event, _text in CASES:
        assert decode(encode(event.fields)) == event.fields
    assert decode("") == {} and decode("a") == {"campo1": "a"}
