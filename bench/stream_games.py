"""The games of ``bench.stream``: a pair of players moving at its pace, the opponent
learning of each move from its event stream (FIN_DE_TURNO) or, without streams, by one
SPAR once the mover's JGDA is answered (``bench.load --wait notify``); and what each kind
of connection does with the events it receives.

One task drives both players of a pair: the player to move sends the script's next move
with JGDA; the pair then waits until the opponent knows the move (its event arrived, or
its SPAR returned it) and the opponent moves next. Both players are connections of their
own, on the same server or (``--second-server``) on two servers: the challenger on the
first, the acceptor on the second. A game is started by JUEG and ACEP, the acceptor
choosing its colour at random, and the challenger learns its id from the acceptor's task
(setup, not measured). A game ends by the rules (the script's ending) or, when its
script runs out, by the player to move resigning (REND); the pair then starts another.

Per move in the window: the JGDA's time to its 208, when the 208 arrived (wall clock),
the event's ``<ms>`` (the server's time when it checked the move, just before the
commit), when the event arrived at the opponent, and when the opponent knew the move.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field

import chess

from ajedrez.client.errors import ClientError
from ajedrez.espol.events import FIN_DE_TURNO
from bench.aclient import move_fields
from bench.players import Pace, Script
from bench.stream_client import Conn, error_code

# (game, ply, jgda_ms, ack_wall, at_ms, event_wall, known_wall, spar_ms): one move in the
# window. at_ms and event_wall are None without streams (or when the event never came);
# known_wall is when the opponent knew the move (its event, or its SPAR's answer).
MoveRow = tuple[str, int, float, float, int | None, float | None, float | None, float | None]


@dataclass
class Window:
    """The play phase's times (wall clock, shared by every client process)."""

    start: float  # the pairs begin (warm-up)
    measure: float  # the window opens
    end: float  # the window closes; the pairs stop

    def holds(self, wall: float) -> bool:
        return self.measure <= wall < self.end


@dataclass
class Tally:
    """What one client process counts: named events (in the window, and in all), the
    heartbeats' arrival times in the window, and samples of failures."""

    window: Window | None = None
    counts: Counter[str] = field(default_factory=Counter)  # in the window
    all_counts: Counter[str] = field(default_factory=Counter)  # the whole run
    beats: list[float] = field(default_factory=list)  # 603 arrivals in the window
    failures: list[str] = field(default_factory=list)

    def count(self, name: str, wall: float | None = None, n: int = 1) -> None:
        self.all_counts[name] += n
        w = self.window
        if w is not None and w.holds(time.time() if wall is None else wall):
            self.counts[name] += n

    def failed(self, text: str) -> None:
        if len(self.failures) < 10:
            self.failures.append(text)

    def stream_item(self, code: int, text: str, wall: float) -> str | None:
        """Count one 6xx; an event's kind (600), else None."""
        if code == 600:
            parts = text.split(":", 3)
            kind = parts[2] if len(parts) > 2 else "?"
            self.count(f"event {kind}", wall)
            return kind
        self.count(f"{code}", wall)
        if code == 603 and self.window is not None and self.window.holds(wall):
            self.beats.append(wall)
        return None


@dataclass
class Watched:
    """The game the observers watch, and when each of its moves reached each observer."""

    tally: Tally
    game: str | None = None
    moves: dict[int, tuple[int, list[float]]] = field(default_factory=dict)  # ply: (ms, walls)


def idle_event(conn: Conn, code: int, text: str, wall: float) -> None:
    conn.owner.stream_item(code, text, wall)


def observer_event(conn: Conn, code: int, text: str, wall: float) -> None:
    watched: Watched = conn.owner
    if watched.tally.stream_item(code, text, wall) != FIN_DE_TURNO:
        return
    _, ms, _, game, ply, _ = text.split(":", 5)
    if game == watched.game:
        entry = watched.moves.get(int(ply))
        if entry is None:
            entry = watched.moves[int(ply)] = (int(ms), [])
        entry[1].append(wall)


def player_event(conn: Conn, code: int, text: str, wall: float) -> None:
    pair: Pair = conn.owner
    if pair.tally.stream_item(code, text, wall) != FIN_DE_TURNO:
        return
    _, ms, _, game, ply, jugada, _ = text.split(":", 6)
    if conn is pair.expect_conn and pair.expect == (game, int(ply)):
        waiter = pair.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result((int(ms), wall, jugada))


@dataclass(frozen=True)
class PlaySettings:
    password: str
    timeout: float  # seconds for an answer
    event_timeout: float  # seconds for the opponent's event before it counts as missing
    streams: bool  # the opponent learns from its stream; else by SPAR after the 208
    also_spar: bool  # with streams: SPAR after the event too (a request per move as without)


class Pair:
    """Two players and their current game."""

    def __init__(
        self,
        index: int,
        scripts: list[Script],
        first_script: Script | None,
        pace: Pace | None,
        settings: PlaySettings,
        tally: Tally,
        rng: random.Random,
    ) -> None:
        self.index = index
        self.conns: list[Conn | None] = [None, None]  # challenger, acceptor
        self.scripts = scripts
        self.first_script = first_script  # the watched pair's long first game
        self.pace = pace
        self.settings = settings
        self.tally = tally
        self.rng = rng
        self.rows: list[MoveRow] = []
        self.game: str | None = None
        self.games: list[str] = []
        self.script = scripts[0]
        self.white = 0  # index in conns of the white player
        self.plies = 0
        self.expect: tuple[str, int] | None = None  # the move the opponent waits for
        self.expect_conn: Conn | None = None
        self.waiter: asyncio.Future[tuple[int, float, str]] | None = None
        self.failed = False

    @property
    def ready(self) -> bool:
        return all(c is not None and not c.closed for c in self.conns)

    def _conn(self, i: int) -> Conn:
        conn = self.conns[i]
        assert conn is not None
        return conn

    async def new_game(self) -> str:
        """JUEG from the challenger, ACEP from the acceptor with a random colour."""
        challenger, acceptor = self._conn(0), self._conn(1)
        timeout = self.settings.timeout
        await challenger.call(f"JUEG:{acceptor.user}", timeout)
        color = self.rng.choice("BN")
        game = (await acceptor.call(f"ACEP:{color}:{challenger.user}", timeout)).text
        self.game, self.plies, self.white = game, 0, 1 if color == "B" else 0
        self.games.append(game)
        if self.first_script is not None:
            self.script, self.first_script = self.first_script, None
        else:
            self.script = self.scripts[zlib.crc32(game.encode()) % len(self.scripts)]
        self.tally.count("games started")
        return game

    async def run(self, window: Window) -> None:
        """Play until the window closes; a failure stops the pair (counted)."""
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(max(0.0, window.start - time.time()))
        try:
            while time.time() < window.end:
                if self.game is None:
                    await self.new_game()
                    continue
                await self.move(window)
        except (ClientError, OSError) as e:
            self.failed = True
            self.tally.count(f"pair failed ({error_code(e)})")
            self.tally.failed(f"pair {self.index} ({self.game}): {type(e).__name__}: {e}")

    async def move(self, window: Window) -> None:
        game, ply = self.game, self.plies + 1
        assert game is not None
        timeout = self.settings.timeout
        side = self.white if ply % 2 else 1 - self.white
        mover, opponent = self._conn(side), self._conn(1 - side)
        if ply > len(self.script.moves):  # the script ran out: resign, start another
            await mover.call(f"REND:{game}:{opponent.user}", timeout)
            self.tally.count("games resigned at the script's end")
            self.game = None
            return
        if not await self._wait_due(window):
            return
        jugada, posicion, promocion = move_fields(self.script.moves[ply - 1])
        streams = self.settings.streams
        if streams:
            self.expect, self.expect_conn = (game, ply), opponent
            self.waiter = asyncio.get_running_loop().create_future()
        sent = time.time()
        answer = await mover.request(
            f"JGDA:{game}:{ply}:{jugada}:0:{posicion}:{promocion}", timeout
        )
        if answer.code != 208:
            self.tally.count(f"JGDA refused ({answer.code})", answer.wall)
            self.tally.failed(
                f"pair {self.index}: JGDA {game} ply {ply}: {answer.code} {answer.text}"
            )
            self.expect = None
            await mover.request(f"REND:{game}:{opponent.user}", timeout)
            self.game = None
            return
        at_ms = event_wall = known = spar_ms = None
        if streams:
            at_ms, event_wall, known = await self._event(jugada)
        if not streams or self.settings.also_spar or known is None:
            start = time.time()
            spar = await opponent.call(f"SPAR:{game}:{ply - 1}", timeout)
            if spar.text.split(",", 1)[0].split(":")[:2] != [str(ply), jugada]:
                self.tally.count("SPAR mismatch", spar.wall)
            spar_ms = (spar.wall - start) * 1000.0
            known = known or spar.wall
        if window.holds(answer.wall):
            self.rows.append(
                (
                    game,
                    ply,
                    (answer.wall - sent) * 1000.0,
                    answer.wall,
                    at_ms,
                    event_wall,
                    known,
                    spar_ms,
                )
            )
        self.tally.count("moves", answer.wall)
        self.plies = ply
        if self.script.ending is not None and ply == len(self.script.moves):
            self.tally.count(f"games ended ({self.script.ending})")
            self.game = None

    async def _wait_due(self, window: Window) -> bool:
        """With a pace: sleep until the move is due (a late one goes at once, counted).
        False when the window closed meanwhile."""
        if self.pace is not None:
            delay = self.pace.take_slot(time.monotonic())
            if delay > 0:
                await asyncio.sleep(min(delay, max(0.0, window.end - time.time())))
            else:
                self.tally.count("moves sent late")
        return time.time() < window.end

    async def _event(self, jugada: str) -> tuple[int | None, float | None, float | None]:
        """Wait for the opponent's FIN_DE_TURNO: (its ms, its arrival, its arrival)."""
        waiter = self.waiter
        assert waiter is not None
        try:
            async with asyncio.timeout(self.settings.event_timeout):
                at_ms, wall, got = await waiter
        except TimeoutError:
            self.tally.count("events missing")
            self.tally.failed(f"pair {self.index}: no FIN_DE_TURNO for {self.expect}")
            return None, None, None
        finally:
            self.expect, self.expect_conn, self.waiter = None, None, None
        if got != jugada:
            self.tally.count("event mismatch", wall)
        return at_ms, wall, wall


# -- scripts ---------------------------------------------------------------------------------


def long_script(plies: int, rng: random.Random) -> Script:
    """A legal game of ``plies`` plies that does not end by the rules, for the watched
    game, which must last the whole window: random moves, each one that would end the
    game (mate, stalemate, repetition, material, the 75-move rule) tried and passed over,
    quiet piece moves first while the fifty-move count is low, pawn moves and captures
    once it is not. Shorter when no move avoids an ending (then the game is resigned)."""
    board = chess.Board()
    while len(board.move_stack) < plies:
        moves = list(board.legal_moves)
        rng.shuffle(moves)
        pawn = [m for m in moves if board.piece_type_at(m.from_square) == chess.PAWN]
        captures = [m for m in moves if board.is_capture(m) and m not in pawn]
        quiet = [m for m in moves if m not in pawn and m not in captures]
        order = quiet + pawn + captures if board.halfmove_clock < 12 else pawn + captures + quiet
        for move in order:
            board.push(move)
            if board.outcome(claim_draw=False) is None:
                break
            board.pop()
        else:
            break
    return Script(tuple(board.move_stack), None)
