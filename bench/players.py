"""Pairs of players that find each other and play real games over the protocol.

In each pair the *challenger* sends JUEG and learns the new game from PPEN; the *acceptor*
finds the challenge with TRAN and accepts it with ACEP, choosing its colour at random.
Then both play one of the run's *scripts*, random legal games played out with python-chess
before the run (the game's id picks which): the player to move sends the script's next
move with JGDA; the other waits for its turn like a real player, polling STAT (or SPAR
from its last ply) every ``poll_interval`` seconds until the opponent's move appears, or
(``--wait notify``) sleeping until the opponent's task tells it, as a push notification
would, then fetching the move with one SPAR and checking it against the script. A game
ends by the rules (the server ends it; STAT shows status 2) or, at ``max_plies``, by the
player to move resigning (REND). Then the pair starts another game, until the run stops.

With a :class:`Pace` (``--rate``) the player to move waits for the move's due time on its
pair's schedule before the JGDA, as a player thinking between moves would; everything
else (waking the waiting player, SPAR, polling) is as without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import chess

from ajedrez.client.errors import ClientError, ReplyError
from ajedrez.domain.values import BLACK, STATUS_FINISHED, WHITE
from ajedrez.domain.views import MoveRecord
from bench.aclient import AsyncClient, Observer, color_of, record_move


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
    scripts: list[Script]  # the games played; a game's id picks its script
    time_control: str | None = None  # JUEG's control (--time-control); None: none sent


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
        self.pace: Pace | None = None  # with --rate: the pair's move schedule, shared

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
        await self.c.jueg(self.opponent, self.settings.time_control)
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
        known = Known(self.settings.scripts[zlib.crc32(game.encode()) % len(self.settings.scripts)])
        while not self.stopping():
            if known.turn == color:
                over = await self.move(game, known)
            else:
                over = await self.wait_turn(game, known)
            if over:
                return

    async def move(self, game: str, known: Known) -> bool:
        """Play the script's next move (or resign at max plies); True when the game is over."""
        ply = known.plies + 1
        if ply > len(known.script.moves):  # the script ran to max plies without an ending
            await self.c.rend(game, self.opponent)
            self.control.count("end_resigned_at_max_plies")
            self.notify_partner()
            return True
        await self.wait_due()
        if self.stopping():  # the run stopped while this player was thinking
            return False
        try:
            await self.c.jgda(game, ply, known.script.moves[ply - 1])
        except ReplyError:
            # A legal move refused: count it, and resign rather than play on out of step.
            self.control.count("jgda_refused")
            with contextlib.suppress(ReplyError):
                await self.c.rend(game, self.opponent)
            self.notify_partner()
            return True
        self.control.count("moves")
        self.notify_partner()
        known.plies = ply
        if not known.ended:
            return False
        status = await self.c.stat(game)  # the server must have ended it too
        ending = f"end_{known.script.ending}"
        self.control.count(ending if status.status == STATUS_FINISHED else "end_missed")
        return True

    async def wait_due(self) -> None:
        """With ``--rate``: sleep until the pair's next move is due. A late move goes out
        at once; ``paced_late`` counts them. A plain sleep (one interval at most), not a
        wait for the stop event: a task per move would take CPU from the server."""
        if self.pace is None:
            return
        delay = self.pace.take_slot(time.monotonic())
        if delay <= 0:
            self.control.count("paced_late")
            return
        await asyncio.sleep(delay)

    def notify_partner(self) -> None:
        if self.settings.wait == "notify" and self.partner is not None:
            self.partner.woken.set()

    async def wait_turn(self, game: str, known: Known) -> bool:
        """Poll until the opponent's move (added to ``known``) or the end of the game."""
        if self.settings.wait == "notify":
            return await self.wait_notified(game, known)
        use_spar = self.settings.poll_command == "spar" and known.plies < self.settings.max_plies
        while not self.stopping():
            if use_spar:
                records = await self.c.spar(game, known.plies)
                if records:
                    return self.apply(known, records)
            else:
                status = await self.c.stat(game)
                if status.next_ply - 1 > known.plies:
                    self.apply(known, await self.c.spar(game, known.plies))
                    return status.status == STATUS_FINISHED
                if status.status == STATUS_FINISHED:
                    return True
            await self.pause()
        return True

    async def wait_notified(self, game: str, known: Known) -> bool:
        """Sleep until the opponent's task says it moved (as a push notification would),
        then fetch the move with one SPAR; STAT only when SPAR has nothing new."""
        while not self.stopping():
            if not self.woken.is_set():  # a wait only if needed: see AsyncClient._exchange
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(NOTIFY_RECHECK_SECONDS):
                        await self.woken.wait()
            if not self.woken.is_set():
                continue
            self.woken.clear()
            records = await self.c.spar(game, known.plies)
            if records:
                return self.apply(known, records)
            if (await self.c.stat(game)).status == STATUS_FINISHED:
                return True
        return True

    def apply(self, known: Known, records: list[MoveRecord]) -> bool:
        """Add the opponent's moves; True if they end the game. A move other than the
        script's is counted (``spar_mismatch``): the server returned something else."""
        for record in records:
            if record.ply != known.plies + 1:
                continue
            if (
                known.plies >= len(known.script.moves)
                or record_move(record) != (known.script.moves[known.plies])
            ):
                self.control.count("spar_mismatch")
            known.plies += 1
        return known.ended


@dataclass(frozen=True)
class Script:
    """A random legal game, played out before the run so that choosing moves costs the
    load generator nothing while it measures (python-chess took 40% of its CPU)."""

    moves: tuple[chess.Move, ...]
    ending: str | None  # how the rules end it after the last move; None: max plies


def make_scripts(count: int, max_plies: int, rng: random.Random) -> list[Script]:
    scripts = []
    for _ in range(count):
        board = chess.Board()
        ending = None
        while len(board.move_stack) < max_plies:
            board.push(rng.choice(list(board.legal_moves)))
            outcome = board.outcome(claim_draw=False)
            if outcome is not None:
                ending = outcome.termination.name.lower()
                break
        scripts.append(Script(tuple(board.move_stack), ending))
    return scripts


@dataclass
class Known:
    """A game as one player knows it: its script and how many plies have been played."""

    script: Script
    plies: int = 0

    @property
    def turn(self) -> chess.Color:
        return chess.WHITE if self.plies % 2 == 0 else chess.BLACK

    @property
    def ended(self) -> bool:
        return self.script.ending is not None and self.plies == len(self.script.moves)


class Pace:
    """A pair's move schedule with ``--rate``: its k-th move, counted over all its games
    (a new game keeps the schedule going, so the offered rate does not dip between
    games), is due at ``start + phase + k * interval``.

    Due times follow from the schedule, never from when the last move was sent: a late
    move goes out at once and the next is still due at its own slot, so the offered rate
    stays the same while the server keeps up, and moves go out back to back while it
    does not. ``start`` is when the pair's first game is ready for its first move, so the
    time spent logging in and finding each other does not leave every pair late at once.
    """

    def __init__(self, interval: float, phase: float) -> None:
        self.interval = interval
        self.phase = phase  # in [0, interval): the pairs' moves spread out, not all at once
        self.start: float | None = None
        self.moves = 0

    def take_slot(self, now: float) -> float:
        """Seconds from ``now`` until the next move is due (<= 0: late); uses up its slot."""
        if self.start is None:
            self.start = now
        due = self.start + self.phase + self.moves * self.interval
        self.moves += 1
        return due - now


class Pair:
    """Two players: ``challenger`` always challenges, ``acceptor`` accepts."""

    def __init__(self, challenger: Player, acceptor: Player) -> None:
        self.challenger = challenger
        self.acceptor = acceptor
        challenger.partner, acceptor.partner = acceptor, challenger
        self.failures: list[str] = []

    def pace_by(self, pace: Pace) -> None:
        """Whoever of the two is to move follows this one schedule."""
        self.challenger.pace = self.acceptor.pace = pace

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
