"""A logged-in player's handle on the service: every operation awaitable, each run
where the service runs it (``work.py``): a command thread, with the retry of work the
database rolled back, or the store's queue (a move, a read of a game).

A front end that keeps a connection per player (a WebSocket, a seed protocol's socket)
holds one Player and awaits its operations; ESPOL's session, IO-free for speed, calls
the same service pieces directly from its own dispatcher.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from ajedrez.domain.accounts import Caller
from ajedrez.domain.live import ChatLine
from ajedrez.domain.reads import moves_of, status_of
from ajedrez.domain.rules import move_from_uci
from ajedrez.domain.views import ClockStatus, GameStatus, GameSummary, LeaveStatus, MoveRecord
from ajedrez.service.hub import Sink, Stream
from ajedrez.service.service import EVENTFUL, Service, not_watching, watches
from ajedrez.service.work import work_of

T = TypeVar("T")


class Player:
    def __init__(self, service: Service, caller: Caller, peer: str = "-") -> None:
        self.service = service
        self.caller = caller
        self.peer = peer  # "host:port", for logs

    @property
    def name(self) -> str:
        return self.caller.name

    @property
    def id(self) -> int:
        return self.caller.id

    def who(self) -> str:
        return f"{self.caller.name}@{self.peer}"

    async def _thread(self, what: str, work: Callable[[], T]) -> T:
        """``work``, the operation ``what``, on the pool the service runs it on; one
        that notifies another user is counted against the caller first (``EVENTFUL``)."""
        if what in EVENTFUL:
            self.service.limit_events(self.caller, what)
        run = partial(self.service.retrying, work, what, self.who)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.service.pools[work_of(what)], run)

    # -- challenges ------------------------------------------------------------------------

    async def challenge(
        self, target: str, control: str | None = None, private: bool = False
    ) -> None:
        games = self.service.games
        await self._thread("challenge", lambda: games.challenge(self.id, target, control, private))

    async def accept(self, challenger: str, color: str, control: str | None = None) -> int:
        """The new game's id; ``color`` the caller's (``values.WHITE`` or ``BLACK``)."""
        games = self.service.games
        return await self._thread(
            "accept", lambda: games.accept(self.id, color, challenger, control)
        )

    async def decline(self, other: str) -> None:
        """Decline ``other``'s challenge, or withdraw the caller's own to ``other``."""
        await self._thread("decline", lambda: self.service.games.decline(self.id, other))

    async def challenges(self) -> list[tuple[bool, str, str]]:
        """(made by the caller, the other user, the time control) of each open challenge."""
        return await self._thread("challenges", lambda: self.service.games.open_challenges(self.id))

    # -- reads -----------------------------------------------------------------------------

    async def challengers_since(self, since: int) -> tuple[int, list[tuple[str, str]]]:
        """(a stamp to ask from next, (who, time control) of challenges received since)."""
        games = self.service.games
        return await self._thread("challengers", lambda: games.challengers_since(self.id, since))

    async def removals_since(self, since: int) -> tuple[int, list[tuple[str, str]]]:
        games = self.service.games
        return await self._thread("removals", lambda: games.removals_since(self.id, since))

    async def users_since(self, since: int) -> tuple[int, list[str]]:
        accounts = self.service.accounts
        return await self._thread("users", lambda: accounts.active_users_since(since))

    async def games_since(self, since: int) -> tuple[int, list[GameSummary]]:
        return await self._thread("games", lambda: self.service.games.games_since(self.id, since))

    async def game(self, game_id: int) -> GameStatus:
        """A game the caller plays in or observes, as the caller sees it."""
        rows: list[Any] = await self.service.moves.game_rows(game_id)
        observer = await self._observing(rows, game_id)
        return status_of(rows, self.id, game_id, observer)

    async def moves(self, game_id: int, after: int = 0) -> list[MoveRecord]:
        """The moves of a game the caller plays in or observes, after ply ``after``."""
        rows: list[Any] = await self.service.moves.move_rows(game_id, after)
        observer = await self._observing(rows, game_id)
        return moves_of(rows, self.id, game_id, after, observer)

    async def _observing(self, rows: list[Any], game_id: int) -> bool:
        if not watches(rows, self.id):
            return False
        if not await self.service.moves.observing(game_id, self.id):
            raise not_watching(rows[0], game_id)
        return True

    async def clocks(self, game_id: int) -> ClockStatus:
        time = self.service.games.time
        return await self._thread("clocks", lambda: time.clock_status(self.id, game_id))

    async def ranking(self) -> list[tuple[str, int]]:
        return await self._thread("ranking", self.service.games.ranking)

    async def pgn(self, game_id: int, with_chat: bool = False) -> str:
        games = self.service.games
        return await self._thread("pgn", lambda: games.pgn(game_id, self.id, with_chat))

    # -- a game ----------------------------------------------------------------------------

    async def move(self, game_id: int, move: MoveRecord) -> None:
        """Play ``move`` (its ply the game's next: a resend of the move just stored is
        accepted as it was). Returns once the move is durable."""
        refused = await self.service.moves.play(self.id, game_id, move)
        if refused is not None:
            raise refused

    async def play(self, game_id: int, ply: int, uci: str) -> None:
        """Play the move ``uci`` (``e2e4``, ``e7e8q``) as the game's ply ``ply``."""
        await self.move(game_id, move_from_uci(ply, uci))

    async def offer_draw(self, game_id: int, opponent: str) -> None:
        games = self.service.games
        await self._thread("offer_draw", lambda: games.offer_draw(self.id, game_id, opponent))

    async def answer_draw(self, game_id: int, accept: bool, opponent: str) -> None:
        games = self.service.games
        await self._thread(
            "answer_draw", lambda: games.answer_draw(self.id, game_id, accept, opponent)
        )

    async def resign(self, game_id: int, opponent: str) -> None:
        games = self.service.games
        await self._thread("resign", lambda: games.resign(self.id, game_id, opponent))

    async def claim_draw(self, game_id: int, opponent: str) -> None:
        games = self.service.games
        await self._thread("claim_draw", lambda: games.claim_draw(self.id, game_id, opponent))

    async def ask_takeback(self, game_id: int, opponent: str) -> None:
        games = self.service.games
        await self._thread("ask_takeback", lambda: games.ask_takeback(self.id, game_id, opponent))

    async def answer_takeback(self, game_id: int, accept: bool, opponent: str) -> None:
        games = self.service.games
        await self._thread(
            "answer_takeback", lambda: games.answer_takeback(self.id, game_id, accept, opponent)
        )

    async def leave(self, start: bool, days: int | None = None) -> LeaveStatus:
        """Start (``days``: the default when None) or end the caller's leave."""
        time = self.service.games.time
        if start:
            return await self._thread("leave", lambda: time.start_leave(self.id, days))
        return await self._thread("leave", lambda: time.end_leave(self.id))

    # -- live play -------------------------------------------------------------------------

    async def observe(self, game_id: int) -> None:
        live = self.service.games.live
        await self._thread("observe", lambda: live.observe(self.id, game_id))

    async def stop_observing(self, game_id: int) -> None:
        live = self.service.games.live
        await self._thread("stop_observing", lambda: live.stop_observing(self.id, game_id))

    async def say(self, game_id: int, text: str) -> None:
        live = self.service.games.live
        await self._thread("say", lambda: live.say(self.id, game_id, text))

    async def chat_since(self, game_id: int, since: int) -> tuple[int, list[ChatLine]]:
        live = self.service.games.live
        return await self._thread("chat", lambda: live.chat_since(self.id, game_id, since))

    async def seek(self, control: str, private: bool = False) -> int | None:
        """Post a seek; the new game's id when it paired at once."""
        live = self.service.games.live
        return await self._thread("seek", lambda: live.seek(self.id, control, private))

    async def seeks(self) -> list[tuple[str, str]]:
        """(who, time control) of every waiting seek."""
        return await self._thread("seeks", self.service.games.live.seeks)

    async def unseek(self, control: str | None = None) -> int:
        """Withdraw the caller's seek of ``control`` (None: all of them); how many."""
        live = self.service.games.live
        return await self._thread("unseek", lambda: live.unseek(self.id, control))

    async def games_in_play(self) -> list[tuple[int, str, str]]:
        """(id, white, black) of the newest active games anybody may observe."""
        return await self._thread("games_in_play", self.service.games.live.games_in_play)

    async def observers(self, game_id: int) -> list[str]:
        live = self.service.games.live
        return await self._thread("observers", lambda: live.observers(self.id, game_id))

    async def hints(self, game_id: int, square: str) -> list[str]:
        live = self.service.games.live
        return await self._thread("hints", lambda: live.hints(self.id, game_id, square))

    # -- blocks ----------------------------------------------------------------------------

    async def block(self, name: str) -> None:
        await self._thread("block", lambda: self.service.blocks.block(self.id, name))

    async def unblock(self, name: str) -> None:
        await self._thread("unblock", lambda: self.service.blocks.unblock(self.id, name))

    async def blocked(self) -> list[str]:
        """The users the caller blocks, sorted by name."""
        return await self._thread("blocked", lambda: self.service.blocks.blocked(self.id))

    # -- events ----------------------------------------------------------------------------

    async def stream(self, sink: Sink, cursor: int | None = None) -> Stream:
        """The caller's events after ``cursor`` (None: from now on: after every event
        committed before this call), handed to ``sink`` (stored events, then live, with
        the stream's marks); ``close_stream`` ends it."""
        hub = self.service.hub
        if hub is None:
            raise RuntimeError("this service has no event hub")
        now = await hub.now() if cursor is None else None
        return hub.open(sink, self.id, cursor, now=now)

    def close_stream(self, stream: Stream) -> None:
        if self.service.hub is not None:
            self.service.hub.close(stream)
