"""Pairs of players that find each other and play real games over the protocol.

In each pair the *challenger* sends JUEG and learns the new game from PPEN; the *acceptor*
finds the challenge with TRAN and accepts it with ACEP, choosing its colour at random.
Then both play: the player to move picks a random legal move from its own board and sends
JGDA; the other waits for its turn like a real player, polling STAT (or SPAR from its last
ply) every ``poll_interval`` seconds until the opponent's move appears, or (``--wait
notify``) sleeping until the opponent's task tells it, as a push notification would, then
fetching the move with one SPAR. A game ends by
the rules (the server ends it; STAT shows status 2) or, at ``max_plies``, by the player to
move resigning (REND). Then the pair starts another game, until the run stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import chess

from ajedrez.client.errors import ClientError, ReplyError
from ajedrez.client.protocol import BLACK, STATUS_FINISHED, WHITE, GameStatus, MoveRecord

from .aclient import AsyncClient, Observer, color_of, record_move


@dataclass(frozen=True)
class Settings:
    host: str
    port: int
    password: str
    poll_interval: float
    poll_command: str  # "stat" or "spar"
    wait: str  # "poll", or "notify": woken by the opponent's task, then one SPAR
    max_plies: int
    timeout: float
    one_game: bool  # --moves-per-game: each pair plays one game, then stops


@dataclass
class Control:
    """What every player consults: the global stop and a counter of named events."""

    stop: asyncio.Event = field(default_factory=asyncio.Event)
    count: Callable[[str], None] = lambda _event: None


# How often a player waiting for a notification looks whether the run has stopped.
NOTIFY_RECHECK_SECONDS = 0.5


class PairGone(Exception):
    """The other player of the pair failed; this one stops too."""


class Player:
    def __init__(
        self,
        name: str,
        opponent: str,
        settings: Settings,
        control: Control,
        rng: random.Random,
    ) -> None:
        self.name = name
        self.opponent = opponent
        self.settings = settings
        self.control = control
        self.rng = rng
        self.client: AsyncClient | None = None
        self.partner_failed = asyncio.Event()
        self.tran_fecha = 0
        self.ppen_fecha = 0
        self.partner: Player | None = None
        self.woken = asyncio.Event()  # with --wait notify: the opponent has moved

    # -- session -----------------------------------------------------------------------

    async def login(self, observer: Observer) -> None:
        self.client = await AsyncClient.connect(
            self.settings.host, self.settings.port, timeout=self.settings.timeout, observer=observer
        )
        await self.client.login(self.name, self.settings.password)

    async def quit(self) -> None:
        if self.client is not None:
            await self.client.quit()

    @property
    def c(self) -> AsyncClient:
        assert self.client is not None
        return self.client

    def stopping(self) -> bool:
        return self.control.stop.is_set() or self.partner_failed.is_set()

    async def pause(self) -> None:
        """Sleep one poll interval, waking early when the run stops."""
        if self.settings.poll_interval <= 0:
            await asyncio.sleep(0)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.control.stop.wait(), self.settings.poll_interval)

    # -- finding each other ------------------------------------------------------------

    async def challenge(self) -> tuple[str, chess.Color] | None:
        """JUEG the opponent, then poll PPEN until the game it accepted shows up."""
        await self.c.jueg(self.opponent)
        while not self.stopping():
            changes = await self.c.ppen(self.ppen_fecha)
            self.ppen_fecha = changes.fecha
            for game in changes.items:
                if game.opponent == self.opponent and game.active:
                    return game.game, color_of(game.my_color)
            await self.pause()
        return None

    async def accept(self) -> tuple[str, chess.Color] | None:
        """Poll TRAN until the opponent's challenge shows up, then ACEP with a random colour."""
        while not self.stopping():
            changes = await self.c.tran(self.tran_fecha)
            self.tran_fecha = changes.fecha
            if self.opponent in changes.items:
                color = self.rng.choice((WHITE, BLACK))
                try:
                    game = await self.c.acep(color, self.opponent)
                except ReplyError:
                    self.tran_fecha = 0  # look at every open challenge again
                    continue
                self.control.count("games_started")
                return game, color_of(color)
            await self.pause()
        return None

    # -- playing -----------------------------------------------------------------------

    async def play(self, game: str, color: chess.Color) -> None:
        """Play one game to its end (or until the run stops)."""
        board = chess.Board()
        while not self.stopping():
            if board.turn == color:
                over = await self.move(game, board)
            else:
                over = await self.wait_turn(game, board)
            if over:
                return

    async def move(self, game: str, board: chess.Board) -> bool:
        """Play a random legal move (or resign at max plies); True when the game is over."""
        ply = len(board.move_stack) + 1
        if ply > self.settings.max_plies:
            await self.c.rend(game, self.opponent)
            self.control.count("end_resigned_at_max_plies")
            self.notify_partner()
            return True
        move = self.rng.choice(list(board.legal_moves))
        try:
            await self.c.jgda(game, ply, move)
        except ReplyError:
            self.control.count("jgda_refused")
            return await self.resync(game, board)
        self.control.count("moves")
        self.notify_partner()
        board.push(move)
        outcome = board.outcome(claim_draw=False)
        if outcome is None:
            return False
        status = await self.c.stat(game)  # the server must have ended it too
        ending = outcome.termination.name.lower()
        self.control.count(f"end_{ending}" if status.status == STATUS_FINISHED else "end_missed")
        return True

    def notify_partner(self) -> None:
        if self.settings.wait == "notify" and self.partner is not None:
            self.partner.woken.set()

    async def wait_turn(self, game: str, board: chess.Board) -> bool:
        """Poll until the opponent's move (applied to ``board``) or the end of the game."""
        if self.settings.wait == "notify":
            return await self.wait_notified(game, board)
        known = len(board.move_stack)
        use_spar = self.settings.poll_command == "spar" and known < self.settings.max_plies
        while not self.stopping():
            if use_spar:
                records = await self.c.spar(game, known)
                if records:
                    _apply(board, records)
                    return board.outcome(claim_draw=False) is not None
            else:
                status = await self.c.stat(game)
                if status.next_ply - 1 > known:
                    _apply(board, await self.c.spar(game, known))
                    return status.status == STATUS_FINISHED
                if status.status == STATUS_FINISHED:
                    return True
            await self.pause()
        return True

    async def wait_notified(self, game: str, board: chess.Board) -> bool:
        """Sleep until the opponent's task says it moved (as a push notification would),
        then fetch the move with one SPAR; STAT only when SPAR has nothing new."""
        known = len(board.move_stack)
        while not self.stopping():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.woken.wait(), NOTIFY_RECHECK_SECONDS)
            if not self.woken.is_set():
                continue
            self.woken.clear()
            records = await self.c.spar(game, known)
            if records:
                _apply(board, records)
                return board.outcome(claim_draw=False) is not None
            if (await self.c.stat(game)).status == STATUS_FINISHED:
                return True
        return True

    async def resync(self, game: str, board: chess.Board) -> bool:
        """After a refused move: rebuild the board from the server; True if the game is over."""
        status: GameStatus = await self.c.stat(game)
        board.reset()
        _apply(board, await self.c.spar(game, 0))
        return status.status == STATUS_FINISHED


def _apply(board: chess.Board, records: list[MoveRecord]) -> None:
    for record in records:
        if record.ply == len(board.move_stack) + 1:
            board.push(record_move(record))


class Pair:
    """Two players: ``challenger`` always challenges, ``acceptor`` accepts."""

    def __init__(self, challenger: Player, acceptor: Player) -> None:
        self.challenger = challenger
        self.acceptor = acceptor
        challenger.partner, acceptor.partner = acceptor, challenger
        self.failures: list[str] = []

    async def run(self) -> None:
        await asyncio.gather(
            self._guard(self.challenger, self.acceptor, self._challenger_loop),
            self._guard(self.acceptor, self.challenger, self._acceptor_loop),
        )

    async def _guard(
        self, me: Player, other: Player, loop: Callable[[Player], Awaitable[None]]
    ) -> None:
        try:
            await loop(me)
        except (ClientError, OSError, UnicodeDecodeError) as e:
            self.failures.append(f"{me.name}: {type(e).__name__}: {e}")
            me.control.count("players_failed")
            other.partner_failed.set()

    async def _challenger_loop(self, me: Player) -> None:
        while not me.stopping():
            found = await me.challenge()
            if found is None:
                return
            await me.play(*found)
            if me.settings.one_game:
                return

    async def _acceptor_loop(self, me: Player) -> None:
        while not me.stopping():
            found = await me.accept()
            if found is None:
                return
            await me.play(*found)
            if me.settings.one_game:
                return
