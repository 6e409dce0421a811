"""Events in words and as ``watch --exec``'s environment, and watch's handler, all without
a server."""

from __future__ import annotations

import io
from pathlib import Path
from typing import cast

from ajedrez.client import Client, MalformedEvent, StreamMark
from ajedrez.client.app import App
from ajedrez.client.cli import build_parser
from ajedrez.client.event_lines import describe, event_environment, event_line
from ajedrez.client.live_commands import Watch
from ajedrez.espol import events as ev
from ajedrez.espol.codes import Reply
from ajedrez.espol.events import FIELDS, EventRecord, parse_event

FEN = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
GAMES = {"P0000001": ("ana", "bob")}


def players(gid: str) -> tuple[str, str] | None:
    return GAMES.get(gid)


def words(data: str, me: str = "ana") -> str:
    return describe(parse_event(data), me, players)


SAMPLES = {
    ev.DESAFIO: "bob:ana:3d:0",
    ev.DESAFIO_RETIRADO: "bob:ana",
    ev.DESAFIO_RECHAZADO: "ana:bob",
    ev.INICIO_PARTIDA: "P0000001:ana:bob:none:ana:1",
    ev.FIN_DE_TURNO: f"P0000001:1:e2e4:0:e4:bob:{FEN}",
    ev.TABLAS: "P0000001:bob",
    ev.TABLAS_ACEPTADAS: "P0000001:bob",
    ev.TABLAS_RECHAZADAS: "P0000001:ana",
    ev.ABANDONO: "P0000001:bob:0",
    ev.INCORPORACION: "P0000001:carl:1",
    ev.FINALIZACION: "P0000001:2:checkmate",
    ev.CHAT: "P0000001:bob:see: a colon",
    ev.SUSURRO: "P0000001:carl:hmm",
    ev.RETROCESO: "P0000001:bob",
    ev.RETROCESO_ACEPTADO: "P0000001:ana:3:" + FEN,
    ev.RETROCESO_RECHAZADO: "P0000001:ana",
    ev.AVISO_RELOJ: "P0000001:ana:3600000:1795003600000",
    ev.LICENCIA: "bob:1795864000000",
    ev.FIN_LICENCIA: "bob",
}


def test_every_kind_has_words():
    assert set(SAMPLES) == set(FIELDS)
    for kind, fields in SAMPLES.items():
        line = event_line(parse_event(f"7:1795000000000:{kind}:{fields}"), "ana", players)
        assert f" {kind} " in line and line.startswith("20"), line


def test_words_from_each_side():
    assert words("1:0:DESAFIO:bob:ana:3d:0").startswith(
        "bob challenged you, time control 3d (3 d a move): `ajedrez accept bob --color B|N`"
    )
    assert words("1:0:DESAFIO:ana:bob:none:1") == "you challenged bob, no clock, a private game"
    assert words("1:0:DESAFIO_RETIRADO:bob:ana") == "bob withdrew their challenge to you"
    assert words("1:0:DESAFIO_RECHAZADO:ana:bob") == "bob declined your challenge"
    assert words(f"1:0:FIN_DE_TURNO:P0000001:1:e2e4:0:e4:bob:{FEN}") == (
        "P0000001: you played 1. e4 (e2e4); bob to move"
    )
    assert words(f"1:0:FIN_DE_TURNO:P0000001:1:e2e4:0:e4:bob:{FEN}", me="bob") == (
        "P0000001: ana played 1. e4 (e2e4); your move: `ajedrez move P0000001 MOVE`"
    )
    # A game this client does not know (observed): the side, not the name.
    assert words(f"1:0:FIN_DE_TURNO:P0000009:2:e7e5:0:e5:ana:{FEN}", me="carl") == (
        "P0000009: black played 1... e5 (e7e5); ana to move"
    )
    assert words("1:0:FINALIZACION:P0000001:2:checkmate") == (
        "P0000001 is over: bob (black) won: checkmate"
    )
    assert (
        words("1:0:FINALIZACION:P0000001:1:timeout") == "P0000001 is over: you (white) won: timeout"
    )
    assert words("1:0:FINALIZACION:P0000009:3:agreement") == "P0000009 is over: draw: agreement"
    assert words("1:0:FINALIZACION:P0000009:0:aborted") == "P0000009 is over: no result: aborted"
    assert words("1:0:TABLAS:P0000001:bob").endswith("`ajedrez draw decline P0000001`")
    assert words("1:0:RETROCESO:P0000001:bob") == (
        "P0000001: bob asks to take back their last move: `ajedrez takeback accept P0000001` "
        "or `ajedrez takeback decline P0000001`"
    )
    assert words("1:0:RETROCESO:P0000009:bob", me="carl") == (
        "P0000009: bob asks to take back their last move"
    )
    assert words("1:0:ABANDONO:P0000001:carl:1") == "P0000001: carl stopped observing"
    assert words("1:0:CHAT:P0000001:bob:see: a colon") == "P0000001: bob: see: a colon"
    assert words("1:0:NUEVO:x:y") == "x, y"


def test_the_environment_of_exec():
    e = parse_event(f"42:1795000000123:FIN_DE_TURNO:P0000001:1:e2e4:0:e4:bob:{FEN}")
    base = {
        "PATH": "/bin",
        "AJEDREZ_PASSWORD": "secret",
        "AJEDREZ_TEXTO": "left over from another event",
        "AJEDREZ_CAMPO1": "left over too",
        "AJEDREZ_USER": "someone else",
        "AJEDREZ_CONFIG": "/etc/kept.toml",
    }
    env = event_environment(e, "words", base, {"AJEDREZ_USER": "ana"})
    assert env == {
        "PATH": "/bin",
        "AJEDREZ_CONFIG": "/etc/kept.toml",
        "AJEDREZ_USER": "ana",
        "AJEDREZ_EVENT": "FIN_DE_TURNO",
        "AJEDREZ_CURSOR": "42",
        "AJEDREZ_AT_MS": "1795000000123",
        "AJEDREZ_SUMMARY": "words",
        "AJEDREZ_PARTIDA": "P0000001",
        "AJEDREZ_JUGADA_N": "1",
        "AJEDREZ_JUGADA": "e2e4",
        "AJEDREZ_PROMOCION": "0",
        "AJEDREZ_SAN": "e4",
        "AJEDREZ_TURNO": "bob",
        "AJEDREZ_FEN": FEN,
    }
    unknown = event_environment(EventRecord(5, 6, "NUEVO", ("x", "y")), "", {}, {})
    assert unknown["AJEDREZ_CAMPO1"] == "x" and unknown["AJEDREZ_CAMPO2"] == "y"


# -- watch's handler, without a server ---------------------------------------------------


def watch_app(tmp_path: Path, *extra: str) -> App:
    args = build_parser().parse_args(
        ["--server", "127.0.0.1:1", "--user", "ana", "--data-dir", str(tmp_path), "watch", *extra]
    )
    return App(args, {"AJEDREZ_PASSWORD": "secret"}, io.StringIO(), io.StringIO(), io.StringIO())


def test_watch_stores_each_cursor_tells_of_a_gap_and_keeps_challenges(tmp_path: Path):
    app = watch_app(tmp_path)
    with app.open_cache(create=True) as cache:
        w = Watch(app, cache, command=None, from_start=False)
        assert w.cursor is None
        nobody = cast(Client, None)  # nothing here needs the server
        w.started(nobody, 40)
        assert cache.event_cursor() == 40
        w.item(nobody, StreamMark(Reply.V_HUECO, 57))
        w.item(nobody, parse_event("58:1795000000000:DESAFIO:bob:ana:3d:0"))
        assert cache.challenge_controls("in") == {"bob": "3d"} and cache.event_cursor() == 58
        w.item(nobody, StreamMark(Reply.V_ALDIA, 60))
        w.item(nobody, StreamMark(Reply.V_LATIDO, 61))
        assert cache.event_cursor() == 61
        w.item(nobody, parse_event("62:1795000000000:DESAFIO_RETIRADO:bob:ana"))
        assert cache.challenge_controls("in") == {} and cache.event_cursor() == 62
        w.unreadable(MalformedEvent("bad", "63:x", 63))
        assert cache.event_cursor() == 63
    out = cast(io.StringIO, app.out).getvalue().splitlines()
    assert out[0].startswith("Some events were missed") and "`ajedrez sync`" in out[0]
    assert " DESAFIO bob challenged you, time control 3d" in out[1]
    assert out[2].startswith("Up to date with 127.0.0.1:1 as ana")
    assert "DESAFIO_RETIRADO bob withdrew their challenge to you" in out[3]
    assert "skipped" in cast(io.StringIO, app.err).getvalue()
    # From where it stopped, or with --from-start from the oldest event kept.
    with app.open_cache(create=False) as cache:
        assert Watch(app, cache, command=None, from_start=False).cursor == 63
        assert Watch(app, cache, command=None, from_start=True).cursor == 0


def test_watch_tells_of_a_server_whose_events_end_before_the_stored_cursor(tmp_path: Path):
    app = watch_app(tmp_path)
    with app.open_cache(create=True) as cache:
        cache.set_event_cursor(90)
        w = Watch(app, cache, command=None, from_start=False)
        nobody = cast(Client, None)
        w.started(nobody, 90)
        w.item(nobody, StreamMark(Reply.V_HUECO, 70))  # restored from an older backup
        assert cache.event_cursor() == 70
        w.item(nobody, parse_event("71:1795000000000:DESAFIO:bob:ana:3d:0"))
        assert cache.event_cursor() == 71
    out = cast(io.StringIO, app.out).getvalue().splitlines()
    assert out[0] == (
        "Some events were missed: the server's events end at 70, before the 90 stored here "
        "(its database was restored from a backup). Run `ajedrez sync` to bring your games "
        "and challenges up to date."
    )
    assert " DESAFIO bob challenged you" in out[1]


def test_a_failing_exec_is_named_and_counts_as_handled(tmp_path: Path):
    app = watch_app(tmp_path)
    with app.open_cache(create=True) as cache:
        w = Watch(app, cache, command="exit 7", from_start=False)
        w.item(cast(Client, None), parse_event("5:1795000000000:FIN_LICENCIA:bob"))
        assert cache.event_cursor() == 5
    err = cast(io.StringIO, app.err).getvalue()
    assert "--exec: 'exit 7' exited with status 7 for event 5 (FIN_LICENCIA)" in err
    assert "watching goes on" in err


def test_watch_names_the_players_of_a_game_it_saw_start(tmp_path: Path):
    app = watch_app(tmp_path)
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    nobody = cast(Client, None)
    with app.open_cache(create=True) as cache:
        w = Watch(app, cache, command=None, from_start=True)
        # A game of two others that ana observes (or saw with --from-start).
        w.item(nobody, parse_event("1:1795000000000:INICIO_PARTIDA:P0000009:bob:carl:none:bob:0"))
        w.item(nobody, parse_event(f"2:1795000001000:FIN_DE_TURNO:P0000009:1:e2e4:0:e4:carl:{fen}"))
        w.item(nobody, parse_event(f"3:1795000002000:FIN_DE_TURNO:P0000008:1:e2e4:0:e4:dora:{fen}"))
        assert not w.dirty and cache.game("P0000009") is None  # not ana's: not stored
    out = cast(io.StringIO, app.out).getvalue().splitlines()
    assert out[1].endswith("FIN_DE_TURNO P0000009: bob played 1. e4 (e2e4); carl to move")
    # One whose start it never saw: only the colour is known.
    assert out[2].endswith("FIN_DE_TURNO P0000008: white played 1. e4 (e2e4); dora to move")
