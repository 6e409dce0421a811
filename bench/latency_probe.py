"""The probe of ``bench.latency``: the probe users' sessions and games, the read and move
rounds sent one request at a time, and the run of its phases."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import chess

from bench.aclient import AsyncClient, record_move
from bench.host import CpuSpan, loadavg
from bench.report import log
from bench.seed import user_names
from bench.server_proc import Watcher
from bench.stats import Recorder

READ_KINDS = ("PPEN 0", "PPEN recent", "STAT", "SPAR 0", "SPAR last")
KINDS = (*READ_KINDS, "JGDA")


class LabelRecorder:
    """Latency per (phase, label): the label the probe names the request by (``PPEN
    recent``), else its command code. Also the record counts of the measured answers.

    It holds a :class:`Recorder` rather than being one: it has no ``observe_wake``, so the
    client records no ``+wake`` figures, which one request at a time would only repeat."""

    def __init__(self) -> None:
        self.recorder = Recorder()
        self.label: str | None = None
        self.sizes: dict[str, list[int]] = defaultdict(list)

    @property
    def phase(self) -> str:
        return self.recorder.phase

    @phase.setter
    def phase(self, phase: str) -> None:
        self.recorder.phase = phase

    def observe(self, command: str, seconds: float, code: int | None) -> None:
        self.recorder.observe(self.label or command, seconds, code)

    def size(self, label: str, n: int) -> None:
        if self.phase == "measure":
            self.sizes[label].append(n)

    def figures(self, phase: str, label: str) -> dict[str, Any]:
        out = self.recorder.summary(phase, label).as_dict()
        sizes = self.sizes.get(label) if phase == "measure" else None
        if sizes:
            out["records"] = {
                "min": min(sizes),
                "mean": round(sum(sizes) / len(sizes), 2),
                "max": max(sizes),
            }
        return out

    def phase_figures(self, phase: str) -> dict[str, dict[str, Any]]:
        return {label: self.figures(phase, label) for label in self.recorder.commands(phase)}


def span_figures(cpu: CpuSpan, loadavg_before: str) -> dict[str, Any]:
    """A measured phase: wall time, load average around it, machine busy, server CPU."""
    return {
        "seconds": round(cpu.seconds, 2),
        "loadavg_before": loadavg_before,
        "loadavg_after": loadavg(),
        "machine_busy_percent": cpu.machine_busy_percent,
        "cpu_count": os.cpu_count(),
        "server_cpu_percent": cpu.server_cpu_percent,
    }


# -- the probe users and their games ---------------------------------------------------


@dataclass
class ProbeGame:
    game: str
    white: str
    black: str
    status: int
    next_ply: int
    fecha: int
    board: chess.Board | None = None  # active games only


@dataclass
class ProbeUser:
    name: str
    client: AsyncClient
    games: list[ProbeGame] = field(default_factory=list)
    recent: int = 0


class Probe:
    def __init__(
        self, args: argparse.Namespace, host: str, port: int, recorder: LabelRecorder
    ) -> None:
        self.args = args
        self.host, self.port = host, port
        self.rec = recorder
        self.users: list[ProbeUser] = []
        self.by_name: dict[str, ProbeUser] = {}
        self.active: list[ProbeGame] = []
        self.rng = random.Random(args.seed)
        self.events: dict[str, int] = defaultdict(int)

    async def login(self) -> None:
        for name in user_names(self.args.probe_prefix, self.args.probe_users):
            client = await AsyncClient.connect(
                self.host, self.port, timeout=self.args.timeout, observer=self.rec
            )
            await client.login(name, self.args.password)
            user = ProbeUser(name, client)
            self.users.append(user)
            self.by_name[name] = user

    async def discover(self) -> None:
        seen: dict[str, ProbeGame] = {}
        for user in self.users:
            listing = await user.client.ppen(0)
            for summary in listing.items:
                st = await user.client.stat(summary.game)
                game = seen.get(summary.game)
                if game is None:
                    game = ProbeGame(st.game, st.white, st.black, st.status, st.next_ply, st.fecha)
                    seen[summary.game] = game
                    if st.active:
                        game.board = await self._board(user.client, st.game)
                        self.active.append(game)
                user.games.append(game)
            if not user.games:
                raise SystemExit(f"{user.name} has no games: seed with bench.seed_games first")
            fechas = sorted(g.fecha for g in user.games)
            user.recent = fechas[len(fechas) // 2]
        self.active.sort(key=lambda g: g.game)
        for game in self.active:
            if game.white not in self.by_name or game.black not in self.by_name:
                raise SystemExit(f"{game.game}: both players must be probe users")

    async def _board(self, client: AsyncClient, game: str) -> chess.Board:
        board = chess.Board()
        for record in await client.spar(game, 0):
            board.push(record_move(record))
        return board

    def _label(self, label: str | None) -> None:
        self.rec.label = label

    # -- reads -------------------------------------------------------------------------

    async def read_round(self, i: int) -> None:
        n = len(self.users)
        user = self.users[i % n]
        game = user.games[(i // n) % len(user.games)]
        c = user.client
        self._label("PPEN 0")
        self.rec.size("PPEN 0", len((await c.ppen(0)).items))
        self._label("PPEN recent")
        self.rec.size("PPEN recent", len((await c.ppen(user.recent)).items))
        self._label("STAT")
        st = await c.stat(game.game)
        self._label("SPAR 0")
        self.rec.size("SPAR 0", len(await c.spar(game.game, 0)))
        self._label("SPAR last")
        self.rec.size("SPAR last", len(await c.spar(game.game, max(0, st.next_ply - 2))))
        self._label(None)

    # -- moves -------------------------------------------------------------------------

    async def move_round(self, i: int) -> None:
        slot = i % len(self.active)
        game = self.active[slot]
        board = game.board
        assert board is not None
        mover = self.by_name[game.white if board.turn == chess.WHITE else game.black]
        if board.ply() >= self.args.max_plies:
            game = await self._replace(slot, resign_by=mover)
            assert game.board is not None
            board = game.board
            mover = self.by_name[game.white]
        move = self.rng.choice(list(board.legal_moves))
        self._label("JGDA")
        await mover.client.jgda(game.game, board.ply() + 1, move)
        self._label(None)
        board.push(move)
        self.events["moves"] += 1
        outcome = board.outcome(claim_draw=False)
        if outcome is not None:
            self.events[f"ended_{outcome.termination.name.lower()}"] += 1
            await self._replace(slot, resign_by=None)

    async def _replace(self, slot: int, resign_by: ProbeUser | None) -> ProbeGame:
        """End the game in ``slot`` (REND unless the rules ended it), start a new one
        between the same players and play it to ``--refill-plies`` outside the window."""
        old = self.active[slot]
        phase = self.rec.phase
        self.rec.phase = "refill"
        try:
            white, black = self.by_name[old.white], self.by_name[old.black]
            if resign_by is not None:
                other = old.black if resign_by.name == old.white else old.white
                await resign_by.client.rend(old.game, other)
                self.events["resigned"] += 1
            while True:
                await white.client.jueg(black.name)
                gid = await black.client.acep("N", white.name)
                board = chess.Board()
                game = ProbeGame(gid, white.name, black.name, 0, 1, 0, board)
                self.events["games_started"] += 1
                while board.ply() < self.args.refill_plies and board.outcome() is None:
                    mover = white if board.turn == chess.WHITE else black
                    move = self.rng.choice(list(board.legal_moves))
                    await mover.client.jgda(gid, board.ply() + 1, move)
                    board.push(move)
                if board.outcome(claim_draw=False) is None:
                    break
                self.events["refill_ended_by_rules"] += 1
        finally:
            self.rec.phase = phase
        self.active[slot] = game
        return game

    async def quit(self) -> None:
        await asyncio.gather(*(u.client.quit() for u in self.users))


# -- the run ---------------------------------------------------------------------------


async def run(
    args: argparse.Namespace, host: str, port: int, watcher: Watcher | None
) -> dict[str, Any]:
    rec = LabelRecorder()
    probe = Probe(args, host, port, rec)
    spans: dict[str, Any] = {}
    try:
        before = loadavg()
        with CpuSpan(watcher) as cpu:
            await probe.login()
            rec.phase = "setup"
            await probe.discover()
        spans["setup"] = span_figures(cpu, before)
        log(
            f"{len(probe.users)} probe users, {sum(len(u.games) for u in probe.users)} "
            f"user-games, {len(probe.active)} active games"
        )

        if "reads" in args.phases:
            rec.phase = "warmup"
            for i in range(args.warmup):
                await probe.read_round(i)
            before = loadavg()
            with CpuSpan(watcher) as cpu:
                rec.phase = "measure"
                for i in range(args.samples):
                    await probe.read_round(i)
            spans["reads"] = span_figures(cpu, before)
            log(f"reads: {spans['reads']}")

        if "moves" in args.phases:
            rec.phase = "warmup"
            for i in range(args.warmup):
                await probe.move_round(i)
            before = loadavg()
            with CpuSpan(watcher) as cpu:
                rec.phase = "measure"
                for i in range(args.warmup, args.warmup + args.samples):
                    await probe.move_round(i)
            spans["moves"] = span_figures(cpu, before)
            log(f"moves: {spans['moves']}")
        rec.phase = "done"
    finally:
        await probe.quit()
    measured = set(rec.recorder.commands("measure"))
    return {
        "commands": {k: rec.figures("measure", k) for k in KINDS if k in measured},
        "refill": rec.phase_figures("refill"),
        "setup": rec.phase_figures("setup"),
        "login": rec.phase_figures("login"),
        "spans": spans,
        "events": dict(sorted(probe.events.items())),
        "probe": {
            "users": len(probe.users),
            "games_per_user": sorted({len(u.games) for u in probe.users}),
            "active_games": len(probe.active),
            "plies_of_user_games": sorted({g.next_ply - 1 for u in probe.users for g in u.games}),
        },
    }
