"""A new wire protocol is one new module: a front end of a few lines (JSON, a line each
way) served by the reactor beside ESPOL, on one service. Two players challenge, accept
and move over JSON, one of them follows the game's events, and both see the same game
over ESPOL, on real sockets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.errors import Failure
from ajedrez.domain.games import Games
from ajedrez.espol.connection import Connection
from ajedrez.server.reactor import Listener, Reactor, make_service
from ajedrez.server.settings import Limits
from ajedrez.service.frontend import Host
from ajedrez.service.hub import Hub, Marker
from ajedrez.service.login import LoginGate, log_in
from ajedrez.service.player import Player
from ajedrez.store.db import Database
from ajedrez.store.moves import Moves
from tests.support.common import PASSWORD
from tests.support.session import frames


class JsonLines(asyncio.Protocol):
    """The whole front end: requests one at a time, in order, each answered with
    ``{"ok": true, ...}`` or ``{"ok": false, "error": <the refusal's kind>, "reason": ...}``."""

    def __init__(self, host: Host) -> None:
        self.service = host.service
        self.host = host
        self.player: Player | None = None
        self.requests: asyncio.Queue[bytes] = asyncio.Queue()
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: Any = transport
        host, port = transport.get_extra_info("peername")[:2]
        self.peer = f"{host}:{port}"
        self.gate = LoginGate(self.service.throttle, host, asyncio.get_running_loop(), _run)  # type: ignore[arg-type]
        self.task = asyncio.ensure_future(self.serve())

    def data_received(self, data: bytes) -> None:
        *lines, self.buffer = (self.buffer + data).split(b"\n")
        for line in lines:
            self.requests.put_nowait(line)

    def connection_lost(self, exc: Exception | None) -> None:
        self.task.cancel()

    def send_event(self, item: Any) -> bool:
        """The hub's sink: a stored event, or a mark of the stream's."""
        if isinstance(item, Marker):
            line = {"mark": item.mark.value, "cursor": item.cursor}
        else:
            line = {"event": item.kind, "cursor": item.id}
        self.transport.write(json.dumps(line).encode() + b"\n")
        return True

    async def serve(self) -> None:
        while True:
            request = json.loads(await self.requests.get())
            try:
                answer = {"ok": True, **await self.run(request)}
            except Failure as f:
                answer = {"ok": False, "error": f.kind.value, "reason": f.reason}
            self.transport.write(json.dumps(answer).encode() + b"\n")

    async def run(self, r: dict[str, Any]) -> dict[str, Any]:
        if r["op"] == "login":
            self.player = await log_in(self.service, self.gate, r["user"], r["password"], self.peer)
            return {"user": self.player.name}
        me = self.player
        assert me is not None
        if r["op"] == "challenge":
            await me.challenge(r["to"])
            return {}
        if r["op"] == "accept":
            return {"game": await me.accept(r["from"], r["color"])}
        if r["op"] == "move":
            await me.play(r["game"], r["ply"], r["uci"])
            return {}
        if r["op"] == "watch":
            await me.stream(self, r.get("cursor"))
            return {}
        status = await me.game(r["game"])
        return {"next_ply": status.next_ply, "white": status.white, "black": status.black}


def _run(step: Callable[[], None]) -> None:
    step()


async def _json(port: int) -> Callable[[dict[str, Any]], Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def ask(request: dict[str, Any]) -> Any:
        writer.write(json.dumps(request).encode() + b"\n")
        return json.loads(await reader.readline())

    return ask


async def _json_stream(
    port: int,
) -> tuple[Callable[[dict[str, Any]], Any], Callable[[], Any]]:
    """A connection that streams: ``ask`` a request, or read the ``next`` line it gets."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def ask(request: dict[str, Any]) -> Any:
        writer.write(json.dumps(request).encode() + b"\n")
        return json.loads(await reader.readline())

    async def next_line() -> Any:
        return json.loads(await asyncio.wait_for(reader.readline(), 30))

    return ask, next_line


async def _espol(port: int, lines: list[str], replies: int) -> list[tuple[int, str]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write("".join(f"{line}\r\n" for line in lines).encode())
    got = b""
    while len(frames(got)) < replies:
        got += await reader.read(65536)
    writer.close()
    return [(f.code, f.text) for f in frames(got)]


def test_a_json_front_end_plays_on_the_service_beside_espol(
    db: Database, accounts: Accounts, games: Games, new_user: Callable[..., str]
) -> None:
    ana, bob = new_user("ana"), new_user("bob")

    async def scenario() -> tuple[list[Any], list[tuple[int, str]]]:
        limits = Limits()
        hub = Hub(db)
        await hub.start()
        service = make_service(accounts, games, Moves.of(db), limits, hub=hub)
        listeners = [Listener("espol", Connection, 0), Listener("json", JsonLines, 0)]
        reactor = Reactor(service, "127.0.0.1", listeners, limits, hub)
        (_, _, espol_port), (_, _, json_port) = await reactor.start()
        try:
            a, b = await _json(json_port), await _json(json_port)
            watcher, watching = await _json_stream(json_port)
            said = [
                await a({"op": "login", "user": ana, "password": "wrong"}),
                await a({"op": "login", "user": ana, "password": PASSWORD}),
                await b({"op": "login", "user": bob, "password": PASSWORD}),
                await a({"op": "challenge", "to": bob}),
                await watcher({"op": "login", "user": bob, "password": PASSWORD}),
                await watcher({"op": "watch"}),
                await watching(),  # the stream is live: 601's mark
                await b({"op": "accept", "from": ana, "color": "N"}),  # bob plays black
            ]
            game = said[7]["game"]
            said += [
                await a({"op": "move", "game": game, "ply": 1, "uci": "e2e5"}),
                await b({"op": "move", "game": game, "ply": 1, "uci": "e2e4"}),
                await a({"op": "move", "game": game, "ply": 1, "uci": "e2e4"}),
                await b({"op": "game", "game": game}),
                await watching(),
                await watching(),
            ]
            pid = f"P{game:07d}"
            seen = await _espol(espol_port, [f"USER:{bob}", f"PASS:{PASSWORD}", f"SPAR:{pid}:0"], 3)
        finally:
            reactor.stop()
            await reactor.serve_until_stopped()
            await hub.stop()
        return said, seen

    said, seen = asyncio.run(scenario())
    assert said[0]["ok"] is False and said[0]["error"] == "wrong_password"
    assert said[1:4] == [{"ok": True, "user": ana}, {"ok": True, "user": bob}, {"ok": True}]
    assert said[4:6] == [{"ok": True, "user": bob}, {"ok": True}]
    assert said[6]["mark"] == "caught_up"
    assert said[7]["ok"] is True and isinstance(said[7]["game"], int)
    assert said[8]["error"] == "illegal_move", said[8]
    assert said[9]["error"] == "not_your_turn", said[9]
    assert said[10] == {"ok": True}
    assert said[11] == {"ok": True, "next_ply": 2, "white": ana, "black": bob}
    # bob's stream, opened before the game began: its start, then ana's move.
    assert [said[12]["event"], said[13]["event"]] == ["INICIO_PARTIDA", "FIN_DE_TURNO"]
    assert said[6]["cursor"] < said[12]["cursor"] < said[13]["cursor"]
    assert seen == [(101, bob), (102, bob), (207, "1:e2e4:0:1228:0")]
